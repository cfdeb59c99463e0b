/**
 * Real providers' webhooks (docs/going-live.md): `provider_webhook_events` holds each delivered event id
 * once per provider, so a replayed or re-delivered event changes nothing; `provider_calls` holds the state
 * of outbound calls placed at a real provider as their status webhooks report it (the dial activity reads
 * it until the call has ended).
 */
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('provider_webhook_events', (t) => {
    t.text('provider').notNullable();
    t.text('event_id').notNullable();
    t.text('event_type').notNullable();
    t.timestamp('received_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.primary(['provider', 'event_id']);
  });
  await knex.schema.createTable('provider_calls', (t) => {
    t.text('provider').notNullable();
    t.text('provider_call_id').notNullable();
    t.text('org_id').notNullable().references('organizations.id').onDelete('CASCADE');
    t.text('reference').notNullable();
    t.text('from_e164').notNullable();
    t.text('to_e164').notNullable();
    t.text('status').notNullable().defaultTo('initiated');
    t.text('answered_by');
    t.text('outcome');
    t.integer('duration_seconds').notNullable().defaultTo(0);
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.primary(['provider', 'provider_call_id']);
    t.index(['org_id', 'reference']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTableIfExists('provider_calls');
  await knex.schema.dropTableIfExists('provider_webhook_events');
}
