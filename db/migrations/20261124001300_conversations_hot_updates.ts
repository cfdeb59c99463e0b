/**
 * Lets a stored turn update its conversation row in place (a HOT update: no new index entries), and takes the
 * hourly analytics rollup off the path that ends a conversation.
 * - The covering analytics index of migration 20261123000500 included the counters every turn changes, so
 *   each turn wrote a new entry into all five indexes of `conversations`. Pages now keep 15 % free for the
 *   updated row versions (fillfactor 85).
 * - `rolled_up`: whether an ended conversation's counters are in `conversation_stats_hourly`. Ends no longer
 *   add to the rollup's row (every end of an agent's conversations in one hour queued on that row); a sweep
 *   does it in batches (db/repositories/conversations.ts `rollUpEnded`), and analytics read the conversations
 *   not rolled up yet live (db/repositories/observe.ts `analytics`), from a partial index of those.
 * Conversations that ended before this migration were rolled up when they ended.
 */
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.raw('DROP INDEX IF EXISTS conversations_analytics_idx');
  await knex.raw('ALTER TABLE conversations ADD COLUMN rolled_up boolean NOT NULL DEFAULT false');
  await knex.raw(`UPDATE conversations SET rolled_up = true WHERE status = 'ended'`);
  await knex.raw('CREATE INDEX conversations_unrolled_idx ON conversations (org_id, started_at) WHERE NOT rolled_up');
  await knex.raw('ALTER TABLE conversations SET (fillfactor = 85)');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE conversations RESET (fillfactor)');
  await knex.raw('DROP INDEX IF EXISTS conversations_unrolled_idx');
  await knex.raw('ALTER TABLE conversations DROP COLUMN rolled_up');
  await knex.raw(`CREATE INDEX conversations_analytics_idx ON conversations (org_id, started_at)
    INCLUDE (agent_id, simulation, status, end_reason, message_count, prompt_tokens, completion_tokens, tool_calls, tool_calls_ok,
             guardrail_triggers, knowledge_lookups, knowledge_hits, cost_cents, ended_at, duration_seconds)`);
}
