/**
 * The stack a workflow benchmark needs, in one process: an embedded Postgres in a temp directory with a
 * fresh database, the embedded Temporal dev server (in memory) and client/worker connections to it.
 */
import crypto from 'node:crypto';
import inspector from 'node:inspector';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { bundleWorkflowCode, DefaultLogger, NativeConnection, Runtime } from '@temporalio/worker';
import type { Logger } from 'pino';
import { tapStatements } from '../test/helpers/pgTap';
import { startApi, type RunningApi } from '../api/server';
import { loadConfig, type AppConfig } from '../config';
import { createLogger } from '../runtime';
import { createDb, ensureDatabase, migrate, poolMin, type Db } from '../db';
import { startEmbeddedPostgres } from '../db/embedded';
import { startDevServer } from '../devserver';
import { createAgentActivities } from '../activities/agents';
import { createOrganization } from '../db/repositories/organizations';
import { createSecretKey } from '../db/repositories/apiKeys';
import { NON_RESERVED_SCOPES } from '../domain/scopes';
import { publishRequestHash } from '../domain/agents/compile';

/** Installs the Temporal SDK runtime once per process, quiet (every section of `npm run bench` shares one process). */
export function installBenchRuntime(): void {
  try {
    Runtime.install({ logger: new DefaultLogger('ERROR') });
  } catch {
    // installed already (another section of this process)
  }
}

/** A running benchmark stack. */
export interface BenchStack {
  /** The dev server's gRPC address (`host:port`), for a worker on its own connection. */
  address: string;
  db: Db;
  databaseUrl: string;
  client: Client;
  native: NativeConnection;
  /** The embedded cluster's postmaster (for {@link cpuSnapshot}). */
  postmasterPid?: number;
  /** Closes the database pool, the connections, the dev server and Postgres (in that order). */
  close(): Promise<void>;
}

/** A fresh, migrated benchmark database and how to close it. */
export interface BenchDatabase {
  db: Db;
  databaseUrl: string;
  /** True when an embedded Postgres was started for it (no `serverUrl`). */
  embedded: boolean;
  /** The embedded cluster's postmaster (for {@link cpuSnapshot}); undefined on `serverUrl`. */
  postmasterPid?: number;
  /** Closes the pool, then stops the embedded Postgres when one was started. */
  close(): Promise<void>;
}

/**
 * Opens a fresh database `bench_<label>_<pid>` and migrates it: on `opts.serverUrl` (e.g. DATABASE_URL)
 * when given, else on an embedded Postgres in a temp directory (fsync off).
 * @param opts.poolMax Knex pool size (default: createDb's)
 * The pool keeps the service's minimum of connections (db/index.ts `poolMin`, DB_POOL_MIN) as runtime.ts `openDatabase`
 * opens it, so an API started on it (api/server.ts `startApi`) opens them before it listens, as in production.
 * @throws when Postgres cannot be started or reached
 */
export async function openBenchDatabase(label: string, opts: { poolMax?: number; serverUrl?: string } = {}): Promise<BenchDatabase> {
  const dataDir = path.join(os.tmpdir(), `acp-bench-${label}-pg-${process.pid}`);
  const pg = opts.serverUrl
    ? undefined
    : await startEmbeddedPostgres({ dataDir, ephemeral: true, durable: false });
  const url = new URL(opts.serverUrl ?? pg!.url);
  url.pathname = `/bench_${label}_${process.pid}`;
  const databaseUrl = url.toString();
  await ensureDatabase(databaseUrl);
  // Its sessions are named after the bench (`bench-<label>`), the service's child processes after themselves (runtime.ts).
  const db = createDb(databaseUrl, { poolMax: opts.poolMax, poolMin: poolMin(), applicationName: `bench-${label}` });
  await migrate(db);
  const postmasterPid = pg ? Number(fs.readFileSync(path.join(dataDir, 'postmaster.pid'), 'utf8').split('\n')[0]) || undefined : undefined;
  return {
    db,
    databaseUrl,
    embedded: pg !== undefined,
    postmasterPid,
    close: async () => {
      await db.destroy();
      if (pg) await pg.stop();
    },
  };
}

