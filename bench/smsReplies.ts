/**
 * Agents answering texts (docs/benchmarks.md "sms-replies"; docs/sms.md "Agents answer texts"). Five processes and
 * Postgres, so each one's CPU is printed apart: this one holds the real API over a socket; the worker runs as production
 * runs it (worker.ts in a child process, its housekeeping sweep included); the Temporal dev server runs in a child
 * (devserver/bin.ts, in memory); the counterparts send from a child of their own (bench/smsSender.ts), so the load
 * generator's CPU is never counted per text; Postgres is an embedded cluster of its own.
 * One organization with an active registration and a published agent answering an SMS-enabled number;
 * BENCH_SMS_REPLY_SENDERS counterparts (default 200) text it at BENCH_SMS_REPLY_RATE texts/s (default 200) for
 * BENCH_SMS_REPLY_SECONDS (default 10) as signed sandbox provider callbacks (`message.inbound`); the agent
 * (sandbox LLM) answers each in the API process (the turn, then the reply handed to the sandbox telephony).
 * Prints the rate offered and achieved, the latency from the inbound webhook's arrival (the stored text's
 * `created_at`) to the reply handed to the carrier (the reply's `sent` time), p50/p99, and the CPU per text
 * of the API process, the worker, Postgres, the dev server and the sender. Delivery receipts are held back
 * (SANDBOX_TELEPHONY_DELAY_MS) so the reply's `updated_at` is its `sent` time.
 *
 * `BENCH_COUNT_QUERIES=1` also prints the statements each text costs, counted at pg's `Client` (every pool of the
 * API process: the service's, the change feed's, the turn writer's), most frequent first, the carrier sandbox's own
 * records (`provider_requests`, `sandbox_callbacks`: what a real carrier keeps on its side) counted apart.
 * `BENCH_PROFILE=1` profiles the API process during the load (V8, 100 µs sampling) and prints its top self-time
 * functions and packages. `BENCH_PROFILE_DIR` keeps the `.cpuprofile`.
 * `BENCH_HEAP=1` samples the API process's allocations during the load and prints the sites whose objects survived the
 * young generation (what the load promotes to the old generation, where only a mark-compact frees it).
 * `BENCH_WAITS=1` samples Postgres's `pg_stat_activity` every 20 ms during the load (a connection of its own) and
 * prints how many of the service's statements were running on average and what those waiting waited for (a lock,
 * the WAL flush, …), by statement: where one organization's texts queue behind each other (e.g. a row lock).
 *
 * Run: `BENCH_ONLY=sms-replies npm run bench` or `npx tsx bench/smsReplies.ts`.
 */
