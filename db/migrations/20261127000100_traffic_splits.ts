/**
 * Traffic splits (docs/api-notes.md "Traffic splits"): `agent_traffic_splits` holds an agent's split of new
 * conversations over its published versions — `splits` `[{versionId, percent}]` (integers summing to 100) and
 * `stickiness` (`counterpart` | `none`). No row means the default: 100 % on the live published version; a
 * publish or a rollback deletes the row (the split resets to the new live version).
 *
 * `conversations.traffic_split` and `voice_calls.traffic_split` record the split a conversation's (or a call's)
 * version was picked from (null: pinned explicitly — a talk token, `@vN`, a draft — or started before splits).
 * `conversations_version_idx` serves the conversation list's `versionId` filter and the per-version analytics;
 * `version_id` never changes after the insert, so a stored turn stays a HOT update (migration 20261124001300).
 */
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('agent_traffic_splits', (t) => {
    t.text('agent_id').primary().references('id').inTable('agents').onDelete('CASCADE');
    t.text('org_id').notNullable().references('id').inTable('organizations').onDelete('CASCADE');
    t.jsonb('splits').notNullable();
    t.text('stickiness').notNullable().defaultTo('counterpart');
    t.text('updated_by');
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.index(['org_id']);
  });
  await knex.raw(`ALTER TABLE agent_traffic_splits ADD CONSTRAINT agent_traffic_splits_stickiness_check CHECK (stickiness IN ('counterpart', 'none'))`);
  await knex.schema.alterTable('conversations', (t) => {
    t.jsonb('traffic_split');
  });
  await knex.schema.alterTable('voice_calls', (t) => {
    t.jsonb('traffic_split');
  });
  await knex.raw('CREATE INDEX conversations_version_idx ON conversations (org_id, version_id, started_at) WHERE version_id IS NOT NULL');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP INDEX IF EXISTS conversations_version_idx');
  await knex.schema.alterTable('voice_calls', (t) => t.dropColumn('traffic_split'));
  await knex.schema.alterTable('conversations', (t) => t.dropColumn('traffic_split'));
  await knex.schema.dropTable('agent_traffic_splits');
}
