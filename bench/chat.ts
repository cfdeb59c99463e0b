/**
 * Chat benchmark (docs/benchmarks.md): turns per second at 100 concurrent chat sessions over HTTP with the
 * sandbox LLM, and the runtime's own overhead per turn excluding the model, two ways, p50/p99:
 *  (a) pure: `runTurn` in-process with a model that answers at once and in-memory knowledge (guardrails,
 *      prompt, playbook, streaming guardrails, receipt) — the runtime's own CPU;
 *  (b) under load: from each stored receipt, `turn` minus `llm_total` (adds the retrieval query and waits for
 *      the database and the event loop at 100 concurrent sessions);
 *  (c) what a semantic topic guardrail adds to a turn (docs/api-notes.md "Conversations": one classification call):
 *      `runTurn` with the sandbox LLM, the same turns with and without a `semantic` blocked topic interleaved in one
 *      run (every message distinct, so no verdict is cached): added latency per turn p50/p99, of which the sandbox's
 *      own classification answer, and CPU as a ratio of the turn without it. Target: < 2 ms of our own overhead. The agent has a
 * knowledge source of 200 chunks, so every turn runs a full-text lookup, and stores its messages, receipt,
 * usage entries and events in one transaction. The load generator runs in its own process
 * (bench/loadgen.ts), its CPU printed apart.
 *
 * Run: `BENCH_ONLY=chat npm run bench` or `npx tsx bench/chat.ts`. BENCH_CHAT_SESSIONS (100) and
 * BENCH_CHAT_SECONDS (10, after BENCH_CHAT_WARMUP_SECONDS of the same load unmeasured, 30) set the load,
 * BENCH_CHAT_API_PROCESSES the API processes (default the core count, as `start:api`; bench/chatApi.ts), BENCH_CHAT_GUARD_TURNS (4,000) the turns of (c), BENCH_CHAT_POOL each API process's pool size (default: the service's, 20), BENCH_NODE_FLAGS the API processes' V8 flags; BENCH_PROFILE_DIR writes a CPU profile of the API process
 * during the load; BENCH_PROFILE=1 also prints its top self-time functions; BENCH_COUNT_QUERIES=1 prints the statements per
 * turn (counted at pg's Client, every pool of the process). Targets on a 2-core machine (docs/benchmarks.md): ≥ 1,000 turns/s, ≤ 2 ms of CPU per turn (API process + Postgres), overhead (a) p99 < 20 ms, (b) p99 < 50 ms.
 */
import os from 'node:os';
import { createOrganization } from '../db/repositories/organizations';
import { createSecretKey } from '../db/repositories/apiKeys';
import { createSource, indexChunks, markProcessing } from '../db/repositories/knowledge';
import { NON_RESERVED_SCOPES } from '../domain/scopes';
import { loadConfig } from '../config';
import { coreCount, processCount } from '../runtime';
import { apiCaller, cpuSnapshot, mainThreadCpuMs, openBenchDatabase, processTree, publishForBench } from './harness';
import { compileDraft } from '../domain/agents/compile';
import { runTurn, type TurnPorts } from '../domain/conversations/runtime';
import type { LlmProvider } from '../domain/conversations/llm';
import { SandboxLlm } from '../providers/llm/sandbox';
import { DEFAULT_GUARDRAILS } from '../domain/agents/compile';
import { runBench } from './entry';
import { printProfile, startLoadGen } from './http';
import { stopChild } from './children';
import type { WindowStats } from './chatApi';
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import readline from 'node:readline';

const SESSIONS = Number(process.env.BENCH_CHAT_SESSIONS ?? 100);
const SECONDS = Number(process.env.BENCH_CHAT_SECONDS ?? 10);
/**
 * Unmeasured warm-up (s). Long enough for V8 to finish optimizing the turn's code on a slow hour of the 2-core VM: after
 * 3 s its optimizing compiler still took 30 % of the API processes' CPU (background threads 1,279 of 4,235 µs per turn),
 * after 20 s 15–17 %, after 45 s 9 % (GC helpers, mostly) — a long-running process's steady state (docs/benchmarks.md).
 */
