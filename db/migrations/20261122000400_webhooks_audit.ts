/**
 * Webhooks and audit logs (docs/api-notes.md "Webhooks and audit logs"): endpoints, events, deliveries with their attempts, the delivery
 * outbox swept by events/dispatcher.ts, and the append-only audit log guarded by a trigger.
 * Every tenant table carries `org_id`; list orders use a `seq` bigserial so cursors are stable.
 */
import type { Knex } from 'knex';
import { appendOnlyTriggers, tenantKeys, timestampsNow } from '../migrationHelpers';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('webhook_endpoints', (t) => {
    tenantKeys(t);
    t.specificType('seq', 'bigserial').notNullable().unique();
    t.text('url').notNullable();
    t.text('description');
    t.specificType('event_types', 'text[]').notNullable().defaultTo('{}'); // empty: every type
    t.boolean('enabled').notNullable().defaultTo(true);
    t.text('disabled_reason'); // manual | gone | failing
    t.timestamp('disabled_at', { useTz: true });
    t.timestamp('failing_since', { useTz: true });
    // Signing secrets, sealed by events/secrets.ts (AES-256-GCM when WEBHOOK_SECRET_KEY is set).
    t.text('secret_sealed').notNullable();
    t.text('secret_prefix').notNullable();
    t.text('previous_secret_sealed');
    t.timestamp('previous_secret_expires_at', { useTz: true });
    timestampsNow(t, knex, 'created_at', 'updated_at');
    t.timestamp('deleted_at', { useTz: true }); // soft delete keeps the delivery history readable in the database
    t.index(['org_id', 'seq']);
  });

  await knex.schema.createTable('events', (t) => {
    tenantKeys(t);
    t.text('type').notNullable();
    t.jsonb('data').notNullable();
    timestampsNow(t, knex, 'created_at');
    t.index(['org_id', 'created_at']);
  });

  await knex.schema.createTable('webhook_deliveries', (t) => {
    tenantKeys(t);
    t.specificType('seq', 'bigserial').notNullable().unique();
    t.text('endpoint_id').notNullable().references('webhook_endpoints.id').onDelete('CASCADE');
    t.text('event_id').notNullable().references('events.id').onDelete('CASCADE');
    t.text('event_type').notNullable();
    t.text('status').notNullable().defaultTo('pending'); // pending | retrying | succeeded | failed
    t.integer('run').notNullable().defaultTo(1); // +1 per manual retry; a workflow run only acts on its own run
    t.integer('attempt_count').notNullable().defaultTo(0);
    t.integer('last_status_code');
    t.text('last_error');
    timestampsNow(t, knex, 'created_at', 'updated_at');
    t.timestamp('succeeded_at', { useTz: true });
    t.unique(['endpoint_id', 'event_id']);
    t.index(['org_id', 'endpoint_id', 'seq']);
  });

  await knex.schema.createTable('webhook_delivery_attempts', (t) => {
    t.bigIncrements('id');
    t.text('org_id').notNullable().references('organizations.id').onDelete('CASCADE');
    t.text('delivery_id').notNullable().references('webhook_deliveries.id').onDelete('CASCADE');
    t.integer('run').notNullable();
    t.integer('attempt').notNullable();
    t.timestamp('attempted_at', { useTz: true }).notNullable();
    t.integer('status_code');
    t.integer('duration_ms').notNullable();
    t.text('response_body');
    t.text('error');
    t.text('outcome').notNullable(); // succeeded | failed
    t.unique(['delivery_id', 'run', 'attempt']);
  });

  // Transactional outbox: a row per delivery run to start. Written in the same transaction as the event;
  // the dispatcher starts `webhook-delivery/{deliveryId}` and deletes the row. A crash in between
  // leaves the row, and the next sweep starts it again (deterministic workflow id: harmless).
  await knex.schema.createTable('webhook_outbox', (t) => {
    t.bigIncrements('id');
    t.text('org_id').notNullable().references('organizations.id').onDelete('CASCADE');
    t.text('delivery_id').notNullable().references('webhook_deliveries.id').onDelete('CASCADE');
    t.integer('run').notNullable();
    timestampsNow(t, knex, 'created_at');
    t.unique(['delivery_id', 'run']);
  });

  await knex.schema.createTable('audit_logs', (t) => {
    tenantKeys(t);
    t.specificType('seq', 'bigserial').notNullable().unique();
    t.text('actor_id').notNullable();
    t.text('actor_kind').notNullable();
    t.text('operation_id').notNullable();
    t.text('method').notNullable();
    t.text('path').notNullable();
    t.text('resource_type').notNullable();
    t.text('resource_id');
    t.text('request_id').notNullable();
    t.text('source_ip');
    t.integer('status_code').notNullable();
    t.timestamp('occurred_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.index(['org_id', 'seq']);
    t.index(['org_id', 'actor_id', 'seq']);
    t.index(['org_id', 'resource_type', 'resource_id', 'seq']);
  });

  // Append-only at the database level: UPDATE and DELETE of rows raise. Deleting a whole organization
  // (ON DELETE CASCADE) is the one exception, so tenant removal still works; TRUNCATE is also refused.
  await knex.raw(`
    CREATE FUNCTION audit_logs_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF TG_OP = 'DELETE' AND pg_trigger_depth() > 1 THEN
        RETURN OLD; -- cascade from DELETE FROM organizations
      END IF;
      RAISE EXCEPTION 'audit_logs is append-only: % is not allowed', TG_OP USING ERRCODE = 'insufficient_privilege';
    END $$;
    ${appendOnlyTriggers('audit_logs', 'audit_logs_append_only')}
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP TABLE IF EXISTS audit_logs');
  await knex.raw('DROP FUNCTION IF EXISTS audit_logs_append_only()');
  for (const t of ['webhook_outbox', 'webhook_delivery_attempts', 'webhook_deliveries', 'events', 'webhook_endpoints']) {
    await knex.schema.dropTableIfExists(t);
  }
}
