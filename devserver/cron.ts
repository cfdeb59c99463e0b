/**
 * Calendar arithmetic of schedules and cron workflows, as the real Temporal server computes it:
 *  - temporal.api.schedule.v1.StructuredCalendarSpec / IntervalSpec / ScheduleSpec: next action
 *    time after a given instant (epoch ms), with start/end times, exclusions and a time zone;
 *  - the schedule `cron_string` forms (5, 6 or 7 fields, `@daily`-style names, `@every d[/phase]`,
 *    `CRON_TZ=` prefix, `#` comment), turned into structured calendars and intervals the way the
 *    real server does before storing a schedule (ScheduleSpec docs in temporal/api/schedule/v1);
 *  - the older `cronSchedule` of StartWorkflowExecution (robfig/cron standard form): backoff of the
 *    first run and of each next run (the real server's `GetBackoffForNextSchedule`).
 * Matching a calendar is done by `croner` (second granularity, IANA time zones).
 */
import { Cron } from 'croner';

/** temporal.api.schedule.v1.Range as held in memory (end < start means end = start; step 0 means 1). */
export interface CalRange {
  start?: number | null;
  end?: number | null;
  step?: number | null;
}

/** temporal.api.schedule.v1.StructuredCalendarSpec as held in memory. */
export interface StructuredCalendar {
  second?: CalRange[] | null;
  minute?: CalRange[] | null;
  hour?: CalRange[] | null;
  dayOfMonth?: CalRange[] | null;
  month?: CalRange[] | null;
  year?: CalRange[] | null;
  dayOfWeek?: CalRange[] | null;
  comment?: string | null;
}

/** An interval spec in ms: actions at epoch + phase + k × interval. */
export interface IntervalMs {
  intervalMs: number;
  phaseMs: number;
}

/** A compiled schedule spec (times epoch ms; `null` = unbounded). */
export interface CompiledSpec {
  calendars: StructuredCalendar[];
  intervals: IntervalMs[];
  excludes: StructuredCalendar[];
  startMs: number | null;
  endMs: number | null;
  timezone: string;
}

/** Thrown for a cron string or calendar the server cannot parse (mapped to INVALID_ARGUMENT). */
export class CronError extends Error {}

type Field = 'second' | 'minute' | 'hour' | 'dayOfMonth' | 'month' | 'year' | 'dayOfWeek';

const LIMITS: Record<Field, [number, number]> = {
  second: [0, 59],
  minute: [0, 59],
  hour: [0, 23],
  dayOfMonth: [1, 31],
  month: [1, 12],
  year: [2000, 2100],
  dayOfWeek: [0, 6],
};
/** Defaults of an unset StructuredCalendarSpec field: second/minute/hour 0, the rest every value. */
const DEFAULT_PART: Record<Field, string> = { second: '0', minute: '0', hour: '0', dayOfMonth: '*', month: '*', year: '*', dayOfWeek: '*' };
const MONTHS = ['jan', 'feb', 'mar', 'apr', 'may', 'jun', 'jul', 'aug', 'sep', 'oct', 'nov', 'dec'];
const DAYS = ['sun', 'mon', 'tue', 'wed', 'thu', 'fri', 'sat'];
const NAMED: Record<string, string> = {
  '@yearly': '0 0 1 1 *',
  '@annually': '0 0 1 1 *',
  '@monthly': '0 0 1 * *',
  '@weekly': '0 0 * * 0',
  '@daily': '0 0 * * *',
  '@midnight': '0 0 * * *',
  '@hourly': '0 * * * *',
};

/** Parses a Go-style duration (`90s`, `5m`, `1h30m`, `1d` as 24h) into ms. */
export function parseDurationMs(s: string): number {
  const re = /(\d+(?:\.\d+)?)(ms|s|m|h|d)/g;
  const unit: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };
  let total = 0;
  let consumed = 0;
  for (const m of s.matchAll(re)) {
    total += Number(m[1]) * unit[m[2]];
    consumed += m[0].length;
  }
  if (!s || consumed !== s.length || total <= 0) throw new CronError(`invalid duration "${s}"`);
  return total;
}

function parseValue(v: string, field: Field): number {
  const lower = v.toLowerCase();
  if (field === 'month' && MONTHS.includes(lower.slice(0, 3)) && isNaN(Number(v))) return MONTHS.indexOf(lower.slice(0, 3)) + 1;
  if (field === 'dayOfWeek' && DAYS.includes(lower.slice(0, 3)) && isNaN(Number(v))) return DAYS.indexOf(lower.slice(0, 3));
  const n = Number(v);
  const [lo, hi] = LIMITS[field];
  if (!/^\d+$/.test(v) || n < lo || n > (field === 'dayOfWeek' ? 7 : field === 'year' ? 9999 : hi)) {
    throw new CronError(`invalid ${field} value "${v}"`);
  }
  return field === 'dayOfWeek' && n === 7 ? 0 : n;
}

