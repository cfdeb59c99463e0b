/**
 * Billing (docs/api-notes.md "Billing"): usage entries gain a sequence (cursor pagination), a unit price and a
 * resource id; the wallet of each organization with its append-only ledger (balance = sum of signed
 * amounts; each row also carries the running balance after it); closed monthly invoices, immutable.
 */
import type { Knex } from 'knex';
import { appendOnlyTriggers, timestampsNow } from '../migrationHelpers';

export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    ALTER TABLE usage_entries ADD COLUMN seq bigserial;
    ALTER TABLE usage_entries ADD COLUMN unit_price_cents numeric(14, 6);
    ALTER TABLE usage_entries ADD COLUMN resource_id text;
    UPDATE usage_entries SET
      unit_price_cents = CASE WHEN quantity > 0 THEN amount_cents::numeric / quantity ELSE amount_cents END,
      resource_id = COALESCE(details->>'conversationId', details->>'numberId', details->>'registrationId');
    ALTER TABLE usage_entries ALTER COLUMN unit_price_cents SET NOT NULL;
    CREATE UNIQUE INDEX usage_entries_org_seq ON usage_entries (org_id, seq);
    CREATE INDEX usage_entries_org_created ON usage_entries (org_id, created_at);
  `);

  await knex.schema.createTable('wallets', (t) => {
    t.text('org_id').primary().references('organizations.id').onDelete('CASCADE');
    t.text('currency').notNullable().defaultTo('USD');
    t.bigInteger('low_balance_threshold_cents').notNullable().defaultTo(1000);
    timestampsNow(t, knex, 'created_at');
  });

  await knex.schema.createTable('wallet_ledger', (t) => {
    t.bigIncrements('seq');
    t.text('id').notNullable().unique(); // led_…
    t.text('org_id').notNullable().references('organizations.id').onDelete('CASCADE');
    t.text('kind').notNullable(); // topup | usage | refund
    t.bigInteger('amount_cents').notNullable(); // signed: credits > 0, charges < 0
    t.bigInteger('balance_after_cents').notNullable();
    t.text('usage_entry_id').unique(); // each usage entry is charged at most once
    t.text('payment_id'); // the payment provider's id of a top-up or refund
    t.text('description');
    timestampsNow(t, knex, 'created_at');
    t.unique(['org_id', 'payment_id']);
    t.index(['org_id', 'seq']);
  });
  await knex.raw(`
    ALTER TABLE wallet_ledger ADD CONSTRAINT wallet_ledger_kind_check CHECK (
      (kind = 'usage' AND amount_cents <= 0 AND usage_entry_id IS NOT NULL) OR
      (kind IN ('topup', 'refund') AND amount_cents > 0 AND payment_id IS NOT NULL));
    CREATE FUNCTION billing_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF TG_OP = 'DELETE' AND pg_trigger_depth() > 1 THEN
        RETURN OLD; -- cascade from DELETE FROM organizations
      END IF;
      RAISE EXCEPTION '% is append-only: % is not allowed', TG_TABLE_NAME, TG_OP USING ERRCODE = 'insufficient_privilege';
    END $$;
    ${appendOnlyTriggers('wallet_ledger', 'billing_append_only')}
  `);

  // Only closed invoices are stored (the open month is computed from usage): every row is immutable.
  await knex.schema.createTable('invoices', (t) => {
    t.text('id').primary(); // inv_…
    t.text('org_id').notNullable().references('organizations.id').onDelete('CASCADE');
    t.text('period').notNullable(); // yyyy-mm
    t.timestamp('period_start', { useTz: true }).notNullable();
    t.timestamp('period_end', { useTz: true }).notNullable();
    t.text('currency').notNullable().defaultTo('USD');
    t.jsonb('lines').notNullable(); // [{kind, quantity, unitPriceCents, amountCents, entries}]
    t.bigInteger('total_cents').notNullable();
    t.timestamp('closed_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.unique(['org_id', 'period']); // one invoice per organization and month, closed once
  });
  await knex.raw(`
    ${appendOnlyTriggers('invoices', 'billing_append_only')}
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP TABLE IF EXISTS invoices');
  await knex.raw('DROP TABLE IF EXISTS wallet_ledger');
  await knex.raw('DROP FUNCTION IF EXISTS billing_append_only()');
  await knex.schema.dropTableIfExists('wallets');
  await knex.raw(`
    DROP INDEX IF EXISTS usage_entries_org_created;
    DROP INDEX IF EXISTS usage_entries_org_seq;
    ALTER TABLE usage_entries DROP COLUMN IF EXISTS resource_id, DROP COLUMN IF EXISTS unit_price_cents, DROP COLUMN IF EXISTS seq;
  `);
}
