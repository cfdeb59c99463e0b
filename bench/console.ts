/**
 * Console benchmark (docs/benchmarks.md "Console"): the operator console's conversation list (`GET /console/conversations`,
 * api/console/) over 100,000 conversations of one organization, as a signed-in member: the first page unfiltered, by
 * channel, and with a text search, p50/p99 over repeated requests through HTTP on loopback (the server's answer
 * time plus a loopback round trip). Rows are generated in SQL (generate_series), two messages per conversation.
 *
 * Run: `BENCH_ONLY=console npm run bench` or `npx tsx bench/console.ts`. BENCH_CONSOLE_CONVERSATIONS (100,000) and
 * BENCH_CONSOLE_RUNS (100) set the size. Target: first page p99 < 150 ms.
 */
import os from 'node:os';
import { createOrganization } from '../db/repositories/organizations';
import { createMember, createSession } from '../db/repositories/team';
import { startApi } from '../api/server';
import { loadConfig } from '../config';
import { createLogger } from '../runtime';
import { runBench } from './entry';
import { openBenchDatabase } from './harness';
import { randomBase62 } from '../db/ids';

const CONVERSATIONS = Number(process.env.BENCH_CONSOLE_CONVERSATIONS ?? 100_000);
const RUNS = Number(process.env.BENCH_CONSOLE_RUNS ?? 100);

const pct = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))];

/** Runs the console section and prints its figures. */
export async function runConsoleBench(): Promise<void> {
  const { db, databaseUrl, close: closeDatabase } = await openBenchDatabase('console', { poolMax: 20 });
  const config = loadConfig({ port: 0, host: '127.0.0.1', logLevel: 'silent', rateLimitPoints: 10_000_000 });
  const api = await startApi({ db, databaseUrl, config, logger: createLogger('silent') });
  try {
    const org = await createOrganization(db, 'Console bench');
    const member = await createMember(db, org.id, { email: 'viewer@bench.example', role: 'viewer', passwordHash: null });
    const token = randomBase62(24);
    await createSession(db, org.id, member.id, token, randomBase62(24), 3600);
    const agentId = 'agt_benchconsole01';
    await db('agents').insert({ id: agentId, org_id: org.id, name: 'Bench agent' });
    const t0 = performance.now();
    await db.raw(
      `INSERT INTO conversations (id, org_id, agent_id, channel, mode, version_id, status, end_reason, message_count, started_at, ended_at)
       SELECT 'cnv_bench' || lpad(g::text, 9, '0'), ?, ?, CASE WHEN g % 20 = 0 THEN 'voice' ELSE 'chat' END, 'published', 'ver_bench', 'ended',
              'ended_by_user', 2, now() - (g::float / ? * interval '30 days'), now() - (g::float / ? * interval '30 days') + interval '2 minutes'
         FROM generate_series(1, ?) g`,
      [org.id, agentId, CONVERSATIONS, CONVERSATIONS, CONVERSATIONS],
    );
    await db.raw(
      `INSERT INTO conversation_messages (id, org_id, conversation_id, seq, turn, role, content)
       SELECT 'cmsg_c' || lpad(g::text, 9, '0') || s, ?, 'cnv_bench' || lpad(g::text, 9, '0'), s, s,
              CASE WHEN s = 0 THEN 'assistant' ELSE 'user' END, CASE WHEN g % 50 = 0 AND s = 1 THEN 'I would like to reschedule my cleaning' ELSE 'A message of conversation ' || g END
         FROM generate_series(1, ?) g, generate_series(0, 1) s`,
      [org.id, CONVERSATIONS],
    );
    await db.raw('VACUUM ANALYZE');
    const loadSeconds = (performance.now() - t0) / 1000;
    const cookie = `__Host-acp_session=${token}`;
    const origin = new URL(api.baseUrl).origin;
    const get = async (p: string) => {
      const s = performance.now();
      const res = await fetch(`${origin}${p}`, { headers: { cookie } });
      if (res.status !== 200) throw new Error(`${p} → ${res.status} ${(await res.text()).slice(0, 300)}`);
      await res.arrayBuffer();
      return performance.now() - s;
    };
    const pages = { first: [] as number[], voice: [] as number[], search: [] as number[] };
    await get('/console/conversations');
    for (let i = 0; i < RUNS; i++) {
      pages.first.push(await get('/console/conversations'));
      pages.voice.push(await get('/console/conversations?channel=voice'));
      pages.search.push(await get('/console/conversations?q=reschedule'));
    }
    console.log(`console: ${CONVERSATIONS.toLocaleString('en-US')} conversations, ${(CONVERSATIONS * 2).toLocaleString('en-US')} messages (loaded in ${loadSeconds.toFixed(1)} s), ${RUNS} runs, ${os.cpus().length} cores`);
    console.log(`  GET /console/conversations (first page, 50)        p50 ${pct(pages.first, 50).toFixed(1)} ms   p99 ${pct(pages.first, 99).toFixed(1)} ms   target p99 < 150 ms`);
    console.log(`  GET /console/conversations?channel=voice           p50 ${pct(pages.voice, 50).toFixed(1)} ms   p99 ${pct(pages.voice, 99).toFixed(1)} ms`);
    console.log(`  GET /console/conversations?q=reschedule            p50 ${pct(pages.search, 50).toFixed(1)} ms   p99 ${pct(pages.search, 99).toFixed(1)} ms`);
  } finally {
    await api.close();
    await closeDatabase();
  }
}

if (require.main === module) runBench('bench console', runConsoleBench);
