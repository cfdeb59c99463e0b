/**
 * Wallet auto-recharge (docs/api-notes.md "Billing": auto-recharge; docs/going-live.md "Stripe"):
 * - The trigger: the statement that charges usage (db/repositories/usage.ts `usageChargeCtes`: every `recordUsage`
 *   and every stored chat, widget, SMS or voice turn) records, when the charge took the balance from at or above the
 *   auto-recharge threshold to below it with auto-recharge on, the start of `wallet-recharge/{orgId}` with a new
 *   attempt id (`rch_…`) in the `workflow_starts` outbox, in the charge's own transaction; the start sweep of
 *   ../workflowStarts.ts starts it after the commit. The id makes it one recharge at a time per organization: a
 *   crossing while one runs starts nothing more.
 * - {@link runAutoRecharge}: the recharge itself (activity `autoRechargeWallet`): an off-session payment of the
 *   amount on the organization's saved payment method (../billing/payments.ts `chargeTopUp`: Stripe's PaymentIntent
 *   with `off_session`, `confirm`), the idempotency key `auto-recharge:{attemptId}`, through ../effects.ts
 *   `performOnce` (kind `recharge`; a retry after a crash asks again with the same idempotency key, which Stripe
 *   answers with the same PaymentIntent). A settled payment is credited through the top-up path (`creditTopUp`,
 *   once per payment id whether the webhook or this answer comes first). A declined card turns auto-recharge off
 *   and emits `billing.auto_recharge.failed`: the card is never charged again until the settings are saved again.
 */
import type { Db } from '../../db';
import { disableAutoRecharge, getAutoRecharge, getWallet } from '../../db/repositories/billing';
import { getIntent, resolveIntent } from '../../db/repositories/providerIntents';
import { WALLET_CURRENCY } from '../../domain/billing/wallet';
import { emitEvent } from '../../events/emit';
import { hasEventFor } from '../../db/repositories/events';
import { createPayments, PaymentError, type PaymentsAdapter } from '../../providers/payments';
import { performOnce, type FaultHook } from '../effects';
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

/**
 * A recharge whose provider stayed unavailable through every retry of its run (workflows/walletAutoRecharge.ts):
 * emits `billing.auto_recharge.failed` with code `provider_unavailable` once per attempt. Auto-recharge stays as it
 * is (on: the next crossing tries again) and the payment intent stays pending, so a payment the provider made
 * after all is still reconciled (docs/api-notes.md "Billing": auto-recharge).
 * @param input.reason the last failure's message (cut to 500 characters)
 * @returns whether the event was emitted now (false when this attempt's was already)
 */
export async function reportAutoRechargeUnavailable(db: Db, input: AutoRechargeInput & { reason: string }): Promise<boolean> {
  const { orgId, attemptId } = input;
  return db.transaction(async (trx) => {
    if (await hasEventFor(trx, orgId, 'billing.auto_recharge.failed', 'attemptId', attemptId)) return false;
    const s = await getAutoRecharge(trx, orgId);
    const intent = await getIntent(trx, orgId, 'recharge', attemptId);
    await emitEvent(trx, orgId, 'billing.auto_recharge.failed', {
      attemptId,
      amountCents: intent ? Number(intent.request.amountCents) : s.amountCents ?? 0,
      currency: WALLET_CURRENCY,
      code: 'provider_unavailable',
      reason: input.reason.slice(0, 500),
      autoRechargeEnabled: s.enabled,
      balanceCents: (await getWallet(trx, orgId)).balanceCents,
    });
    return true;
  });
}