/** One cron field (`*`, `*∕s`, `a`, `a-b`, `a∕s`, `a-b∕s`, comma lists) as structured ranges. */
function parseField(text: string, field: Field): CalRange[] {
  const [lo, hi] = LIMITS[field];
  return text.split(',').map((item) => {
    const [base, stepText] = item.split('/');
    const step = stepText === undefined ? 1 : Number(stepText);
    if (!Number.isInteger(step) || step < 1) throw new CronError(`invalid step in ${field} "${item}"`);
    if (base === '*' || base === '?') return { start: lo, end: hi, step };
    const [a, b] = base.split('-');
    const start = parseValue(a, field);
    const end = b !== undefined ? parseValue(b, field) : stepText !== undefined ? hi : start;
    if (end < start) throw new CronError(`invalid range in ${field} "${item}"`);
    return { start, end, step };
  });
}

/**
 * Compiles a schedule `cron_string` into calendars / intervals / time zone, as the real server
 * does on CreateSchedule: 5 fields (minute hour day-of-month month day-of-week), 6 (… year) or 7
 * (second … year); `@yearly` … `@hourly`; `@every <duration>[/<phase>]`; `CRON_TZ=<zone>` prefix.
 * @throws CronError for anything else.
 */
export function parseScheduleCron(input: string): { calendar?: StructuredCalendar; interval?: IntervalMs; timezone?: string } {
  let s = input.trim();
  let timezone: string | undefined;
  const tz = /^(?:CRON_TZ|TZ)=(\S+)\s+/.exec(s);
  if (tz) {
    timezone = tz[1];
    s = s.slice(tz[0].length);
  }
  const hash = s.indexOf('#');
  const comment = hash >= 0 ? s.slice(hash + 1).trim() : undefined;
  if (hash >= 0) s = s.slice(0, hash).trim();
  const every = /^@every\s+(\S+?)(?:\/(\S+))?$/.exec(s);
  if (every) return { interval: { intervalMs: parseDurationMs(every[1]), phaseMs: every[2] ? parseDurationMs(every[2]) : 0 }, timezone };
  if (s.startsWith('@')) {
    if (!NAMED[s]) throw new CronError(`unknown cron descriptor "${s}"`);
    s = NAMED[s];
  }
  const parts = s.split(/\s+/);
  let fields: Field[];
  if (parts.length === 5) fields = ['minute', 'hour', 'dayOfMonth', 'month', 'dayOfWeek'];
  else if (parts.length === 6) fields = ['minute', 'hour', 'dayOfMonth', 'month', 'dayOfWeek', 'year'];
  else if (parts.length === 7) fields = ['second', 'minute', 'hour', 'dayOfMonth', 'month', 'dayOfWeek', 'year'];
  else throw new CronError(`cron string "${input}" must have 5, 6 or 7 fields`);
  const calendar: StructuredCalendar = { second: [{ start: 0, end: 0, step: 1 }] };
  fields.forEach((f, i) => {
    // An unrestricted year stays unset (every year).
    if (f !== 'year' || parts[i] !== '*') calendar[f] = parseField(parts[i], f);
  });
  if (comment) calendar.comment = comment;
  return { calendar, timezone };
}

function rangeText(r: CalRange, field: Field): string | null {
  const start = r.start ?? 0;
  const end = r.end && r.end > start ? r.end : start;
  const step = r.step && r.step > 0 ? r.step : 1;
  if (field === 'year') return null;
  const [lo, hi] = LIMITS[field];
  const s = Math.max(start, lo);
  const e = Math.min(field === 'dayOfWeek' && end === 7 ? 7 : end, field === 'dayOfWeek' ? 7 : hi);
  if (s > e) return null;
  if (s === e) return String(s);
  return step > 1 ? `${s}-${e}/${step}` : `${s}-${e}`;
}

function partText(ranges: CalRange[] | null | undefined, field: Field): string {
  if (!ranges || !ranges.length) return DEFAULT_PART[field];
  const items = ranges.map((r) => rangeText(r, field)).filter((x): x is string => x !== null);
  if (!items.length) throw new CronError(`calendar ${field} has no value in range`);
  return items.join(',');
}

function yearMatches(cal: StructuredCalendar, year: number): boolean {
  if (!cal.year || !cal.year.length) return true;
  return cal.year.some((r) => {
    const start = r.start ?? 0;
    const end = r.end && r.end > start ? r.end : start;
    const step = r.step && r.step > 0 ? r.step : 1;
    return year >= start && year <= end && (year - start) % step === 0;
  });
}

const cronCache = new Map<string, Cron>();

