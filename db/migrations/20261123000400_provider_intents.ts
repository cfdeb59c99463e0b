/**
 * Effects at outside providers happen once (docs/operations.md "Provider calls happen once"): `provider_intents`
 * records each non-idempotent provider write (a dial, a 10DLC brand or campaign create, a number
 * purchase, a text) with the client reference the provider echoes, before the request; a retry that
 * finds an intent without a result reconciles through the provider's look-ups instead of writing again.
 *
 * The sandboxes stop deduplicating (real providers do not): `sandbox_dials` holds every dial it
 * received (the client reference is no longer its key), `sandbox_carrier_objects` keeps the reference
 * of each brand and campaign (ids are no longer derived from ours), and `provider_requests` keeps what
 * the sandbox answered, so orders and messages can be looked up by reference.
 */
import type { Knex } from 'knex';
import { timestampsNow } from '../migrationHelpers';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('provider_intents', (t) => {
    t.text('id').primary(); // pin_…
    t.text('org_id').notNullable().references('organizations.id').onDelete('CASCADE');
    t.text('kind').notNullable(); // dial | brand_create | campaign_create | number_purchase | sms_send
    t.text('reference').notNullable(); // the client reference the provider echoes back
    t.text('subject_id').notNullable(); // attempt, registration, number or message id
    t.text('provider').notNullable();
    t.text('status').notNullable().defaultTo('pending'); // pending | done | unknown
    t.jsonb('request').notNullable().defaultTo('{}');
    t.jsonb('result');
    t.integer('tries').notNullable().defaultTo(1);
    t.text('note');
    timestampsNow(t, knex, 'created_at', 'updated_at');
    t.unique(['org_id', 'kind', 'reference']);
  });
  await knex.raw(`ALTER TABLE provider_intents ADD CONSTRAINT provider_intents_status_check CHECK (status IN ('pending', 'done', 'unknown'))`);
  await knex.raw(`CREATE INDEX provider_intents_open ON provider_intents (org_id, status, created_at) WHERE status <> 'done'`);

  await knex.raw(`ALTER TABLE sandbox_dials DROP CONSTRAINT sandbox_dials_pkey`);
  await knex.raw(`ALTER TABLE sandbox_dials ADD COLUMN id bigserial PRIMARY KEY`);
  await knex.raw(`CREATE INDEX sandbox_dials_reference ON sandbox_dials (org_id, idempotency_key)`);
  await knex.raw(`CREATE INDEX sandbox_dials_to ON sandbox_dials (org_id, "to", created_at)`);

  await knex.schema.alterTable('sandbox_carrier_objects', (t) => {
    t.text('reference');
  });
  await knex.raw(`CREATE INDEX sandbox_carrier_objects_reference ON sandbox_carrier_objects (org_id, kind, reference)`);

  await knex.schema.alterTable('provider_requests', (t) => {
    t.jsonb('response');
  });
  await knex.raw(`CREATE INDEX provider_requests_reference ON provider_requests (org_id, operation, (request->>'reference')) WHERE (request->>'reference') IS NOT NULL`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`DROP INDEX IF EXISTS provider_requests_reference`);
  await knex.schema.alterTable('provider_requests', (t) => t.dropColumn('response'));
  await knex.raw(`DROP INDEX IF EXISTS sandbox_carrier_objects_reference`);
  await knex.schema.alterTable('sandbox_carrier_objects', (t) => t.dropColumn('reference'));
  await knex.raw(`DROP INDEX IF EXISTS sandbox_dials_to`);
  await knex.raw(`DROP INDEX IF EXISTS sandbox_dials_reference`);
  await knex.raw(`ALTER TABLE sandbox_dials DROP CONSTRAINT sandbox_dials_pkey`);
  await knex.raw(`ALTER TABLE sandbox_dials DROP COLUMN id`);
  await knex.raw(`DELETE FROM sandbox_dials a USING sandbox_dials b WHERE a.idempotency_key = b.idempotency_key AND a.created_at > b.created_at`);
  await knex.raw(`ALTER TABLE sandbox_dials ADD PRIMARY KEY (idempotency_key)`);
  await knex.schema.dropTableIfExists('provider_intents');
}
