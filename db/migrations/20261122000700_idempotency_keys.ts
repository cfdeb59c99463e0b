/**
 * The SMS hub's idempotency table serves every creating POST now (api/middleware/idempotency.ts), so
 * it loses its `sms_` prefix.
 */
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.renameTable('sms_idempotency_keys', 'idempotency_keys');
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.renameTable('idempotency_keys', 'sms_idempotency_keys');
}
