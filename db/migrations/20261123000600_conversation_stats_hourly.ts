/**
 * Hourly analytics rollup (docs/api-notes.md "Observe"): when a conversation ends (not a simulation), its final
 * counters are added to the row of its organization, agent and start hour (UTC), in the transaction that
 * ends it; `GET /analytics/…` reads these rows plus the few conversations still active, instead of every
 * conversation. Durations are kept as a sum and a histogram (h0…h9: under 15 s, 30 s, 1, 2, 5, 10, 20, 30,
 * 60 minutes, and longer), from which p95 is interpolated. Existing ended conversations are rolled up here.
 */
import type { Knex } from 'knex';
import { ADD, COLUMNS, rollupSelect } from '../analyticsRollup';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('conversation_stats_hourly', (t) => {
    t.text('org_id').notNullable().references('organizations.id').onDelete('CASCADE');
    t.text('agent_id').notNullable();
    t.timestamp('hour', { useTz: true }).notNullable();
    for (const c of ['conversations', 'ended', 'contained', 'messages', 'duration_count', 'tool_calls', 'tool_calls_ok', 'guardrail_triggers', 'knowledge_lookups', 'knowledge_hits']) {
      t.integer(c).notNullable().defaultTo(0);
    }
    t.double('duration_sum').notNullable().defaultTo(0);
    t.bigInteger('tokens').notNullable().defaultTo(0);
    t.bigInteger('cost_cents').notNullable().defaultTo(0);
    for (let i = 0; i < 10; i++) t.integer(`h${i}`).notNullable().defaultTo(0);
    t.primary(['org_id', 'agent_id', 'hour']);
  });
  await knex.raw(`INSERT INTO conversation_stats_hourly AS s (${COLUMNS}) ${rollupSelect('TRUE')} ON CONFLICT (org_id, agent_id, hour) DO UPDATE SET ${ADD}`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTableIfExists('conversation_stats_hourly');
}
