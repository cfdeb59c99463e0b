/**
 * Deletes and analysis re-runs (docs/api-notes.md "Deletes" and "Conversation analysis"):
 * - `agents.archived_at`: a deleted agent is archived, not removed — its versions, conversations and audit
 *   entries keep pointing at it; its name is free again (the unique name index covers live agents only).
 * - `knowledge_sources.deleted_at`: a deleted source leaves the draft; its chunks stay for the published
 *   versions whose snapshots list it (retrieval of a pinned version filters by source id).
 * - `conversation_analysis_revisions`: every analysis of a conversation, numbered from 1; the
 *   `conversation_analyses` row stays the latest one (what Observe shows).
 * - `analysis_runs`: a bulk re-run over a filter (workflow `analysis-run/{id}`) and its progress.
 */
import type { Knex } from 'knex';
import { tenantKeys, timestampsNow } from '../migrationHelpers';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('agents', (t) => {
    t.timestamp('archived_at', { useTz: true });
  });
  await knex.raw('DROP INDEX agents_org_name_unique');
  await knex.raw('CREATE UNIQUE INDEX agents_org_name_unique ON agents (org_id, lower(name)) WHERE archived_at IS NULL');

  await knex.schema.alterTable('knowledge_sources', (t) => {
    t.timestamp('deleted_at', { useTz: true });
  });

  await knex.schema.createTable('analysis_runs', (t) => {
    tenantKeys(t); // arn_…
    t.specificType('seq', 'bigserial');
    // queued → running → completed | failed
    t.text('status').notNullable().defaultTo('queued');
    t.jsonb('filter').notNullable().defaultTo('{}');
    // Extraction fields given in the request; null: each conversation's agent's current plan.
    t.jsonb('fields');
    t.integer('total').notNullable().defaultTo(0);
    t.integer('completed').notNullable().defaultTo(0);
    t.integer('failed').notNullable().defaultTo(0);
    // Conversations are taken in id order; the last one done (the workflow's resume point).
    t.text('cursor');
    // Conversations that ended after this instant are not part of the run.
    t.timestamp('cutoff', { useTz: true }).notNullable();
    t.text('error');
    timestampsNow(t, knex, 'created_at', 'updated_at');
    t.timestamp('completed_at', { useTz: true });
    t.index(['org_id', 'seq']);
  });

  await knex.schema.createTable('conversation_analysis_revisions', (t) => {
    tenantKeys(t); // anr_…
    t.text('conversation_id').notNullable().references('conversations.id').onDelete('CASCADE');
    t.integer('revision').notNullable();
    // `end` (the analysis after the conversation ended), `rerun` (POST /conversations/{id}/analysis), `run` (a bulk run)
    t.text('trigger').notNullable();
    t.text('run_id').references('analysis_runs.id').onDelete('SET NULL');
    t.text('status').notNullable(); // completed | failed
    t.text('summary');
    t.text('outcome');
    t.text('sentiment');
    t.jsonb('fields').notNullable().defaultTo('{}');
    t.jsonb('notes').notNullable().defaultTo('[]');
    // The extraction fields the revision asked for.
    t.jsonb('plan').notNullable().defaultTo('[]');
    t.text('error');
    t.text('model');
    timestampsNow(t, knex, 'created_at');
    t.unique(['conversation_id', 'revision']);
    t.index(['org_id', 'conversation_id']);
  });
  // One revision per conversation and bulk run: a retried batch finds what it did.
  await knex.raw('CREATE UNIQUE INDEX conversation_analysis_revisions_run ON conversation_analysis_revisions (run_id, conversation_id) WHERE run_id IS NOT NULL');
  // The analyses stored before revisions existed are revision 1.
  await knex.raw(`
    INSERT INTO conversation_analysis_revisions (id, org_id, conversation_id, revision, trigger, status, summary, outcome, sentiment, fields, notes, error, model, created_at)
    SELECT 'anr_' || md5(conversation_id), org_id, conversation_id, 1, 'end', status, summary, outcome, sentiment, fields, notes, error, model, coalesce(completed_at, created_at)
      FROM conversation_analyses WHERE status IN ('completed', 'failed')`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTableIfExists('conversation_analysis_revisions');
  await knex.schema.dropTableIfExists('analysis_runs');
  await knex.schema.alterTable('knowledge_sources', (t) => {
    t.dropColumn('deleted_at');
  });
  await knex.raw('DROP INDEX agents_org_name_unique');
  await knex.raw('CREATE UNIQUE INDEX agents_org_name_unique ON agents (org_id, lower(name))');
  await knex.schema.alterTable('agents', (t) => {
    t.dropColumn('archived_at');
  });
}
