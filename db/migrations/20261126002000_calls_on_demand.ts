/**
 * Calls on demand (docs/api-notes.md "Calls on demand"; `POST /calls`): a call placed through the API is
 * stored before it is dialed, so it has no carrier call id yet (`provider_call_id` becomes nullable; the
 * unique (provider, provider_call_id) still holds for every dialed call, NULLs being distinct) and starts
 * `queued`. It keeps what the request asked for — the agent's version or draft (`mode`), the recipient's
 * time zone when given, conversation `variables` and free-form `metadata` — and, once dialed, how the
 * dial ended (`outcome`: answered, voicemail, busy, no_answer, failed, unknown). `seq` orders and pages
 * `GET /calls` (every call: inbound, campaign and on demand).
 */
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('voice_calls', (t) => {
    t.setNullable('provider_call_id');
    t.specificType('seq', 'bigserial');
    t.text('mode').notNullable().defaultTo('published');
    t.text('time_zone');
    t.jsonb('variables');
    t.jsonb('metadata');
    t.text('outcome');
    t.index(['org_id', 'seq']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex('voice_calls').whereNull('provider_call_id').delete();
  await knex.schema.alterTable('voice_calls', (t) => {
    t.dropIndex(['org_id', 'seq']);
    for (const c of ['seq', 'mode', 'time_zone', 'variables', 'metadata', 'outcome']) t.dropColumn(c);
    t.dropNullable('provider_call_id');
  });
}
