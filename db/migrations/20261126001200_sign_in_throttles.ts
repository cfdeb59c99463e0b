/**
 * Throttling of credential guessing (docs/team-and-oauth.md "Team" → "Sign-in"; domain/throttle.ts; OWASP ASVS 4.0
 * V2.2.1): `sign_in_throttles` holds one counter per opaque key (account, account + address, address,
 * OAuth client, client + address; each a SHA-256), counted under a row lock before a password or client
 * secret is checked. It replaces the per-member lock-out (`members.failed_logins`, `members.locked_until`),
 * which was read before the password check and written after it, so parallel guesses slipped through and
 * anyone could lock any account for 15 minutes.
 */
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('sign_in_throttles', (t) => {
    t.text('key').primary();
    t.integer('attempts').notNullable().defaultTo(0);
    t.timestamp('blocked_until', { useTz: true });
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.index(['updated_at']);
  });
  await knex.schema.alterTable('members', (t) => {
    t.dropColumn('failed_logins');
    t.dropColumn('locked_until');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('members', (t) => {
    t.integer('failed_logins').notNullable().defaultTo(0);
    t.timestamp('locked_until', { useTz: true });
  });
  await knex.schema.dropTableIfExists('sign_in_throttles');
}
