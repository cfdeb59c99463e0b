/**
 * Time arithmetic of the booking skills (docs/api-notes.md "Booking skills"): local wall-clock times of an IANA
 * time zone (through `Intl.DateTimeFormat`, no table of our own), the window a `check_availability` call looks at,
 * candidate slots inside opening hours, and the free ones among them given busy intervals (Google Calendar
 * free/busy answers busy intervals, not slots).
 */

/** A time interval, both ends ISO 8601 instants. */
export interface Interval {
  start: string;
  end: string;
}

/** Opening hours of a booking skill: `HH:MM` local times and ISO weekdays (1 = Monday … 7 = Sunday). */
export interface OpenHours {
  from: string;
  until: string;
  days: number[];
}

/** Default opening hours: 09:00–17:00, Monday to Friday. */
export const DEFAULT_OPEN_HOURS: OpenHours = { from: '09:00', until: '17:00', days: [1, 2, 3, 4, 5] };



/** Offset of `tz` from UTC at instant `ms`, minutes (e.g. -360 for America/Chicago in winter). */
export function zoneOffsetMinutes(tz: string, ms: number): number {
  const name = new Intl.DateTimeFormat('en-US', { timeZone: tz, timeZoneName: 'longOffset' }).formatToParts(new Date(ms)).find((p) => p.type === 'timeZoneName')?.value ?? 'GMT';
  const m = /GMT([+-])(\d{2}):?(\d{2})?/.exec(name);
  return m ? (m[1] === '-' ? -1 : 1) * (Number(m[2]) * 60 + Number(m[3] ?? 0)) : 0;
}

/** Instant `ms` as local ISO 8601 with the zone's offset, seconds precision (`2026-12-03T10:00:00-06:00`). */
export function localIso(ms: number, tz: string): string {
  const off = zoneOffsetMinutes(tz, ms);
  const local = new Date(ms + off * 60_000).toISOString().slice(0, 19);
  const sign = off < 0 ? '-' : '+';
  const abs = Math.abs(off);
  return `${local}${sign}${String(Math.floor(abs / 60)).padStart(2, '0')}:${String(abs % 60).padStart(2, '0')}`;
}

/** The instant of local date `day` (`YYYY-MM-DD`) at `hhmm` in `tz`, ms (the offset re-read after the first guess, for DST days). */
export function zonedInstant(day: string, hhmm: string, tz: string): number {
  const naive = Date.parse(`${day}T${hhmm}:00Z`);
  const first = naive - zoneOffsetMinutes(tz, naive) * 60_000;
  return naive - zoneOffsetMinutes(tz, first) * 60_000;
}

/** ISO weekday (1 = Monday … 7 = Sunday) of local date `day`. */
function isoWeekday(day: string): number {
  const d = new Date(`${day}T12:00:00Z`).getUTCDay();
  return d === 0 ? 7 : d;
}

/** The local dates (`YYYY-MM-DD`) of `tz` from the one holding `fromMs` to the one holding `toMs`. */
function localDays(fromMs: number, toMs: number, tz: string): string[] {
  const days: string[] = [];
  let day = localIso(fromMs, tz).slice(0, 10);
  const last = localIso(toMs, tz).slice(0, 10);
  for (let i = 0; i < 62 && day <= last; i++) {
    days.push(day);
    day = new Date(Date.parse(`${day}T12:00:00Z`) + 86_400_000).toISOString().slice(0, 10);
  }
  return days;
}

/**
 * The window a `check_availability` call looks at: the whole local day `date` (`YYYY-MM-DD`) in `tz`, or
 * from `nowMs` to `windowDays` later. @returns null when `date` is not a date
 */
export function availabilityWindow(date: string | undefined, tz: string, nowMs: number, windowDays: number): { fromMs: number; toMs: number } | null {
  if (date === undefined || date === '') return { fromMs: nowMs, toMs: nowMs + windowDays * 86_400_000 };
  if (!/^\d{4}-\d{2}-\d{2}$/.test(date) || Number.isNaN(Date.parse(`${date}T00:00:00Z`))) return null;
  const fromMs = Math.max(zonedInstant(date, '00:00', tz), nowMs);
  const next = new Date(Date.parse(`${date}T12:00:00Z`) + 86_400_000).toISOString().slice(0, 10);
  return { fromMs, toMs: zonedInstant(next, '00:00', tz) };
}

/**
 * Slots of `durationMinutes`, back to back from each opening time, inside `open` and the window
 * [`fromMs`, `toMs`), minus every slot that overlaps a `busy` interval.
 * @returns at most `max` slots, earliest first, as UTC ISO instants
 */
export function freeSlots(fromMs: number, toMs: number, tz: string, durationMinutes: number, open: OpenHours, busy: readonly Interval[], max: number): Interval[] {
  const taken = busy.map((b) => [Date.parse(b.start), Date.parse(b.end)] as const);
  const step = durationMinutes * 60_000;
  const out: Interval[] = [];
  for (const day of localDays(fromMs, toMs, tz)) {
    if (!open.days.includes(isoWeekday(day))) continue;
    const close = zonedInstant(day, open.until, tz);
    for (let s = zonedInstant(day, open.from, tz); s + step <= close; s += step) {
      if (s < fromMs || s + step > toMs) continue;
      if (taken.some(([b, e]) => s < e && s + step > b)) continue;
      out.push({ start: new Date(s).toISOString(), end: new Date(s + step).toISOString() });
      if (out.length >= max) return out;
    }
  }
  return out;
}
