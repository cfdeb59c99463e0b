/**
 * Phone calls reaching agents (docs/voice.md): one row per carrier call leg that rang a voice
 * webhook or was placed by a campaign and connected to the ConversationRelay socket — its carrier, the
 * carrier's call id, the agent and pinned version it was answered with, the conversation it holds, its
 * lifecycle status and, once the carrier reports it, its duration. A refused call (unassigned number,
 * agent never published) is stored `failed` with the reason. Unique per (provider, provider call id), so
 * a carrier's webhook retry finds the call it created.
 */
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('voice_calls', (t) => {
    t.text('id').primary(); // call_…
    t.text('org_id').notNullable().references('id').inTable('organizations').onDelete('CASCADE');
    t.text('agent_id');
    t.text('version_id');
    t.text('conversation_id');
    t.text('provider').notNullable(); // twilio | telnyx | sandbox
    t.text('provider_call_id').notNullable();
    t.text('direction').notNullable(); // inbound | outbound
    t.text('from_e164').notNullable();
    t.text('to_e164').notNullable();
    t.text('status').notNullable(); // ringing | answered | completed | failed
    t.text('failure_reason');
    t.integer('duration_seconds');
    t.text('campaign_id');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('ended_at', { useTz: true });
    t.unique(['provider', 'provider_call_id']);
    t.index(['org_id', 'created_at']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('voice_calls');
}