/**
 * Starts the stack; the database is migrated (a fresh one on DATABASE_URL's server when set, else on an embedded one).
 * @param label names the database and temp directory, e.g. `sms`
 * @param opts.poolMax Knex pool size (default 60)
 * @param opts.devServer a dev server already started elsewhere (its `host:port` and how to stop it; bench/children.ts
 *   runs one in a child process); default: an in-memory one in this process
 */
export async function startBenchStack(label: string, opts: { poolMax?: number; devServer?: () => Promise<{ address: string; stop(): Promise<void> }> } = {}): Promise<BenchStack> {
  const database = await openBenchDatabase(label, { poolMax: opts.poolMax ?? 60, serverUrl: process.env.DATABASE_URL });
  installBenchRuntime();
  let server: { address: string; stop(): Promise<void> };
  try {
    server = opts.devServer ? await opts.devServer() : await startDevServer({ log: () => undefined });
  } catch (err) {
    await database.close();
    throw err;
  }
  const connection = await Connection.connect({ address: server.address });
  const native = await NativeConnection.connect({ address: server.address });
  return {
    address: server.address,
    db: database.db,
    databaseUrl: database.databaseUrl,
    client: new Client({ connection }),
    native,
    postmasterPid: database.postmasterPid,
    close: async () => {
      await connection.close();
      await native.close();
      await server.stop();
      await database.close();
    },
  };
}

/** The API of a workflow benchmark, its configuration, logger and task queue. */
export interface BenchApi {
  api: RunningApi;
  config: AppConfig;
  logger: Logger;
  taskQueue: string;
}

/**
 * Starts the API on the stack (any free loopback port, silent logs, a rate limit no run reaches unless
 * `opts.serviceRateLimit`: then the service's own default, config.ts RATE_LIMIT_POINTS per
 * RATE_LIMIT_WINDOW_SECONDS, as production holds a tenant) with a fresh task queue `bench-<label>-<8 hex>`;
 * the caller closes `api`.
 */
export async function startBenchApi(stack: BenchStack, label: string, opts: { serviceRateLimit?: boolean } = {}): Promise<BenchApi> {
  const config = loadConfig({ port: 0, host: '127.0.0.1', logLevel: 'silent', ...(opts.serviceRateLimit ? {} : { rateLimitPoints: 1_000_000_000 }) });
  const logger = createLogger('silent');
  const taskQueue = `bench-${label}-${crypto.randomBytes(4).toString('hex')}`;
  const api = await startApi({ db: stack.db, databaseUrl: stack.databaseUrl, config, logger, temporal: { client: stack.client, taskQueue } });
  return { api, config, logger, taskQueue };
}

/** Milliseconds at percentile `p` (0–100) of `xs` (nearest rank; `xs` need not be sorted). */
export function percentile(xs: readonly number[], p: number): number {
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

/** Runs `fn` over `items` (with its index) with at most `concurrency` calls in flight; rejects with the first failure. */
export async function pool<T>(items: T[], concurrency: number, fn: (item: T, i: number) => Promise<unknown>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(concurrency, items.length) }, async () => {
      while (next < items.length) {
        const i = next++;
        await fn(items[i], i);
      }
    }),
  );
}

/** One organization served over HTTP for a read benchmark ({@link openBenchOrganization}). */
export interface BenchOrganization {
  db: Db;
  orgId: string;
  /** A secret key of every non-reserved scope, with a rate limit no run reaches. */
  key: string;
  baseUrl: string;
  /** GETs `p` with the key, reads the whole body, and answers the milliseconds it took. @throws Error unless 200 */
  timedGet: (p: string) => Promise<number>;
  /** Stops the API, then the database. */
  close: () => Promise<void>;
}

