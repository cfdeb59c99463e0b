/**
 * Noisy-neighbour benchmark (docs/benchmarks.md, docs/operations.md "Fair sharing"): does one organization's
 * bulk work stall another's interactive work? Everything in one process: an embedded Postgres, the embedded
 * Temporal dev server, the real API over a socket, the service's own worker (worker.ts `startWorker`: every
 * task queue, every activity, sandbox providers at zero delay) and the webhook outbox dispatcher.
 *
 * Quiet organizations (BENCH_NOISY_QUIET_ORGS, default 20) do, at a steady rate (BENCH_NOISY_RATE operations/s
 * in all, default 8) for BENCH_NOISY_SECONDS (default 100: 200 of each operation, so the p99 is a percentile, not the
 * slowest one): publish an agent (`POST /agents/{id}/publish`, until
 * it answers), a chat turn (`POST /chat/sessions/{id}/messages`), send a text (`POST /sms/messages` until the
 * `sms-message` workflow has sent it) and submit a 10DLC registration (`POST /sms/submit` until it is `active`;
 * a registration is submitted once, so each submit is a fresh organization's). After BENCH_NOISY_WARMUP_SECONDS (15) of
 * the same load unmeasured, first alone, then while
 * organization A floods: BENCH_NOISY_DELIVERIES webhook deliveries (default 2,000) across BENCH_NOISY_ENDPOINTS
 * endpoints (default 20) on a black-hole host (accepts TCP, never completes TLS: each attempt ends at the
 * connect timeout), and BENCH_NOISY_PAGES knowledge pages (default 1,000; text sources, one ingestion each). A floods
 * within its rate limit, as a tenant can: every key is held to the service's default rate limits (the window and the
 * burst limit, docs/api-notes.md "Rate limits"), and A's page poster (BENCH_NOISY_PAGE_CONCURRENCY requests at a time,
 * default 8) waits out a 429's Retry-After and sends the page again.
 * Prints p50/p99 per operation alone and under the flood with their sample counts, the p99 ratio (target ≤ 1.5), and A's delivery
 * attempts per second and knowledge pages ingested during the flood.
 *
 * Shape (BENCH_NOISY_SHAPE): `compose` (the default, the production shape of docker-compose.yml) runs the Temporal dev
 * server in a process of its own, the main queue's worker in one (`worker.ts`, WORKER_QUEUES=main, as `worker`) and the
 * bulk queues' in another (WORKER_QUEUES=webhooks,bulk, as `worker-bulk`, with the outbox dispatcher), this process
 * serving the API only (as `api`); `split` polls the main queue in this process instead; `one` runs everything in this
 * process (as `npm start`). Beside the figures it prints, per phase, the
 * load average, the CPU of each process and of Postgres, this process's event-loop delay, each queue's backlog by
 * priority key and the in-process worker slots in use (bench/noisyObserve.ts); BENCH_PROFILE_DIR writes a CPU profile
 * of this process during each phase.
 *
 * Run: `BENCH_ONLY=noisy-neighbour npm run bench` or `npx tsx bench/noisyNeighbour.ts`. Setup is not timed.
 * The issue's scale is BENCH_NOISY_DELIVERIES=10000 BENCH_NOISY_PAGES=10000.
 */
import fs from 'node:fs';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import type { Db } from '../db';
import { createOrganization } from '../db/repositories/organizations';
import { createSecretKey } from '../db/repositories/apiKeys';
import { NON_RESERVED_SCOPES } from '../domain/scopes';
import { usAreaCodes } from '../domain/sms/nanp';
import { emitEvent } from '../events/emit';
import { startWebhookDispatcher } from '../events/dispatcher';
import { stopSandboxDispatchers } from '../providers/carrier/sandbox';
import { sandboxInventory } from '../providers/telephony/sandbox';
import { COMPLETE_BRAND } from '../test/api/sms-fixtures';
import { startWorker } from '../worker';
import { serviceQueues } from '../worker';
import { bundleBenchWorkflows, countStatements, pool, profileWindow, startBenchApi, startBenchStack } from './harness';
import { keyPolicies, rateLimitDefaults } from '../api/middleware/rateLimit';
import { watchPhase, type WatchedQueue } from './noisyObserve';
import { runBench } from './entry';
import { devServerInChild, startWorkerChild, stopChild } from './children';
import { stageReport, watchStages, type StageRecorder } from './noisyStages';
import { bulkResourceTargets, bulkWorkerSlots, webhookWorkerSlots, workflowIds } from '../temporal.config';

