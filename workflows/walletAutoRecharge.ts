/**
 * `wallet-recharge/{orgId}` (docs/api-notes.md "Billing": auto-recharge): one auto-recharge of an organization's
 * wallet, started after the commit of the usage charge that crossed the threshold (services/billing/autoRecharge.ts).
 * The id makes it one at a time per organization. One activity charges the saved payment method once (through
 * `performOnce`) and credits the ledger; a declined card is its answer, not an error (auto-recharge is turned off,
 * never retried); only an unavailable provider is retried, `RETRY.standard`-like but capped at 6 attempts, after
 * which the run emits `billing.auto_recharge.failed` (code `provider_unavailable`) and fails, the intent staying
 * pending for the next attempt to reconcile.
 */
import { ActivityFailure, patched, proxyActivities } from '@temporalio/workflow';
import type { BillingActivities } from '../activities/billing';

/** Input of `wallet-recharge/{orgId}`. */
export interface WalletAutoRechargeInput {
  orgId: string;
  /** `rch_…`, one per crossing. */
  attemptId: string;
}

const { autoRechargeWallet } = proxyActivities<BillingActivities>({
  startToCloseTimeout: '2 minutes',
  retry: { initialInterval: '2s', backoffCoefficient: 2, maximumInterval: '1m', maximumAttempts: 6 },
});

const { reportAutoRechargeUnavailable } = proxyActivities<BillingActivities>({
  startToCloseTimeout: '1 minute',
  retry: { initialInterval: '2s', backoffCoefficient: 2, maximumInterval: '1m' },
});

/**
 * Runs one recharge attempt. @returns what it did (`credited`, `processing`, `declined`, `unknown`, `skipped`)
 * @throws ActivityFailure when the provider stayed unavailable through every retry (after the event saying so)
 */
export async function walletAutoRecharge(input: WalletAutoRechargeInput): Promise<{ status: string }> {
  try {
    const out = await autoRechargeWallet(input);
    return { status: out.status };
  } catch (err) {
    // Runs started before the event existed fail as they did (docs/operations.md "Versioning").
    if (err instanceof ActivityFailure && patched('wallet-recharge-unavailable-event')) {
      await reportAutoRechargeUnavailable({ ...input, reason: err.cause?.message ?? err.message });
    }
    throw err;
  }
}
