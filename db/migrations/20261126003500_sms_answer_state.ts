/**
 * Texts an agent owes an answer (docs/sms.md "Agents answer texts"): an inbound text to a number with an
 * agent is stored `answer_state = pending`; the API process that received it answers it at once, and the
 * answer ends it `answered` or `declined` (`answer_note` says why: an opt-out, the SMS toggle, …). Texts still
 * pending a while later — their process died — are answered by the `sms-reply/{id}` workflow, which a
 * housekeeping sweep starts (the partial index keeps that sweep cheap).
 */
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('sms_messages', (t) => {
    t.text('answer_state');
    t.text('answer_note');
  });
  await knex.raw(`CREATE INDEX sms_messages_answer_pending_idx ON sms_messages (created_at) WHERE answer_state = 'pending'`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`DROP INDEX IF EXISTS sms_messages_answer_pending_idx`);
  await knex.schema.alterTable('sms_messages', (t) => {
    t.dropColumn('answer_state');
    t.dropColumn('answer_note');
  });
}
