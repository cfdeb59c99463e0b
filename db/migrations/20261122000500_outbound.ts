/**
 * Outbound voice (docs/voice.md "Outbound voice campaigns"): contact lists with their imported rows (accepted or rejected with a
 * reason), the organization's do-not-call list, campaigns, one call attempt per (campaign, contact),
 * and the sandbox telephony's dial ledger (idempotent on the dial key).
 * Every tenant table carries `org_id`; list orders use a `seq` bigserial so cursors are stable.
 */
import type { Knex } from 'knex';
import { tenantKeys, timestampsNow } from '../migrationHelpers';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('contact_lists', (t) => {
    tenantKeys(t);
    t.specificType('seq', 'bigserial').notNullable().unique();
    t.text('name').notNullable();
    t.text('purpose').notNullable(); // informational | marketing | collections: the consent rule of the scrub
    t.text('status').notNullable().defaultTo('empty'); // empty | importing | ready | failed
    t.text('file_id');
    t.jsonb('column_mapping');
    t.integer('rows_read').notNullable().defaultTo(0);
    t.integer('accepted').notNullable().defaultTo(0);
    t.integer('rejected').notNullable().defaultTo(0);
    t.jsonb('counts').notNullable().defaultTo('{}'); // outcome → rows
    t.text('error');
    t.timestamp('import_started_at', { useTz: true });
    t.timestamp('import_finished_at', { useTz: true });
    timestampsNow(t, knex, 'created_at', 'updated_at');
    t.index(['org_id', 'seq']);
  });

  await knex.schema.createTable('contacts', (t) => {
    tenantKeys(t);
    t.text('list_id').notNullable().references('contact_lists.id').onDelete('CASCADE');
    t.specificType('seq', 'bigserial').notNullable().unique();
    t.integer('row_number').notNullable(); // data row of the file, 1-based (the header is row 0)
    t.text('raw_phone');
    t.text('e164');
    t.text('first_name');
    t.text('last_name');
    t.text('time_zone'); // explicit IANA zone from the file
    t.specificType('zones', 'text[]').notNullable().defaultTo('{}'); // zones the calling window must hold in
    t.jsonb('variables').notNullable().defaultTo('{}');
    t.text('status').notNullable(); // accepted | rejected
    t.text('reason'); // outcome of the scrub: accepted, invalid_phone, not_us, duplicate, suppressed, do_not_call, no_consent, invalid_time_zone
    t.unique(['list_id', 'row_number']); // a retried import inserts each row once
    t.index(['list_id', 'seq']);
  });
  await knex.raw(`CREATE UNIQUE INDEX contacts_list_e164_accepted ON contacts (list_id, e164) WHERE status = 'accepted'`);

  await knex.schema.createTable('do_not_call', (t) => {
    t.text('org_id').notNullable().references('organizations.id').onDelete('CASCADE');
    t.text('e164').notNullable();
    t.text('source').notNullable().defaultTo('api');
    timestampsNow(t, knex, 'created_at');
    t.primary(['org_id', 'e164']);
  });

  await knex.schema.createTable('campaigns', (t) => {
    tenantKeys(t);
    t.specificType('seq', 'bigserial').notNullable().unique();
    t.text('name').notNullable();
    t.text('agent_id').notNullable().references('agents.id');
    t.text('agent_version_id'); // published version at launch
    t.text('caller_id_number_id').notNullable();
    t.text('caller_id').notNullable(); // E.164 of the caller-id number
    t.text('list_id').notNullable().references('contact_lists.id');
    t.text('purpose').notNullable();
    t.text('status').notNullable().defaultTo('draft'); // draft | running | paused | completed | cancelled
    t.integer('window_start_minutes').notNullable();
    t.integer('window_end_minutes').notNullable();
    t.specificType('days_of_week', 'text[]').notNullable();
    t.integer('max_concurrent_calls').notNullable();
    t.integer('max_attempts').notNullable();
    t.integer('retry_delay_minutes').notNullable();
    t.timestamp('launched_at', { useTz: true });
    t.timestamp('finished_at', { useTz: true });
    timestampsNow(t, knex, 'created_at', 'updated_at');
    t.index(['org_id', 'seq']);
  });

  await knex.schema.createTable('call_attempts', (t) => {
    tenantKeys(t);
    t.text('campaign_id').notNullable().references('campaigns.id').onDelete('CASCADE');
    t.text('contact_id').notNullable().references('contacts.id').onDelete('CASCADE');
    t.specificType('seq', 'bigserial').notNullable().unique();
    t.text('e164').notNullable();
    t.specificType('zones', 'text[]').notNullable();
    // pending | dialing | answered | voicemail | busy | no_answer | failed | cancelled
    t.text('status').notNullable().defaultTo('pending');
    t.integer('dials').notNullable().defaultTo(0); // dials placed so far
    t.timestamp('not_before', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.text('claim_token'); // batch that claimed it (idempotent claims)
    t.text('last_outcome');
    t.integer('last_duration_seconds');
    t.timestamp('last_dialed_at', { useTz: true });
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.unique(['campaign_id', 'contact_id']); // exactly one attempt per contact
  });
  await knex.raw(`CREATE INDEX call_attempts_due ON call_attempts (campaign_id, not_before, seq) WHERE status = 'pending'`);
  await knex.raw(`CREATE INDEX call_attempts_claim ON call_attempts (campaign_id, claim_token) WHERE status = 'dialing'`);
  await knex.raw(`CREATE INDEX call_attempts_campaign_status ON call_attempts (campaign_id, status)`);

  await knex.schema.createTable('sandbox_dials', (t) => {
    t.text('idempotency_key').primary(); // `{attemptId}:{dial number}`
    t.text('org_id').notNullable().references('organizations.id').onDelete('CASCADE');
    t.text('from').notNullable();
    t.text('to').notNullable();
    t.text('provider_call_id').notNullable();
    t.text('outcome').notNullable();
    t.integer('duration_seconds').notNullable();
    timestampsNow(t, knex, 'created_at');
  });
}

export async function down(knex: Knex): Promise<void> {
  for (const t of ['sandbox_dials', 'call_attempts', 'campaigns', 'do_not_call', 'contacts', 'contact_lists']) await knex.schema.dropTableIfExists(t);
}