import type { ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import pg from 'pg';
import os from 'node:os';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import path from 'node:path';
import { createOrganization } from '../db/repositories/organizations';
import { createSecretKey } from '../db/repositories/apiKeys';
import { NON_RESERVED_SCOPES } from '../domain/scopes';
import { inboundStoreStats } from '../db/repositories/smsMessages';
import { senderReadStats } from '../db/repositories/smsConversations';
import { startBatchStats } from '../db/repositories/conversations';
import { replyBatchStats } from '../db/repositories/smsReplies';
import { exchangeBatchStats } from '../db/repositories/sandboxProviders';
import { turnBatchStats } from '../services/conversations/service';
import type { GroupCommitStats } from '../db/groupCommit';
import type { Db } from '../db';
import { countStatements, cpuSnapshot, heapWindow, mainThreadCpuMs, processCpu, profileWindow, publishForBench, startBenchApi, startBenchStack, type BenchStack } from './harness';
import { devServerInChild, startLoadChild, startWorkerChild, stopChild } from './children';
import type { SmsSenderJob, SmsSenderResult } from './smsSender';
import { printProfile } from './http';
import { stopSandboxDispatchers } from '../providers/carrier/sandbox';
import { sandboxInventory } from '../providers/telephony/sandbox';
import { COMPLETE_BRAND } from '../test/api/sms-fixtures';
import { runBench } from './entry';
import { describeWindow, recordFirstSeconds } from './firstSeconds';

const SENDERS = Number(process.env.BENCH_SMS_REPLY_SENDERS ?? 200);
const RATE = Number(process.env.BENCH_SMS_REPLY_RATE ?? 200);
const SECONDS = Number(process.env.BENCH_SMS_REPLY_SECONDS ?? 10);
/**
 * Unmeasured warm-up (s; default 20): other counterparts text the same number at the same rate first, so the API
 * process runs the measured texts with its hot paths optimized, as a long-running one does (V8's optimizing compiler
 * otherwise works through the measured load; bench/chat.ts). The measured counterparts are new to it: each still
 * starts its conversation with its first text. 0 measures a cold process's first burst. (Until 2026-12-01 the
 * warm-up raised Postgres's CPU per text, 6 → 9 ms: the hot statements' generic plans, made on the new database,
 * read every row of the organization per lookup; db/groupCommit.ts `inOrganization`.)
 */
const WARMUP_SECONDS = Number(process.env.BENCH_SMS_REPLY_WARMUP_SECONDS ?? 20);
/** The first seconds of the load, whose figures are printed apart from the rest's (a cold process's first burst), ms. */
const FIRST_MS = 2000;
/** Give up waiting for the replies after this long. */
const LIMIT_MS = Number(process.env.BENCH_SMS_REPLY_LIMIT_MS ?? 180_000);

/**
 * BENCH_WAITS=1: samples the database's active backends every `everyMs` on a connection of its own.
 * @returns `stop()`, which prints the average running statements per sample and the waits by statement
 */
async function sampleWaits(databaseUrl: string, everyMs = 20): Promise<{ stop(): Promise<void> }> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  const waits = new Map<string, number>();
  let samples = 0;
  let active = 0;
  let busy = false;
  const timer = setInterval(() => {
    if (busy) return;
    busy = true;
    client
      .query(`SELECT wait_event_type AS t, wait_event AS e, left(regexp_replace(query, '\\s+', ' ', 'g'), 60) AS q
                FROM pg_stat_activity WHERE state = 'active' AND pid <> pg_backend_pid() AND datname = current_database()`)
      .then((res) => {
        samples++;
        active += res.rows.length;
        for (const r of res.rows) if (r.t) waits.set(`${r.t}:${r.e}  ${r.q}`, (waits.get(`${r.t}:${r.e}  ${r.q}`) ?? 0) + 1);
      })
      .catch(() => undefined)
      .finally(() => (busy = false));
  }, everyMs);
  return {
    async stop() {
      clearInterval(timer);
      await client.end();
      console.log(`sms-replies: Postgres, ${samples} samples of pg_stat_activity: ${(active / Math.max(samples, 1)).toFixed(2)} statements running on average; waiting (average per sample, by wait and statement):`);
      for (const [k, n] of [...waits].sort((a, b) => b[1] - a[1]).slice(0, 10)) console.log(`  ${(n / Math.max(samples, 1)).toFixed(3)}  ${k}`);
    },
  };
}

/** Per table (pg_stat_user_tables): sequential scans and the rows they read, index scans, autovacuum and autoanalyze runs so far. */
type TableStats = Map<string, { seqScan: number; seqRows: number; idxScan: number; autovacuum: number; autoanalyze: number }>;

/**
 * The database's table statistics so far, by table name. A backend reports its counts when idle, at most once a second
 * (PostgreSQL "The Cumulative Statistics System"), so a snapshot may miss the last second's: differences of two are
 * a lower bound.
 */
async function tableStats(db: Db): Promise<TableStats> {
  const r = await db.raw(
    `SELECT relname, seq_scan, seq_tup_read, coalesce(idx_scan, 0) AS idx_scan, autovacuum_count, autoanalyze_count FROM pg_stat_user_tables`,
  );
  return new Map(
    r.rows.map((x: Record<string, string>) => [x.relname, { seqScan: Number(x.seq_scan), seqRows: Number(x.seq_tup_read), idxScan: Number(x.idx_scan), autovacuum: Number(x.autovacuum_count), autoanalyze: Number(x.autoanalyze_count) }]),
  );
}

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] : 0;
};

/**
 * The bench stack with the dev server in a child process of its own (bench/children.ts), so its CPU is printed apart
 * from the API's. @returns the stack and the dev server's process
 */
async function startSplitStack(): Promise<{ stack: BenchStack; devServer: ChildProcess }> {
  const dev = devServerInChild();
  const stack = await startBenchStack('smsreplies', { devServer: dev.devServer });
  return { stack, devServer: dev.child()! };
}

