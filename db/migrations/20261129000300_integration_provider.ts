/**
 * Integration connections record the provider that made them (docs/api-notes.md "Integrations and records"):
 * `sandbox` (every connection so far) or a real adapter (`google`, `calcom`), so a deployment that turns a kind live
 * keeps serving the connections made before from the sandbox. `status` (already there, always `connected`) may now be
 * `needs_reauth`: the provider revoked the OAuth grant (RFC 6749 §5.2 `invalid_grant`).
 */
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('integration_connections', (t) => {
    t.text('provider').notNullable().defaultTo('sandbox');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('integration_connections', (t) => {
    t.dropColumn('provider');
  });
}