/**
 * A fresh bench database (`openBenchDatabase`) with one organization `name` and its key, served by the API
 * (no Temporal, silent logs): what an HTTP read benchmark over generated rows needs. The caller calls `close`.
 */
export async function openBenchOrganization(label: string, name: string, opts: { poolMax?: number } = {}): Promise<BenchOrganization> {
  const { db, databaseUrl, close: closeDatabase } = await openBenchDatabase(label, opts);
  const config = loadConfig({ port: 0, host: '127.0.0.1', logLevel: 'silent', rateLimitPoints: 10_000_000 });
  const api = await startApi({ db, databaseUrl, config, logger: createLogger('silent') });
  const close = async () => {
    await api.close();
    await closeDatabase();
  };
  try {
    const org = await createOrganization(db, name);
    const { key } = await createSecretKey(db, org.id, { brand: config.keyBrandPrefix, scopes: NON_RESERVED_SCOPES, rateLimitPoints: 10_000_000 });
    const timedGet = async (p: string) => {
      const s = performance.now();
      const res = await fetch(`${api.baseUrl}${p}`, { headers: { authorization: `Bearer ${key}` } });
      if (res.status !== 200) throw new Error(`${p} → ${res.status} ${await res.text()}`);
      await res.arrayBuffer();
      return performance.now() - s;
    };
    return { db, orgId: org.id, key, baseUrl: api.baseUrl, timedGet, close };
  } catch (err) {
    await close();
    throw err;
  }
}

/** The workflow bundle of workflows/index.ts, built once per benchmark with webpack's output silenced. */
export function bundleBenchWorkflows(): ReturnType<typeof bundleWorkflowCode> {
  return bundleWorkflowCode({
    workflowsPath: path.join(__dirname, '..', 'workflows', 'index.ts'),
    logger: { trace() {}, debug() {}, info() {}, warn() {}, error() {}, log() {} } as never,
  });
}

/** A JSON call to the API as `key`: status, headers and the parsed body (undefined when empty). */
export type BenchCall = (method: string, p: string, json?: unknown, headers?: Record<string, string>) => Promise<{ status: number; headers: Headers; body: any }>;

/**
 * Calls the API at `baseUrl` (e.g. `http://127.0.0.1:8080/api/v1`) with `Authorization: Bearer <key>`;
 * a JSON body is sent with its content type. Never throws on a status; network errors reject.
 */
export function benchCaller(baseUrl: string, key: string): BenchCall {
  return async (method, p, json, headers = {}) => {
    const res = await fetch(`${baseUrl}${p}`, {
      method,
      headers: { authorization: `Bearer ${key}`, ...(json !== undefined ? { 'content-type': 'application/json' } : {}), ...headers },
      body: json !== undefined ? JSON.stringify(json) : undefined,
    });
    const text = await res.text();
    return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : undefined };
  };
}

/**
 * A process' command name and CPU time (ms) used so far, from /proc (Linux); undefined elsewhere.
 * `reapedMs` is the CPU of its children that exited and were waited for (cutime + cstime).
 */
export function processCpu(pid: number | string): { comm: string; ms: number; systemMs: number; reapedMs: number } | undefined {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    // utime, stime, cutime and cstime are fields 14 to 17 of proc(5) stat, in USER_HZ ticks (10 ms on Linux).
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return { comm: stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')')), ms: (Number(f[11]) + Number(f[12])) * 10, systemMs: Number(f[12]) * 10, reapedMs: (Number(f[13]) + Number(f[14])) * 10 };
  } catch {
    return undefined;
  }
}

/**
 * CPU time (ms) of a process's main thread so far (Linux `/proc/<pid>/task/<pid>/stat`, utime + stime): the process's
 * {@link processCpu} minus this is what its other threads spent — V8's background threads (the optimizing compiler,
 * concurrent and parallel GC) and libuv's pool. 0 where /proc is missing or the process is gone.
 */