/** The croner matcher of a structured calendar; day-of-month and day-of-week must both match. */
function calendarCron(cal: StructuredCalendar, timezone: string): Cron {
  const fields: Field[] = ['second', 'minute', 'hour', 'dayOfMonth', 'month', 'dayOfWeek'];
  const pattern = fields.map((f) => partText(cal[f], f)).join(' ');
  const key = `${timezone}|${pattern}`;
  let c = cronCache.get(key);
  if (!c) {
    try {
      c = new Cron(pattern, { timezone: timezone || 'UTC', legacyMode: false, paused: true });
    } catch (err) {
      throw new CronError(`invalid calendar: ${(err as Error).message}`);
    }
    cronCache.set(key, c);
  }
  return c;
}

/** Next time strictly after `afterMs` that matches the calendar (epoch ms), or undefined. */
export function calendarNext(cal: StructuredCalendar, timezone: string, afterMs: number): number | undefined {
  const c = calendarCron(cal, timezone);
  let t = afterMs;
  for (let i = 0; i < 1000; i++) {
    const next = c.nextRun(new Date(t));
    if (!next) return undefined;
    if (yearMatches(cal, next.getUTCFullYear())) return next.getTime();
    t = next.getTime();
  }
  return undefined;
}

/** Next interval time strictly after `afterMs`: epoch + phase + k × interval. */
export function intervalNext(iv: IntervalMs, afterMs: number): number {
  const phase = iv.phaseMs % iv.intervalMs;
  return Math.floor((afterMs - phase) / iv.intervalMs + 1) * iv.intervalMs + phase;
}

function matches(cal: StructuredCalendar, timezone: string, atMs: number): boolean {
  return calendarNext(cal, timezone, atMs - 1) === atMs;
}

/**
 * Next action time of a schedule spec strictly after `afterMs` (epoch ms): the earliest calendar
 * or interval time inside [start, end] that no exclusion calendar matches; undefined when none.
 */
export function specNext(spec: CompiledSpec, afterMs: number): number | undefined {
  let t = spec.startMs !== null && spec.startMs - 1 > afterMs ? spec.startMs - 1 : afterMs;
  for (let i = 0; i < 10_000; i++) {
    let best: number | undefined;
    for (const c of spec.calendars) {
      const n = calendarNext(c, spec.timezone, t);
      if (n !== undefined && (best === undefined || n < best)) best = n;
    }
    for (const iv of spec.intervals) {
      const n = intervalNext(iv, t);
      if (best === undefined || n < best) best = n;
    }
    if (best === undefined || (spec.endMs !== null && best > spec.endMs)) return undefined;
    if (!spec.excludes.some((x) => matches(x, spec.timezone, best))) return best;
    t = best;
  }
  return undefined;
}

/** Standard-form cron of StartWorkflowExecution.cronSchedule, compiled once. */
function workflowCron(cronSchedule: string): { cron?: Cron; every?: IntervalMs } {
  let s = cronSchedule.trim();
  let timezone = 'UTC';
  const tz = /^(?:CRON_TZ|TZ)=(\S+)\s+/.exec(s);
  if (tz) {
    timezone = tz[1];
    s = s.slice(tz[0].length);
  }
  const every = /^@every\s+(\S+)$/.exec(s);
  if (every) return { every: { intervalMs: parseDurationMs(every[1]), phaseMs: 0 } };
  if (NAMED[s]) s = NAMED[s];
  if (s.split(/\s+/).length !== 5) throw new CronError(`invalid cron schedule "${cronSchedule}": expected 5 fields`);
  try {
    // robfig/cron's standard parser: day-of-month OR day-of-week when both are restricted.
    return { cron: new Cron(s, { timezone, legacyMode: true, paused: true }) };
  } catch (err) {
    throw new CronError(`invalid cron schedule "${cronSchedule}": ${(err as Error).message}`);
  }
}

/** @throws CronError when `cronSchedule` is not a valid StartWorkflowExecution cron schedule. */
export function validateCronSchedule(cronSchedule: string): void {
  workflowCron(cronSchedule);
}

/**
 * Backoff (ms) before the next run of a cron workflow: the next cron time after `closeMs`, counted
 * on the run's schedule from `startMs` (the real server's GetBackoffForNextSchedule; `@every d`
 * fires every d after the start). For the first run pass the start time as both.
 */
export function cronBackoffMs(cronSchedule: string, startMs: number, closeMs: number): number {
  const { cron, every } = workflowCron(cronSchedule);
  if (every) {
    const n = Math.max(1, Math.ceil((closeMs - startMs) / every.intervalMs));
    return startMs + n * every.intervalMs - closeMs;
  }
  // Times are truncated to the second, as the real server does before asking the schedule.
  let next = cron!.nextRun(new Date(Math.floor(startMs / 1000) * 1000))?.getTime();
  while (next !== undefined && next < closeMs) next = cron!.nextRun(new Date(Math.max(next, Math.floor(closeMs / 1000) * 1000 - 1)))?.getTime();
  return next === undefined ? 0 : Math.max(0, next - closeMs);
}
