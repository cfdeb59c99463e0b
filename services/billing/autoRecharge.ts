/**
 * Wallet auto-recharge (docs/api-notes.md "Billing": auto-recharge; docs/going-live.md "Stripe"):
 * - {@link queueAutoRechargeIfCrossed}: in the transaction of a usage charge that took the balance from at or above
 *   the organization's auto-recharge threshold to below it, records the start of `wallet-recharge/{orgId}` in the
 *   `workflow_starts` outbox (../workflowStarts.ts; the start sweep starts it after the commit). The id makes it one
 *   recharge at a time per organization: a crossing while one runs starts nothing more.
 * - {@link runAutoRecharge}: the recharge itself (activity `autoRechargeWallet`): an off-session payment of the
 *   amount on the organization's saved payment method (../billing/payments.ts `chargeTopUp`: Stripe's PaymentIntent
 *   with `off_session`, `confirm`), the idempotency key `auto-recharge:{attemptId}`, through ../effects.ts
 *   `performOnce` (kind `recharge`; a retry after a crash asks again with the same idempotency key, which Stripe
 *   answers with the same PaymentIntent). A settled payment is credited through the top-up path (`creditTopUp`,
 *   once per payment id whether the webhook or this answer comes first). A declined card turns auto-recharge off
 *   and emits `billing.auto_recharge.failed`: the card is never charged again until the settings are saved again.
 */
import type { Knex } from 'knex';
import type { Db } from '../../db';
import { newId } from '../../db/ids';
import { disableAutoRecharge, getAutoRecharge, getWallet, type WalletChange } from '../../db/repositories/billing';
import { getIntent, resolveIntent } from '../../db/repositories/providerIntents';
import { crossedBelow, WALLET_CURRENCY } from '../../domain/billing/wallet';
import { emitEvent } from '../../events/emit';
import { createPayments, PaymentError, type PaymentsAdapter } from '../../providers/payments';
import { workflowIds } from '../../temporal.config';
import { performOnce, type FaultHook } from '../effects';
import { WorkflowStarts } from '../workflowStarts';
import { chargeTopUp, creditTopUp } from './payments';

/** Input of `wallet-recharge/{orgId}`. */
export interface AutoRechargeInput {
  orgId: string;
  /** `rch_…`: one per crossing; the payment's idempotency key derives from it. */
  attemptId: string;
}

/** What one recharge did. */
export type AutoRechargeOutcome =
  | { status: 'credited' | 'processing'; paymentId: string; amountCents: number; performedNow: boolean }
  | { status: 'declined'; code: string }
  | { status: 'unknown'; reason: string }
  | { status: 'skipped'; reason: 'disabled' | 'above_threshold' };

/** The payment's idempotency key of a recharge attempt. */
export const autoRechargeKey = (attemptId: string) => `auto-recharge:${attemptId}`;

/**
 * Records the start of one recharge when `change` (a usage charge, in `trx`) crossed the organization's
 * auto-recharge threshold with auto-recharge on. @returns the attempt id, or null when none is owed
 */
export async function queueAutoRechargeIfCrossed(trx: Knex.Transaction, orgId: string, change: WalletChange | null): Promise<string | null> {
  if (!change || change.balanceAfterCents >= change.balanceBeforeCents) return null;
  const s = await getAutoRecharge(trx, orgId);
  if (!s.enabled || s.thresholdCents === null || !crossedBelow(change.balanceBeforeCents, change.balanceAfterCents, s.thresholdCents)) return null;
  const attemptId = newId('rch');
  // No start target here: the start sweep (beside the worker) starts it once this transaction committed.
  await new WorkflowStarts(trx as unknown as Db, undefined).record(trx, 'walletAutoRecharge', {
    workflowId: workflowIds.walletAutoRecharge(orgId),
    args: [{ orgId, attemptId }],
    orgId,
    resourceId: attemptId,
  });
  return attemptId;
}

/**
 * Runs one recharge attempt (see the module comment).
 * @param opts.payments the provider (default: the configured one); `fault` tests only: crash points of the payment
 * @throws PaymentError `provider_unavailable` (the activity retries; the intent stays pending)
 */
export async function runAutoRecharge(db: Db, input: AutoRechargeInput, opts: { payments?: PaymentsAdapter; fault?: FaultHook } = {}): Promise<AutoRechargeOutcome> {
  const { orgId, attemptId } = input;
  const payments = opts.payments ?? createPayments();
  const s = await getAutoRecharge(db, orgId);
  const started = await getIntent(db, orgId, 'recharge', attemptId);
  if (!started) {
    // Not asked yet: only while it is on and the balance is still below the threshold (a top-up may have come first).
    if (!s.enabled || s.amountCents === null || s.thresholdCents === null) return { status: 'skipped', reason: 'disabled' };
    if ((await getWallet(db, orgId)).balanceCents >= s.thresholdCents) return { status: 'skipped', reason: 'above_threshold' };
  }
  const amountCents = started ? Number(started.request.amountCents) : s.amountCents!;
  const charge = () => chargeTopUp(db, orgId, { amountCents, idempotencyKey: autoRechargeKey(attemptId), description: 'Auto-recharge' }, payments);
  let outcome;
  try {
    outcome = await performOnce(db, orgId, {
      kind: 'recharge',
      reference: attemptId,
      subjectId: orgId,
      provider: payments.provider,
      request: { amountCents, thresholdCents: s.thresholdCents },
      perform: charge,
      // The same request with the same idempotency key: the provider answers the payment it made (Stripe idempotent requests).
      lookup: async () => ({ found: await charge() }),
      fault: opts.fault,
    });
  } catch (err) {
    if (!(err instanceof PaymentError) || err.code === 'provider_unavailable') throw err;
    await db.transaction(async (trx) => {
      const intent = await getIntent(trx, orgId, 'recharge', attemptId);
      if (intent) await resolveIntent(trx, orgId, intent.id, { declined: err.code });
      if (await disableAutoRecharge(trx, orgId, `${err.code}: ${err.message}`)) {
        await emitEvent(trx, orgId, 'billing.auto_recharge.failed', {
          attemptId,
          amountCents,
          currency: WALLET_CURRENCY,
          code: err.code,
          reason: err.message.slice(0, 500),
          autoRechargeEnabled: false,
          balanceCents: (await getWallet(trx, orgId)).balanceCents,
        });
      }
    });
    return { status: 'declined', code: err.code };
  }
  if (outcome.state === 'unknown') return { status: 'unknown', reason: outcome.reason };
  const payment = outcome.result;
  await db.transaction(async (trx) => {
    if (payment.status === 'succeeded') await creditTopUp(trx, orgId, { paymentId: payment.paymentId, amountCents: payment.amountCents, description: 'Auto-recharge' });
    await resolveIntent(trx, orgId, outcome.intent.id, payment);
  });
  await opts.fault?.('after_record', 'recharge', attemptId);
  return { status: payment.status === 'succeeded' ? 'credited' : 'processing', paymentId: payment.paymentId, amountCents: payment.amountCents, performedNow: outcome.performedNow };
}
