/**
 * Observe benchmark (docs/benchmarks.md): `GET /analytics/overview` over 100,000 conversations and
 * 1,000,000 messages of one organization (30 days; 5 turns of receipts per conversation, usage entries
 * per reply), p50/p99 over repeated requests through HTTP, and `GET /conversations` first pages. Rows are
 * generated in SQL (generate_series), not through the runtime, with the per-conversation counters a
 * stored turn would have added.
 *
 * Run: `BENCH_ONLY=observe npm run bench` or `npx tsx bench/observe.ts`. BENCH_OBSERVE_CONVERSATIONS
 * (100,000) and BENCH_OBSERVE_RUNS (50) set the size. Target: overview p99 < 100 ms.
 */
import os from 'node:os';
import { runBench } from './entry';
import { rollUpEnded } from '../db/repositories/conversations';
import { openBenchOrganization, percentile } from './harness';

const CONVERSATIONS = Number(process.env.BENCH_OBSERVE_CONVERSATIONS ?? 100_000);
const RUNS = Number(process.env.BENCH_OBSERVE_RUNS ?? 50);
const MESSAGES_PER_CONVERSATION = 10;
const TURNS_PER_CONVERSATION = 5;


/** Runs the observe section and prints its figures. */
export async function runObserveBench(): Promise<void> {
  const { db, orgId, key, baseUrl, timedGet: get, close } = await openBenchOrganization('observe', 'Observe bench', { poolMax: 20 });
  try {
    const agentId = 'agt_benchobserve01';
    await db('agents').insert({ id: agentId, org_id: orgId, name: 'Bench agent' });
    const t0 = performance.now();
    // Conversations spread over the last 30 days, 1 in 10 escalated, 1 in 20 a call.
    await db.raw(
      `INSERT INTO conversations (id, org_id, agent_id, channel, mode, version_id, status, end_reason, message_count, prompt_tokens, completion_tokens,
                                  tool_calls, tool_calls_ok, guardrail_triggers, knowledge_lookups, knowledge_hits, cost_cents, started_at, ended_at)
       SELECT 'cnv_bench' || lpad(g::text, 9, '0'), ?, ?, CASE WHEN g % 20 = 0 THEN 'voice' ELSE 'chat' END, 'published', 'ver_bench', 'ended',
              CASE WHEN g % 10 = 0 THEN 'escalated' ELSE 'ended_by_user' END, ?, 400, 120,
              1, 1, CASE WHEN g % 10 = 0 THEN 1 ELSE 0 END, 5, 3, 5,
              now() - (g::float / ? * interval '30 days'), now() - (g::float / ? * interval '30 days') + ((g % 600) * interval '1 second')
         FROM generate_series(1, ?) g`,
      [orgId, agentId, MESSAGES_PER_CONVERSATION, CONVERSATIONS, CONVERSATIONS, CONVERSATIONS],
    );
    await db.raw(
      `INSERT INTO conversation_messages (id, org_id, conversation_id, seq, turn, role, content)
       SELECT 'cmsg_b' || lpad(g::text, 9, '0') || lpad(s::text, 2, '0'), ?, 'cnv_bench' || lpad(g::text, 9, '0'), s, s / 2,
              CASE WHEN s % 2 = 0 THEN 'assistant' ELSE 'user' END, 'A message of the benchmark conversation number ' || g
         FROM generate_series(1, ?) g, generate_series(0, ? - 1) s`,
      [orgId, CONVERSATIONS, MESSAGES_PER_CONVERSATION],
    );
    await db.raw(
      `INSERT INTO conversation_turns (org_id, conversation_id, turn, receipt, prompt_tokens, completion_tokens, model)
       SELECT ?, 'cnv_bench' || lpad(g::text, 9, '0'), t,
              jsonb_build_object('turn', t,
                'toolCalls', CASE WHEN t = 3 THEN jsonb_build_array(jsonb_build_object('id', 'c', 'skill', 'book', 'type', 'book_appointment', 'source', 'model', 'inputs', '{}'::jsonb, 'durationMs', 12)) ELSE '[]'::jsonb END,
                'knowledge', jsonb_build_array(jsonb_build_object('query', 'q', 'results', CASE WHEN t % 2 = 0 THEN '[]'::jsonb ELSE jsonb_build_array(jsonb_build_object('chunkId', 'chk', 'score', 0.4, 'sourceId', 'ks', 'source', 'FAQ')) END, 'durationMs', 3)),
                'guardrails', CASE WHEN g % 10 = 0 AND t = 5 THEN jsonb_build_array(jsonb_build_object('rule', 'escalateOn', 'action', 'escalated', 'excerpt', 'lawyer', 'stage', 'input')) ELSE '[]'::jsonb END,
                'latency', '[]'::jsonb, 'playbook', null),
              80, 24, 'sandbox'
         FROM generate_series(1, ?) g, generate_series(1, ?) t`,
      [orgId, CONVERSATIONS, TURNS_PER_CONVERSATION],
    );
    await db.raw(
      `INSERT INTO usage_entries (id, org_id, kind, quantity, unit_price_cents, amount_cents, dedupe_key, details, created_at)
       SELECT 'use_b' || lpad(g::text, 9, '0'), ?, 'conversation_message', 5, 1, 5, 'bench:' || g, jsonb_build_object('conversationId', 'cnv_bench' || lpad(g::text, 9, '0'), 'agentId', ?::text),
              now() - (g::float / ? * interval '30 days')
         FROM generate_series(1, ?) g`,
      [orgId, agentId, CONVERSATIONS, CONVERSATIONS],
    );
    // What the rollup sweep adds to the hourly rollup for the ended conversations (db/analyticsRollup.ts).
    while ((await rollUpEnded(db, 10_000)) > 0);
    await db.raw('VACUUM ANALYZE'); // as autovacuum would: sets the visibility map the index-only scan needs
    const loadSeconds = (performance.now() - t0) / 1000;
    const check = (await (await fetch(`${baseUrl}/analytics/overview`, { headers: { authorization: `Bearer ${key}` } })).json()) as { data: { totals: { conversations: number; messages: number } } };
    const overview: number[] = [];
    const byAgent: number[] = [];
    const lists: number[] = [];
    await get('/analytics/overview');
    for (let i = 0; i < RUNS; i++) {
      overview.push(await get('/analytics/overview'));
      byAgent.push(await get(`/agents/${agentId}/analytics?timeZone=America/Chicago`));
      lists.push(await get('/conversations?limit=50&channel=chat'));
    }
    console.log(`observe: ${CONVERSATIONS.toLocaleString('en-US')} conversations, ${(CONVERSATIONS * MESSAGES_PER_CONVERSATION).toLocaleString('en-US')} messages, ${(CONVERSATIONS * TURNS_PER_CONVERSATION).toLocaleString('en-US')} turn receipts over 30 days (loaded in ${loadSeconds.toFixed(1)} s), ${os.cpus().length} cores`);
    console.log(`  the overview counts ${check.data.totals.conversations.toLocaleString('en-US')} conversations and ${check.data.totals.messages.toLocaleString('en-US')} messages`);
    console.log(`  GET /analytics/overview (30 days, per day)         p50 ${percentile(overview, 50).toFixed(1)} ms   p99 ${percentile(overview, 99).toFixed(1)} ms   target p99 < 100 ms`);
    console.log(`  GET /agents/{id}/analytics (America/Chicago)       p50 ${percentile(byAgent, 50).toFixed(1)} ms   p99 ${percentile(byAgent, 99).toFixed(1)} ms`);
    console.log(`  GET /conversations?limit=50&channel=chat           p50 ${percentile(lists, 50).toFixed(1)} ms   p99 ${percentile(lists, 99).toFixed(1)} ms`);
  } finally {
    await close();
  }
}

if (require.main === module) runBench('bench observe', runObserveBench);
