/**
 * Closing months (DESIGN.md "Durable processes": billing period close; README "Billing"): workflow
 * `billing-month`, one for all organizations. It sleeps on a durable timer to the end of its month
 * (plus CLOSE_GRACE_MS), closes the month's invoices batch by batch (one activity per 1,000
 * organizations, each safe to repeat), then continues as new with the next month. A restart of the
 * worker or the server resumes the timer; a month whose end has passed while nothing ran is closed at
 * once. Temporal schedules are not used: the embedded dev server does not support them yet.
 */
import { continueAsNew, proxyActivities, sleep } from '@temporalio/workflow';
import type { BillingActivities } from '../activities/billing';
import { CLOSE_GRACE_MS, nextPeriod, periodRange } from '../domain/billing/periods';
import { RETRY } from './retryPolicies';

const acts = proxyActivities<BillingActivities>({ startToCloseTimeout: '5 minutes', retry: RETRY.untilDone });

/** Input of the month-closing workflow. */
export interface BillingMonthInput {
  /** The month to close, `yyyy-mm` (UTC). */
  period: string;
  /** Close this month only and complete (tests, benchmarks, an operator closing one month by hand); default: go on with the next month. */
  once?: boolean;
  /** Organizations per close activity (default 1,000). */
  batchSize?: number;
}

/** What a run closed. */
export interface BillingMonthResult {
  period: string;
  /** Invoices inserted by this run (a repeated close inserts none). */
  invoices: number;
  totalCents: number;
}

/** Sleeps to the end of `input.period`, closes it for every organization, then continues with the next month. */
export async function billingMonth(input: BillingMonthInput): Promise<BillingMonthResult> {
  const closeAt = periodRange(input.period).end.getTime() + CLOSE_GRACE_MS;
  const wait = closeAt - Date.now(); // workflow time: deterministic, skipped by the test server
  if (wait > 0) await sleep(wait);
  let afterOrgId = '';
  let invoices = 0;
  let totalCents = 0;
  for (;;) {
    const r = await acts.closeBillingPeriodBatch({ period: input.period, afterOrgId, limit: input.batchSize });
    invoices += r.invoices;
    totalCents += r.totalCents;
    if (r.lastOrgId === null) break;
    afterOrgId = r.lastOrgId;
  }
  if (input.once) return { period: input.period, invoices, totalCents };
  return continueAsNew<typeof billingMonth>({ period: nextPeriod(input.period), batchSize: input.batchSize });
}
