/**
 * Agents answer texts (docs/sms.md "Agents answer texts"): an inbound text to a number assigned to an
 * agent runs a turn in the agent's `sms` conversation with the sender, and the reply goes out as an
 * outbound text. `sms_messages.conversation_id` links a text to that conversation; `agent_reply` keeps the
 * reply a turn produced, so a retried answer sends it rather than asking the model again; `reply_to` on the
 * outbound reply names the inbound text (unique: one reply per text). `conversations.counterpart` now holds
 * the other party of every voice and SMS conversation, and one conversation per agent and counterpart is
 * open at a time on SMS.
 */
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('sms_messages', (t) => {
    t.text('conversation_id');
    t.text('agent_reply');
    t.text('reply_to');
  });
  await knex.raw(`CREATE UNIQUE INDEX sms_messages_reply_to_uq ON sms_messages (org_id, reply_to) WHERE reply_to IS NOT NULL`);
  await knex.raw(
    `CREATE UNIQUE INDEX conversations_sms_thread_uq ON conversations (org_id, agent_id, counterpart) WHERE channel = 'sms' AND status = 'active' AND mode = 'published' AND counterpart IS NOT NULL AND NOT simulation`,
  );
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`DROP INDEX IF EXISTS conversations_sms_thread_uq`);
  await knex.raw(`DROP INDEX IF EXISTS sms_messages_reply_to_uq`);
  await knex.schema.alterTable('sms_messages', (t) => {
    t.dropColumn('conversation_id');
    t.dropColumn('agent_reply');
    t.dropColumn('reply_to');
  });
}
