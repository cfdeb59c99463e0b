/**
 * The wallet row carries its balance (docs/api-notes.md "Billing"): a charge is one `UPDATE wallets … RETURNING`,
 * which holds the organization's wallet row only for the statement that changes it (and its commit), not
 * across a read of the last ledger row and the round trips in between. Every ledger row still carries
 * `balance_after_cents`, and the balance is still `SUM(amount_cents)` of the ledger.
 */
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('wallets', (t) => {
    t.bigInteger('balance_cents').notNullable().defaultTo(0);
  });
  await knex.raw(`UPDATE wallets w SET balance_cents = coalesce((SELECT sum(l.amount_cents) FROM wallet_ledger l WHERE l.org_id = w.org_id), 0)`);
  // Ledger rows of organizations without a wallet row cannot exist (every ledger write creates it first).
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('wallets', (t) => {
    t.dropColumn('balance_cents');
  });
}
