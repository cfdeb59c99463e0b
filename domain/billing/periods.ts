/**
 * Billing periods (docs/api-notes.md "Billing": invoices): one calendar month per invoice, `yyyy-mm`, in UTC
 * (organizations have no time zone of their own yet). Pure date arithmetic shared by the API, the
 * activities and the `billing-month` workflow (no clock is read here).
 */

/** A period `yyyy-mm`, e.g. `2026-11`. */
export type Period = string;

const PERIOD = /^(\d{4})-(0[1-9]|1[0-2])$/;

/** True for a well-formed period `yyyy-mm` (years 2000–2999). */
export function isPeriod(s: unknown): s is Period {
  return typeof s === 'string' && PERIOD.test(s) && s >= '2000-01' && s <= '2999-12';
}

/** The period containing instant `at` (UTC). */
export function periodOf(at: Date | number): Period {
  const d = new Date(at);
  return `${d.getUTCFullYear()}-${String(d.getUTCMonth() + 1).padStart(2, '0')}`;
}

/**
 * First instant of the period and first instant after it (UTC), as a half-open range `[start, end)`.
 * @throws Error for a malformed period
 */
export function periodRange(period: Period): { start: Date; end: Date } {
  const m = PERIOD.exec(period);
  if (!m) throw new Error(`not a billing period (yyyy-mm): ${period}`);
  const y = Number(m[1]);
  const mo = Number(m[2]) - 1;
  return { start: new Date(Date.UTC(y, mo, 1)), end: new Date(Date.UTC(y, mo + 1, 1)) };
}

/** The period after `period`. */
export function nextPeriod(period: Period): Period {
  return periodOf(periodRange(period).end);
}

/** The period before `period`. */
export function previousPeriod(period: Period): Period {
  return periodOf(periodRange(period).start.getTime() - 1);
}

/**
 * How long after a period's end the `billing-month` workflow closes it (ms): a usage entry whose
 * transaction began before midnight and commits just after it still lands in its own month's invoice.
 */
export const CLOSE_GRACE_MS = 60_000;
