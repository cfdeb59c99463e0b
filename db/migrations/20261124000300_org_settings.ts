/**
 * Organization settings without an agent of their own (docs/api-notes.md
 * "Variables, escalation, onboarding, meta and settings"): organization variables (secret values sealed with AES-256-GCM, never stored in plain text),
 * escalation destinations and the presence of the teammates behind them, saved dashboards, report exports
 * with their files, and the phone settings of owned numbers.
 */
import type { Knex } from 'knex';
import { tenantKeys, timestampsNow } from '../migrationHelpers';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('org_variables', (t) => {
    tenantKeys(t);
    t.specificType('seq', 'bigserial').notNullable().unique();
    t.text('name').notNullable();
    t.text('description');
    t.boolean('secret').notNullable().defaultTo(false);
    // Plain value of a non-secret variable; null for a secret one.
    t.text('value');
    // `v1:` AES-256-GCM sealed value of a secret variable; null for a non-secret one.
    t.text('value_sealed');
    t.integer('revision').notNullable().defaultTo(1);
    timestampsNow(t, knex, 'created_at', 'updated_at');
    t.unique(['org_id', 'name']);
    t.check('(secret AND value IS NULL AND value_sealed IS NOT NULL) OR (NOT secret AND value_sealed IS NULL AND value IS NOT NULL)', [], 'org_variables_value_form');
  });
  await knex.schema.createTable('escalation_destinations', (t) => {
    tenantKeys(t);
    t.specificType('seq', 'bigserial').notNullable().unique();
    t.text('name').notNullable();
    t.text('kind').notNullable();
    t.text('address').notNullable();
    t.text('time_zone').notNullable();
    t.jsonb('hours');
    t.text('teammate');
    timestampsNow(t, knex, 'created_at', 'updated_at');
    t.unique(['org_id', 'name']);
  });
  await knex.schema.createTable('teammate_presence', (t) => {
    tenantKeys(t);
    t.specificType('seq', 'bigserial').notNullable().unique();
    t.text('teammate').notNullable();
    t.text('status').notNullable();
    t.text('note');
    t.timestamp('until', { useTz: true });
    timestampsNow(t, knex, 'updated_at');
    t.unique(['org_id', 'teammate']);
  });
  await knex.schema.createTable('dashboards', (t) => {
    tenantKeys(t);
    t.specificType('seq', 'bigserial').notNullable().unique();
    t.text('name').notNullable();
    t.text('description');
    t.jsonb('widgets').notNullable();
    timestampsNow(t, knex, 'created_at', 'updated_at');
  });
  await knex.schema.createTable('reports', (t) => {
    tenantKeys(t);
    t.specificType('seq', 'bigserial').notNullable().unique();
    t.text('kind').notNullable();
    t.text('format').notNullable();
    t.text('schedule');
    t.text('time_zone').notNullable();
    t.timestamp('range_from', { useTz: true });
    t.timestamp('range_to', { useTz: true });
    t.text('status').notNullable();
    t.text('error');
    timestampsNow(t, knex, 'created_at', 'updated_at');
  });
  await knex.schema.createTable('report_files', (t) => {
    tenantKeys(t);
    t.specificType('seq', 'bigserial').notNullable().unique();
    t.text('report_id').notNullable().references('reports.id').onDelete('CASCADE');
    t.timestamp('period_from', { useTz: true }).notNullable();
    t.timestamp('period_to', { useTz: true }).notNullable();
    t.integer('row_count').notNullable();
    t.integer('byte_size').notNullable();
    t.text('content_type').notNullable();
    t.binary('content').notNullable();
    timestampsNow(t, knex, 'created_at');
    // One file per period: a retried export activity finds the file it wrote.
    t.unique(['report_id', 'period_from']);
  });
  await knex.schema.createTable('number_settings', (t) => {
    t.text('number_id').primary().references('phone_numbers.id').onDelete('CASCADE');
    t.text('org_id').notNullable().references('organizations.id').onDelete('CASCADE');
    t.jsonb('settings').notNullable();
    t.integer('revision').notNullable().defaultTo(1);
    timestampsNow(t, knex, 'updated_at');
  });
}

export async function down(knex: Knex): Promise<void> {
  for (const table of ['number_settings', 'report_files', 'reports', 'dashboards', 'teammate_presence', 'escalation_destinations', 'org_variables']) {
    await knex.schema.dropTableIfExists(table);
  }
}
