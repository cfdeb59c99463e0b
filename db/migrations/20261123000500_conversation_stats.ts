/**
 * Per-conversation counters for analytics (docs/api-notes.md "Observe"): each stored turn adds its tool calls (and
 * those that did not fail), guardrail decisions, knowledge lookups (and those that found a chunk) and its
 * charged cents to its conversation's row, in the statement that stores the turn — so
 * `GET /analytics/overview` reads one row per conversation instead of every receipt. Existing turns are
 * counted once here.
 */
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('conversations', (t) => {
    t.integer('tool_calls').notNullable().defaultTo(0);
    t.integer('tool_calls_ok').notNullable().defaultTo(0);
    t.integer('guardrail_triggers').notNullable().defaultTo(0);
    t.integer('knowledge_lookups').notNullable().defaultTo(0);
    t.integer('knowledge_hits').notNullable().defaultTo(0);
    t.integer('cost_cents').notNullable().defaultTo(0);
  });
  await knex.raw(`
    UPDATE conversations c SET
      tool_calls = s.tool_calls, tool_calls_ok = s.tool_ok, guardrail_triggers = s.guardrails,
      knowledge_lookups = s.lookups, knowledge_hits = s.hits
      FROM (SELECT t.conversation_id,
                   sum(jsonb_array_length(t.receipt->'toolCalls'))::int AS tool_calls,
                   sum((SELECT count(*) FROM jsonb_array_elements(t.receipt->'toolCalls') x WHERE NOT (x \\? 'error')))::int AS tool_ok,
                   sum(jsonb_array_length(t.receipt->'guardrails'))::int AS guardrails,
                   sum(jsonb_array_length(t.receipt->'knowledge'))::int AS lookups,
                   sum((SELECT count(*) FROM jsonb_array_elements(t.receipt->'knowledge') k WHERE jsonb_array_length(k->'results') > 0))::int AS hits
              FROM conversation_turns t GROUP BY t.conversation_id) s
     WHERE s.conversation_id = c.id`);
  await knex.raw(`
    UPDATE conversations c SET cost_cents = s.cents
      FROM (SELECT u.org_id, u.details->>'conversationId' AS cid, sum(u.amount_cents)::int AS cents
              FROM usage_entries u WHERE u.kind IN ('conversation_message', 'llm_tokens') GROUP BY 1, 2) s
     WHERE s.org_id = c.org_id AND s.cid = c.id`);
  // Analytics read only these columns: an index-only scan over the range, not the wide rows.
  await knex.raw(`CREATE INDEX conversations_analytics_idx ON conversations (org_id, started_at)
    INCLUDE (agent_id, simulation, status, end_reason, message_count, prompt_tokens, completion_tokens, tool_calls, tool_calls_ok,
             guardrail_triggers, knowledge_lookups, knowledge_hits, cost_cents, ended_at, duration_seconds)`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP INDEX IF EXISTS conversations_analytics_idx');
  await knex.schema.alterTable('conversations', (t) => {
    for (const c of ['tool_calls', 'tool_calls_ok', 'guardrail_triggers', 'knowledge_lookups', 'knowledge_hits', 'cost_cents']) t.dropColumn(c);
  });
}
