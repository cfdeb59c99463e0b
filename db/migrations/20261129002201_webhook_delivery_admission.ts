/**
 * Admission of webhook deliveries (docs/operations.md "Fair sharing"): the outbox dispatcher starts a
 * delivery's workflow only while its endpoint and organization have fewer admitted deliveries waiting for
 * their first attempt than their limits of attempts in flight, so a flood waits as outbox rows in Postgres,
 * not as thousands of workflows holding timers. `admitted_run` is the run the dispatcher started (a manual
 * retry or a replay starts run + 1, which is not admitted until its own start), `admitted_at` when: an
 * admission older than the lease no longer counts (a workflow that was lost frees its place).
 */
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('webhook_deliveries', (t) => {
    t.integer('admitted_run');
    t.timestamp('admitted_at', { useTz: true });
  });
  // Only the deliveries admitted and not yet attempted: a few per organization however long the history.
  await knex.raw(`CREATE INDEX webhook_deliveries_admitted ON webhook_deliveries (org_id, endpoint_id) WHERE status = 'pending' AND admitted_run = run`);
  // A first attempt asks whether its organization has rows waiting (and wakes the dispatcher only then).
  await knex.schema.alterTable('webhook_outbox', (t) => t.index(['org_id', 'id']));
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('webhook_outbox', (t) => t.dropIndex(['org_id', 'id']));
  await knex.raw('DROP INDEX IF EXISTS webhook_deliveries_admitted');
  await knex.schema.alterTable('webhook_deliveries', (t) => {
    t.dropColumn('admitted_run');
    t.dropColumn('admitted_at');
  });
}
