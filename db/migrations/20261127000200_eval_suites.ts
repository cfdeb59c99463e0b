/**
 * Evaluation suites of an agent (docs/evals.md): `eval_suites` (`evs_…`: scenarios of scripted turns or a simulated
 * caller, expectations, skill stubs, a repeat count), `eval_runs` (`evr_…`: one run of a suite against the draft or a
 * version, the suite as it was when the run started, the summary once workflow `agent-eval/{runId}` completes; a
 * publish gate's run also keeps its Idempotency-Key and request hash), `eval_run_results` (one row per scenario and
 * repeat) and `conversations.skill_stubs`: a conversation with stubs (every simulation and evaluation) never runs a
 * real skill endpoint (services/conversations/skills.ts).
 */
import type { Knex } from 'knex';
import { runEndColumns, runStatusCheck, tenantKeys, timestampsNow } from '../migrationHelpers';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('conversations', (t) => {
    t.jsonb('skill_stubs');
  });
  await knex.schema.createTable('eval_suites', (t) => {
    tenantKeys(t); // evs_…
    t.bigIncrements('seq', { primaryKey: false }); // list order and pagination key
    t.text('agent_id').notNullable();
    t.text('name').notNullable();
    t.text('description');
    t.jsonb('scenarios').notNullable();
    t.integer('repeat').notNullable().defaultTo(1);
    t.integer('concurrency').notNullable().defaultTo(4);
    timestampsNow(t, knex, 'created_at', 'updated_at');
    t.unique(['org_id', 'agent_id', 'name']);
  });
  await knex.schema.createTable('eval_runs', (t) => {
    tenantKeys(t); // evr_…
    t.bigIncrements('seq', { primaryKey: false }); // list order and pagination key (two runs may share a created_at)
    t.text('agent_id').notNullable();
    t.text('suite_id').notNullable();
    t.jsonb('target').notNullable();
    t.jsonb('suite').notNullable();
    t.text('status').notNullable().defaultTo('running');
    t.text('gate_key');
    t.text('request_hash');
    t.double('pass_rate');
    t.integer('passed');
    t.integer('total').notNullable();
    t.jsonb('flaky');
    runEndColumns(t, knex);
    t.index(['org_id', 'suite_id', 'seq']);
  });
  await knex.raw(runStatusCheck('eval_runs'));
  await knex.schema.createTable('eval_run_results', (t) => {
    t.text('org_id').notNullable().references('organizations.id').onDelete('CASCADE');
    t.text('run_id').notNullable();
    t.integer('scenario').notNullable();
    t.integer('repeat').notNullable();
    t.boolean('passed').notNullable();
    t.text('conversation_id');
    t.jsonb('results').notNullable();
    t.text('error');
    t.integer('wall_ms').notNullable().defaultTo(0);
    timestampsNow(t, knex, 'created_at');
    t.primary(['run_id', 'scenario', 'repeat']);
    t.index(['org_id', 'run_id']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTableIfExists('eval_run_results');
  await knex.schema.dropTableIfExists('eval_runs');
  await knex.schema.dropTableIfExists('eval_suites');
  await knex.schema.alterTable('conversations', (t) => {
    t.dropColumn('skill_stubs');
  });
}