const QUIET_ORGS = Number(process.env.BENCH_NOISY_QUIET_ORGS ?? 20);
const RATE = Number(process.env.BENCH_NOISY_RATE ?? 8);
/**
 * Per phase, s. 100 s at 8 operations/s is 200 of each operation, so the p99 (nearest rank) is the 198th, not the
 * slowest one, as it was of the 60 a 30 s phase gave.
 */
const SECONDS = Number(process.env.BENCH_NOISY_SECONDS ?? 100);
/**
 * The same quiet load first for this long, unmeasured (s): without it the alone phase, which comes first, met every
 * path cold (V8 still optimizing, caches empty: bench/chat.ts), and its tail — the baseline of the ratio — with it.
 */
const WARMUP_SECONDS = Number(process.env.BENCH_NOISY_WARMUP_SECONDS ?? 15);
const DELIVERIES = Number(process.env.BENCH_NOISY_DELIVERIES ?? 2000);
const ENDPOINTS = Number(process.env.BENCH_NOISY_ENDPOINTS ?? 20);
/** A's pages: by default 10 per second of the phase, more than its rate limit lets it post, so it floods to the end. */
const PAGES = Number(process.env.BENCH_NOISY_PAGES ?? 10 * SECONDS);
const SHAPE: 'compose' | 'split' | 'one' = process.env.BENCH_NOISY_SHAPE === 'one' ? 'one' : process.env.BENCH_NOISY_SHAPE === 'split' ? 'split' : 'compose';
/** An operation that takes longer than this counts as failed. */
const OP_LIMIT_MS = 120_000;

const OPS = ['publish', 'chat', 'text', '10dlc'] as const;
type Op = (typeof OPS)[number];

const RECIPIENT = '+12125550100';

interface QuietOrg {
  orgId: string;
  key: string;
  agentId: string;
  sessionId: string;
  from: string;
}

type Call = (key: string, method: string, p: string, json?: unknown, headers?: Record<string, string>) => Promise<{ status: number; body: any; headers?: Headers }>;

/** The `p`th percentile of `xs` by nearest rank (the ⌈p/100 · n⌉-th smallest). */
const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.max(0, Math.ceil((p / 100) * s.length) - 1)] : NaN;
};
/**
 * The 5th and 95th percentiles of the ratio `pct(flood, p) / pct(alone, p)` over `rounds` bootstrap resamples (each
 * phase's samples drawn with replacement, Efron's percentile interval): how far the ratio of one run's samples could
 * move by chance alone. A fixed seed (mulberry32) keeps a run's printout reproducible from its samples.
 */
function bootstrapRatio(alone: number[], flood: number[], p: number, rounds = 2000): [number, number] {
  let seed = 0x9e3779b9;
  const random = () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const resample = (xs: number[]) => Array.from({ length: xs.length }, () => xs[Math.floor(random() * xs.length)]);
  const ratios = Array.from({ length: rounds }, () => pct(resample(flood), p) / pct(resample(alone), p));
  return [pct(ratios, 5), pct(ratios, 95)];
}
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** Waits `ms`, or less when `signal` aborts first (never rejects). */
const sleepUnless = (ms: number, signal: AbortSignal) =>
  new Promise<void>((r) => {
    if (signal.aborted) return r();
    const t = setTimeout(done, ms);
    function done() {
      clearTimeout(t);
      signal.removeEventListener('abort', done);
      r();
    }
    signal.addEventListener('abort', done);
  });

/** Seconds `ats` (phase-relative) as runs of whole seconds with a count each: "-2–9 s (600), 60–66 s (400)". */
function bursts(ats: number[]): string {
  if (!ats.length) return 'none';
  const secs = [...ats].sort((a, b) => a - b).map(Math.floor);
  const runs: Array<{ from: number; to: number; n: number }> = [];
  for (const s of secs) {
    const last = runs[runs.length - 1];
    if (last && s - last.to <= 1) (last.to = s, last.n++);
    else runs.push({ from: s, to: s, n: 1 });
  }
  return runs.map((r) => `${r.from}–${r.to + 1} s (${r.n})`).join(', ');
}

