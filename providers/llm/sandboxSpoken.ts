/**
 * How the sandbox LLM says a tool result's members to a person (docs/api-notes.md "Sandbox LLM", rule 4): keys
 * as words, ISO 8601 dates and times in words in the agent's time zone ("Thursday, December 3 at 10:00 AM"),
 * durations with their unit, true/false as "it is …", and no identifiers unless the person asked for one.
 */

/** Most details said of one result. */
export const MAX_DETAILS = 4;
/** Longest text member said, characters. */
export const MAX_TEXT_CHARS = 80;

/** `startTime` / `booking_id` → `start time` / `booking id`. */
export function humanKey(key: string): string {
  return key
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .replace(/[_-]+/g, ' ')
    .toLowerCase()
    .trim();
}

const ISO_DATE = /^(\d{4})-(\d{2})-(\d{2})$/;
const ISO_DATE_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?$/;

const formats = new Map<string, Intl.DateTimeFormat>();
function format(timeZone: string, withTime: boolean): Intl.DateTimeFormat {
  const key = `${timeZone}|${withTime}`;
  let f = formats.get(key);
  if (!f) {
    const opts: Intl.DateTimeFormatOptions = { weekday: 'long', month: 'long', day: 'numeric', ...(withTime ? { hour: 'numeric', minute: '2-digit', hour12: true } : {}) };
    try {
      f = new Intl.DateTimeFormat('en-US', { ...opts, timeZone });
    } catch {
      f = new Intl.DateTimeFormat('en-US', { ...opts, timeZone: 'UTC' });
    }
    formats.set(key, f);
  }
  return f;
}

function words(ms: number, timeZone: string, withTime: boolean): string {
  const parts = Object.fromEntries(format(timeZone, withTime).formatToParts(ms).map((p) => [p.type, p.value]));
  const day = `${parts.weekday}, ${parts.month} ${parts.day}`;
  return withTime ? `${day} at ${parts.hour}:${parts.minute} ${String(parts.dayPeriod).toUpperCase()}` : day;
}

/**
 * An ISO 8601 date or date-time in words, or null when `value` is neither. A date-time with `Z` or an offset is
 * said in `timeZone` (IANA; unknown → UTC); one without is a wall time and said as written; a date is a day.
 * E.g. `2026-12-03T16:00:00Z` in America/Chicago → `Thursday, December 3 at 10:00 AM`.
 */
export function spokenDate(value: string, timeZone: string): string | null {
  const v = value.trim();
  const d = ISO_DATE.exec(v);
  if (d) {
    const ms = Date.UTC(+d[1], +d[2] - 1, +d[3]);
    return Number.isNaN(ms) ? null : words(ms, 'UTC', false);
  }
  const dt = ISO_DATE_TIME.exec(v);
  if (!dt) return null;
  const ms = Date.parse(dt[1] ? v : `${v}Z`);
  if (Number.isNaN(ms)) return null;
  return words(ms, dt[1] ? timeZone : 'UTC', true);
}

/** Whether a member is an identifier: its key is `id`, `uuid` or ends in `Id`/`_id`, or its value looks like one. */
export function isIdentifier(key: string, value: unknown): boolean {
  if (/^(id|ids|uuid)$/i.test(key) || /[a-z0-9](Id|ID|Ids|IDs)$/.test(key) || /_ids?$/i.test(key)) return true;
  if (typeof value !== 'string') return false;
  const v = value.trim();
  return (
    /^[a-z]{2,8}_[A-Za-z0-9]{6,}$/.test(v) || // a prefixed id (`bk_cb67…`, `conv_…`)
    /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(v) || // a UUID
    /^(?=.*\d)(?=.*[A-Za-z])[A-Za-z0-9_-]{16,}$/.test(v) // a long opaque token
  );
}

/** Whether the person asked for an identifier (an id, a reference, a number or a code). */
export function asksForIdentifier(message: string): boolean {
  return /\b(ids?|identifiers?|references?|ref|numbers?|codes?)\b/i.test(message);
}

const UNITS = new Set(['minutes', 'seconds', 'hours', 'days']);
const PREPOSITIONS = new Set(['on', 'in', 'at', 'for', 'by', 'to', 'with', 'from', 'of']);

/** One member as a clause, or null when it is not said (an identifier not asked for, a list, an object, a long text). */
function clause(key: string, value: unknown, timeZone: string, idsAsked: boolean): string | null {
  if (value === null || value === undefined || typeof value === 'object') return null;
  if (!idsAsked && isIdentifier(key, value)) return null;
  let name = humanKey(key);
  const last = name.split(' ').pop()!;
  if (typeof value === 'boolean') {
    if (name.startsWith('has ')) return value ? `it has ${name.slice(4)}` : `it does not have ${name.slice(4)}`;
    const what = name.replace(/^is /, '');
    return value ? `it is ${what}` : `it is not ${what}`;
  }
  let said: string;
  if (typeof value === 'number') {
    said = String(value);
    if (UNITS.has(last) && name !== last) {
      name = name.slice(0, -last.length - 1);
      said = `${value} ${value === 1 ? last.slice(0, -1) : last}`;
    }
  } else {
    const text = String(value).trim();
    // An IANA time zone is how the times are already said, not news to the person.
    if (!text || text.length > MAX_TEXT_CHARS || /[{}[\]]/.test(text) || /^[A-Z][A-Za-z_]+\/[A-Za-z_/]+$/.test(text)) return null;
    said = spokenDate(text, timeZone) ?? text;
  }
  return PREPOSITIONS.has(last) ? `${name} ${said}` : `the ${name} is ${said}`;
}

/**
 * Up to {@link MAX_DETAILS} top-level members of `output` as one sentence ("The status is confirmed and the start
 * time is Thursday, December 3 at 10:00 AM."), or null when none is said.
 * @param timeZone the agent's IANA time zone, for dates and times
 * @param idsAsked the person asked for an identifier: ids are said too
 */
export function spokenDetails(output: unknown, timeZone: string, idsAsked: boolean): string | null {
  if (!output || typeof output !== 'object' || Array.isArray(output)) return null;
  const out: string[] = [];
  for (const [k, v] of Object.entries(output as Record<string, unknown>)) {
    if (out.length === MAX_DETAILS) break;
    const c = clause(k, v, timeZone, idsAsked);
    if (c) out.push(c);
  }
  if (!out.length) return null;
  const joined = out.length === 1 ? out[0] : `${out.slice(0, -1).join(', ')} and ${out[out.length - 1]}`;
  return `${joined.replace(/^./, (c) => c.toUpperCase())}.`;
}
