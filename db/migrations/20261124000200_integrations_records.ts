/**
 * Integrations and records (docs/api-notes.md "Integrations and records"):
 * - `integration_connections`: one connection per organization and kind; credentials (API tokens or
 *   OAuth tokens) only sealed with AES-256-GCM (`v1:` form of domain/webhooks/signing.ts), never plain;
 *   `sync` holds the progress of the last `records-sync/{connectionId}` run.
 * - `integration_oauth_states`: pending OAuth authorizations; the state is stored hashed (SHA-256),
 *   bound to the organization and kind, single use, with the PKCE verifier sealed.
 * - `records`: the organization's customer records (PII: name, phone, email, fields); `source` +
 *   `external_id` identify a synced or imported row so a re-sync updates instead of duplicating;
 *   indexes for the searches: phone, lower(email), and a trigram index on name.
 */
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('integration_connections', (t) => {
    t.text('id').primary();
    t.specificType('seq', 'bigserial').notNullable().unique();
    t.text('org_id').notNullable().references('id').inTable('organizations').onDelete('CASCADE');
    t.text('kind').notNullable();
    t.text('status').notNullable();
    t.text('account_label');
    t.jsonb('scopes').notNullable().defaultTo('[]');
    t.text('credentials_sealed').notNullable();
    t.jsonb('config').notNullable().defaultTo('{}');
    t.text('last_error');
    t.jsonb('sync');
    t.timestamp('connected_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.unique(['org_id', 'kind']);
  });
  await knex.schema.createTable('integration_oauth_states', (t) => {
    t.text('state_hash').primary();
    t.text('org_id').notNullable().references('id').inTable('organizations').onDelete('CASCADE');
    t.text('kind').notNullable();
    t.text('code_verifier_sealed');
    t.text('redirect_uri').notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('expires_at', { useTz: true }).notNullable();
    t.timestamp('used_at', { useTz: true });
    t.index(['org_id', 'expires_at']);
  });
  await knex.schema.createTable('records', (t) => {
    t.text('id').primary();
    t.specificType('seq', 'bigserial').notNullable().unique();
    t.text('org_id').notNullable().references('id').inTable('organizations').onDelete('CASCADE');
    t.text('name');
    t.text('phone');
    t.text('email');
    t.jsonb('fields').notNullable().defaultTo('{}');
    t.text('source').notNullable();
    t.text('external_id');
    t.text('connection_id');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.unique(['org_id', 'source', 'external_id']);
    t.index(['org_id', 'seq']);
    t.index(['org_id', 'phone']);
  });
  await knex.raw('CREATE INDEX records_org_email ON records (org_id, lower(email))');
  // Name search is a case-insensitive substring (ILIKE '%…%'): a trigram index serves it (pg_trgm ships
  // with PostgreSQL's contrib modules and is a trusted extension since PostgreSQL 13).
  await knex.raw('CREATE EXTENSION IF NOT EXISTS pg_trgm');
  await knex.raw('CREATE INDEX records_name_trgm ON records USING gin (name gin_trgm_ops)');
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTableIfExists('records');
  await knex.schema.dropTableIfExists('integration_oauth_states');
  await knex.schema.dropTableIfExists('integration_connections');
}
