/**
 * The endpoint of each outbox row, indexed with the row's order (docs/operations.md "Fair sharing"): the outbox
 * dispatcher's admission (db/repositories/events.ts `lockOutboxBatch`) reads, per endpoint with room, only its
 * oldest rows up to that room, instead of numbering every waiting row on each sweep, so a sweep costs what it
 * admits, not the backlog. Filled from the row's delivery, whose endpoint never changes.
 */
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('webhook_outbox', (t) => t.text('endpoint_id').references('webhook_endpoints.id').onDelete('CASCADE'));
  await knex.raw('UPDATE webhook_outbox o SET endpoint_id = d.endpoint_id FROM webhook_deliveries d WHERE d.id = o.delivery_id');
  await knex.raw('ALTER TABLE webhook_outbox ALTER COLUMN endpoint_id SET NOT NULL');
  await knex.schema.alterTable('webhook_outbox', (t) => t.index(['endpoint_id', 'id']));
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('webhook_outbox', (t) => {
    t.dropIndex(['endpoint_id', 'id']);
    t.dropColumn('endpoint_id');
  });
}