/** Polls `check` every 20 ms until it is true. @throws after OP_LIMIT_MS */
async function until(what: string, check: () => Promise<boolean>): Promise<void> {
  const end = performance.now() + OP_LIMIT_MS;
  while (!(await check())) {
    if (performance.now() > end) throw new Error(`${what}: not done after ${OP_LIMIT_MS / 1000} s`);
    await sleep(20);
  }
}

async function must(what: string, r: Promise<{ status: number; body: any }>, ok: number[]): Promise<any> {
  const res = await r;
  if (!ok.includes(res.status)) throw new Error(`${what} answered ${res.status}: ${JSON.stringify(res.body)}`);
  return res.body?.data;
}

/** An organization with a key (untimed setup). */
async function newOrg(db: Db, name: string, keyBrand: string): Promise<{ orgId: string; key: string }> {
  const org = await createOrganization(db, name);
  const { key } = await createSecretKey(db, org.id, { brand: keyBrand, scopes: NON_RESERVED_SCOPES });
  return { orgId: org.id, key };
}

/** Distinct purchasable numbers, one per organization. */
function numbersFor(n: number): string[] {
  const out: string[] = [];
  for (let round = 0; out.length < n; round++) {
    for (const code of usAreaCodes()) {
      const inv = sandboxInventory(code);
      if (inv[round]) out.push(inv[round].e164);
      if (out.length >= n) break;
    }
    if (round > 40) throw new Error(`the sandbox inventory cannot supply ${n} numbers`);
  }
  return out;
}

/** Waits until the organization's 10DLC registration is active. */
const registrationActive = (db: Db, orgId: string) => until('10DLC registration', async () => (await db('sms_registrations').where({ org_id: orgId }).first('status'))?.status === 'active');

/** Runs one quiet operation. @returns its latency, ms */
async function runOp(op: Op, org: QuietOrg, registrant: { orgId: string; key: string } | undefined, db: Db, call: Call, n: number, rec: StageRecorder): Promise<number> {
  const t0 = performance.now();
  if (op === 'chat') {
    await must('chat turn', call(org.key, 'POST', `/chat/sessions/${org.sessionId}/messages`, { content: 'When are you open on Saturday?' }, rec.sample(n, op)), [200]);
    rec.done(n);
  } else if (op === 'text') {
    const msg = await must('text', call(org.key, 'POST', '/sms/messages', { from: org.from, to: RECIPIENT, body: `Your visit #${n} is confirmed. Reply STOP to opt out.`, trigger: 'reply' }, rec.sample(n, op)), [202]);
    rec.answered(n);
    await until('text sent', async () => ['sent', 'delivered'].includes((await db('sms_messages').where({ org_id: org.orgId, id: msg.id }).first('status'))?.status));
    rec.done(n, workflowIds.smsMessage(msg.id));
  } else if (op === 'publish') {
    await must('publish', call(org.key, 'POST', `/agents/${org.agentId}/publish`, {}, { 'idempotency-key': `noisy-${n}` }), [200, 201]);
  } else {
    if (!registrant) throw new Error('no registrant left');
    await must('10DLC submit', call(registrant.key, 'POST', '/sms/submit'), [200]);
    await registrationActive(db, registrant.orgId);
  }
  return performance.now() - t0;
}

/** The quiet organizations' operations at a steady rate for `seconds` (default SECONDS). @returns latencies and failures per operation */
/** The seconds of a phase (from its start) that its four slowest samples of each operation spanned. */
function slowSeconds(phase: Map<Op, { ms: number[]; at: number[] }>): number[] {
  const out: number[] = [];
  for (const { ms, at } of phase.values()) {
    for (const i of ms.map((_, i) => i).sort((x, y) => ms[y] - ms[x]).slice(0, 4)) {
      for (let sec = Math.floor(at[i]); sec <= Math.floor(at[i] + ms[i] / 1000); sec++) out.push(sec);
    }
  }
  return out;
}

