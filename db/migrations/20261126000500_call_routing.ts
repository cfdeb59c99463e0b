/**
 * Phone settings in effect on calls (docs/voice.md "Phone settings on calls"): how an inbound call was
 * routed (`agent`, or after hours `voicemail`, `message`, `escalation`), the voicemail a caller left (the
 * carrier's recording URL, its length and transcription) and the destination a call was transferred to.
 */
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('voice_calls', (t) => {
    t.text('routing');
    t.text('recording_url');
    t.integer('recording_seconds');
    t.text('recording_transcript');
    t.timestamp('recording_received_at', { useTz: true });
    t.text('transferred_to');
    t.text('transfer_destination_id');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('voice_calls', (t) => {
    for (const c of ['routing', 'recording_url', 'recording_seconds', 'recording_transcript', 'recording_received_at', 'transferred_to', 'transfer_destination_id']) t.dropColumn(c);
  });
}
