/**
 * Live control of conversations (docs/api-notes.md "Live control"): a member or key may take a chat, widget or SMS
 * conversation over (`taken_over_by`: who, `taken_over_at`: since when; the agent does not answer meanwhile), and
 * queue a control for a call's relay session (`conversation_controls`: say a line, add a message to the model's
 * context, transfer, end), which the process holding the call's socket claims once. A message a person wrote is an
 * `assistant` (said to the counterpart) or `system` (context for the model) message named `operator:<actor>`.
 */
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.raw(`ALTER TABLE conversations ADD COLUMN taken_over_by text, ADD COLUMN taken_over_at timestamptz`);
  await knex.raw(`ALTER TABLE conversation_messages DROP CONSTRAINT conversation_messages_role_check`);
  await knex.raw(`ALTER TABLE conversation_messages ADD CONSTRAINT conversation_messages_role_check CHECK (role IN ('user', 'assistant', 'tool', 'system'))`);
  await knex.schema.createTable('conversation_controls', (t) => {
    t.text('id').primary();
    t.text('org_id').notNullable();
    t.text('conversation_id').notNullable();
    t.text('action').notNullable();
    t.text('content');
    t.text('destination');
    t.text('actor').notNullable();
    t.text('status').notNullable().defaultTo('queued');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('applied_at', { useTz: true });
    t.index(['org_id', 'conversation_id', 'status']);
  });
  await knex.raw(`ALTER TABLE conversation_controls ADD CONSTRAINT conversation_controls_action_check CHECK (action IN ('say', 'add_message', 'transfer', 'end'))`);
  // The live list reads the active conversations of an organization, newest first.
  await knex.raw(`CREATE INDEX IF NOT EXISTS conversations_org_active_idx ON conversations (org_id, started_at DESC) WHERE status = 'active'`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`DROP INDEX IF EXISTS conversations_org_active_idx`);
  await knex.schema.dropTable('conversation_controls');
  await knex.raw(`DELETE FROM conversation_messages WHERE role = 'system'`);
  await knex.raw(`ALTER TABLE conversation_messages DROP CONSTRAINT conversation_messages_role_check`);
  await knex.raw(`ALTER TABLE conversation_messages ADD CONSTRAINT conversation_messages_role_check CHECK (role IN ('user', 'assistant', 'tool'))`);
  await knex.raw(`ALTER TABLE conversations DROP COLUMN taken_over_by, DROP COLUMN taken_over_at`);
}