async function quietPhase(orgs: QuietOrg[], registrants: Array<{ orgId: string; key: string }>, db: Db, call: Call, base: number, rec: StageRecorder, seconds = SECONDS): Promise<Map<Op, { ms: number[]; at: number[]; failed: number }>> {
  const out = new Map<Op, { ms: number[]; at: number[]; failed: number }>(OPS.map((op) => [op, { ms: [], at: [], failed: 0 }]));
  const count = Math.max(OPS.length, Math.floor(seconds * RATE));
  const pending: Array<Promise<void>> = [];
  const t0 = performance.now();
  for (let i = 0; i < count; i++) {
    const op = OPS[i % OPS.length];
    const org = orgs[Math.floor(i / OPS.length) % orgs.length];
    const registrant = op === '10dlc' ? registrants.shift() : undefined;
    const at = (performance.now() - t0) / 1000;
    pending.push(
      runOp(op, org, registrant, db, call, base + i, rec).then(
        (ms) => void (out.get(op)!.ms.push(ms), out.get(op)!.at.push(at)),
        () => void out.get(op)!.failed++,
      ),
    );
    const due = t0 + ((i + 1) * 1000) / RATE;
    if (due > performance.now()) await sleep(due - performance.now());
  }
  await Promise.all(pending);
  return out;
}

