/**
 * Agent simulations (docs/api-notes.md "Conversations": `POST /agents/{agentId}/simulate`): one row per simulation
 * (`sim_…`), its request, the simulated conversation and, once the `agent-simulation/{id}` workflow
 * completes, the verdict on each expectation.
 */
import type { Knex } from 'knex';
import { timestampsNow } from '../migrationHelpers';

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
    t.text('error');
    timestampsNow(t, knex, 'created_at');
    t.timestamp('completed_at', { useTz: true });
    t.index(['org_id', 'agent_id', 'created_at']);
  });
  await knex.raw(`ALTER TABLE agent_simulations ADD CONSTRAINT agent_simulations_status_check CHECK (status IN ('running', 'completed', 'failed'))`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTableIfExists('agent_simulations');
}
