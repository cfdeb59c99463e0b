/**
 * Places of webhook attempts in flight (docs/operations.md "Fair sharing"): one row per delivery whose
 * attempt is calling its receiver (`waiting` false), so every worker sees how many attempts an endpoint and
 * an organization have in flight (WEBHOOK_MAX_IN_FLIGHT_PER_ENDPOINT, WEBHOOK_MAX_IN_FLIGHT_PER_ORG), or
 * that waits for a place (`waiting` true, since `since`: a freed place wakes the oldest waiter). A row is
 * deleted when the attempt ends; `expires_at` frees the place of an attempt whose worker died.
 */
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('webhook_attempt_slots', (t) => {
    t.text('delivery_id').primary().references('webhook_deliveries.id').onDelete('CASCADE'); // one place per delivery: a retried activity keeps its place
    t.text('org_id').notNullable().references('organizations.id').onDelete('CASCADE');
    t.text('endpoint_id').notNullable();
    t.timestamp('expires_at', { useTz: true }).notNullable();
    t.boolean('waiting').notNullable().defaultTo(false);
    t.timestamp('since', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.index(['org_id', 'endpoint_id']);
    t.index(['org_id', 'waiting', 'since']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTableIfExists('webhook_attempt_slots');
}