export function mainThreadCpuMs(pid: number): number {
  // A thread's stat has the process's format (proc(5)), so processCpu reads it from the thread's directory.
  return processCpu(`${pid}/task/${pid}`)?.ms ?? 0;
}

/**
 * This process's main thread's time so far runnable but waiting for a core, ms (Linux
 * `/proc/<pid>/task/<pid>/schedstat`, second field: "time spent waiting on a runqueue"); 0 where /proc has no schedstat.
 */
export function mainThreadRunqueueWaitMs(): number {
  try {
    return Number(fs.readFileSync(`/proc/${process.pid}/task/${process.pid}/schedstat`, 'utf8').split(' ')[1]) / 1e6;
  } catch {
    return 0;
  }
}

/**
 * CPU time (ms) used so far by the given processes and by `postgres` processes: those of the cluster whose
 * postmaster is `opts.postmasterPid` (the bench's own embedded cluster, {@link BenchDatabase}), else every
 * `postgres` process of the machine. Differences of two snapshots tell where a load run's CPU went.
 * Returns an empty snapshot where /proc is missing.
 */
export function cpuSnapshot(pids: Record<string, number>, opts: { postmasterPid?: number } = {}): Record<string, number> {
  const out: Record<string, number> = {};
  if (!fs.existsSync('/proc/self/stat')) return out;
  for (const [name, pid] of Object.entries(pids)) out[name] = processCpu(pid)?.ms ?? 0;
  out.postgres = 0;
  const candidates = opts.postmasterPid ? processTree(opts.postmasterPid).map(String) : fs.readdirSync('/proc');
  for (const pid of candidates) {
    if (!/^\d+$/.test(pid)) continue;
    const t = processCpu(pid);
    // Backends and autovacuum workers come and go: the postmaster's reaped-children time keeps the CPU
    // of those that exited during the run, so the sum only grows.
    if (t?.comm === 'postgres') out.postgres += t.ms + t.reapedMs;
  }
  return out;
}

/** `pid` and every process descended from it (children, grandchildren …), from /proc; `[pid]` elsewhere. */
export function processTree(pid: number): number[] {
  if (!fs.existsSync('/proc/self/stat')) return [pid];
  const parent = new Map<number, number>();
  for (const p of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(p)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${p}/stat`, 'utf8');
      // ppid is field 4 of proc(5) stat, the second after the command name.
      parent.set(Number(p), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]));
    } catch {
      // gone meanwhile
    }
  }
  const out = [pid];
  for (let i = 0; i < out.length; i++) for (const [child, ppid] of parent) if (ppid === out[i]) out.push(child);
  return out;
}

/**
 * Starts the V8 CPU profiler in this process (100 µs sampling) when `dir` is given (BENCH_PROFILE_DIR), so a
 * section can profile exactly its measured window. @returns a function that stops it and writes
 * `<dir>/<label>-<pid>-<time>.cpuprofile` (a no-op without `dir`)
 */
export function profileWindow(dir: string | undefined, label: string): () => Promise<void> {
  if (!dir) return async () => undefined;
  const session = new inspector.Session();
  session.connect();
  session.post('Profiler.enable', () => session.post('Profiler.setSamplingInterval', { interval: 100 }, () => session.post('Profiler.start')));
  return () =>
    new Promise<void>((resolve, reject) =>
      session.post('Profiler.stop', (err, res) => {
        session.disconnect();
        if (err) return reject(err);
        fs.mkdirSync(dir, { recursive: true });
        fs.writeFileSync(path.join(dir, `${label}-${process.pid}-${Date.now()}.cpuprofile`), JSON.stringify(res.profile));
        resolve();
      }),
    );
}

/** One allocation site of a heap sampling profile (V8's `HeapProfiler`): bytes sampled there that survived the young generation. */
export interface HeapSite {
  /** `function (file:line)`, the file relative to the project. */
  site: string;
  /** Bytes sampled at the site that a scavenge did not free (promoted to the old generation). */
  bytes: number;
}

/**
 * With `on`, samples this process's allocations (V8's sampling heap profiler, one sample per 64 KiB on average) from
 * now until the returned function is called, which resolves with the sites whose sampled objects survived the young
 * generation's scavenges, most bytes first: what a load promotes into the old generation, to be freed only by a
 * mark-compact (objects a scavenge freed are dropped from the samples; those a mark-compact freed are kept). Without
 * `on`, resolves with an empty list. Chrome DevTools protocol "HeapProfiler.startSampling".
 */
export function heapWindow(on: boolean): () => Promise<{ totalBytes: number; sites: HeapSite[] }> {
  if (!on) return async () => ({ totalBytes: 0, sites: [] });
  const session = new inspector.Session();
  session.connect();
  // Objects a mark-compact freed stay in the samples, those a scavenge freed do not: what remains is what got promoted.
  session.post('HeapProfiler.startSampling', { samplingInterval: 65536, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: false } as inspector.HeapProfiler.StartSamplingParameterType);
  return () =>
    new Promise((resolve, reject) =>
      session.post('HeapProfiler.getSamplingProfile', (err, res) => {
        session.post('HeapProfiler.stopSampling', () => session.disconnect());
        if (err) return reject(err);
        const bySite = new Map<string, number>();
        let totalBytes = 0;
        const root = process.cwd() + '/';
        const walk = (node: inspector.HeapProfiler.SamplingHeapProfileNode) => {
          const f = node.callFrame;
          const site = `${f.functionName || '(anonymous)'} (${f.url.replace(/^file:\/\//, '').replace(root, '') || 'native'}:${f.lineNumber + 1})`;
          if (node.selfSize) bySite.set(site, (bySite.get(site) ?? 0) + node.selfSize);
          totalBytes += node.selfSize;
          for (const c of node.children) walk(c);
        };
        walk(res.profile.head);
        resolve({ totalBytes, sites: [...bySite].map(([site, bytes]) => ({ site, bytes })).sort((a, b) => b.bytes - a.bytes) });
      }),
    );
}

