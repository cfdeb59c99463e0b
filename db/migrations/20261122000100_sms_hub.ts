/**
 * SMS hub (docs/sms.md "10DLC review, submission and carrier callbacks"): the stored review verdict and submission generation on the registration, carrier
 * callback events (dedupe on provider + external id + status + revision), the sandbox carrier's
 * pending callbacks (they survive a restart), submit idempotency keys, phone numbers, contacts with
 * consent and opt-out, and text messages. Every tenant table carries `org_id`.
 */
import type { Knex } from 'knex';
import { tenantKeys, timestampsNow } from '../migrationHelpers';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('sms_registrations', (t) => {
    t.jsonb('last_review'); // { verdict, findings, reviewedAt }
    t.text('submission_id'); // generation of the current submission; stale workflows cannot write status
    t.text('stock_symbol'); // PUBLIC_PROFIT, given with POST /sms/submit
    t.text('stock_exchange');
    t.timestamp('registered_at', { useTz: true });
    t.timestamp('activated_at', { useTz: true });
    t.index(['brand_id']);
    t.index(['campaign_id']);
  });

  // Every callback a provider delivered, once per (provider, external id, status, revision).
  await knex.schema.createTable('sms_provider_events', (t) => {
    t.bigIncrements('id');
    t.text('org_id').notNullable().references('organizations.id').onDelete('CASCADE');
    t.text('provider').notNullable();
    t.text('object_type').notNullable(); // brand | campaign | message | inbound
    t.text('external_id').notNullable();
    t.text('status').notNullable();
    t.integer('revision').notNullable().defaultTo(0);
    t.jsonb('payload').notNullable();
    t.timestamp('received_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.unique(['provider', 'external_id', 'status', 'revision']);
    t.index(['org_id', 'external_id']);
  });

  // Callbacks the sandbox providers still owe; a dispatcher POSTs them when due (restart-safe).
  await knex.schema.createTable('sandbox_callbacks', (t) => {
    t.bigIncrements('id');
    t.text('org_id').notNullable().references('organizations.id').onDelete('CASCADE');
    t.text('provider').notNullable();
    t.jsonb('payload').notNullable();
    t.timestamp('due_at', { useTz: true }).notNullable();
    t.integer('attempts').notNullable().defaultTo(0);
    t.text('last_error');
    t.timestamp('delivered_at', { useTz: true });
    timestampsNow(t, knex, 'created_at');
  });
  await knex.raw('CREATE INDEX sandbox_callbacks_due ON sandbox_callbacks (due_at) WHERE delivered_at IS NULL');

  // The sandbox carrier's own records (what a CSP would hold): brand/campaign, revision and decided outcome.
  await knex.schema.createTable('sandbox_carrier_objects', (t) => {
    t.text('id').primary(); // B… brand id, C… campaign id
    t.text('org_id').notNullable().references('organizations.id').onDelete('CASCADE');
    t.text('kind').notNullable(); // brand | campaign
    t.integer('revision').notNullable().defaultTo(1);
    t.text('outcome').notNullable(); // VERIFIED | UNVERIFIED | APPROVED | REJECTED
    t.text('reason');
    t.timestamp('decided_at', { useTz: true }).notNullable();
    t.timestamp('provisioned_at', { useTz: true }); // campaigns: MNO provisioning completes
    t.jsonb('request').notNullable();
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });

  // Idempotency-Key of POST /sms/submit and POST /sms/messages: the first response is replayed for the
  // same key and body. `status` 0 marks a request still being processed.
  await knex.schema.createTable('sms_idempotency_keys', (t) => {
    t.text('org_id').notNullable().references('organizations.id').onDelete('CASCADE');
    t.text('operation').notNullable();
    t.text('idempotency_key').notNullable();
    t.text('request_hash').notNullable();
    t.integer('status').notNullable();
    t.jsonb('response');
    timestampsNow(t, knex, 'created_at');
    t.primary(['org_id', 'operation', 'idempotency_key']);
  });

  await knex.schema.createTable('phone_numbers', (t) => {
    tenantKeys(t);
    t.text('e164').notNullable();
    t.text('status').notNullable(); // reserved | purchased | released
    t.timestamp('reserved_until', { useTz: true });
    t.timestamp('purchased_at', { useTz: true });
    t.text('agent_id');
    t.boolean('sms_enabled').notNullable().defaultTo(false);
    t.bigIncrements('seq', { primaryKey: false });
    timestampsNow(t, knex, 'created_at', 'updated_at');
    t.unique(['e164']); // one holder per number across organizations
    t.unique(['seq']);
    t.index(['org_id', 'seq']);
  });

  await knex.schema.createTable('sms_contacts', (t) => {
    tenantKeys(t);
    t.text('e164').notNullable();
    t.text('consent_status').notNullable().defaultTo('none'); // none | granted | withdrawn
    t.text('consent_source');
    t.timestamp('consented_at', { useTz: true });
    t.text('proof_text');
    t.timestamp('withdrawn_at', { useTz: true });
    t.boolean('opted_out').notNullable().defaultTo(false);
    t.timestamp('opted_out_at', { useTz: true });
    t.text('opt_out_source'); // keyword | api
    t.text('opt_out_keyword');
    t.bigIncrements('seq', { primaryKey: false });
    timestampsNow(t, knex, 'created_at', 'updated_at');
    t.unique(['org_id', 'e164']);
    t.unique(['seq']);
  });

  // Append-only consent history: the proof-of-consent export reads it.
  await knex.schema.createTable('sms_consent_events', (t) => {
    t.bigIncrements('id');
    t.text('org_id').notNullable().references('organizations.id').onDelete('CASCADE');
    t.text('e164').notNullable();
    t.text('event').notNullable(); // consent_granted | consent_withdrawn | opted_out | opted_in
    t.text('source');
    t.text('proof_text');
    t.timestamp('occurred_at', { useTz: true }).notNullable();
    timestampsNow(t, knex, 'created_at');
    t.index(['org_id', 'id']);
  });

  await knex.schema.createTable('sms_messages', (t) => {
    tenantKeys(t);
    t.text('direction').notNullable(); // outbound | inbound
    t.text('trigger'); // agent | reply | keyword (outbound only)
    t.text('from_e164').notNullable();
    t.text('to_e164').notNullable();
    t.text('body').notNullable();
    t.specificType('media_ids', 'text[]').notNullable().defaultTo('{}');
    t.text('status').notNullable(); // queued | held | sent | delivered | failed | received
    t.timestamp('held_until', { useTz: true });
    t.text('provider_message_id');
    t.text('error');
    timestampsNow(t, knex, 'created_at', 'updated_at');
    t.index(['provider_message_id']);
    t.index(['org_id', 'created_at']);
  });
}

export async function down(knex: Knex): Promise<void> {
  for (const t of ['sandbox_carrier_objects', 'sms_messages', 'sms_consent_events', 'sms_contacts', 'phone_numbers', 'sms_idempotency_keys', 'sandbox_callbacks', 'sms_provider_events']) {
    await knex.schema.dropTableIfExists(t);
  }
  await knex.schema.alterTable('sms_registrations', (t) => {
    t.dropIndex(['brand_id']);
    t.dropIndex(['campaign_id']);
    t.dropColumns('last_review', 'submission_id', 'stock_symbol', 'stock_exchange', 'registered_at', 'activated_at');
  });
}
