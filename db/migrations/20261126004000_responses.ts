/**
 * Responses of the OpenAI-compatible Responses API (docs/api-notes.md "Responses API"): one row per `resp_…`,
 * the conversation it is a turn of (so `previous_response_id` continues that conversation), the conversation's
 * turn count after it (only the latest response of a conversation may be continued), the client function calls
 * it left waiting for their `function_call_output`, and the response object as answered (`GET /responses/{id}`).
 */
import type { Knex } from 'knex';
import { tenantKeys, timestampsNow } from '../migrationHelpers';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('responses', (t) => {
    tenantKeys(t); // resp_…
    t.text('conversation_id').notNullable();
    t.text('previous_response_id');
    t.integer('turn').notNullable();
    t.jsonb('pending_calls').notNullable().defaultTo('[]');
    t.jsonb('body').notNullable();
    timestampsNow(t, knex, 'created_at');
    t.index(['org_id', 'conversation_id']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTableIfExists('responses');
}
