/**
 * Post-conversation analysis (docs/api-notes.md "Conversation analysis"): `agents.analysis` holds the extraction fields an
 * agent defines (frozen into each published version by the compiler); `conversation_analyses` holds at most one
 * analysis per conversation — the primary key is what makes the analysis run once, whoever asks first claims it.
 */
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('agents', (t) => {
    t.jsonb('analysis').notNullable().defaultTo('{"fields":[]}');
  });
  await knex.schema.createTable('conversation_analyses', (t) => {
    t.text('conversation_id').primary().references('conversations.id').onDelete('CASCADE');
    t.text('org_id').notNullable().references('organizations.id').onDelete('CASCADE');
    // running → completed | failed
    t.text('status').notNullable();
    t.text('summary');
    t.text('outcome');
    t.text('sentiment');
    t.jsonb('fields').notNullable().defaultTo('{}');
    t.jsonb('notes').notNullable().defaultTo('[]');
    t.text('error');
    t.text('model');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('completed_at', { useTz: true });
    t.index(['org_id', 'conversation_id']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTableIfExists('conversation_analyses');
  await knex.schema.alterTable('agents', (t) => {
    t.dropColumn('analysis');
  });
}
