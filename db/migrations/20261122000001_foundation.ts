/**
 * Foundation schema: organizations, credentials, the SMS registration draft, usage entries,
 * the outbound provider request log and the shared rate-limit counters.
 * Every tenant table carries `org_id` (DESIGN.md "Tenancy").
 */
import type { Knex } from 'knex';
import { tenantKeys, timestampsNow } from '../migrationHelpers';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('organizations', (t) => {
    t.text('id').primary();
    t.text('name').notNullable();
    timestampsNow(t, knex, 'created_at');
  });

  await knex.schema.createTable('api_keys', (t) => {
    tenantKeys(t);
    t.text('kind').notNullable(); // secret | publishable | oauth
    t.text('name').notNullable().defaultTo('');
    t.text('display_prefix').notNullable(); // first characters, for listings; never the secret part
    t.text('key_hash').notNullable().unique(); // SHA-256 of the whole key
    t.specificType('scopes', 'text[]').notNullable();
    t.integer('rate_limit_points'); // null: deployment default
    t.integer('rate_limit_window_seconds');
    timestampsNow(t, knex, 'created_at');
    t.timestamp('revoked_at', { useTz: true });
    t.index(['org_id', 'created_at']);
  });

  await knex.schema.createTable('sms_registrations', (t) => {
    t.text('id').primary();
    t.text('org_id').notNullable().unique().references('organizations.id').onDelete('CASCADE');
    for (const c of [
      'legal_name', 'display_name', 'ein', 'entity_type', 'vertical', 'country', 'street', 'city', 'state',
      'postal_code', 'website', 'support_email', 'phone', 'use_case', 'opt_in_method', 'description',
      'sample1', 'sample2', 'message_flow', 'help_message',
    ]) {
      t.text(c);
    }
    t.boolean('use_policy_page');
    t.boolean('sends_links');
    t.boolean('quiet_hours_replies_exempt').notNullable().defaultTo(true);
    t.text('status').notNullable().defaultTo('draft');
    t.text('provider_status');
    t.text('last_error');
    t.text('brand_id');
    t.text('campaign_id');
    t.timestamp('submitted_at', { useTz: true });
    timestampsNow(t, knex, 'created_at', 'updated_at');
  });

  await knex.schema.createTable('usage_entries', (t) => {
    tenantKeys(t);
    t.text('kind').notNullable(); // e.g. 10dlc_brand_registration
    t.integer('quantity').notNullable().defaultTo(1);
    t.integer('amount_cents').notNullable();
    t.text('dedupe_key').notNullable(); // one charge per business event
    t.jsonb('details').notNullable().defaultTo('{}');
    timestampsNow(t, knex, 'created_at');
    t.unique(['org_id', 'dedupe_key']);
  });

  // Append-only log of every call an adapter makes to an outside provider (carrier, telephony, LLM).
  await knex.schema.createTable('provider_requests', (t) => {
    t.bigIncrements('id');
    t.text('org_id').notNullable().references('organizations.id').onDelete('CASCADE');
    t.text('provider').notNullable();
    t.text('operation').notNullable();
    t.jsonb('request').notNullable().defaultTo('{}');
    timestampsNow(t, knex, 'created_at');
    t.index(['org_id', 'created_at']);
  });

  // Counters of rate-limiter-flexible's RateLimiterPostgres (its own column layout), shared by every API process.
  await knex.raw(`CREATE TABLE IF NOT EXISTS rate_limits (
    key varchar(255) PRIMARY KEY,
    points integer NOT NULL DEFAULT 0,
    expire bigint
  )`);
}

export async function down(knex: Knex): Promise<void> {
  for (const t of ['rate_limits', 'provider_requests', 'usage_entries', 'sms_registrations', 'api_keys', 'organizations']) {
    await knex.schema.dropTableIfExists(t);
  }
}
