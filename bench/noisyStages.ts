/**
 * Where a quiet operation's time goes in the noisy-neighbour benchmark (bench/noisyNeighbour.ts), stage by stage,
 * per sample. Everything here observes; nothing changes what the bench measures.
 *
 * - HTTP: the API server's time per request (Node `http.Server` 'request' to the response's 'finish'), matched to
 *   the sample by a request header; the client's time beyond it is the socket and this process's event loop.
 * - Postgres: per request, the Knex queries it ran (Knex 'query' / 'query-response' events, attributed through
 *   `AsyncLocalStorage` entered around the server's request listeners) and its waits for a pooled connection
 *   (tarn 'acquireRequest' / 'acquireSuccess'); per phase, every query's duration and every pool wait.
 * - Event loop: the lag of a 5 ms timer (how late it fired), summed over each sample's span; of it, the main thread's
 *   time runnable but waiting for a core (Linux `/proc/<pid>/task/<tid>/schedstat`, second field: "time spent waiting
 *   on a runqueue", kernel Documentation/scheduler/sched-stats.rst) and V8's garbage-collection pauses (Node
 *   `PerformanceObserver` 'gc' entries).
 * - Temporal: for a text, the `sms-message` workflow's history (event times written by the server): workflow task
 *   schedule-to-start ("wf wait") and start-to-complete ("wf run": the worker's round trip), and activity schedule to
 *   close ("act": the dev server writes ActivityTaskStarted when the attempt closes, so dispatch and run are one).
 * - Postgres: per phase, the slowest statements of this process and the wait events of every active backend
 *   (pg_stat_activity, sampled every 250 ms): lock, WAL or I/O waits the bulk path causes.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { PerformanceObserver } from 'node:perf_hooks';
import type http from 'node:http';
import type { Client } from '@temporalio/client';
import { tsToMs } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import type { Db } from '../db';
import { mainThreadRunqueueWaitMs } from './harness';

/** Request header naming the bench sample a request belongs to. */
export const SAMPLE_HEADER = 'x-bench-sample';

const EventType = temporal.api.enums.v1.EventType;
const epochNow = () => performance.timeOrigin + performance.now();

/** One sample's stages, ms. */
export interface SampleStages {
  total: number;
  /** The API's time on the sample's request (request parsed → response finished). */
  server: number;
  /** Client time beyond `server`: socket, parsing, this process's event loop. */
  client: number;
  /** Postgres: the request's queries, summed (they may overlap), and their count. */
  pg: number;
  queries: number;
  /** The request's waits for a pooled connection, summed. */
  poolWait: number;
  /** Event-loop lag over the sample's span (a 5 ms timer's lateness, summed). */
  loopLag: number;
  /** The main thread's wait for a core over the sample (runnable, not running: the machine's other processes). */
  cpuWait: number;
  /** Garbage-collection pauses over the sample. */
  gc: number;
  /** Temporal stages of a text's workflow, ms (absent for the chat turn). */
  wfWait?: number;
  wfRun?: number;
  /** Activity scheduled → closed (dispatch and run: the dev server writes the started event at the close). */
  act?: number;
  /** From the POST's answer to the workflow's start event (negative when it started before the answer). */
  toStart?: number;
  /** From the last history event before the bench saw `sent` to that observation (the bench polls every 20 ms). */
  observe?: number;
}

interface Request {
  t0: number;
  t1?: number;
  pg: number;
  queries: number;
  poolWait: number;
}

interface Sample {
  op: string;
  t0: number;
  /** The main thread's runqueue wait at the start, ms. */
  wait0: number;
  cpuWait?: number;
  /** When the client had the answer to the sample's request. */
  answered?: number;
  t1?: number;
  workflowId?: string;
}

/**
 * Starts watching `server` and `db`. @returns the recorder: `sample(n, op)` marks a sample's start and returns its
 * request headers, `done(n, workflowId?)` its end; `report(client)` the lines to print for the samples so far,
 * then forgets them.
 */
