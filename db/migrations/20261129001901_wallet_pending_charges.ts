/**
 * Usage charges recorded but not yet folded into the wallet (docs/api-notes.md "Billing": deferred charges). A
 * statement on a hot path (an agent's SMS reply) records its usage entry and one row here instead of updating the
 * organization's `wallets` row, so replies of one organization never wait for each other on that row's lock; the
 * settle (db/repositories/walletSettle.ts) moves them, a batch per statement, into the append-only ledger and the
 * wallet's balance, deleting them in that statement. The balance shown is the wallet's minus these rows.
 */
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE TABLE wallet_pending_charges (
      org_id text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
      seq bigserial NOT NULL,
      usage_entry_id text NOT NULL,
      ledger_id text NOT NULL,
      kind text NOT NULL,
      amount_cents integer NOT NULL CHECK (amount_cents > 0),
      created_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (org_id, seq)
    )
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP TABLE IF EXISTS wallet_pending_charges');
}
