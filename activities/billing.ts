/**
 * Activities of the `billing-month` workflow (docs/api-notes.md "Billing": who closes months): close a month's
 * invoices for a batch of organizations, each invoice with its `invoice.finalized` event in one
 * transaction. Safe to run twice: the unique `(org_id, period)` of `invoices` makes a repeated close a
 * no-op that emits nothing. Also `ensureBillingCalendar`, which the worker's entry points call at start.
 */
import type { Client } from '@temporalio/client';
import { ScheduleOverlapPolicy } from '@temporalio/client';
import type { ActivityDeps } from './index';
import { closePeriodBatch } from '../db/repositories/billing';
import { emitEvent } from '../events/emit';
import { CLOSE_GRACE_MS, isPeriod, type Period } from '../domain/billing/periods';
import { ensureSchedule, workflowIds } from '../temporal.config';
import { reportAutoRechargeUnavailable, runAutoRecharge, type AutoRechargeInput, type AutoRechargeOutcome } from '../services/billing/autoRecharge';

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
  /**
   * One auto-recharge attempt of `wallet-recharge/{orgId}` (services/billing/autoRecharge.ts): charged once, credited
   * once; a decline turns auto-recharge off. @throws PaymentError `provider_unavailable` (retried)
   */
  autoRechargeWallet(input: AutoRechargeInput): Promise<AutoRechargeOutcome>;
  /**
   * The run's last step when the provider stayed unavailable through every retry: `billing.auto_recharge.failed`
   * with code `provider_unavailable`, once per attempt (services/billing/autoRecharge.ts).
   * @returns whether it was emitted now
   */
  reportAutoRechargeUnavailable(input: AutoRechargeInput & { reason: string }): Promise<boolean>;
}

/** Builds the billing activities. */
export function createBillingActivities(deps: Pick<ActivityDeps, 'db'>): BillingActivities {
  return {
    async autoRechargeWallet(input) {
      return runAutoRecharge(deps.db, input);
    },
    async reportAutoRechargeUnavailable(input) {
      return reportAutoRechargeUnavailable(deps.db, input);
    },
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

/** Days a missed month close may still start late (server down at the month boundary), ms. */
const BILLING_CATCHUP_MS = 365 * 86_400_000;

/**
 * Makes sure the billing calendar exists (docs/api-notes.md "Billing": who closes months): the Temporal
 * schedule `billing-month` that starts `billingMonth` at 00:01 UTC on the 1st of every month (the
 * month's end plus CLOSE_GRACE_MS); a close missed while the cluster was down starts when it is back
 * (catch-up window one year, buffered, never two at once). A no-op when the schedule exists. Called
 * by `npm start` and `start:worker` at start-up.
 * @param target client and task queue; `scheduleId` only for tests (default `billing-month`)
 * @returns true when this call created the schedule
 */
export async function ensureBillingCalendar(target: { client: Client; taskQueue: string; scheduleId?: string }): Promise<boolean> {
  return ensureSchedule(target, 'billingMonth', {
    scheduleId: target.scheduleId ?? workflowIds.billingMonth(),
    spec: { calendars: [{ dayOfMonth: 1, hour: 0, minute: CLOSE_GRACE_MS / 60_000, comment: 'month end + close grace' }] },
    args: [{}],
    orgId: null,
    policies: { overlap: ScheduleOverlapPolicy.BUFFER_ALL, catchupWindow: BILLING_CATCHUP_MS },
  });
}