export function watchStages(server: http.Server, db: Db) {
  const als = new AsyncLocalStorage<Request>();
  const requests = new Map<string, Request>();
  const samples = new Map<string, Sample>();
  const queries = new Map<string, { t0: number; req?: Request; sql: string }>();
  /** The phase's slowest statements (SQL text cut to 90 characters), slowest first. */
  const slowest: Array<{ ms: number; sql: string }> = [];
  /** Postgres wait events of active backends, sampled every 250 ms (pg_stat_activity), by `type:event`. */
  const waits = new Map<string, number>();
  let waitSamples = 0;
  const acquires = new Map<number, { t0: number; req?: Request }>();
  const phase = { queryMs: [] as number[], poolWaitMs: [] as number[] };

  // Enter a request's context around every request listener (Koa's included), so its queries are attributed.
  const listeners = server.listeners('request') as Array<(req: http.IncomingMessage, res: http.ServerResponse) => void>;
  server.removeAllListeners('request');
  server.on('request', (req: http.IncomingMessage, res: http.ServerResponse) => {
    const id = req.headers[SAMPLE_HEADER];
    const r: Request = { t0: epochNow(), pg: 0, queries: 0, poolWait: 0 };
    if (typeof id === 'string') {
      requests.set(id, r);
      res.once('finish', () => (r.t1 = epochNow()));
    }
    als.run(r, () => {
      for (const l of listeners) l.call(server, req, res);
    });
  });

  const onQuery = (q: { __knexQueryUid: string; sql: string }) => queries.set(q.__knexQueryUid, { t0: epochNow(), req: als.getStore(), sql: q.sql });
  const onResponse = (_r: unknown, q: { __knexQueryUid: string }) => {
    const s = queries.get(q.__knexQueryUid);
    if (!s) return;
    queries.delete(q.__knexQueryUid);
    const ms = epochNow() - s.t0;
    phase.queryMs.push(ms);
    if (slowest.length < 6 || ms > slowest[slowest.length - 1].ms) {
      slowest.push({ ms, sql: s.sql.replace(/\s+/g, ' ').slice(0, 90) });
      slowest.sort((a, b) => b.ms - a.ms);
      slowest.length = Math.min(slowest.length, 6);
    }
    if (s.req) (s.req.pg += ms, s.req.queries++);
  };
  db.on('query', onQuery).on('query-response', onResponse).on('query-error', (_e: unknown, q: { __knexQueryUid: string }) => onResponse(undefined, q));
  const pool = (db.client as { pool?: { on(e: string, f: (...a: any[]) => void): void; removeListener(e: string, f: (...a: any[]) => void): void } }).pool;
  const onAcquire = (id: number) => acquires.set(id, { t0: epochNow(), req: als.getStore() });
  const onAcquired = (id: number) => {
    const a = acquires.get(id);
    if (!a) return;
    acquires.delete(id);
    const ms = epochNow() - a.t0;
    phase.poolWaitMs.push(ms);
    if (a.req) a.req.poolWait += ms;
  };
  pool?.on('acquireRequest', onAcquire);
  pool?.on('acquireSuccess', onAcquired);
  pool?.on('acquireFail', onAcquired);

  // Event-loop lag: how late a 5 ms timer fires, kept when over 1 ms.
  const lags: Array<{ at: number; ms: number }> = [];
  let expected = epochNow() + 5;
  const timer = setInterval(() => {
    const now = epochNow();
    if (now - expected > 1) lags.push({ at: now, ms: now - expected });
    expected = now + 5;
  }, 5);
  timer.unref();

  // What active backends of every process wait on (PostgreSQL "pg_stat_activity": wait_event_type, wait_event).
  let sampling = false;
  const waitTimer = setInterval(() => {
    if (sampling) return;
    sampling = true;
    db.raw(`select wait_event_type || ':' || wait_event as w, count(*)::int as n from pg_stat_activity where state = 'active' and pid <> pg_backend_pid() and wait_event is not null group by 1`)
      .then((r: { rows: Array<{ w: string; n: number }> }) => {
        waitSamples++;
        for (const row of r.rows) waits.set(row.w, (waits.get(row.w) ?? 0) + row.n);
      })
      .catch(() => undefined)
      .finally(() => (sampling = false));
  }, 250);
  waitTimer.unref();

  const runqueueWait = mainThreadRunqueueWaitMs;
  const gcs: Array<{ at: number; ms: number }> = [];
  const gcObserver = new PerformanceObserver((list) => {
    for (const e of list.getEntries()) gcs.push({ at: performance.timeOrigin + e.startTime, ms: e.duration });
  });
  gcObserver.observe({ entryTypes: ['gc'] });
  const gcBetween = (t0: number, t1: number) => gcs.reduce((s, g) => (g.at >= t0 && g.at <= t1 ? s + g.ms : s), 0);

  const lagBetween = (t0: number, t1: number) => lags.reduce((s, l) => (l.at >= t0 && l.at <= t1 ? s + l.ms : s), 0);

  /** Stages of a workflow's history up to `until` (epoch ms). */
  async function workflowStages(client: Client, workflowId: string, until: number) {
    const history = await client.workflow.getHandle(workflowId).fetchHistory();
    const out = { wfWait: 0, wfRun: 0, act: 0, started: NaN, last: NaN };
    let prev = NaN;
    for (const e of history.events ?? []) {
      const at = tsToMs(e.eventTime);
      if (at > until) break;
      if (e.eventType === EventType.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED) out.started = at;
      else if (e.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED) out.wfWait += at - prev;
      else if (e.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED) out.wfRun += at - prev;
      else if (e.eventType === EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED || e.eventType === EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED) out.act += at - prev;
      prev = at;
      out.last = at;
    }
    return out;
  }

  return {
    /** Marks sample `n` of `op` as started. @returns the headers its request carries */
    sample(n: number, op: string): Record<string, string> {
      samples.set(String(n), { op, t0: epochNow(), wait0: runqueueWait() });
      return { [SAMPLE_HEADER]: String(n) };
    },
    /** Marks the answer to sample `n`'s request (when the sample goes on after it, as a text does). */
    answered(n: number): void {
      const s = samples.get(String(n));
      if (s) s.answered = epochNow();
    },
    /** Marks sample `n` as done; `workflowId` names the workflow whose history to read (a text's). */
    done(n: number, workflowId?: string): void {
      const s = samples.get(String(n));
      if (s) (s.t1 = epochNow(), (s.workflowId = workflowId), (s.cpuWait = runqueueWait() - s.wait0));
    },
    /** Per-phase Postgres figures: query durations and pool waits, ms; the slowest statements; wait events per sample. */
    phaseFigures() {
      const perSample = [...waits].sort((a, b) => b[1] - a[1]).map(([w, n]) => `${w} ${(n / Math.max(1, waitSamples)).toFixed(2)}`);
      return { ...phase, slowest: [...slowest], waits: perSample };
    },
    /** The stages of every finished sample of `op`. */
    async stagesOf(client: Client, op: string): Promise<SampleStages[]> {
      const out: SampleStages[] = [];
      for (const [id, s] of samples) {
        if (s.op !== op || s.t1 === undefined) continue;
        const r = requests.get(id);
        const server = r?.t1 !== undefined ? r.t1 - r.t0 : NaN;
        const st: SampleStages = { total: s.t1 - s.t0, server, client: 0, pg: r?.pg ?? NaN, queries: r?.queries ?? 0, poolWait: r?.poolWait ?? NaN, loopLag: lagBetween(s.t0, s.t1), cpuWait: s.cpuWait ?? NaN, gc: gcBetween(s.t0, s.t1) };
        if (s.workflowId && r?.t1 !== undefined) {
          const w = await workflowStages(client, s.workflowId, s.t1).catch(() => undefined);
          if (w) Object.assign(st, { wfWait: w.wfWait, wfRun: w.wfRun, act: w.act, toStart: w.started - r.t1, observe: s.t1 - w.last });
        }
        // The client's share of the request: its time to the answer beyond the server's.
        st.client = (s.answered ?? s.t1) - s.t0 - server;
        out.push(st);
      }
      return out;
    },
    /** Forgets every sample and phase figure (between phases). */
    reset(): void {
      samples.clear();
      requests.clear();
      lags.length = 0;
      gcs.length = 0;
      slowest.length = 0;
      waits.clear();
      waitSamples = 0;
      phase.queryMs.length = 0;
      phase.poolWaitMs.length = 0;
    },
    stop(): void {
      clearInterval(timer);
      clearInterval(waitTimer);
      gcObserver.disconnect();
      db.removeListener('query', onQuery);
      db.removeListener('query-response', onResponse);
      pool?.removeListener('acquireRequest', onAcquire);
      pool?.removeListener('acquireSuccess', onAcquired);
      pool?.removeListener('acquireFail', onAcquired);
    },
  };
}