const WARMUP_SECONDS = Number(process.env.BENCH_CHAT_WARMUP_SECONDS ?? 30);
const QUESTIONS = ['When are you open on Saturday?', 'Do you accept Delta Dental?', 'How much is a cleaning?', 'Thanks, that helps a lot', 'Where can I park?'];

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] : NaN;
};

/** (a) The runtime's own overhead: `runTurn` with an instant model and in-memory knowledge. @returns ms per turn */
async function pureRuntimeOverhead(turns: number): Promise<number[]> {
  const agent = compileDraft({
    agent: {
      id: 'agt_bench000', orgId: 'org_bench', name: 'Front desk', description: null, persona: 'Warm receptionist', instructions: 'Answer from the handbook.',
      greeting: 'Hello', language: 'en-US', voiceId: 'voice_ava', dtmf: {}, variables: [], guardrails: { blockedTopics: ['politics'], forbiddenPhrases: ['guaranteed cure'], escalateOn: ['lawyer'] },
      callerVerification: {}, widget: {}, version: 1, publishedVersionId: null, publishedVersionNumber: null, publishedDraftVersion: null, skills: [], playbooks: [], knowledgeSourceCount: 1,
      createdAt: '', updatedAt: '',
    } as never,
    skills: [],
    playbooks: [],
    knowledge: [{ id: 'ks_1', title: 'Clinic handbook', kind: 'text', status: 'ready', chunkCount: 3 }],
  } as never).snapshot;
  const hits = [0, 1, 2].map((i) => ({ chunkId: `chk_${i}`, content: `Section ${i}: we accept Delta Dental, MetLife and Cigna. Parking is free behind the building.`, score: 0.5 - i / 10, source: { id: 'ks_1', title: 'Clinic handbook', name: null, url: null } }));
  const reply = 'We accept Delta Dental, MetLife and Cigna, and parking is free behind the building (source: Clinic handbook).';
  const llm: LlmProvider = {
    name: 'instant',
    complete: async () => ({ content: reply, toolCalls: [], finishReason: 'stop', usage: { promptTokens: 1, completionTokens: 1, totalTokens: 2 }, model: 'instant' }),
    async *stream() {
      for (const piece of reply.match(/\S+\s*/g) ?? []) yield { type: 'delta' as const, content: piece };
      yield { type: 'done' as const, response: { content: reply, toolCalls: [], finishReason: 'stop' as const, usage: { promptTokens: 1, completionTokens: 1, totalTokens: 2 }, model: 'instant' } };
    },
  };
  const ports: TurnPorts = { llm, searchKnowledge: async () => hits, runSkill: async () => ({ output: null }), now: () => performance.now(), wallClock: () => Date.now() };
  const history = Array.from({ length: 20 }, (_, i) => ({ role: (i % 2 ? 'assistant' : 'user') as 'user' | 'assistant', content: QUESTIONS[i % QUESTIONS.length] }));
  const out: number[] = [];
  for (let i = 0; i < turns; i++) {
    const t0 = performance.now();
    await runTurn({ id: 'cnv_bench', orgId: 'org_bench', agentId: 'agt_bench000', channel: 'chat', agent, variables: {}, playbook: null, turn: i, history, startedAtMs: Date.now() }, QUESTIONS[i % QUESTIONS.length], ports);
    out.push(performance.now() - t0);
  }
  return out.slice(Math.floor(turns / 10)); // the first tenth warms the JIT up
}

/**
 * (c) What a semantic topic guardrail adds to a turn, on the sandbox LLM (module docstring). Turns without and with
 * the guardrail alternate in blocks, so both see the same JIT, GC and machine state.
 * @returns per-turn latencies (ms) of both, the time spent inside the sandbox's classification answers (ms per
 *   turn), and the CPU (µs) each variant used in total
 */
