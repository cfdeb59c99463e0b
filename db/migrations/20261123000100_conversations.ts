/**
 * Conversations (docs/api-notes.md "Conversations"; spec "What the service does", "Observe"): one row per
 * conversation on any channel (`cnv_…`), its messages verbatim in order (`conversation_messages`, one
 * sequence per conversation) and one receipt per turn (`conversation_turns`: tool calls, knowledge
 * lookups, guardrail decisions and latency samples, as the spec's receipt lists them).
 *
 * A conversation is pinned at start: `version_id` (the published version) or, in draft mode,
 * `draft_snapshot` (the draft compiled at that moment). `turn_count` is the optimistic lock of a turn: a
 * turn is stored only if no other turn was stored since it began.
 */
import type { Knex } from 'knex';
import { timestampsNow } from '../migrationHelpers';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('conversations', (t) => {
    t.text('id').primary(); // cnv_…
    t.text('org_id').notNullable().references('organizations.id').onDelete('CASCADE');
    t.text('agent_id').notNullable();
    t.text('channel').notNullable(); // chat | web | sms | voice
    t.text('mode').notNullable(); // published | draft
    t.text('version_id'); // published mode: the pinned version
    t.integer('draft_version'); // draft mode: the agent's draft version compiled at start
    t.jsonb('draft_snapshot'); // draft mode: the compiled draft
    t.boolean('simulation').notNullable().defaultTo(false);
    t.text('status').notNullable().defaultTo('active'); // active | ended
    t.text('end_reason');
    t.jsonb('variables').notNullable().defaultTo('{}');
    t.jsonb('playbook_state');
    t.jsonb('metadata').notNullable().defaultTo('{}');
    t.integer('turn_count').notNullable().defaultTo(0);
    t.integer('message_count').notNullable().defaultTo(0);
    t.integer('prompt_tokens').notNullable().defaultTo(0);
    t.integer('completion_tokens').notNullable().defaultTo(0);
    t.text('key_id'); // the credential that started it (secret key, publishable key or token)
    t.timestamp('started_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('ended_at', { useTz: true });
    t.timestamp('last_activity_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.index(['org_id', 'started_at', 'id']);
    t.index(['org_id', 'agent_id', 'started_at']);
  });
  await knex.raw(`ALTER TABLE conversations ADD CONSTRAINT conversations_channel_check CHECK (channel IN ('chat', 'web', 'sms', 'voice'))`);
  await knex.raw(`ALTER TABLE conversations ADD CONSTRAINT conversations_status_check CHECK (status IN ('active', 'ended'))`);
  await knex.raw(
    `ALTER TABLE conversations ADD CONSTRAINT conversations_pin_check CHECK ((mode = 'published' AND version_id IS NOT NULL) OR (mode = 'draft' AND draft_snapshot IS NOT NULL))`,
  );

  await knex.schema.createTable('conversation_messages', (t) => {
    t.text('id').primary(); // cmsg_…
    t.text('org_id').notNullable().references('organizations.id').onDelete('CASCADE');
    t.text('conversation_id').notNullable().references('conversations.id').onDelete('CASCADE');
    t.integer('seq').notNullable();
    t.integer('turn').notNullable(); // 0 for the greeting
    t.text('role').notNullable(); // user | assistant | tool
    t.text('content');
    t.jsonb('tool_calls');
    t.text('tool_call_id');
    t.text('name');
    timestampsNow(t, knex, 'created_at');
    t.unique(['conversation_id', 'seq']);
  });
  await knex.raw(`ALTER TABLE conversation_messages ADD CONSTRAINT conversation_messages_role_check CHECK (role IN ('user', 'assistant', 'tool'))`);

  await knex.schema.createTable('conversation_turns', (t) => {
    t.text('org_id').notNullable().references('organizations.id').onDelete('CASCADE');
    t.text('conversation_id').notNullable().references('conversations.id').onDelete('CASCADE');
    t.integer('turn').notNullable();
    t.jsonb('receipt').notNullable();
    t.integer('prompt_tokens').notNullable().defaultTo(0);
    t.integer('completion_tokens').notNullable().defaultTo(0);
    t.text('model');
    timestampsNow(t, knex, 'created_at');
    t.primary(['conversation_id', 'turn']);
  });
}

export async function down(knex: Knex): Promise<void> {
  for (const t of ['conversation_turns', 'conversation_messages', 'conversations']) await knex.schema.dropTableIfExists(t);
}
