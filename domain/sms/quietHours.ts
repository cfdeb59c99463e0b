/**
 * The recipient-local quiet-hours window (spec "Limits": texts go out between 8am and 9pm
 * recipient-local; agent-initiated sends are always held to it, inbound-triggered replies skip it
 * unless `quietHoursRepliesExempt` is false). The recipient's zone comes from the NANP area code; where
 * a code spans zones, a send is allowed only when it is inside the window in every one of them.
 * Pure functions of (number, instant); daylight-saving transitions are handled by Intl's zone data.
 */
import { ALL_US_ZONES, areaCodeInfo, areaCodeOf } from './nanp';

/** Start (inclusive) and end (exclusive) of the window, local minutes after midnight. */
export const WINDOW_START_MINUTES = 8 * 60;
export const WINDOW_END_MINUTES = 21 * 60;

const formatters = new Map<string, Intl.DateTimeFormat>();
function formatter(zone: string): Intl.DateTimeFormat {
  let f = formatters.get(zone);
  if (!f) {
    f = new Intl.DateTimeFormat('en-US', { timeZone: zone, hourCycle: 'h23', year: 'numeric', month: 'numeric', day: 'numeric', hour: 'numeric', minute: 'numeric', second: 'numeric' });
    formatters.set(zone, f);
  }
  return f;
}

/** Local calendar fields of `at` in `zone`. */
export function localParts(zone: string, at: Date): { year: number; month: number; day: number; hour: number; minute: number; second: number } {
  const out: Record<string, number> = {};
  for (const p of formatter(zone).formatToParts(at)) if (p.type !== 'literal') out[p.type] = Number(p.value);
  return { year: out.year, month: out.month, day: out.day, hour: out.hour % 24, minute: out.minute, second: out.second };
}

/** Offset of `zone` from UTC at `at`, in minutes (e.g. -300 for EST). */
function offsetMinutes(zone: string, at: Date): number {
  const p = localParts(zone, at);
  const asUtc = Date.UTC(p.year, p.month - 1, p.day, p.hour, p.minute, p.second);
  return Math.round((asUtc - Math.floor(at.getTime() / 1000) * 1000) / 60_000);
}

/** The instant of local wall time (y, m, d, hh:mm) in `zone`. */
function zonedInstant(zone: string, year: number, month: number, day: number, hour: number, minute: number): Date {
  const guess = Date.UTC(year, month - 1, day, hour, minute);
  let t = guess - offsetMinutes(zone, new Date(guess)) * 60_000;
  t = guess - offsetMinutes(zone, new Date(t)) * 60_000; // second pass settles DST edges
  return new Date(t);
}

/** True when `at` is inside 8:00–21:00 local time in `zone`. */
export function insideWindow(zone: string, at: Date): boolean {
  const p = localParts(zone, at);
  const m = p.hour * 60 + p.minute;
  return m >= WINDOW_START_MINUTES && m < WINDOW_END_MINUTES;
}

/** The recipient's zones: the area code's, or every US zone when the code is unknown (the strictest overlap). */
export function recipientZones(e164: string): string[] {
  const code = areaCodeOf(e164);
  const info = code ? areaCodeInfo(code) : undefined;
  return info ? info.zones : ALL_US_ZONES;
}

/** Decision of the quiet-hours check. */
export interface QuietHoursDecision {
  /** True when the text may go out at `at`. */
  allowed: boolean;
  /** `at` when allowed, else the earliest later instant inside the window in every zone of the recipient. */
  sendAt: Date;
  /** Zones that were considered. */
  zones: string[];
}

/**
 * Checks the window for a recipient at instant `at`.
 * @param to recipient in E.164 (+1…)
 * @returns allowed now, or the next instant the window opens in every zone of the area code (the
 *   overlap); always within three days
 */
export function quietHoursDecision(to: string, at: Date, zones: string[] = recipientZones(to)): QuietHoursDecision {
  if (zones.every((z) => insideWindow(z, at))) return { allowed: true, sendAt: at, zones };
  // The overlap of the zones' windows opens when the last zone reaches 8:00, so the candidates are the
  // local 8:00 instants of each zone over the next days.
  const candidates: number[] = [];
  for (const z of zones) {
    const p = localParts(z, at);
    for (let d = 0; d <= 3; d++) {
      const base = new Date(Date.UTC(p.year, p.month - 1, p.day + d));
      const t = zonedInstant(z, base.getUTCFullYear(), base.getUTCMonth() + 1, base.getUTCDate(), 8, 0).getTime();
      if (t > at.getTime()) candidates.push(t);
    }
  }
  candidates.sort((a, b) => a - b);
  for (const t of candidates) {
    const when = new Date(t);
    if (zones.every((z) => insideWindow(z, when))) return { allowed: false, sendAt: when, zones };
  }
  throw new Error(`no quiet-hours window found for ${to} within three days`);
}
