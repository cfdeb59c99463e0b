/**
 * The hourly analytics rollup's SQL (docs/api-notes.md "Observe"; table `conversation_stats_hourly`, migration
 * 20261123000600): shared by the migration's backfill and by the writes that end a conversation.
 */

/** The rollup's counter columns in insert order. */
export const COLUMNS =
  'org_id, agent_id, hour, conversations, ended, contained, messages, duration_count, tool_calls, tool_calls_ok, guardrail_triggers, knowledge_lookups, knowledge_hits, duration_sum, tokens, cost_cents, h0, h1, h2, h3, h4, h5, h6, h7, h8, h9';

/** Upper bounds of the duration histogram buckets h0…h8, seconds (h9 is everything longer). */
export const DURATION_BOUNDS = [15, 30, 60, 120, 300, 600, 1200, 1800, 3600];

/**
 * The SELECT producing rollup rows (columns {@link COLUMNS}) of ended, non-simulated conversations matching
 * `where`, read from `from` (alias `c`: the table, or a statement's CTE of conversation rows).
 */
export function rollupSelect(where: string, from = 'conversations c'): string {
  const dur = 'coalesce(c.duration_seconds, EXTRACT(EPOCH FROM (c.ended_at - c.started_at)))';
  const bucket = (i: number) =>
    i === 0 ? `(${dur} < ${DURATION_BOUNDS[0]})::int` : i < 9 ? `(${dur} >= ${DURATION_BOUNDS[i - 1]} AND ${dur} < ${DURATION_BOUNDS[i]})::int` : `(${dur} >= ${DURATION_BOUNDS[8]})::int`;
  return `SELECT c.org_id, c.agent_id, date_trunc('hour', c.started_at), count(*), count(*),
            count(*) FILTER (WHERE coalesce(c.end_reason, '') NOT IN ('transferred', 'escalated')), sum(c.message_count), count(*),
            sum(c.tool_calls), sum(c.tool_calls_ok), sum(c.guardrail_triggers), sum(c.knowledge_lookups), sum(c.knowledge_hits),
            sum(${dur}), sum(c.prompt_tokens + c.completion_tokens), sum(c.cost_cents),
            ${Array.from({ length: 10 }, (_, i) => `sum(${bucket(i)})`).join(', ')}
       FROM ${from}
      WHERE c.status = 'ended' AND c.simulation = false AND c.ended_at IS NOT NULL AND ${where}
      GROUP BY 1, 2, 3`;
}

/** ON CONFLICT … DO UPDATE SET clause adding the new row's counters. */
export const ADD = COLUMNS.split(', ')
  .slice(3)
  .map((c) => `${c} = s.${c} + EXCLUDED.${c}`)
  .join(', ');