async function semanticGuardrailCost(turns: number): Promise<{ plain: number[]; guarded: number[]; classifierMs: number[]; cpuPlain: number; cpuGuarded: number }> {
  const base = compileDraft({
    agent: {
      id: 'agt_bench000', orgId: 'org_bench', name: 'Front desk', description: null, persona: 'Warm receptionist', instructions: 'Answer from the handbook.',
      greeting: 'Hello', language: 'en-US', voiceId: 'voice_ava', dtmf: {}, variables: [], guardrails: {}, callerVerification: {}, widget: {}, version: 1,
      publishedVersionId: null, publishedVersionNumber: null, publishedDraftVersion: null, skills: [], playbooks: [], knowledgeSourceCount: 1, createdAt: '', updatedAt: '',
    } as never,
    skills: [],
    playbooks: [],
    knowledge: [{ id: 'ks_1', title: 'Clinic handbook', kind: 'text', status: 'ready', chunkCount: 3 }],
  } as never).snapshot;
  const phrase = { ...DEFAULT_GUARDRAILS, blockedTopics: ['politics'], forbiddenPhrases: ['guaranteed cure'], escalateOn: ['lawyer'] };
  const plainAgent = { ...base, guardrails: phrase };
  const guardedAgent = { ...base, guardrails: { ...phrase, blockedTopics: [...phrase.blockedTopics, { topic: 'medical advice', match: 'semantic' as const, description: 'symptoms, diagnoses, medicines and their dosage' }] } };
  const hits = [0, 1, 2].map((i) => ({ chunkId: `chk_${i}`, content: `Section ${i}: we accept Delta Dental, MetLife and Cigna. Parking is free behind the building.`, score: 0.5 - i / 10, source: { id: 'ks_1', title: 'Clinic handbook', name: null, url: null } }));
  const sandbox = new SandboxLlm();
  let inClassifier = 0;
  const llm: LlmProvider = {
    name: 'sandbox',
    complete: async (req) => {
      const t = performance.now();
      try {
        return await sandbox.complete(req);
      } finally {
        if (req.hints?.classification) inClassifier += performance.now() - t;
      }
    },
    stream: (req) => sandbox.stream(req),
  };
  const ports: TurnPorts = { llm, searchKnowledge: async () => hits, runSkill: async () => ({ output: null }), now: () => performance.now(), wallClock: () => Date.now() };
  const history = Array.from({ length: 20 }, (_, i) => ({ role: (i % 2 ? 'assistant' : 'user') as 'user' | 'assistant', content: QUESTIONS[i % QUESTIONS.length] }));
  const plain: number[] = [];
  const guarded: number[] = [];
  const classifierMs: number[] = [];
  let cpuPlain = 0;
  let cpuGuarded = 0;
  const BLOCK = 50;
  const run = async (agent: typeof base, i: number) => {
    const t0 = performance.now();
    // Every message distinct: each guarded turn makes its classification call (no cached verdict).
    await runTurn({ id: 'cnv_bench', orgId: 'org_bench', agentId: 'agt_bench000', channel: 'chat', agent, variables: {}, playbook: null, turn: i, history, startedAtMs: Date.now() }, `${QUESTIONS[i % QUESTIONS.length]} (${i})`, ports);
    return performance.now() - t0;
  };
  for (let b = 0; b * BLOCK < turns; b++) {
    const warm = b * BLOCK < turns / 10; // the first tenth warms the JIT up
    let cpu = process.cpuUsage();
    for (let i = b * BLOCK; i < (b + 1) * BLOCK; i++) {
      const ms = await run(plainAgent, i);
      if (!warm) plain.push(ms);
    }
    let used = process.cpuUsage(cpu);
    if (!warm) cpuPlain += used.user + used.system;
    cpu = process.cpuUsage();
    for (let i = b * BLOCK; i < (b + 1) * BLOCK; i++) {
      inClassifier = 0;
      const ms = await run(guardedAgent, i);
      if (!warm) {
        guarded.push(ms);
        classifierMs.push(inClassifier);
      }
    }
    used = process.cpuUsage(cpu);
    if (!warm) cpuGuarded += used.user + used.system;
  }
  return { plain, guarded, classifierMs, cpuPlain, cpuGuarded };
}

