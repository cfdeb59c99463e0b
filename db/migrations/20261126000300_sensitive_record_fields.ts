/**
 * Sensitive record fields (docs/security.md "Sensitive record fields"; domain/records/sensitive.ts):
 * - `records.sealed_fields`: the record's sensitive `fields` members, each `{ "sealed": "v1:<iv>:<tag>:<ct>",
 *   "mask": "••21" }` — the value sealed with AES-256-GCM under WEBHOOK_SECRET_KEY like integration
 *   credentials, and the masked form every read answers (so no read ever opens the seal); the plain
 *   `fields` column no longer holds them.
 * - `record_schemas`: per organization, the declared fields of its records and which are sensitive.
 * Values written before this migration stay in `fields` until the next write of their record or the next
 * `PUT /record-schema`, which seals them; reads mask them meanwhile.
 */
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('records', (t) => {
    t.jsonb('sealed_fields').notNullable().defaultTo('{}');
  });
  await knex.schema.createTable('record_schemas', (t) => {
    t.text('org_id').primary().references('organizations.id').onDelete('CASCADE');
    t.jsonb('fields').notNullable().defaultTo('[]');
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTableIfExists('record_schemas');
  await knex.schema.alterTable('records', (t) => t.dropColumn('sealed_fields'));
}
