/**
 * Voicemail drops on campaign calls (docs/voice.md "Voicemail"): the agent's voicemail message (part of the draft,
 * compiled into versions like the greeting); what the sandbox carrier "heard" left on a machine
 * (`sandbox_dials.voicemail_message`); the message a call left (`voice_calls.voicemail_message`); whether
 * an attempt's last dial left one (`call_attempts.voicemail_left`); and the Telnyx Call Control events a
 * voicemail drop waits for (`provider_calls.greeting_ended`: the `call.machine.greeting.ended` result;
 * `provider_calls.speak_ended_at`: `call.speak.ended`).
 */
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('agents', (t) => {
    t.text('voicemail_message');
  });
  await knex.schema.alterTable('call_attempts', (t) => {
    t.boolean('voicemail_left').notNullable().defaultTo(false);
  });
  await knex.schema.alterTable('sandbox_dials', (t) => {
    t.text('voicemail_message');
  });
  await knex.schema.alterTable('voice_calls', (t) => {
    t.text('voicemail_message');
  });
  await knex.schema.alterTable('provider_calls', (t) => {
    t.text('greeting_ended');
    t.timestamp('speak_ended_at', { useTz: true });
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('provider_calls', (t) => {
    t.dropColumn('greeting_ended');
    t.dropColumn('speak_ended_at');
  });
  await knex.schema.alterTable('voice_calls', (t) => t.dropColumn('voicemail_message'));
  await knex.schema.alterTable('sandbox_dials', (t) => t.dropColumn('voicemail_message'));
  await knex.schema.alterTable('call_attempts', (t) => t.dropColumn('voicemail_left'));
  await knex.schema.alterTable('agents', (t) => t.dropColumn('voicemail_message'));
}
