/**
 * Activities of the `billing-month` workflow (README "Billing": who closes months): close a month's
 * invoices for a batch of organizations, each invoice with its `invoice.finalized` event in one
 * transaction. Safe to run twice: the unique `(org_id, period)` of `invoices` makes a repeated close a
 * no-op that emits nothing. Also `ensureBillingCalendar`, which the worker's entry points call at start.
 */
import type { Client } from '@temporalio/client';
import { WorkflowExecutionAlreadyStartedError } from '@temporalio/client';
import type { ActivityDeps } from './index';
import { closePeriodBatch } from '../db/repositories/billing';
import { emitEvent } from '../events/emit';
import { isPeriod, periodOf, type Period } from '../domain/billing/periods';
import { startWorkflow, workflowIds } from '../temporal.config';

/** Organizations closed per activity (one transaction each). */
export const CLOSE_BATCH_SIZE = 1000;

/** Input of {@link BillingActivities.closeBillingPeriodBatch}. */
export interface ClosePeriodBatchInput {
  /** `yyyy-mm`, a month that has ended. */
  period: Period;
  /** Close the organizations whose id sorts after this ('' = from the first). */
  afterOrgId: string;
  /** Organizations per batch (default {@link CLOSE_BATCH_SIZE}). */
  limit?: number;
}

/** What one batch did. */
export interface ClosePeriodBatchResult {
  /** Invoices this run inserted (0 when a previous run had closed them). */
  invoices: number;
  /** Total of those invoices, US cents. */
  totalCents: number;
  /** Last organization of the batch; null when no organization was left (the month is closed). */
  lastOrgId: string | null;
}

/** The billing activities by name. */
export interface BillingActivities {
  /**
   * Closes `period` for the next batch of organizations: one immutable invoice each and one
   * `invoice.finalized` per invoice inserted, in one transaction.
   * @throws Error for a malformed period (not retried usefully: a programming error)
   */
  closeBillingPeriodBatch(input: ClosePeriodBatchInput): Promise<ClosePeriodBatchResult>;
}

/** Builds the billing activities. */
export function createBillingActivities(deps: Pick<ActivityDeps, 'db'>): BillingActivities {
  return {
    async closeBillingPeriodBatch(input) {
      if (!isPeriod(input.period)) throw new Error(`not a billing period (yyyy-mm): ${input.period}`);
      return deps.db.transaction(async (trx) => {
        const { closed, lastOrgId } = await closePeriodBatch(trx, input.period, input.afterOrgId, input.limit ?? CLOSE_BATCH_SIZE);
        for (const inv of closed) {
          await emitEvent(trx, inv.orgId, 'invoice.finalized', {
            invoiceId: inv.id!,
            period: inv.period,
            periodStart: inv.periodStart,
            periodEnd: inv.periodEnd,
            currency: inv.currency,
            totalCents: inv.totalCents,
            lines: inv.lines,
          });
        }
        return { invoices: closed.length, totalCents: closed.reduce((s, i) => s + i.totalCents, 0), lastOrgId };
      });
    },
  };
}

/**
 * Makes sure the month-closing workflow runs (README "Billing": who closes months): starts
 * `billing-month` for the month of `now` unless it is running (`USE_EXISTING`); the running one
 * continues as new from month to month. Called by `npm start` and `start:worker` at start-up.
 * @param now the current time (default the clock)
 * @returns the run id of the running workflow
 */
export async function ensureBillingCalendar(target: { client: Client; taskQueue: string }, now: Date = new Date()): Promise<string> {
  try {
    const handle = await startWorkflow(target, 'billingMonth', {
      workflowId: workflowIds.billingMonth(),
      args: [{ period: periodOf(now) }],
      orgId: null,
      workflowIdConflictPolicy: 'USE_EXISTING',
    });
    return handle.firstExecutionRunId;
  } catch (err) {
    if (err instanceof WorkflowExecutionAlreadyStartedError) return '';
    throw err;
  }
}
