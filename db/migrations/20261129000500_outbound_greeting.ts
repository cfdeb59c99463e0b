/**
 * The first line of outbound calls (docs/voice.md "Outbound first line"): the agent's `outboundGreeting` (null: its
 * greeting) and who opens the call, `outbound_first_message_mode` (`agent_speaks_first`, the default, or
 * `wait_for_callee`). Part of the draft, compiled into versions like the greeting.
 */
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('agents', (t) => {
    t.text('outbound_greeting');
    t.text('outbound_first_message_mode').notNullable().defaultTo('agent_speaks_first');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('agents', (t) => {
    t.dropColumn('outbound_greeting');
    t.dropColumn('outbound_first_message_mode');
  });
}