/**
 * A JSON caller of the API with a secret key, for a section's setup: `call(method, path, json?)` resolves with
 * the envelope's `data`. @throws naming the request, status and body when the status is 300 or more
 */
export function apiCaller(baseUrl: string, key: string): (method: string, p: string, json?: unknown) => Promise<any> {
  return async (method, p, json) => {
    const res = await fetch(`${baseUrl}${p}`, { method, headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: json === undefined ? undefined : JSON.stringify(json) });
    const body = (await res.json()) as any;
    if (res.status >= 300) throw new Error(`${method} ${p} → ${res.status} ${JSON.stringify(body)}`);
    return body.data;
  };
}

/** Publishes an agent's draft as the publish workflow's activity does (a section's setup). @throws when it is not published */
export async function publishForBench(db: Db, orgId: string, agentId: string, publishedBy: string): Promise<void> {
  const pub = await createAgentActivities({ db }).compileAndPublishAgent({ orgId, agentId, idempotencyKey: 'bench', requestHash: publishRequestHash({ note: null }), note: null, publishedBy });
  if (pub.kind !== 'published') throw new Error(`publish failed: ${JSON.stringify(pub)}`);
}

/**
 * With BENCH_COUNT_QUERIES set, counts the statements every pg `Client` of this process sends (so every pool is seen:
 * the service's, the rate limits', the change feed's, a group commit's), keyed by their first 70 characters with white
 * space folded; otherwise counts nothing.
 * @returns the counts, and `stop()`, which puts pg's `Client.prototype.query` back
 */
export function countStatements(): { counted: Map<string, number>; stop(): void } {
  const counted = new Map<string, number>();
  if (!process.env.BENCH_COUNT_QUERIES) return { counted, stop: () => undefined };
  const stop = tapStatements(({ text }) => {
    const k = (text || '?').replace(/\s+/g, ' ').slice(0, 70);
    counted.set(k, (counted.get(k) ?? 0) + 1);
  });
  return { counted, stop };
}