/** Prints figure (c) (module docstring). */
export async function printSemanticGuardrailCost(turns = Number(process.env.BENCH_CHAT_GUARD_TURNS ?? 4000)): Promise<void> {
  const c = await semanticGuardrailCost(turns);
  const mean = (xs: number[]) => xs.reduce((a, x) => a + x, 0) / Math.max(1, xs.length);
  console.log(
    `                     (c) semantic guardrail, sandbox LLM, ${c.plain.length} turns each: +1 model call; added per turn p50 ${(pct(c.guarded, 50) - pct(c.plain, 50)).toFixed(3)} ms` +
      `   mean ${(mean(c.guarded) - mean(c.plain)).toFixed(3)} ms (of which the sandbox's classification answer p50 ${pct(c.classifierMs, 50).toFixed(3)} ms, p99 ${pct(c.classifierMs, 99).toFixed(3)} ms)   target < 2 ms`,
  );
  console.log(
    `                         turn without / with: p50 ${pct(c.plain, 50).toFixed(3)} / ${pct(c.guarded, 50).toFixed(3)} ms, p99 ${pct(c.plain, 99).toFixed(3)} / ${pct(c.guarded, 99).toFixed(3)} ms;` +
      ` CPU with / without = ${(c.cpuGuarded / Math.max(1, c.cpuPlain)).toFixed(2)}× (${(c.cpuPlain / c.plain.length).toFixed(0)} → ${(c.cpuGuarded / c.guarded.length).toFixed(0)} µs per turn, same run)`,
  );
}

/**
 * The API the load runs against, in a process tree of its own (bench/chatApi.ts): `processes` serving processes as
 * `npm run start:api` runs them with API_PROCESSES.
 * @returns its base URL, every process of its tree (for the CPU), and `window()`, which starts the measured window in
 *   each serving process and resolves with a function that ends it and resolves with what each one did
 * @throws Error when it exits before it listens
 */
async function startChatApi(databaseUrl: string, processes: number, statsDir: string, profileDir: string | undefined): Promise<{
  baseUrl: string;
  pids(): number[];
  window(): () => Promise<WindowStats[]>;
  stop(): Promise<void>;
}> {
  const env = { ...process.env, BENCH_CHAT_STATS_DIR: statsDir, ...(profileDir ? { BENCH_PROFILE_DIR: profileDir } : {}) };
  // BENCH_NODE_FLAGS: V8 flags of the API processes (node:cluster forks its children with the primary's flags).
  const flags = (process.env.BENCH_NODE_FLAGS ?? '').split(' ').filter(Boolean);
  const child: ChildProcess = spawn(process.execPath, [...flags, '--import', 'tsx', path.join(__dirname, 'chatApi.ts'), databaseUrl, String(processes)], { stdio: ['ignore', 'pipe', 'inherit'], env });
  const { port, serving } = await new Promise<{ port: number; serving: number[] }>((resolve, reject) => {
    let port = 0;
    child.once('exit', (code) => reject(new Error(`the chat API exited (${code}) before it listened`)));
    readline.createInterface({ input: child.stdout! }).on('line', (line) => {
      port = Number(/^PORT (\d+)/.exec(line)?.[1] ?? port);
      const pids = /^PIDS (.+)/.exec(line)?.[1];
      if (pids) resolve({ port, serving: pids.split(',').map(Number) });
    });
  });
  const signal = () => serving.forEach((pid) => process.kill(pid, 'SIGUSR2'));
  return {
    baseUrl: `http://127.0.0.1:${port}/api/v1`,
    pids: () => processTree(child.pid!),
    window: () => {
      for (const f of fs.readdirSync(statsDir)) fs.rmSync(path.join(statsDir, f));
      signal();
      return async () => {
        signal();
        const files = serving.map((pid) => path.join(statsDir, `${pid}.json`));
        for (let i = 0; i < 600 && !files.every((f) => fs.existsSync(f)); i++) await new Promise((r) => setTimeout(r, 100));
        return files.map((f) => JSON.parse(fs.readFileSync(f, 'utf8')) as WindowStats);
      };
    },
    stop: () => stopChild(child),
  };
}

