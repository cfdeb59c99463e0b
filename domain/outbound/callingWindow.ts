/**
 * The recipient-local calling window of an outbound campaign (docs/voice.md "Outbound voice campaigns"): a campaign narrows the 8am–9pm
 * window of api/sms/quietHours.ts (never widens it) and may skip days of the week. A recipient's zones
 * are the explicit zone of the contact, else the area code's (api/sms/nanp.ts, every zone when the code
 * spans a zone line), else every US zone; a dial is allowed only when the window is open in every one of
 * them (the overlap). Pure functions of (zones, instant).
 */
import { localParts, recipientZones, WINDOW_END_MINUTES, WINDOW_START_MINUTES } from '../sms/quietHours';
import type { CallingWindow, DayOfWeek } from '../../schemas/types/outbound';

/** A campaign's window in local minutes after midnight, [startMinutes, endMinutes), on `days`. */
export interface WindowSpec {
  startMinutes: number;
  endMinutes: number;
  days: DayOfWeek[];
}

/** Every day, in JavaScript's `getUTCDay()` order (0 = Sunday). */
export const DAYS: DayOfWeek[] = ['sun', 'mon', 'tue', 'wed', 'thu', 'fri', 'sat'];

/** The default window: 08:00–21:00 recipient-local, every day. */
export const DEFAULT_WINDOW: WindowSpec = { startMinutes: WINDOW_START_MINUTES, endMinutes: WINDOW_END_MINUTES, days: [...DAYS.slice(1), 'sun'] };

/** `HH:MM` → minutes after midnight. */
export function parseClock(hhmm: string): number {
  const [h, m] = hhmm.split(':').map(Number);
  return h * 60 + m;
}

/** Minutes after midnight → `HH:MM`. */
export function formatClock(minutes: number): string {
  return `${String(Math.floor(minutes / 60)).padStart(2, '0')}:${String(minutes % 60).padStart(2, '0')}`;
}

/**
 * Checks a requested window against the legal one (08:00–21:00).
 * @returns field problems (`callingWindow.start` / `callingWindow.end`), empty when it is valid
 */
export function windowProblems(w: CallingWindow): { field: string; message: string }[] {
  const out: { field: string; message: string }[] = [];
  const s = parseClock(w.start);
  const e = parseClock(w.end);
  if (s < WINDOW_START_MINUTES) out.push({ field: 'callingWindow.start', message: `cannot be earlier than ${formatClock(WINDOW_START_MINUTES)} recipient-local (the window can be narrowed, not widened)` });
  if (e > WINDOW_END_MINUTES) out.push({ field: 'callingWindow.end', message: `cannot be later than ${formatClock(WINDOW_END_MINUTES)} recipient-local (the window can be narrowed, not widened)` });
  if (!out.length && e <= s) out.push({ field: 'callingWindow.end', message: 'must be later than callingWindow.start' });
  return out;
}

/** True when `zone` is an IANA time zone this runtime knows. */
export function isKnownZone(zone: string): boolean {
  let known = zoneCache.get(zone);
  if (known === undefined) {
    try {
      new Intl.DateTimeFormat('en-US', { timeZone: zone });
      known = true;
    } catch {
      known = false;
    }
    if (zoneCache.size < 1000) zoneCache.set(zone, known);
  }
  return known;
}
const zoneCache = new Map<string, boolean>();

/** Zones of a recipient: `[explicit]` when given, else the area code's (see recipientZones). */
export function zonesFor(e164: string, explicitZone: string | null): string[] {
  return explicitZone ? [explicitZone] : recipientZones(e164);
}

function insideIn(zone: string, at: Date, w: WindowSpec): boolean {
  const p = localParts(zone, at);
  const m = p.hour * 60 + p.minute;
  const day = DAYS[new Date(Date.UTC(p.year, p.month - 1, p.day)).getUTCDay()];
  return m >= w.startMinutes && m < w.endMinutes && w.days.includes(day);
}

/** The instant of local wall time `minutes` after midnight of (y, m, d) in `zone` (two passes settle DST edges). */
function zonedInstant(zone: string, y: number, mo: number, d: number, minutes: number): number {
  const wall = Date.UTC(y, mo - 1, d, 0, minutes);
  let t = wall;
  for (let i = 0; i < 2; i++) {
    const p = localParts(zone, new Date(t));
    const asUtc = Date.UTC(p.year, p.month - 1, p.day, p.hour, p.minute, p.second);
    t = wall - (asUtc - Math.floor(t / 1000) * 1000);
  }
  return t;
}

/**
 * When a recipient may be dialed.
 * @param zones the recipient's zones (all must be inside the window)
 * @param at the instant of the question
 * @returns `at` when the window is open now in every zone, else the earliest later instant when it is
 *   (one of the zones' window openings); undefined when none within 8 days (e.g. windows that never overlap)
 */
export function nextDialTime(zones: string[], at: Date, w: WindowSpec = DEFAULT_WINDOW): Date | undefined {
  if (zones.every((z) => insideIn(z, at, w))) return at;
  const candidates: number[] = [];
  for (const z of zones) {
    const p = localParts(z, at);
    for (let d = 0; d <= 8; d++) {
      const base = new Date(Date.UTC(p.year, p.month - 1, p.day + d));
      const t = zonedInstant(z, base.getUTCFullYear(), base.getUTCMonth() + 1, base.getUTCDate(), w.startMinutes);
      if (t > at.getTime()) candidates.push(t);
    }
  }
  candidates.sort((a, b) => a - b);
  for (const t of candidates) if (zones.every((z) => insideIn(z, new Date(t), w))) return new Date(t);
  return undefined;
}
