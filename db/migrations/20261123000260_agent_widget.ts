/**
 * Widget settings of the agent draft (docs/api-notes.md "Widget"; `GET/PUT /agents/{agentId}/widget`): stored with
 * the draft like guardrails (`{}` until the first PUT; defaults applied by domain/agents/compile.ts) and
 * frozen into each published version.
 */
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('agents', (t) => {
    t.jsonb('widget').notNullable().defaultTo('{}');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('agents', (t) => {
    t.dropColumn('widget');
  });
}
