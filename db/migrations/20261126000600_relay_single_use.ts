/**
 * Relay references are single-use (docs/security.md "Carrier webhooks and relay references"): a call's
 * relay opens once — `voice_calls.relay_opened_at` is set by the first successful upgrade, and a second
 * upgrade with a reference to the same call (a replayed webhook's, or the same reference twice) is refused.
 */
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('voice_calls', (t) => {
    t.timestamp('relay_opened_at', { useTz: true });
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('voice_calls', (t) => {
    t.dropColumn('relay_opened_at');
  });
}
