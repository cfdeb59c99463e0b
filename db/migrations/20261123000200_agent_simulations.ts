/**
 * Agent simulations (docs/api-notes.md "Conversations": `POST /agents/{agentId}/simulate`): one row per simulation
 * (`sim_…`), its request, the simulated conversation and, once the `agent-simulation/{id}` workflow
 * completes, the verdict on each expectation.
 */
import type { Knex } from 'knex';
import { runEndColumns, runStatusCheck } from '../migrationHelpers';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('agent_simulations', (t) => {
    t.text('id').primary(); // sim_…
    t.text('org_id').notNullable().references('organizations.id').onDelete('CASCADE');
    t.text('agent_id').notNullable();
    t.text('conversation_id');
    t.jsonb('request').notNullable();
    t.text('status').notNullable().defaultTo('running'); // running | completed | failed
    t.integer('turns').notNullable().defaultTo(0);
    t.jsonb('results');
    t.boolean('passed');
    runEndColumns(t, knex);
    t.index(['org_id', 'agent_id', 'created_at']);
  });
  await knex.raw(runStatusCheck('agent_simulations'));
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTableIfExists('agent_simulations');
}
