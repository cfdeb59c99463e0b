/**
 * Team and the OAuth 2.0 authorization server (spec "Authentication" 4, Team group; docs/team-and-oauth.md "Team" and
 * "Connect an app with OAuth"):
 * - `members`: people of an organization with a role and an argon2id password hash; `email` is unique over
 *   the whole service (it is the sign-in name); `failed_logins` / `locked_until` drive the sign-in lock-out;
 * - `invitations`: single-use, expiring invitation tokens (SHA-256 only);
 * - `web_sessions`: sign-in sessions of the consent pages (cookie value and CSRF token, SHA-256 only);
 * - `oauth_clients`, `oauth_grants` (one approval by one member: the family of every token it yields),
 *   `oauth_codes`, `oauth_refresh_tokens` (each stored only hashed);
 * - `api_keys.oauth_grant_id`: access tokens `<brand>_oat_…` are `api_keys` rows of kind `oauth`, so the one
 *   authentication path (api/middleware/auth.ts, api/keyCache.ts) resolves them and the change feed
 *   evicts them from every process when their grant is revoked.
 */
import type { Knex } from 'knex';
import { tenantKeys, timestampsNow } from '../migrationHelpers';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('members', (t) => {
    tenantKeys(t);
    t.text('email').notNullable().unique();
    t.text('name').notNullable().defaultTo('');
    t.text('role').notNullable();
    t.text('password_hash');
    t.integer('failed_logins').notNullable().defaultTo(0);
    t.timestamp('locked_until', { useTz: true });
    t.specificType('seq', 'bigserial');
    timestampsNow(t, knex, 'created_at');
    t.unique(['org_id', 'seq']);
  });
  await knex.schema.createTable('invitations', (t) => {
    tenantKeys(t);
    t.text('email').notNullable();
    t.text('role').notNullable();
    t.text('token_hash').notNullable().unique();
    t.text('invited_by');
    t.timestamp('expires_at', { useTz: true }).notNullable();
    t.timestamp('accepted_at', { useTz: true });
    t.timestamp('revoked_at', { useTz: true });
    t.specificType('seq', 'bigserial');
    timestampsNow(t, knex, 'created_at');
    t.unique(['org_id', 'seq']);
  });
  await knex.schema.createTable('web_sessions', (t) => {
    tenantKeys(t);
    t.text('member_id').notNullable().references('members.id').onDelete('CASCADE');
    t.text('token_hash').notNullable().unique();
    t.text('csrf_token').notNullable();
    t.timestamp('expires_at', { useTz: true }).notNullable();
    timestampsNow(t, knex, 'created_at');
  });
  await knex.schema.createTable('oauth_clients', (t) => {
    tenantKeys(t);
    t.text('name').notNullable();
    t.boolean('confidential').notNullable();
    t.text('secret_hash');
    t.specificType('redirect_uris', 'text[]').notNullable();
    t.specificType('scopes', 'text[]').notNullable();
    t.specificType('seq', 'bigserial');
    timestampsNow(t, knex, 'created_at');
    t.timestamp('deleted_at', { useTz: true });
    t.unique(['org_id', 'seq']);
  });
  await knex.schema.createTable('oauth_grants', (t) => {
    tenantKeys(t);
    t.text('client_id').notNullable().references('oauth_clients.id').onDelete('CASCADE');
    t.text('member_id').notNullable().references('members.id').onDelete('CASCADE');
    t.specificType('scopes', 'text[]').notNullable();
    t.specificType('seq', 'bigserial');
    timestampsNow(t, knex, 'created_at');
    t.timestamp('revoked_at', { useTz: true });
    t.unique(['org_id', 'seq']);
  });
  await knex.schema.createTable('oauth_codes', (t) => {
    t.text('code_hash').primary();
    t.text('org_id').notNullable().references('organizations.id').onDelete('CASCADE');
    t.text('grant_id').notNullable().references('oauth_grants.id').onDelete('CASCADE');
    t.text('redirect_uri').notNullable();
    t.text('code_challenge');
    t.text('code_challenge_method');
    t.timestamp('expires_at', { useTz: true }).notNullable();
    t.timestamp('used_at', { useTz: true });
  });
  await knex.schema.createTable('oauth_refresh_tokens', (t) => {
    t.text('token_hash').primary();
    t.text('org_id').notNullable().references('organizations.id').onDelete('CASCADE');
    t.text('grant_id').notNullable().references('oauth_grants.id').onDelete('CASCADE');
    t.specificType('scopes', 'text[]').notNullable();
    t.timestamp('expires_at', { useTz: true }).notNullable();
    t.timestamp('rotated_at', { useTz: true });
    t.index(['grant_id']);
  });
  await knex.schema.alterTable('api_keys', (t) => {
    t.text('oauth_grant_id').references('oauth_grants.id').onDelete('CASCADE');
    t.index(['oauth_grant_id']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('api_keys', (t) => t.dropColumn('oauth_grant_id'));
  for (const t of ['oauth_refresh_tokens', 'oauth_codes', 'oauth_grants', 'oauth_clients', 'web_sessions', 'invitations', 'members']) {
    await knex.schema.dropTableIfExists(t);
  }
}