/**
 * Runs the chat section and prints its figures. The API runs as production's `start:api` does, in BENCH_CHAT_API_PROCESSES
 * processes (default API_PROCESSES's default, the number of cores; api/server.ts), in a process tree of its own.
 */
export async function runChatBench(): Promise<void> {
  const pure = await pureRuntimeOverhead(Number(process.env.BENCH_CHAT_PURE_TURNS ?? 20_000));
  const processes = processCount('BENCH_CHAT_API_PROCESSES', coreCount());
  const { db, databaseUrl, postmasterPid, close: closeDatabase } = await openBenchDatabase('chat', { serverUrl: process.env.DATABASE_URL });
  const statsDir = fs.mkdtempSync(path.join(os.tmpdir(), 'acp-chat-stats-'));
  // BENCH_PROFILE=1: a V8 profile of each API process during the load, their top self-time functions printed together.
  const profileDir = process.env.BENCH_PROFILE_DIR ?? (process.env.BENCH_PROFILE === '1' ? fs.mkdtempSync(path.join(os.tmpdir(), 'acp-prof-chat-')) : undefined);
  const api = await startChatApi(databaseUrl, processes, statsDir, profileDir);
  try {
    const org = await createOrganization(db, 'Chat bench');
    const { key, info } = await createSecretKey(db, org.id, { brand: loadConfig().keyBrandPrefix, scopes: NON_RESERVED_SCOPES, rateLimitPoints: 10_000_000 });
    const call = apiCaller(api.baseUrl, key);
    const agent = await call('POST', '/agents', { name: 'Front desk', voiceId: 'voice_ava', greeting: 'Hello, Sunrise Dental here.', instructions: 'Answer from the clinic handbook.' });
    await call('PUT', `/agents/${agent.id}/guardrails`, { blockedTopics: ['politics'], forbiddenPhrases: ['guaranteed cure'], redactPii: true, profanityFilter: true, escalateOn: ['lawyer'], maxConversationMinutes: null });
    const src = await createSource(db, org.id, { agentId: agent.id, kind: 'text', name: 'Clinic handbook', text: 'handbook' }, async () => undefined);
    await markProcessing(db, org.id, src.id);
    const topics = ['opening hours on Saturday are 9am to 1pm', 'we accept Delta Dental, MetLife and Cigna', 'a cleaning costs $90', 'parking is free behind the building', 'emergency visits the same day'];
    const chunks = Array.from({ length: 200 }, (_, i) => ({ ordinal: i, content: `Section ${i}: ${topics[i % topics.length]}. Policy note ${i} about appointments and rescheduling.` }));
    await indexChunks(db, org.id, src.id, chunks);
    await publishForBench(db, org.id, agent.id, info.id);

    const sessions: string[] = [];
    for (let i = 0; i < SESSIONS; i++) sessions.push((await call('POST', '/chat/sessions', { agentId: agent.id })).session.id);
    await db.raw('ANALYZE conversations'); // as autovacuum would have by now on a long-running service

    // The load generator runs in its own process (bench/loadgen.ts, autocannon): connection i sends session i's
    // messages, one at a time, cycling through the questions.
    const load = (seconds: number) =>
      startLoadGen({
        url: api.baseUrl,
        keys: [key],
        connections: SESSIONS,
        seconds,
        perConnection: sessions.map((id, i) =>
          QUESTIONS.map((_, n) => ({ method: 'POST' as const, path: `${new URL(api.baseUrl).pathname}/chat/sessions/${id}/messages`, body: JSON.stringify({ content: QUESTIONS[(i + n) % QUESTIONS.length] }) })),
        ),
      });
    // The same load for BENCH_CHAT_WARMUP_SECONDS first, unmeasured: every API process optimizes its hot paths (V8's
    // optimizing compiler, on background threads: printed below) and fills its caches (the compiled version, the
    // knowledge index, the history windows), as a long-running one has.
    if (WARMUP_SECONDS > 0) await (await load(WARMUP_SECONDS)).go();
    const measuredFrom = new Date();
    const gen = await load(SECONDS);
    // BENCH_COUNT_QUERIES=1: the statements each turn costs through the API's pool, by their first words.
    // Counted at pg's Client, so every pool of the process is seen (the service's, the rate limits', the change feed's).
    // The API processes' CPU summed (a primary of several serves nothing but is counted), Postgres's apart.
    const apiCpu = (snap: Record<string, number>) => Object.entries(snap).reduce((a, [k, ms]) => a + (k.startsWith('api') ? ms : 0), 0);
    const apiPids = Object.fromEntries(api.pids().map((pid) => [`api${pid}`, pid]));
    const endWindow = api.window();
    const mainThreads = () => Object.values(apiPids).reduce((a, pid) => a + mainThreadCpuMs(pid), 0);
    const cpu0 = cpuSnapshot(apiPids, { postmasterPid });
    const main0 = mainThreads();
    const t0 = performance.now();
    const result = await gen.go();
    const elapsed = (performance.now() - t0) / 1000;
    const cpu1 = cpuSnapshot(apiPids, { postmasterPid });
    const main1 = mainThreads();
    const stats = await endWindow();
    const turns = result.requests - result.non2xx - result.errors;
    const counted = new Map<string, number>();
    for (const st of stats) for (const [k, n] of st.counted) counted.set(k, (counted.get(k) ?? 0) + n);
    const rows = await db('conversation_turns').where({ org_id: org.id }).where('created_at', '>=', measuredFrom).select('receipt');
    const overhead: number[] = [];
    for (const r of rows) {
      const lat = (r.receipt as { latency: { stage: string; ms: number }[] }).latency;
      const turn = lat.find((l) => l.stage === 'turn')?.ms ?? 0;
      const llm = lat.filter((l) => l.stage === 'llm_total').reduce((a, l) => a + l.ms, 0);
      overhead.push(turn - llm);
    }
    console.log(`chat: ${SESSIONS} concurrent sessions for ${SECONDS} s (after ${WARMUP_SECONDS} s of warm-up) on ${os.cpus().length} cores, ${processes} API process${processes > 1 ? 'es' : ''}, sandbox LLM, 200 knowledge chunks`);
    console.log(`  turns/s            ${(turns / elapsed).toFixed(0)}   (${turns} turns, ${result.errors + result.non2xx} errors)   target ≥ 1,000`);
    console.log(`  HTTP turn latency  p50 ${result.p50.toFixed(1)} ms   p99 ${result.p99.toFixed(1)} ms`);
    console.log(`  runtime overhead   (a) pure, in-process: p50 ${pct(pure, 50).toFixed(3)} ms   p99 ${pct(pure, 99).toFixed(3)} ms   target p99 < 20 ms`);
    console.log(`                     (b) under load, turn minus LLM per stored receipt: p50 ${pct(overhead, 50).toFixed(2)} ms   p99 ${pct(overhead, 99).toFixed(2)} ms   target p99 < 50 ms`);
    const nBatches = stats.reduce((a, st) => a + st.batches, 0);
    const batchItems = stats.reduce((a, st) => a + st.items, 0);
    const batchMs = stats.reduce((a, st) => a + st.ms, 0);
    console.log(
      `  turn batches       ${nBatches} (group commit, db/groupCommit.ts; each API process its own), ${(batchItems / Math.max(1, nBatches)).toFixed(1)} turns and ${(batchMs / Math.max(1, nBatches)).toFixed(1)} ms each,` +
        ` ${(batchMs / 1000 / elapsed / processes).toFixed(2)} in flight on average per process`,
    );
    const reads = stats.reduce((a, st) => ({ batches: a.batches + st.reads.batches, items: a.items + st.reads.items, ms: a.ms + st.reads.ms }), { batches: 0, items: 0, ms: 0 });
    console.log(`  turn reads         ${reads.batches} (group read, db/repositories/conversations.ts getConversationWithHistory), ${(reads.items / Math.max(1, reads.batches)).toFixed(1)} turns and ${(reads.ms / Math.max(1, reads.batches)).toFixed(1)} ms each`);
    const gcMs = stats.reduce((a, st) => a + st.gcMs, 0);
    const gcKinds = new Map<string, number>();
    for (const st of stats) for (const [k, ms] of Object.entries(st.gcByKind)) gcKinds.set(k, (gcKinds.get(k) ?? 0) + ms);
    console.log(
      `  GC pauses          ${((gcMs * 1000) / Math.max(1, turns)).toFixed(0)} µs per turn in the API processes' main threads (${stats.reduce((a, st) => a + st.gcs, 0)} collections; wall time):` +
        [...gcKinds].map(([k, ms]) => ` ${k} ${((ms * 1000) / Math.max(1, turns)).toFixed(0)}`).join(','),
    );
    if (counted.size) {
      const all = [...counted.values()].reduce((a, b) => a + b, 0);
      console.log(`  statements per turn ${(all / Math.max(1, turns)).toFixed(1)} through the API processes' pools; the most frequent:`);
      for (const [k, n] of [...counted].sort((a, b) => b[1] - a[1]).slice(0, 30)) console.log(`    ${(n / Math.max(1, turns)).toFixed(2)}  ${k}`);
    }
    if (profileDir) printProfile(`the chat load (${processes} API process${processes > 1 ? 'es' : ''} together)`, profileDir);
    await printSemanticGuardrailCost();
    if (cpu0.postgres !== undefined) {
      const perTurn = (ms: number) => (ms * 1000) / Math.max(1, turns);
      const apiUs = perTurn(apiCpu(cpu1) - apiCpu(cpu0));
      const pgUs = perTurn(cpu1.postgres - cpu0.postgres);
      const mainUs = perTurn(main1 - main0);
      console.log(
        `  CPU per turn       API ${processes > 1 ? `processes (${processes}, summed)` : 'process'} ${apiUs.toFixed(0)} µs   postgres ${pgUs.toFixed(0)} µs   = ${(apiUs + pgUs).toFixed(0)} µs (target ≤ 2,000)` +
          `   load generator ${((result.cpuMs * 1000) / Math.max(1, turns)).toFixed(0)} µs   load average ${os.loadavg()[0].toFixed(1)}`,
      );
      // Background threads well above a tenth of the main threads mean the optimizing compiler is still at work: the
      // warm-up was too short for this machine's speed.
      console.log(
        `                     of the API's: main threads ${mainUs.toFixed(0)} µs, other threads ${Math.max(0, apiUs - mainUs).toFixed(0)} µs (V8's optimizing compiler and GC helpers, libuv's pool)`,
      );
    }
  } finally {
    await api.stop();
    await closeDatabase();
    fs.rmSync(statsDir, { recursive: true, force: true });
  }
}

if (require.main === module) runBench('bench chat', runChatBench);
