/**
 * Replays of past events to one webhook endpoint (docs/api-notes.md "Replaying missed events"): one row per
 * `rpl_…` with its window, its progress and the keyset cursor (`cursor_at`, `cursor_id` over events'
 * `created_at, id`) of the next step. `step` is the compare-and-set of that cursor, so a step retried after it
 * committed changes nothing. Deliveries a replay queued carry its id (`webhook_deliveries.replay_id`); the
 * unique (endpoint, event) of `webhook_deliveries` is what keeps an event from reaching one endpoint twice.
 */
import type { Knex } from 'knex';
import { tenantKeys, timestampsNow } from '../migrationHelpers';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('webhook_replays', (t) => {
    tenantKeys(t); // rpl_…
    t.text('endpoint_id').notNullable().references('webhook_endpoints.id').onDelete('CASCADE');
    t.timestamp('since', { useTz: true }).notNullable();
    t.timestamp('until', { useTz: true }).notNullable();
    t.specificType('event_types', 'text[]').notNullable().defaultTo('{}'); // empty: every type the endpoint takes
    t.text('status').notNullable().defaultTo('running'); // running | completed | stopped
    t.integer('total').notNullable().defaultTo(0);
    t.integer('processed').notNullable().defaultTo(0);
    t.integer('queued').notNullable().defaultTo(0);
    t.integer('skipped').notNullable().defaultTo(0);
    t.integer('step').notNullable().defaultTo(0);
    t.timestamp('cursor_at', { useTz: true });
    t.text('cursor_id');
    t.text('error');
    timestampsNow(t, knex, 'created_at', 'updated_at');
    t.timestamp('completed_at', { useTz: true });
    t.index(['org_id', 'endpoint_id', 'created_at']);
  });
  await knex.schema.alterTable('webhook_deliveries', (t) => {
    t.text('replay_id'); // the replay that queued this delivery (or its latest run), if any
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('webhook_deliveries', (t) => t.dropColumn('replay_id'));
  await knex.schema.dropTableIfExists('webhook_replays');
}
