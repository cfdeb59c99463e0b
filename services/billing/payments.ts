/**
 * Wallet top-ups through the payments provider and its webhooks (docs/api-notes.md "Billing"; docs/going-live.md
 * "Stripe"). The ledger holds one entry per provider object (payment, refund, dispute) — unique
 * `(org_id, payment_id)` under the wallet row's lock — so a top-up is credited once whether the API's answer
 * or the provider's webhook arrives first, and a re-delivered webhook changes nothing.
 */
import type { Knex } from 'knex';
import type { Db } from '../../db';
import { creditPayment, type WalletChange } from '../../db/repositories/billing';
import { getPaymentCustomer, savePaymentCustomer } from '../../db/repositories/paymentCustomers';
import { claimWebhookEvent, releaseWebhookEvent } from '../../db/repositories/providerWebhooks';
import { getOrganization } from '../../db/repositories/organizations';
import { WALLET_CURRENCY } from '../../domain/billing/wallet';
import { createPayments, type PaymentEvent, type PaymentResult, type PaymentsAdapter } from '../../providers/payments';
import { emitWalletLowIfCrossed } from './usage';

/**
 * Charges a top-up: the organization's customer at the provider is created first when the provider needs one
 * (stored in `payment_customers`).
 * @param req.amountCents whole US cents (validated by the caller)
 * @param req.idempotencyKey the request's `Idempotency-Key`: the provider's idempotency key is derived from it
 * @throws PaymentError
 */
export async function chargeTopUp(
  db: Db,
  orgId: string,
  req: { amountCents: number; idempotencyKey: string; description?: string },
  payments: PaymentsAdapter = createPayments(),
): Promise<PaymentResult> {
  let customerId: string | null = null;
  if (payments.needsCustomer) {
    customerId = (await getPaymentCustomer(db, orgId, payments.provider)) ?? null;
    if (!customerId) customerId = await savePaymentCustomer(db, orgId, payments.provider, await payments.createCustomer(orgId));
  }
  return payments.charge(orgId, { amountCents: req.amountCents, currency: WALLET_CURRENCY, idempotencyKey: req.idempotencyKey, description: req.description, customerId });
}

/** Records a top-up that succeeded (once per payment id) in the caller's transaction. */
export async function creditTopUp(trx: Knex.Transaction, orgId: string, p: { paymentId: string; amountCents: number; description?: string | null }): Promise<WalletChange & { duplicate: boolean }> {
  return creditPayment(trx, orgId, { kind: 'topup', amountCents: p.amountCents, paymentId: p.paymentId, description: p.description ?? 'Wallet top-up' });
}

/** Applies one ledger event of a verified webhook (once per provider object), with `billing.wallet.low` on a crossing. */
async function applyEvent(trx: Knex.Transaction, e: PaymentEvent): Promise<boolean> {
  let change: WalletChange & { duplicate: boolean };
  switch (e.type) {
    case 'payment_succeeded':
      change = await creditTopUp(trx, e.orgId, { paymentId: e.paymentId, amountCents: e.amountCents, description: e.description });
      break;
    case 'refund_succeeded':
      change = await creditPayment(trx, e.orgId, { kind: 'topup_refund', amountCents: -e.amountCents, paymentId: e.objectId, description: `Refund of top-up ${e.paymentId}` });
      break;
    case 'dispute_opened':
      change = await creditPayment(trx, e.orgId, { kind: 'dispute', amountCents: -e.amountCents, paymentId: e.objectId, description: `Dispute of top-up ${e.paymentId} (${e.reason})` });
      break;
    case 'dispute_won':
      change = await creditPayment(trx, e.orgId, { kind: 'dispute_won', amountCents: e.amountCents, paymentId: `${e.objectId}:won`, description: `Dispute of top-up ${e.paymentId} won` });
      break;
  }
  if (!change.duplicate) await emitWalletLowIfCrossed(trx, e.orgId, change);
  return !change.duplicate;
}

/** What a webhook did. */
export interface PaymentWebhookOutcome {
  /** The provider's event id was seen before: nothing was applied. */
  duplicate: boolean;
  /** Ledger entries this delivery wrote. */
  recorded: number;
}

/**
 * Verifies, deduplicates (by the provider's event id, `provider_webhook_events`) and applies one payments
 * webhook in one transaction. A failure releases the event id, so the provider's re-delivery applies it.
 * @throws PaymentWebhookSignatureError (nothing stored); PaymentError `provider_unavailable` (a look-up failed)
 */
export async function applyPaymentWebhook(
  db: Db,
  raw: string,
  headers: Record<string, string | string[] | undefined>,
  payments: PaymentsAdapter = createPayments(),
): Promise<PaymentWebhookOutcome> {
  const parsed = await payments.parseWebhook(raw, headers);
  if (!(await claimWebhookEvent(db, payments.provider, parsed.eventId, parsed.eventType))) return { duplicate: true, recorded: 0 };
  try {
    let recorded = 0;
    await db.transaction(async (trx) => {
      for (const e of parsed.events) {
        // A payment of an organization deleted since is not ours to record.
        if (!(await getOrganization(trx as unknown as Db, e.orgId))) continue;
        if (await applyEvent(trx, e)) recorded++;
      }
    });
    return { duplicate: false, recorded };
  } catch (err) {
    await releaseWebhookEvent(db, payments.provider, parsed.eventId);
    throw err;
  }
}
