/**
 * Agents: the draft (one row per agent, `version` = draft version for If-Match), its skills and
 * playbooks, frozen versions (immutable snapshots, gapless numbers per agent) and the per-organization
 * secret that signs talk tokens. Spec "Agent versions", "Agent lifecycle", "Versioning".
 */
import type { Knex } from 'knex';
import { tenantKeys, timestampsNow } from '../migrationHelpers';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('agents', (t) => {
    tenantKeys(t);
    t.specificType('seq', 'bigserial'); // list order and pagination key
    t.text('name').notNullable();
    t.text('description');
    t.text('persona');
    t.text('instructions');
    t.text('greeting');
    t.text('language').notNullable().defaultTo('en-US');
    t.text('voice_id');
    t.jsonb('dtmf').notNullable().defaultTo('{"enabled":false}');
    t.jsonb('variables').notNullable().defaultTo('[]');
    t.jsonb('guardrails').notNullable().defaultTo('{}');
    t.jsonb('caller_verification').notNullable().defaultTo('{}');
    t.integer('version').notNullable().defaultTo(1); // draft version: +1 per edit (optimistic concurrency)
    t.text('published_version_id'); // FK added below (versions reference agents)
    timestampsNow(t, knex, 'created_at', 'updated_at');
    t.index(['org_id', 'seq']);
  });
  // Name unique per organization, case-insensitively (409 duplicate_name).
  await knex.raw('CREATE UNIQUE INDEX agents_org_name_unique ON agents (org_id, lower(name))');

  await knex.schema.createTable('agent_skills', (t) => {
    tenantKeys(t);
    t.text('agent_id').notNullable().references('agents.id').onDelete('CASCADE');
    t.specificType('seq', 'bigserial');
    t.text('name').notNullable();
    t.text('type').notNullable();
    t.text('description');
    t.jsonb('config').notNullable().defaultTo('{}');
    timestampsNow(t, knex, 'created_at', 'updated_at');
    t.unique(['agent_id', 'name']);
    t.index(['agent_id', 'seq']);
  });

  await knex.schema.createTable('agent_playbooks', (t) => {
    tenantKeys(t);
    t.text('agent_id').notNullable().references('agents.id').onDelete('CASCADE');
    t.specificType('seq', 'bigserial');
    t.text('name').notNullable();
    t.text('description');
    t.jsonb('graph').notNullable();
    timestampsNow(t, knex, 'created_at', 'updated_at');
    t.unique(['agent_id', 'name']);
    t.index(['agent_id', 'seq']);
  });

  await knex.schema.createTable('agent_versions', (t) => {
    tenantKeys(t);
    t.text('agent_id').notNullable().references('agents.id').onDelete('CASCADE');
    t.integer('number').notNullable();
    t.jsonb('snapshot').notNullable();
    t.text('checksum').notNullable();
    t.integer('draft_version').notNullable();
    t.text('published_by').notNullable(); // credential (api key) id
    t.text('note');
    t.text('idempotency_key').notNullable();
    t.text('request_hash').notNullable();
    timestampsNow(t, knex, 'created_at');
    t.unique(['agent_id', 'number']); // never a duplicate number, even under racing publishes
    t.unique(['agent_id', 'idempotency_key']);
    t.check('?? > 0', ['number'], 'agent_versions_number_positive');
  });
  // Frozen means frozen: a version row is never updated (deleting the agent still cascades).
  await knex.raw(`
    CREATE FUNCTION agent_versions_immutable() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      RAISE EXCEPTION 'agent versions are immutable' USING ERRCODE = 'raise_exception';
    END $$;
    CREATE TRIGGER agent_versions_no_update BEFORE UPDATE ON agent_versions
      FOR EACH ROW EXECUTE FUNCTION agent_versions_immutable();
  `);
  await knex.schema.alterTable('agents', (t) => {
    t.foreign('published_version_id').references('agent_versions.id').onDelete('SET NULL');
  });

  await knex.schema.createTable('agent_token_secrets', (t) => {
    t.text('org_id').primary().references('organizations.id').onDelete('CASCADE');
    t.text('secret').notNullable(); // HMAC-SHA256 key of talk tokens, base64url
    timestampsNow(t, knex, 'created_at');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTableIfExists('agent_token_secrets');
  await knex.schema.alterTable('agents', (t) => t.dropForeign(['published_version_id']));
  await knex.schema.dropTableIfExists('agent_versions');
  await knex.raw('DROP FUNCTION IF EXISTS agent_versions_immutable()');
  await knex.schema.dropTableIfExists('agent_playbooks');
  await knex.schema.dropTableIfExists('agent_skills');
  await knex.schema.dropTableIfExists('agents');
}
