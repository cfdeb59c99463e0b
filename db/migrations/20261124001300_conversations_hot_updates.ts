/**
 * Lets a stored turn update its conversation row in place (a HOT update: no new index entries). The covering
 * analytics index of migration 20261123000500 included the counters every turn changes, so each turn wrote a
 * new entry into all five indexes of `conversations`; since the hourly rollup (migration 20261123000600)
 * analytics read only the active conversations live (db/repositories/observe.ts `analytics`), which a partial
 * index serves. Pages keep 15 % free for the updated row versions (fillfactor 85).
 */
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.raw('DROP INDEX IF EXISTS conversations_analytics_idx');
  await knex.raw(`CREATE INDEX conversations_active_started_idx ON conversations (org_id, started_at) WHERE status = 'active'`);
  await knex.raw('ALTER TABLE conversations SET (fillfactor = 85)');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE conversations RESET (fillfactor)');
  await knex.raw('DROP INDEX IF EXISTS conversations_active_started_idx');
  await knex.raw(`CREATE INDEX conversations_analytics_idx ON conversations (org_id, started_at)
    INCLUDE (agent_id, simulation, status, end_reason, message_count, prompt_tokens, completion_tokens, tool_calls, tool_calls_ok,
             guardrail_triggers, knowledge_lookups, knowledge_hits, cost_cents, ended_at, duration_seconds)`);
}