/** The recorder {@link watchStages} returns. */
export type StageRecorder = ReturnType<typeof watchStages>;

const pctOf = (xs: number[], p: number) => {
  const s = xs.filter(Number.isFinite).sort((a, b) => a - b);
  return s.length ? s[Math.max(0, Math.ceil((p / 100) * s.length) - 1)] : NaN;
};

/** One sample's stages as `total 75 = client 3 + server 20 (pg 12 in 9, pool 0) | wf wait 2 …`. */
function line(s: SampleStages): string {
  const f = (x: number | undefined) => (x === undefined || !Number.isFinite(x) ? '–' : x.toFixed(0));
  const head = `total ${f(s.total)}: client ${f(s.client)}, server ${f(s.server)} (pg ${f(s.pg)} in ${s.queries} queries, pool wait ${f(s.poolWait)}), loop lag ${f(s.loopLag)} (waiting for a core ${f(s.cpuWait)}, gc ${f(s.gc)})`;
  if (s.wfWait === undefined) return head;
  return `${head}; to start ${f(s.toStart)}, wf wait ${f(s.wfWait)}, wf run ${f(s.wfRun)}, act ${f(s.act)}, observe ${f(s.observe)}`;
}

/**
 * Lines to print for one phase: per operation the median of each stage over its samples and the stages of its
 * four slowest samples; the phase's Postgres query and pool-wait percentiles.
 */
