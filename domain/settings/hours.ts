/**
 * Opening hours in a time zone (escalation destinations and the business hours of a number; docs/api-notes.md
 * "Variables, escalation, onboarding, meta and settings"): weekly `HH:MM` intervals in an IANA time zone.
 */
import type { FieldError } from '../errors';
import type { HoursInterval, Weekday } from '../../schemas/types/settings';

const WEEKDAYS: readonly Weekday[] = ['sun', 'mon', 'tue', 'wed', 'thu', 'fri', 'sat'];

/** True when `tz` is an IANA time zone the runtime knows. */
export function isTimeZone(tz: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: tz });
    return true;
  } catch {
    return false;
  }
}

const minutes = (hhmm: string): number => Number(hhmm.slice(0, 2)) * 60 + Number(hhmm.slice(3, 5));

/**
 * Field errors of a time zone and its hours (the schema checked the shapes): an unknown time zone, and an
 * interval that does not close after it opens.
 * @param prefix field prefix, e.g. `` (top level) or `businessHours.`
 */
export function hoursErrors(timeZone: string | undefined, hours: HoursInterval[] | null | undefined, prefix = ''): FieldError[] {
  const errors: FieldError[] = [];
  if (timeZone !== undefined && !isTimeZone(timeZone)) errors.push({ field: `${prefix}timeZone`, message: 'must be an IANA time zone, e.g. America/Chicago' });
  (hours ?? []).forEach((h, i) => {
    if (minutes(h.close) <= minutes(h.open)) errors.push({ field: `${prefix}hours[${i}].close`, message: 'must be after open' });
  });
  return errors;
}

/**
 * Whether `hours` are open at `at` in `timeZone` (null hours: always open).
 * @param at the instant (default now)
 */
export function isOpen(timeZone: string, hours: HoursInterval[] | null, at: Date = new Date()): boolean {
  if (!hours) return true;
  const parts = new Intl.DateTimeFormat('en-US', { timeZone, weekday: 'short', hour: '2-digit', minute: '2-digit', hourCycle: 'h23' }).formatToParts(at);
  const get = (type: string) => parts.find((p) => p.type === type)?.value ?? '';
  const day = WEEKDAYS[['Sun', 'Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat'].indexOf(get('weekday'))];
  const now = Number(get('hour')) * 60 + Number(get('minute'));
  return hours.some((h) => h.day === day && minutes(h.open) <= now && now < minutes(h.close));
}