/** Runs the noisy-neighbour section and prints its figures. */
export async function runNoisyNeighbourBench(): Promise<void> {
  process.env.SANDBOX_CARRIER_DELAY_MS ??= '0';
  process.env.SANDBOX_TELEPHONY_DELAY_MS ??= '0';
  process.env.HTTP_ALLOW_PRIVATE_HOSTS = '127.0.0.1';
  const started = performance.now();
  // `compose` and `split`: the Temporal frontend is a process of its own, as in production (docker-compose.yml `temporal`).
  const dev = SHAPE !== 'one' ? devServerInChild() : undefined;
  const stack = await startBenchStack('noisy', dev ? { devServer: dev.devServer } : {});
  const { db, client } = stack;
  // Accepts TCP and never answers: a TLS handshake to it never completes (a receiver that black-holes).
  const sockets = new Set<net.Socket>();
  const blackHole = net.createServer((s) => {
    sockets.add(s);
    s.on('error', () => undefined);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((r) => blackHole.listen(0, '127.0.0.1', () => r()));
  const closers: Array<() => Promise<unknown>> = [];
  try {
    // Every key is held to the service's default rate limit, as production holds a tenant (docs/api-notes.md).
    const { api, config, logger, taskQueue } = await startBenchApi(stack, 'noisy', { serviceRateLimit: true });
    closers.push(() => api.close());
    const workerConfig = { ...config, publicBaseUrl: new URL(api.baseUrl).origin };
    // `split`: this process polls the main queue only; `compose`: none (a child process polls it, as docker-compose.yml's
    // `worker`); `one`: every queue. In `compose` and `split` a child process (start:worker) polls the bulk queues.
    if (SHAPE === 'split') process.env.WORKER_QUEUES = 'main';
    const worker = SHAPE === 'compose' ? undefined : await startWorker({ address: stack.address, namespace: 'default', taskQueue, db, config: workerConfig, logger, workflowBundle: await bundleBenchWorkflows() });
    delete process.env.WORKER_QUEUES;
    if (worker) closers.push(() => worker.stop());
    // Each child's Postgres sessions are named after its docker-compose.yml service (PGAPPNAME wins over the service's
    // own name, docs/operations.md "Postgres sessions"), so the Postgres split tells the two workers apart.
    const childEnv = { TEMPORAL_ADDRESS: stack.address, DATABASE_URL: stack.databaseUrl, TEMPORAL_TASK_QUEUE: taskQueue, PUBLIC_BASE_URL: workerConfig.publicBaseUrl, WORKER_PROCESSES: '1' };
    const mainWorker = SHAPE === 'compose' ? await startWorkerChild({ ...childEnv, WORKER_QUEUES: 'main', PGAPPNAME: 'worker' }) : undefined;
    if (mainWorker) closers.push(() => stopChild(mainWorker));
    const bulkWorker =
      SHAPE !== 'one'
        ? // As docker-compose.yml's `worker-bulk`: the bulk queues only, at the lowest CPU priority.
          await startWorkerChild({ ...childEnv, WORKER_QUEUES: 'webhooks,bulk', PGAPPNAME: 'worker-bulk', WORKER_NICE: process.env.BENCH_NOISY_BULK_NICE ?? '19', WORKER_SCHED_POLICY: process.env.BENCH_NOISY_BULK_POLICY ?? 'idle' })
        : undefined;
    if (bulkWorker) closers.push(() => stopChild(bulkWorker));
    // The webhook outbox dispatcher runs beside the webhooks queue's worker (worker.ts): the bulk child's in `compose` and `split`.
    if (SHAPE === 'one') {
      const dispatcher = await startWebhookDispatcher({ db, logger, client, taskQueue, intervalMs: 200 });
      closers.push(() => dispatcher.stop());
    }
    const call: Call = async (key, method, p, json, headers = {}) => {
      const res = await fetch(`${api.baseUrl}${p}`, {
        method,
        headers: { authorization: `Bearer ${key}`, ...(json !== undefined ? { 'content-type': 'application/json' } : {}), ...headers },
        body: json !== undefined ? JSON.stringify(json) : undefined,
      });
      const text = await res.text();
      return { status: res.status, body: text ? JSON.parse(text) : undefined, headers: res.headers };
    };

    // Setup is a client that honours 429 (RFC 6585) for its Retry-After: A creates its endpoints faster than its burst limit.
    const setupCall: Call = async (key, method, p, json, headers) => {
      for (;;) {
        const res = await call(key, method, p, json, headers);
        if (res.status !== 429) return res;
        await sleep(Math.max(1, Number(res.headers?.get('retry-after') ?? 1)) * 1000);
      }
    };
    // Setup (untimed): quiet organizations with an agent, a chat session, an active 10DLC registration and a
    // number; fresh organizations with a saved registration for the submits; organization A's endpoints and agent.
    const s0 = performance.now();
    const submitsPerPhase = Math.ceil(Math.max(OPS.length, Math.floor(SECONDS * RATE)) / OPS.length);
    const numbers = numbersFor(QUIET_ORGS);
    const quiet: QuietOrg[] = [];
    await pool(
      Array.from({ length: QUIET_ORGS }, (_, i) => i),
      5,
      async (i) => {
        const o = await newOrg(db, `Quiet ${i}`, config.keyBrandPrefix);
        const agent = await must('agent', setupCall(o.key, 'POST', '/agents', { name: `Front desk ${i}`, greeting: 'Hello!', instructions: 'Answer briefly.' }), [201]);
        await must('first publish', setupCall(o.key, 'POST', `/agents/${agent.id}/publish`, {}, { 'idempotency-key': 'setup' }), [200, 201]);
        const session = await must('chat session', setupCall(o.key, 'POST', '/chat/sessions', { agentId: agent.id }), [201]);
        await must('PUT /sms', setupCall(o.key, 'PUT', '/sms', COMPLETE_BRAND), [200]);
        await must('submit', setupCall(o.key, 'POST', '/sms/submit'), [200]);
        await registrationActive(db, o.orgId);
        const bought = await must('buy number', setupCall(o.key, 'POST', '/numbers/purchase', { e164: numbers[i] }), [200]);
        await must('enable SMS', setupCall(o.key, 'PUT', `/numbers/${bought.id}/sms`, { enabled: true }), [200]);
        await must('consent', setupCall(o.key, 'PUT', `/sms/contacts/${encodeURIComponent(RECIPIENT)}/consent`, { source: 'web_form', proofText: 'Checked "Text me appointment updates" on the booking form' }), [200]);
        quiet.push({ ...o, agentId: agent.id, sessionId: session.session.id, from: numbers[i] });
      },
    );
    const registrants: Array<{ orgId: string; key: string }> = [];
    await pool(
      Array.from({ length: 2 * submitsPerPhase + (WARMUP_SECONDS > 0 ? Math.ceil(Math.max(OPS.length, Math.floor(WARMUP_SECONDS * RATE)) / OPS.length) : 0) }, (_, i) => i),
      5,
      async (i) => {
        const o = await newOrg(db, `Registrant ${i}`, config.keyBrandPrefix);
        await must('PUT /sms', setupCall(o.key, 'PUT', '/sms', COMPLETE_BRAND), [200]);
        registrants.push(o);
      },
    );
    const noisy = await newOrg(db, 'Noisy A', config.keyBrandPrefix);
    const holeUrl = `https://127.0.0.1:${(blackHole.address() as AddressInfo).port}/hook`;
    for (let i = 0; i < ENDPOINTS; i++) await must('endpoint', setupCall(noisy.key, 'POST', '/webhooks', { url: `${holeUrl}/${i}`, eventTypes: ['call.completed'] }), [201]);
    const library = await must('agent', setupCall(noisy.key, 'POST', '/agents', { name: 'Library' }), [201]);
    console.log(`setup (untimed): ${QUIET_ORGS} quiet organizations, ${registrants.length} registrants, A with ${ENDPOINTS} black-hole endpoints in ${((performance.now() - s0) / 1000).toFixed(1)} s`);

    const watched: WatchedQueue[] = serviceQueues(taskQueue, {}).map((q) => ({ label: q.queue, taskQueue: q.taskQueue, worker: worker?.workers.find((w) => w.options.taskQueue === q.taskQueue) }));
    const pids: Record<string, number> = {};
    if (mainWorker?.pid) pids['worker'] = mainWorker.pid;
    if (bulkWorker?.pid) pids['bulk worker'] = bulkWorker.pid;
    const devServerPid = dev?.child()?.pid;
    if (devServerPid) pids['dev server'] = devServerPid;
    const observations: string[] = [];
    // Per-sample stages of the chat turn and the text (bench/noisyStages.ts).
    const stages = watchStages(api.server, db);
    closers.push(async () => stages.stop());

    // BENCH_COUNT_QUERIES=1: the statements this process sends in each phase (every pool: the API's, the main-queue
    // worker's, the dispatcher's, the bench's own observers'), by their first words.
    const statements = countStatements();
    closers.push(async () => statements.stop());
    const countPhase = (phase: string) => {
      const before = new Map(statements.counted);
      const t0 = performance.now();
      return (): string[] => {
        if (!process.env.BENCH_COUNT_QUERIES) return [];
        const s = (performance.now() - t0) / 1000;
        const delta = [...statements.counted].map(([k, n]) => [k, n - (before.get(k) ?? 0)] as const).filter(([, n]) => n > 0).sort((a, b) => b[1] - a[1]);
        const total = delta.reduce((a, [, n]) => a + n, 0);
        return [`[${phase}] statements this process sent: ${(total / s).toFixed(0)}/s; the most frequent, per second:`, ...delta.slice(0, 15).map(([k, n]) => `[${phase}]   ${(n / s).toFixed(1).padStart(7)}  ${k}`)];
      };
    };

    // 0. Warm-up (unmeasured): the same quiet load, so the alone phase meets warm paths as a long-running service has.
    if (WARMUP_SECONDS > 0) {
      const warm = await quietPhase(quiet, registrants, db, call, 200_000, stages, WARMUP_SECONDS);
      const failed = OPS.reduce((a, op) => a + warm.get(op)!.failed, 0);
      console.log(`warm-up (unmeasured): ${WARMUP_SECONDS} s of the quiet load${failed ? `, ${failed} operations failed` : ''}`);
    }

    // 1. Alone.
    const countAlone = countPhase('alone');
    const watchAlone = watchPhase('alone', client, watched, { postmasterPid: stack.postmasterPid, pids, db });
    // BENCH_PROFILE_DIR: a V8 CPU profile of this process during each phase, so the flood's is read against this one.
    const stopAloneProfile = profileWindow(process.env.BENCH_PROFILE_DIR, 'noisy-alone');
    stages.reset();
    const alone = await quietPhase(quiet, registrants, db, call, 0, stages);
    await stopAloneProfile();
    observations.push(...countAlone());
    observations.push(...(await watchAlone(slowSeconds(alone))));
    observations.push(...(await stageReport(stages, client, 'alone', ['chat', 'text'])));

    // 2. Under the flood: A's deliveries (events emitted in batches) and knowledge pages (through the API).
    const f0 = performance.now();
    const events = Math.ceil(DELIVERIES / ENDPOINTS);
    const now = new Date().toISOString();
    const emitting = (async () => {
      for (let done = 0; done < events; done += 100) {
        await db.transaction(async (trx) => {
          for (let i = done; i < Math.min(events, done + 100); i++) {
            await emitEvent(trx, noisy.orgId, 'call.completed', { callId: `call_${i}`, direction: 'outbound', from: '+15550001111', to: '+15550002222', startedAt: now, endedAt: now, durationSeconds: 30 });
          }
        });
      }
    })();
    let flooding = true;
    let phaseStart = performance.now();
    let pagesFailed = 0;
    let pagesPosted = 0;
    let pages429 = 0;
    /** Seconds into the flood phase at which each page was accepted (negative: before the quiet operations began). */
    const pagesAt: number[] = [];
    const floodOver = new AbortController();
    // A floods within its rate limit, as a tenant can: a 429 (RFC 6585) is waited out for its Retry-After
    // (RFC 9110 §10.2.3, seconds) and the same page sent again; any other failure is counted, not fatal.
    const pageCall = async (i: number): Promise<void> => {
      while (flooding) {
        const res = await call(noisy.key, 'POST', `/agents/${library.id}/knowledge/sources`, { kind: 'text', text: `Page ${i}: the clinic opens at ${7 + (i % 4)} on weekdays and parks in lot ${i % 9}.` }).catch(() => undefined);
        if (res?.status !== 429) {
          if (res?.status === 202) (pagesPosted++, pagesAt.push((performance.now() - phaseStart) / 1000));
          else pagesFailed++;
          return;
        }
        pages429++;
        const waitS = Number(res.headers?.get('retry-after') ?? 1);
        await sleepUnless((Number.isFinite(waitS) ? Math.max(1, waitS) : 1) * 1000, floodOver.signal);
      }
    };
    let pagesPostedAt: number | undefined;
    const pages = pool(
      Array.from({ length: PAGES }, (_, i) => i),
      Number(process.env.BENCH_NOISY_PAGE_CONCURRENCY ?? 8),
      async (i) => flooding && pageCall(i),
    ).then(() => void (flooding && (pagesPostedAt = (performance.now() - phaseStart) / 1000)));
    // BENCH_NOISY_MARK: a file that says the flood begins (this process's pid and ms since it started), for a tracer
    // outside it, e.g. `perf sched record` of the phase (docs/benchmarks.md).
    if (process.env.BENCH_NOISY_MARK) fs.writeFileSync(process.env.BENCH_NOISY_MARK, `${process.pid} ${performance.now().toFixed(0)}\n`);
    await emitting;
    const watchFlood = watchPhase('flood', client, watched, { postmasterPid: stack.postmasterPid, pids, db });
    const stopProfile = profileWindow(process.env.BENCH_PROFILE_DIR, 'noisy-flood');
    phaseStart = performance.now();
    stages.reset();
    const countFlood = countPhase('flood');
    const flood = await quietPhase(quiet, registrants, db, call, 100_000, stages);
    await stopProfile();
    observations.push(...countFlood());
    observations.push(...(await watchFlood(slowSeconds(flood))));
    observations.push(...(await stageReport(stages, client, 'flood', ['chat', 'text'])));
    const floodMs = performance.now() - f0;
    // Pages not yet sent when the quiet phase ends are not sent.
    flooding = false;
    floodOver.abort();
    await pages;
    const [{ attempts }] = await db('webhook_delivery_attempts').where({ org_id: noisy.orgId }).count({ attempts: '*' });
    const [{ started: deliveriesStarted }] = await db('webhook_deliveries').where({ org_id: noisy.orgId }).whereNot({ attempt_count: 0 }).count({ started: '*' });
    const [{ ready }] = await db('knowledge_sources').where({ org_id: noisy.orgId, status: 'ready' }).count({ ready: '*' });

    const bulkPriority = `the bulk worker at nice ${process.env.BENCH_NOISY_BULK_NICE ?? '19'}, scheduling policy ${process.env.BENCH_NOISY_BULK_POLICY ?? 'idle'}`;
    console.log(
      `shape: ${
        SHAPE === 'compose'
          ? `compose: the dev server, the main queue's worker and the bulk queues' worker in processes of their own beside the API (docker-compose.yml); ${bulkPriority}`
          : SHAPE === 'split'
            ? `split: the dev server and the bulk queues' worker in processes of their own, the main queue's worker in the API's; ${bulkPriority}`
            : 'one: every queue in one process (npm start)'
      }`,
    );
    const targets = bulkResourceTargets();
    console.log(`bulk slots: ${targets ? `resource-based, machine CPU target ${targets.targetCpuUsage}, memory ${targets.targetMemoryUsage} (BULK_TARGET_CPU, BULK_TARGET_MEMORY)` : 'fixed (BULK_TARGET_CPU=off)'}; at most BULK_WORKER_SLOTS ${bulkWorkerSlots()}, WEBHOOK_WORKER_SLOTS ${webhookWorkerSlots()}`);
    console.log(`quiet organizations: ${QUIET_ORGS}, ${RATE} operations/s for ${SECONDS} s per phase; flood: ${DELIVERIES} deliveries to ${ENDPOINTS} black-hole endpoints + ${PAGES} knowledge pages`);
    console.log('operation   alone p50/p99 ms     flood p50/p99 ms     p99 ratio (target ≤ 1.5; 90% interval)   failed alone/flood   samples alone/flood');
    for (const op of OPS) {
      const a = alone.get(op)!;
      const f = flood.get(op)!;
      const ratio = pct(f.ms, 99) / pct(a.ms, 99);
      const [low, high] = bootstrapRatio(a.ms, f.ms, 99);
      console.log(
        `${op.padEnd(10)}  ${`${pct(a.ms, 50).toFixed(0)} / ${pct(a.ms, 99).toFixed(0)}`.padEnd(19)}  ${`${pct(f.ms, 50).toFixed(0)} / ${pct(f.ms, 99).toFixed(0)}`.padEnd(19)}  ${`${ratio.toFixed(2)} (${low.toFixed(2)}–${high.toFixed(2)})`.padEnd(38)}  ${`${a.failed}/${f.failed}`.padEnd(19)}  ${a.ms.length}/${f.ms.length}`,
      );
    }
    const s = floodMs / 1000;
    console.log(
      `organization A during the flood (${s.toFixed(1)} s): ${attempts} delivery attempts (${(Number(attempts) / s).toFixed(1)}/s; each ends at the 5 s connect timeout), ${deliveriesStarted}/${DELIVERIES} deliveries attempted; ${ready}/${PAGES} knowledge pages ingested (${pagesFailed} page requests failed)`,
    );
    // Where the tail falls in the phase (seconds from its start): a cluster at the start is the flood's burst.
    for (const op of OPS) {
      const f = flood.get(op)!;
      const slowest = f.ms.map((ms, i) => ({ ms, at: f.at[i] })).sort((x, y) => y.ms - x.ms).slice(0, 4);
      console.log(`${op} slowest under the flood: ${slowest.map((x) => `${x.ms.toFixed(0)} ms at ${x.at.toFixed(0)} s`).join(', ')}`);
    }
    const burst = keyPolicies({ rateLimitPoints: null, rateLimitWindowSeconds: null }, rateLimitDefaults(config)).burst;
    const pagesSpan = pagesAt.length > 1 ? Math.max(...pagesAt) - Math.min(...pagesAt) : 0;
    const pagesPerSecond = pagesSpan > 0 ? (pagesAt.length / pagesSpan).toFixed(1) : '–';
    console.log(
      `A's knowledge pages, held to the default rate limits (${config.rateLimitPoints} requests per ${config.rateLimitWindowSeconds} s per key${burst ? `, at most ${burst.points} per ${burst.seconds} s` : ''}): ${pagesPosted}/${PAGES} posted (${pagesPerSecond}/s from the first to the last accepted), ${pages429} answered 429 and sent again after Retry-After, ${pagesFailed} failed; accepted in ${bursts(pagesAt)}; ${pagesPostedAt === undefined ? 'not all sent by the end of the phase' : `all sent ${pagesPostedAt.toFixed(0)} s into the phase`}`,
    );
    for (const line of observations) console.log(line);
    console.log(`total wall time ${((performance.now() - started) / 1000).toFixed(1)} s`);
  } finally {
    stopSandboxDispatchers();
    for (const s of sockets) s.destroy();
    for (const close of closers.reverse()) await close().catch(() => undefined);
    // Attempts the stopping workers made meanwhile hold connections too: close() waits for every one.
    for (const s of sockets) s.destroy();
    await new Promise<void>((r) => blackHole.close(() => r()));
    await stack.close();
  }
}

if (require.main === module) runBench('bench noisy-neighbour', runNoisyNeighbourBench);