export async function stageReport(rec: StageRecorder, client: Client, phaseLabel: string, ops: string[]): Promise<string[]> {
  const out: string[] = [];
  for (const op of ops) {
    const st = await rec.stagesOf(client, op);
    if (!st.length) continue;
    const keys = Object.keys(st[0]) as Array<keyof SampleStages>;
    const median = Object.fromEntries(keys.map((k) => [k, pctOf(st.map((s) => s[k] as number), 50)])) as unknown as SampleStages;
    out.push(`[${phaseLabel}] ${op} stages ms, median of each: ${line(median)}`);
    for (const s of [...st].sort((a, b) => b.total - a.total).slice(0, 4)) out.push(`[${phaseLabel}] ${op} slow sample: ${line(s)}`);
  }
  const { queryMs, poolWaitMs, slowest, waits } = rec.phaseFigures();
  out.push(
    `[${phaseLabel}] Postgres from this process: ${queryMs.length} queries p50/p99/max ${pctOf(queryMs, 50).toFixed(1)}/${pctOf(queryMs, 99).toFixed(1)}/${Math.max(0, ...queryMs).toFixed(0)} ms; pool waits p50/p99/max ${pctOf(poolWaitMs, 50).toFixed(1)}/${pctOf(poolWaitMs, 99).toFixed(1)}/${Math.max(0, ...poolWaitMs).toFixed(0)} ms`,
    `[${phaseLabel}] Postgres backends waiting (every process; mean per 250 ms sample): ${waits.join(', ') || 'none'}`,
    ...slowest.map((q) => `[${phaseLabel}] slow statement ${q.ms.toFixed(0)} ms: ${q.sql}`),
  );
  rec.reset();
  return out;
}
