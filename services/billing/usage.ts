/**
 * Recording usage with its wallet charge and the `billing.wallet.low` event (docs/api-notes.md "Billing"): the
 * one `recordUsage` every caller uses. The usage entry, its ledger charge and the event (when the
 * charge crossed the low-balance threshold) are written in the caller's transaction.
 */
import type { Knex } from 'knex';
import type { Db } from '../../db';
import { recordUsageCharged, type UsageInput } from '../../db/repositories/usage';
import type { WalletChange } from '../../db/repositories/billing';
import { crossedBelow, WALLET_CURRENCY } from '../../domain/billing/wallet';
import { emitEvent } from '../../events/emit';

/**
 * Emits `billing.wallet.low` when `change` moved the balance below the threshold (spec "Events";
 * docs/api-notes.md "Billing": once per crossing).
 */
export async function emitWalletLowIfCrossed(trx: Knex | Knex.Transaction, orgId: string, change: WalletChange | null): Promise<boolean> {
  if (!change || !crossedBelow(change.balanceBeforeCents, change.balanceAfterCents, change.thresholdCents)) return false;
  await emitEvent(trx, orgId, 'billing.wallet.low', {
    balanceCents: change.balanceAfterCents,
    previousBalanceCents: change.balanceBeforeCents,
    lowBalanceThresholdCents: change.thresholdCents,
    currency: WALLET_CURRENCY,
    ledgerEntryId: change.entry.id,
    usageEntryId: change.entry.usageEntryId,
  });
  return true;
}

/**
 * Records a usage entry once per `(orgId, dedupeKey)`, charges it to the wallet (owing an auto-recharge when the
 * charge crossed its threshold: ./autoRecharge.ts) and emits `billing.wallet.low` on a crossing, all in one transaction (the caller's when given one).
 * @param entry kind, amount (whole US cents), dedupe key, quantity, details (db/repositories/usage.ts UsageInput)
 * @returns true when this call inserted it, false when it existed already
 */
export async function recordUsage(db: Db | Knex.Transaction, orgId: string, entry: UsageInput): Promise<boolean> {
  const run = async (trx: Knex.Transaction) => {
    const r = await recordUsageCharged(trx, orgId, entry);
    await emitWalletLowIfCrossed(trx, orgId, r.charge);
    return r.inserted;
  };
  return (db as Knex.Transaction).isTransaction ? run(db as Knex.Transaction) : (db as Db).transaction(run);
}