/** Runs the section and prints its figures. */
export async function runSmsRepliesBench(): Promise<void> {
  // Receipts held back for this section (an earlier section of the same process may have set 0).
  const receiptDelay = process.env.SANDBOX_TELEPHONY_DELAY_MS;
  process.env.SANDBOX_TELEPHONY_DELAY_MS = '600000';
  const { stack, devServer } = await startSplitStack();
  const { db } = stack;
  let stopWorker: (() => Promise<void>) | undefined;
  let closeApi: (() => Promise<void>) | undefined;
  try {
    const { api, config, taskQueue } = await startBenchApi(stack, 'smsreplies');
    closeApi = () => api.close();
    process.env.SANDBOX_CALLBACK_URL = `${api.baseUrl}/sms/provider-callbacks/sandbox`;
    // The worker as production runs it (worker.ts, `npm run start:worker`): its own process on the same Postgres,
    // the same dev server and the API's task queue, with the housekeeping sweep that hands over texts left pending.
    // `npm run start:worker` as production runs it, in a process (and a data directory) of its own.
    const worker = { child: await startWorkerChild({ DATABASE_URL: stack.databaseUrl, TEMPORAL_ADDRESS: stack.address, TEMPORAL_TASK_QUEUE: taskQueue, DATA_DIR: fs.mkdtempSync(path.join(os.tmpdir(), 'acp-bench-worker-')) }) };
    stopWorker = () => stopChild(worker.child);
    const call = async (key: string, method: string, p: string, json?: unknown) => {
      const res = await fetch(`${api.baseUrl}${p}`, { method, headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: json === undefined ? undefined : JSON.stringify(json) });
      const text = await res.text();
      if (res.status >= 300) throw new Error(`${method} ${p} answered ${res.status}: ${text}`);
      return text ? JSON.parse(text) : undefined;
    };

    // Setup (untimed): the organization, its agent, number and registration.
    const org = await createOrganization(db, 'Bench texting');
    const { key } = await createSecretKey(db, org.id, { brand: config.keyBrandPrefix, scopes: NON_RESERVED_SCOPES });
    await call(key, 'PUT', '/sms', COMPLETE_BRAND);
    const agentId = (await call(key, 'POST', '/agents', { name: 'Texting desk', voiceId: 'voice_ava', instructions: 'You answer questions about Acme Dental by text.' })).data.id as string;
    await publishForBench(db, org.id, agentId, 'bench');
    const ours = sandboxInventory('312')[0].e164;
    const numberId = (await call(key, 'POST', '/numbers/purchase', { e164: ours })).data.id as string;
    await call(key, 'POST', `/numbers/${numberId}/assign`, { agentId });
    await call(key, 'PUT', `/numbers/${numberId}/sms`, { enabled: true });
    await db('sms_registrations').where({ org_id: org.id }).update({ status: 'active' });
    const senders = Array.from({ length: SENDERS }, (_, i) => `+1415555${String(1000 + i).padStart(4, '0')}`);
    const total = RATE * SECONDS;
    /** Replies handed to the carrier so far (the sandbox marks them sent). */
    const repliesSent = async () => {
      const [{ n }] = await db('sms_messages').where({ org_id: org.id, direction: 'outbound', status: 'sent' }).whereNotNull('reply_to').count({ n: '*' });
      return Number(n);
    };
    /** Waits until `n` replies in all were handed to the carrier. @throws Error after LIMIT_MS from `since` */
    const untilReplies = async (n: number, since: number) => {
      for (;;) {
        const sentSoFar = await repliesSent();
        if (sentSoFar >= n) return;
        if (performance.now() - since > LIMIT_MS) {
          // What became of the texts: how many of each answer state (and why one was declined), and the replies' states.
          const inbound = await db('sms_messages').where({ org_id: org.id, direction: 'inbound' }).groupBy('answer_state', 'answer_note').select('answer_state', 'answer_note').count({ n: '*' });
          const replies = await db('sms_messages').where({ org_id: org.id, direction: 'outbound' }).groupBy('status').select('status').count({ n: '*' });
          throw new Error(`${sentSoFar}/${n} replies sent after ${LIMIT_MS / 1000} s; texts by answer state: ${JSON.stringify(inbound)}; replies by status: ${JSON.stringify(replies)}`);
        }
        await new Promise((r) => setTimeout(r, 100));
      }
    };
    if (WARMUP_SECONDS > 0) {
      const warmSenders = Array.from({ length: SENDERS }, (_, i) => `+1415556${String(1000 + i).padStart(4, '0')}`);
      const warmTotal = RATE * WARMUP_SECONDS;
      const warm = await startLoadChild<SmsSenderJob, SmsSenderResult>('smsSender.ts', { url: `${api.baseUrl}/sms/provider-callbacks/sandbox`, to: ours, senders: warmSenders, rate: RATE, total: warmTotal, idPrefix: 'SMwarm' });
      const warmT0 = performance.now();
      const warmSent = await warm.go();
      await untilReplies(warmTotal - warmSent.unsent, warmT0);
      console.log(`sms-replies: warm-up (unmeasured): ${warmTotal - warmSent.unsent} texts from ${SENDERS} other counterparts answered in ${((performance.now() - warmT0) / 1000).toFixed(1)} s`);
    }
    const repliesBefore = await repliesSent();
    // The counterparts in a process of their own (bench/smsSender.ts): its CPU is printed apart, never in the per-text figure.
    const sender = await startLoadChild<SmsSenderJob, SmsSenderResult>('smsSender.ts', { url: `${api.baseUrl}/sms/provider-callbacks/sandbox`, to: ours, senders, rate: RATE, total });
    // BENCH_COUNT_QUERIES=1: how many statements each answered text costs, by their first words, counted at pg's
    // Client so every pool of the process is seen (the turn writer's group commit, the change feed).
    const { counted, stop: stopCounting } = countStatements();
    // BENCH_PROFILE=1: a V8 profile of this process during the load, its top self-time functions printed.
    const profileDir = process.env.BENCH_PROFILE_DIR ?? (process.env.BENCH_PROFILE === '1' ? fs.mkdtempSync(path.join(os.tmpdir(), 'acp-prof-sms-')) : undefined);
    // Each process's CPU (ms so far): this one (the API), the worker, the dev server, Postgres.
    const cpu = (): Record<'api' | 'apiMain' | 'worker' | 'devServer' | 'postgres', number> => {
      const snap = cpuSnapshot({ api: process.pid }, { postmasterPid: stack.postmasterPid });
      return { api: snap.api ?? 0, apiMain: mainThreadCpuMs(process.pid), postgres: snap.postgres ?? 0, worker: processCpu(worker.child.pid!)?.ms ?? 0, devServer: processCpu(devServer.pid!)?.ms ?? 0 };
    };
    // The CPU each process spends with no text (the worker's and dev server's polls, timers) over 2 s,
    // so the per-text figure can be told apart from the background a slow (contended) run accrues.
    const idle0 = cpu();
    const idleT0 = performance.now();
    await new Promise((r) => setTimeout(r, 2000));
    const idle1 = cpu();
    const idleS = (performance.now() - idleT0) / 1000;
    const idlePerS = (name: keyof typeof idle1) => (idle1[name] - idle0[name]) / idleS;
    const batches = (): Record<string, GroupCommitStats> => ({ store: inboundStoreStats(db), read: senderReadStats(db), start: startBatchStats(db), turn: turnBatchStats(db), ...replyBatchStats(db), carrier: exchangeBatchStats(db) });
    const batches0 = batches();
    // The API process's event-loop delay during the load: how long a ready callback waits for the CPU.
    const loopDelay = monitorEventLoopDelay({ resolution: 10 });
    loopDelay.enable();
    const tables0 = await tableStats(db);
    const before = cpu();
    const profiled = profileWindow(profileDir, 'sms-replies');
    // BENCH_HEAP=1: what the load promotes to this process's old generation, by allocation site (sampled).
    const heapHeld = heapWindow(process.env.BENCH_HEAP === '1');
    // The first seconds apart from the rest (bench/firstSeconds.ts): the batches, the pool, GC and the profile of each.
    let batchesSplit = batches0;
    let cpuSplit = before;
    const windows = recordFirstSeconds(db, FIRST_MS, () => {
      batchesSplit = batches();
      cpuSplit = cpu();
    });
    const waits = process.env.BENCH_WAITS === '1' ? await sampleWaits(stack.databaseUrl) : undefined;
    const t0 = performance.now();
    const sent = await sender.go();
    const offeredS = sent.offeredS;
    const unsent = sent.unsent;
    await untilReplies(repliesBefore + total - unsent, t0);
    const doneS = (performance.now() - t0) / 1000;
    const answered = total - unsent;
    const after = cpu();
    const tables1 = await tableStats(db);
    loopDelay.disable();
    const batches1 = batches();
    const { first: firstWindow, rest: restWindow } = windows.stop();
    await profiled();
    const held = await heapHeld();
    stopCounting();
    await waits?.stop();
    const rows = await db('sms_messages as r')
      .join('sms_messages as i', function () {
        this.on('i.id', '=', 'r.reply_to').andOn('i.org_id', '=', 'r.org_id');
      })
      .where({ 'r.org_id': org.id })
      // The measured counterparts' texts only (the warm-up's came from +1415556…).
      .whereIn('i.from_e164', senders)
      .select(
        db.raw('extract(epoch from (r.updated_at - i.created_at)) * 1000 as ms'),
        // The text that started its conversation (the sender's first: metadata.firstMessageId, services/sms/answer.ts).
        db.raw(`EXISTS (SELECT 1 FROM conversations c WHERE c.org_id = i.org_id AND c.id = i.conversation_id AND c.metadata->>'firstMessageId' = i.id) AS started`),
        db.raw('extract(epoch from (i.created_at - min(i.created_at) OVER ())) AS at_s'),
        // The reply composed (its `created_at`: the turn done, before the statement that queues it) and handed over.
        db.raw('extract(epoch from (r.created_at - i.created_at)) * 1000 as compose_ms'),
      );
    const lat = rows.map((r: { ms: string }) => Number(r.ms));
    const latOf = (pick: (r: { started: boolean; at_s: string }) => boolean) => rows.filter(pick).map((r: { ms: string }) => Number(r.ms));
    const perText = (name: keyof typeof after) => ((after[name] ?? 0) - (before[name] ?? 0)) / answered;
    console.log(`sms-replies: ${total} texts from ${SENDERS} counterparts offered at ${(total / offeredS).toFixed(0)}/s (target ${RATE}/s), accepted at ${(total / sent.acceptedS).toFixed(0)}/s, to one agent (sandbox LLM), one API process`);
    if (unsent) console.log(`sms-replies: ${unsent} of ${total} callbacks not accepted by the saturated process (the first: ${sent.firstUnsent}); their texts were never stored`);
    console.log(`sms-replies: all ${answered} stored texts answered ${doneS.toFixed(2)} s after the first (${(answered / doneS).toFixed(0)} replies/s)`);
    console.log(`sms-replies: inbound webhook stored → reply handed to the carrier p50 ${pct(lat, 50).toFixed(0)} ms, p99 ${pct(lat, 99).toFixed(0)} ms, max ${pct(lat, 100).toFixed(0)} ms (target p99 < 250 ms)`);
    // Where the tail is: the texts that started a conversation (all in the first seconds: one per counterpart), the
    // texts of the first 2 s, and the rest.
    const composeOf = (pick: (r: { at_s: string }) => boolean) => rows.filter(pick).map((r: { compose_ms: string }) => Number(r.compose_ms));
    const handOf = (pick: (r: { at_s: string }) => boolean) => rows.filter(pick).map((r: { ms: string; compose_ms: string }) => Number(r.ms) - Number(r.compose_ms));
    const firstS = FIRST_MS / 1000;
    for (const [label, xs] of [['starting a conversation', latOf((r) => r.started)], [`in the first ${firstS} s`, latOf((r) => Number(r.at_s) < firstS)], [`after the first ${firstS} s`, latOf((r) => Number(r.at_s) >= firstS)]] as const) {
      if (xs.length) console.log(`sms-replies:   ${label}: ${xs.length} texts, p50 ${pct(xs, 50).toFixed(0)} ms, p99 ${pct(xs, 99).toFixed(0)} ms`);
    }
    // By arrival, in quarters of a second over the first seconds: a cold process's first moments apart from the burst of starts.
    const quarters = Array.from({ length: firstS * 4 }, (_, q) => latOf((r) => Math.floor(Number(r.at_s) * 4) === q));
    console.log(`sms-replies:   by arrival, each quarter of a second of the first ${firstS} s: p50/p99 ${quarters.map((xs) => (xs.length ? `${pct(xs, 50).toFixed(0)}/${pct(xs, 99).toFixed(0)}` : '-')).join(', ')} ms`);
    // Where a text's time goes, the first seconds (a cold process) apart from the rest: stored → reply composed (the
    // text's store, the sender's read, a start, the turn), then composed → handed to the carrier (queue, send, sent).
    for (const [label, pick] of [[`the first ${firstS} s`, (r: { at_s: string }) => Number(r.at_s) < firstS], [`after the first ${firstS} s`, (r: { at_s: string }) => Number(r.at_s) >= firstS]] as const) {
      const c = composeOf(pick);
      const h = handOf(pick);
      if (c.length) console.log(`sms-replies:   ${label}: stored → reply composed p50 ${pct(c, 50).toFixed(0)} ms, p99 ${pct(c, 99).toFixed(0)} ms; composed → handed to the carrier p50 ${pct(h, 50).toFixed(0)} ms, p99 ${pct(h, 99).toFixed(0)} ms`);
    }
    if (counted.size) {
      // The carrier sandbox's own records stand for what a real carrier keeps on its side: counted apart.
      const carrier = (k: string) => /\b(provider_requests|sandbox_callbacks)\b/.test(k);
      const sum = (pick: (k: string) => boolean) => [...counted].filter(([k]) => pick(k)).reduce((a, [, n]) => a + n, 0);
      console.log(`sms-replies: ${(sum((k) => !carrier(k)) / answered).toFixed(1)} statements per text by the service (+ ${(sum(carrier) / answered).toFixed(1)} by the carrier sandbox), all pools of this process; the most frequent:`);
      for (const [k, n] of [...counted].sort((a, b) => b[1] - a[1]).slice(0, 25)) console.log(`  ${(n / answered).toFixed(2)}  ${carrier(k) ? '(carrier sandbox) ' : ''}${k}`);
    }
    // Each group-committed statement of the path (db/groupCommit.ts): texts per statement on average during the load.
    const perBatch = Object.keys(batches1).map((k) => {
      const n = batches1[k].batches - batches0[k].batches;
      return `${k} ${n ? `${((batches1[k].items - batches0[k].items) / n).toFixed(1)} (${((batches1[k].ms - batches0[k].ms) / n).toFixed(1)} ms)` : '-'}`;
    });
    // A text waits at most one batch in flight, then its own, at each step: the batch's mean time bounds what batching adds.
    console.log(`sms-replies: texts per batched statement (group commits per organization) and a batch's mean time: ${perBatch.join(', ')}`);
    // Each group-committed step in the first seconds and after: texts per batch, a batch's mean time and a text's mean wait
    // from submitting it to its batch's commit (the batch in flight before it, then its own).
    const stepOf = (from: Record<string, GroupCommitStats>, to: Record<string, GroupCommitStats>) =>
      Object.keys(to).map((k) => {
        const n = to[k].batches - from[k].batches;
        const items = to[k].items - from[k].items;
        return `${k} ${n ? `${(items / n).toFixed(1)}/${((to[k].ms - from[k].ms) / n).toFixed(1)}/${((to[k].waitMs - from[k].waitMs) / items).toFixed(1)}` : '-'}`;
      });
    console.log(`sms-replies: each step (texts per batch / a batch's mean ms / a text's mean wait ms), the first ${firstS} s: ${stepOf(batches0, batchesSplit).join(', ')}`);
    console.log(`sms-replies:   after the first ${firstS} s: ${stepOf(batchesSplit, batches1).join(', ')}`);
    console.log(`sms-replies: the API process, ${describeWindow(`the first ${firstS} s`, firstWindow)}`);
    console.log(`sms-replies:   ${describeWindow('the rest', restWindow)}`);
    // The other processes in each window (Postgres's backends, the worker, the dev server), ms of CPU per second.
    const rate = (from: typeof before, to: typeof before, ms: number) => (['postgres', 'worker', 'devServer'] as const).map((k) => `${k} ${(((to[k] - from[k]) / ms) * 1000).toFixed(0)}`).join(', ');
    console.log(`sms-replies: CPU ms/s of the other processes, the first ${firstS} s: ${rate(before, cpuSplit, firstWindow.ms)}; the rest: ${rate(cpuSplit, after, restWindow.ms)}`);
    // Where Postgres reads whole tables during the load (rows grow with a long-running service's history), and the
    // autovacuum and autoanalyze runs whose CPU falls in the window.
    const tableLines = [...tables1]
      .map(([t, a]) => {
        const b = tables0.get(t) ?? { seqScan: 0, seqRows: 0, idxScan: 0, autovacuum: 0, autoanalyze: 0 };
        return { t, seqScan: a.seqScan - b.seqScan, seqRows: a.seqRows - b.seqRows, idxScan: a.idxScan - b.idxScan, vac: a.autovacuum - b.autovacuum, an: a.autoanalyze - b.autoanalyze };
      })
      .filter((x) => x.seqRows > 0 || x.vac || x.an)
      .sort((x, y) => y.seqRows - x.seqRows)
      .slice(0, 10);
    console.log(
      `sms-replies: Postgres tables during the load (sequential scans, rows they read per text, index scans; autovacuum, autoanalyze runs): ${tableLines.map((x) => `${x.t} ${x.seqScan}/${(x.seqRows / answered).toFixed(1)}/${x.idxScan}${x.vac || x.an ? ` (vacuum ${x.vac}, analyze ${x.an})` : ''}`).join(', ') || 'none'}`,
    );
    console.log(`sms-replies: the API process's event-loop delay during the load p50 ${(loopDelay.percentile(50) / 1e6).toFixed(0)} ms, p99 ${(loopDelay.percentile(99) / 1e6).toFixed(0)} ms, max ${(loopDelay.max / 1e6).toFixed(0)} ms`);
    if (held.sites.length) {
      console.log(`sms-replies: the API process promoted ${(held.totalBytes / 1048576).toFixed(0)} MB allocated during the load to its old generation (${((held.totalBytes / answered) / 1024).toFixed(1)} KB per text; sampled), by allocation site:`);
      for (const h of held.sites.slice(0, 20)) console.log(`  ${(h.bytes / 1048576).toFixed(1).padStart(6)} MB  ${h.site}`);
    }
    if (profileDir) {
      // The windows beside the profile, for reading it further (e.g. in Chrome DevTools): µs of the profile's clock.
      fs.writeFileSync(path.join(profileDir, 'windows.json'), JSON.stringify({ firstFromUs: windows.startUs, restFromUs: windows.splitUs }));
      printProfile(`the first ${firstS} s of the sms-replies load (the API process)`, profileDir, { fromUs: windows.startUs, toUs: windows.splitUs });
      printProfile('the rest of the sms-replies load (the API process)', profileDir, { fromUs: windows.splitUs });
    }
    const service = perText('api') + perText('worker') + perText('postgres');
    console.log(`sms-replies: CPU per text: API process ${perText('api').toFixed(2)} ms (main thread ${perText('apiMain').toFixed(2)}, other threads ${(perText('api') - perText('apiMain')).toFixed(2)}: V8's optimizing compiler and GC helpers, libuv's pool) + worker ${perText('worker').toFixed(2)} ms + Postgres ${perText('postgres').toFixed(2)} ms = ${service.toFixed(2)} ms (target ≤ 8 ms); dev server ${perText('devServer').toFixed(2)} ms; the sender (load generator, not counted) ${(sent.cpuMs / total).toFixed(2)} ms (load average ${os.loadavg().map((l) => l.toFixed(1)).join(' ')})`);
    const net = (name: keyof typeof after) => ((after[name] ?? 0) - (before[name] ?? 0) - idlePerS(name) * doneS) / answered;
    console.log(`sms-replies: of which background with no text: API ${idlePerS('api').toFixed(0)} ms/s, worker ${idlePerS('worker').toFixed(0)} ms/s, dev server ${idlePerS('devServer').toFixed(0)} ms/s, Postgres ${idlePerS('postgres').toFixed(0)} ms/s over ${doneS.toFixed(1)} s; net of it ${net('api').toFixed(2)} + ${net('worker').toFixed(2)} + ${net('postgres').toFixed(2)} = ${(net('api') + net('worker') + net('postgres')).toFixed(2)} ms per text`);
  } finally {
    delete process.env.SANDBOX_CALLBACK_URL;
    if (receiptDelay === undefined) delete process.env.SANDBOX_TELEPHONY_DELAY_MS;
    else process.env.SANDBOX_TELEPHONY_DELAY_MS = receiptDelay;
    stopSandboxDispatchers();
    await stopWorker?.();
    await closeApi?.();
    await stack.close();
  }
}

if (require.main === module) runBench('bench sms-replies', runSmsRepliesBench);
