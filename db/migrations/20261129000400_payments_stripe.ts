/**
 * Card payments at a real provider (docs/api-notes.md "Billing"; docs/going-live.md "Stripe"):
 * - the ledger gains the entries a card payment can cause after it settled: `topup_refund` (a refund of a
 *   top-up, a debit), `dispute` (the disputed amount withdrawn, a debit) and `dispute_won` (a dispute
 *   closed in the organization's favour, a credit). Each references the provider's object (refund,
 *   dispute) in `payment_id`, unique per organization, so a webhook delivered twice records it once;
 * - `payment_customers` maps an organization to its customer at the payments provider (Stripe `cus_…`),
 *   whose default payment method the top-ups charge.
 */
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    ALTER TABLE wallet_ledger DROP CONSTRAINT wallet_ledger_kind_check;
    ALTER TABLE wallet_ledger ADD CONSTRAINT wallet_ledger_kind_check CHECK (
      (kind = 'usage' AND amount_cents <= 0 AND usage_entry_id IS NOT NULL) OR
      (kind IN ('topup', 'refund', 'dispute_won') AND amount_cents > 0 AND payment_id IS NOT NULL) OR
      (kind IN ('topup_refund', 'dispute') AND amount_cents < 0 AND payment_id IS NOT NULL));
  `);
  await knex.schema.createTable('payment_customers', (t) => {
    t.text('org_id').notNullable().references('organizations.id').onDelete('CASCADE');
    t.text('provider').notNullable(); // stripe
    t.text('customer_id').notNullable(); // cus_…
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.primary(['org_id', 'provider']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('payment_customers');
  await knex.raw(`
    ALTER TABLE wallet_ledger DROP CONSTRAINT wallet_ledger_kind_check;
    ALTER TABLE wallet_ledger ADD CONSTRAINT wallet_ledger_kind_check CHECK (
      (kind = 'usage' AND amount_cents <= 0 AND usage_entry_id IS NOT NULL) OR
      (kind IN ('topup', 'refund') AND amount_cents > 0 AND payment_id IS NOT NULL));
  `);
}
