/**
 * Closing months (DESIGN.md "Durable processes": billing period close; docs/api-notes.md "Billing"): workflow
 * `billing-month`, one for all organizations. The calendar is a Temporal schedule (`billing-month`,
 * created by `ensureBillingCalendar`) that starts this workflow at 00:01 UTC on the 1st of every month
 * (the month's end plus CLOSE_GRACE_MS); such a run closes the month before its scheduled time
 * (search attribute `TemporalScheduledStartTime`, set by the server) batch by batch (one activity per
 * 1,000 organizations, each safe to repeat) and completes. Started with an explicit `period` it
 * sleeps on a durable timer to that month's end first and then, unless `once`, continues as new with
 * the next month (an operator closing months by hand, tests, benchmarks).
 */
import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';
import { continueAsNew, proxyActivities, sleep, workflowInfo } from '@temporalio/workflow';
import type { BillingActivities } from '../activities/billing';
import { CLOSE_GRACE_MS, nextPeriod, periodOf, periodRange } from '../domain/billing/periods';
import { RETRY } from './retryPolicies';

const acts = proxyActivities<BillingActivities>({ startToCloseTimeout: '5 minutes', retry: RETRY.untilDone });

/** Input of the month-closing workflow. */
export interface BillingMonthInput {
  /**
   * The month to close, `yyyy-mm` (UTC). Omitted by the schedule: the month that ended before the
   * run's scheduled time.
   */
  period?: string;
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

/** Search attribute the Temporal server sets on a scheduled start: the schedule's nominal time. */
const SCHEDULED_START = defineSearchAttributeKey('TemporalScheduledStartTime', SearchAttributeType.DATETIME);

/**
 * The month a scheduled run closes: the one that ended before its scheduled time (00:01 UTC on the
 * 1st → the previous month); without the attribute, before the workflow's own start time.
 */
function scheduledPeriod(): string {
  const at: Date = workflowInfo().typedSearchAttributes.get(SCHEDULED_START) ?? workflowInfo().startTime;
  return periodOf(new Date(at.getTime() - CLOSE_GRACE_MS - 1));
}

/**
 * Closes a month for every organization: the month before the scheduled time (schedule runs), or
 * `input.period` after sleeping to its end, then continuing with the next month unless `once`.
 */
export async function billingMonth(input: BillingMonthInput): Promise<BillingMonthResult> {
  if (input.period === undefined) return closeMonth(scheduledPeriod(), input.batchSize);
  const closeAt = periodRange(input.period).end.getTime() + CLOSE_GRACE_MS;
  const wait = closeAt - Date.now(); // workflow time: deterministic, skipped by the test server
  if (wait > 0) await sleep(wait);
  const result = await closeMonth(input.period, input.batchSize);
  if (input.once) return result;
  return continueAsNew<typeof billingMonth>({ period: nextPeriod(input.period), batchSize: input.batchSize });
}

/** Closes `period` batch by batch; returns what this run inserted. */
async function closeMonth(period: string, batchSize: number | undefined): Promise<BillingMonthResult> {
  let afterOrgId = '';
  let invoices = 0;
  let totalCents = 0;
  for (;;) {
    const r = await acts.closeBillingPeriodBatch({ period, afterOrgId, limit: batchSize });
    invoices += r.invoices;
    totalCents += r.totalCents;
    if (r.lastOrgId === null) break;
    afterOrgId = r.lastOrgId;
  }
  return { period, invoices, totalCents };
}
