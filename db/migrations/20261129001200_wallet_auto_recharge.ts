/**
 * Wallet auto-recharge (docs/api-notes.md "Billing": auto-recharge, an addition to the spec's Billing operations):
 * the organization's settings on its `wallets` row — whether it is on, the balance below which a usage charge
 * starts a recharge and the amount charged (US cents) — and why it was turned off (a declined card).
 */
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('wallets', (t) => {
    t.boolean('auto_recharge_enabled').notNullable().defaultTo(false);
    t.bigInteger('auto_recharge_threshold_cents');
    t.bigInteger('auto_recharge_amount_cents');
    t.text('auto_recharge_disabled_reason');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('wallets', (t) => {
    t.dropColumn('auto_recharge_disabled_reason');
    t.dropColumn('auto_recharge_amount_cents');
    t.dropColumn('auto_recharge_threshold_cents');
    t.dropColumn('auto_recharge_enabled');
  });
}
