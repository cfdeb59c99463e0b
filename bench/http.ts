/**
 * HTTP benchmark (docs/benchmarks.md): `GET /sms` and `PUT /sms` under 100 connections against 1, 2, 4 and
 * 8 API processes (node:cluster, as `npm run start:api` runs them; docs/operations.md "Scaling out") on one Postgres,
 * and a bare Koa route measured in the same run. The load comes from separate load generator processes
 * (bench/loadgen.ts); each connection uses its own organization's key. It prints req/s, p50/p99 (the
 * highest of the generators'), the scaling factor per doubling of processes, and on Linux the CPU µs each
 * request costs in every party: the API processes, Postgres and the load generators (from /proc), with the
 * API's ratio to the bare Koa route. Targets: API CPU per request ≤ 2× bare (GET) and ≤ 4× bare (PUT),
 * p99 < 25 ms; throughput × ≥ 1.7 per doubling of processes up to 8 on a machine with the cores for it.
 *
 * BENCH_SECONDS: each run's duration (default 10). BENCH_CASES: `get`, `put` or both (default `get,put`).
 * BENCH_NODE_FLAGS: Node/V8 flags for the API processes only (e.g. `--max-semi-space-size=64`), to try a
 * runtime setting against the default in alternating runs. BENCH_CONNECTIONS: connections in all (default
 * 100). BENCH_PROCESSES: the process counts (default 1,2,4,8). BENCH_BARE_BODY_BYTES: the bare route's answer padded
 * to about that many bytes (default unpadded, 39; bench/servers.ts), to tell what the response's size costs.
 * BENCH_LOADGENS: load generator processes (default ⌈cores / 4⌉). BENCH_PROFILE=1: one API process, the V8
 * CPU profiler on during each measured run (bench/servers.ts), then the top self-time functions and
 * packages of each case. BENCH_DIAGNOSE=notify: each PUT run again with the change feed's trigger on
 * `sms_registrations` disabled (no NOTIFY per write; a diagnostic only, other processes' caches go stale),
 * which tells what the change feed's fan-out to every API process costs. BENCH_DURABLE=1: Postgres with
 * fsync and synchronous_commit on, as `npm start` and production run it (default off, as the suite). The
 * bare Koa route is measured again (BENCH_SECONDS / 2) right before each API case, and each ratio is to
 * that neighbour: the shared machine's speed drifts between runs. The API processes write their
 * request log as in production (one pino line per request, to /dev/null; bench/servers.ts);
 * BENCH_LOG_LEVEL=silent measures without it. It profiles the compiled JavaScript under BENCH_DIST (default: `npm run build`'s
 * dist/, built first when missing) so each frame names its line. BENCH_TRACING=1: with one API process, each case
 * again on an API process tracing every request (OpenTelemetry SDK, OTLP http/protobuf to a loopback sink in this
 * process that discards the spans; docs/operations.md "Observability") once per sampler of BENCH_TRACE_SAMPLERS (default
 * `always_on,parentbased_traceidratio:0.01`), and the API CPU per request traced ÷ untraced and each ÷ bare; with
 * BENCH_PROFILE=1 the traced servers are profiled as well.
 *
 * Saturated and fixed-rate: the cases above are closed loops (each connection sends again when answered), which
 * keep the bare route's process saturated (each wake-up serves many requests) but not the API's (it wakes for
 * nearly every request), so their ratio also measures how each is woken. With one API process each case is then
 * measured again as an open loop at one fixed offered rate for both (bench/loadgen.ts `rate`): BENCH_RATE req/s,
 * else BENCH_RATE_FRACTION (default 0.75) of the API's saturated req/s of that case in the same run, so both
 * servers see the same arrivals; the table prints both ratios, and the targets are read on the fixed-rate one.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { createDb, ensureDatabase, migrate } from '../db';
import { startEmbeddedPostgres } from '../db/embedded';
import { createOrganization } from '../db/repositories/organizations';
import { createSecretKey } from '../db/repositories/apiKeys';
import { NON_RESERVED_SCOPES } from '../domain/scopes';
import { coreCount } from '../runtime';
import { cpuSnapshot, processCpu, processTree } from './harness';
import { startLoadChild } from './children';
import type { LoadJob, LoadResult } from './loadgen';
import { runBench } from './entry';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 100);
const CORES = coreCount();
const PROFILE = process.env.BENCH_PROFILE === '1';
const STEPS = (process.env.BENCH_PROCESSES ?? (PROFILE ? '1' : '1,2,4,8')).split(',').map(Number);
const LOADGENS = Number(process.env.BENCH_LOADGENS ?? Math.max(1, Math.ceil(CORES / 4)));
const DIAGNOSE_NOTIFY = (process.env.BENCH_DIAGNOSE ?? '').split(',').includes('notify');
const DURABLE = process.env.BENCH_DURABLE === '1';
/** Alternating slices of each API case and of the bare route (the ratio's baseline): the machine's speed drifts. */
const SLICES = Math.max(1, Number(process.env.BENCH_SLICES ?? 4));
/** Which cases run (BENCH_CASES, default `get,put`): one alone halves a run that studies it. */
const CASES = (process.env.BENCH_CASES ?? 'get,put').toLowerCase().split(',');
/** BENCH_TRACING=1: the one-process cases again with tracing on. */
const TRACING = process.env.BENCH_TRACING === '1';
/**
 * The samplers of the traced cases (BENCH_TRACE_SAMPLERS, `OTEL_TRACES_SAMPLER[:OTEL_TRACES_SAMPLER_ARG]` each;
 * default every request, then 1 % of new traces as docs/operations.md advises).
 */
const TRACE_SAMPLERS = (process.env.BENCH_TRACE_SAMPLERS ?? 'always_on,parentbased_traceidratio:0.01').split(',').map((s) => {
  const [sampler, arg] = s.trim().split(':');
  const label = sampler === 'always_on' ? 'all' : arg ? `${Number(arg) * 100} %` : sampler;
  return { label, env: { OTEL_TRACES_SAMPLER: sampler, ...(arg ? { OTEL_TRACES_SAMPLER_ARG: arg } : {}) } };
});
/** The fixed offered rate of the open-loop cases (req/s, all generators together); 0: a fraction of the saturated rate. */
const RATE = Number(process.env.BENCH_RATE ?? 0);
/** With no BENCH_RATE, the open loop offers this fraction of the API's saturated req/s in the same run. */
const RATE_FRACTION = Number(process.env.BENCH_RATE_FRACTION ?? 0.75);
const PUT_BODY = JSON.stringify({ displayName: 'Bench Brand', city: 'Austin', useCase: 'MIXED', quietHoursRepliesExempt: true });

interface Server {
  child: ChildProcess;
  port: number;
  /** With a profile directory: starts the profiler, or stops it and resolves once the profile is written. */
  toggleProfile(): Promise<void>;
  stop(): Promise<void>;
}

function startServer(args: string[], profileDir?: string, extraEnv: Record<string, string> = {}): Promise<Server> {
  const dist = process.env.BENCH_DIST ?? path.join(__dirname, '..', 'dist');
  const entry = profileDir ? [path.join(dist, 'bench', 'servers.js')] : ['--import', 'tsx', path.join(__dirname, 'servers.ts')];
  return new Promise((resolve, reject) => {
    const env = { ...process.env, ...extraEnv, ...(profileDir ? { BENCH_PROFILE_DIR: profileDir } : {}) };
    const flags = args[0] === 'api' ? (process.env.BENCH_NODE_FLAGS ?? '').split(' ').filter(Boolean) : [];
    const child = spawn(process.execPath, [...flags, ...entry, ...args], { stdio: ['ignore', 'pipe', 'inherit'], env });
    const exited = new Promise<void>((r) => child.once('exit', () => r()));
    let profiled: () => void = () => undefined;
    let profiling = false;
    child.stdout!.on('data', (buf: Buffer) => {
      const text = buf.toString();
      if (text.includes('PROFILED')) profiled();
      const m = /PORT (\d+)/.exec(text);
      if (m) {
        resolve({
          child,
          port: Number(m[1]),
          toggleProfile: async () => {
            if (!profileDir) return;
            profiling = !profiling;
            const done = profiling ? Promise.resolve() : new Promise<void>((r) => (profiled = r));
            child.kill('SIGUSR2');
            await done;
          },
          stop: async () => (child.kill('SIGTERM'), await exited),
        });
      }
    });
    child.once('exit', (code) => reject(new Error(`server exited with ${code}`)));
  });
}

/** CPU µs per request of each party. */
interface Cpu {
  api: number;
  /** The part of `api` spent in the kernel (system time: sockets, the log's writes). */
  apiSystem: number;
  postgres: number;
  loadGen: number;
}

interface Figures {
  name: string;
  /** Requests answered in all (sums slices). */
  requests: number;
  /** The bare Koa route's API CPU µs per request measured right before this case (the ratio's baseline). */
  bareApi?: number;
  /** Postgres transactions committed per request (pg_stat_database.xact_commit): shows how much the group commit batches. */
  commits?: number;
  processes: number;
  rps: number;
  p50: number;
  p99: number;
  /** The highest p99 of the slices. */
  p99max?: number;
  errors: number;
  non2xx: number;
  cpu?: Cpu;
  /** Open loop: the offered rate (req/s, all generators); `rps` is then the rate achieved. */
  offered?: number;
}

/** Spawns a load generator (bench/loadgen.ts): see bench/children.ts `startLoadChild`. */
export function startLoadGen(job: LoadJob): Promise<{ child: ChildProcess; go(): Promise<LoadResult> }> {
  return startLoadChild<LoadJob, LoadResult>('loadgen.ts', job);
}

/**
 * The postmaster of this bench's own embedded Postgres, so the Postgres column counts its cluster only (the
 * other Postgres servers of a shared machine not).
 */
let postmasterPid: number | undefined;

/** One measured run: LOADGENS generators share the connections and the keys. */
async function load(
  name: string,
  processes: number,
  server: Pick<Server, 'child' | 'toggleProfile'>,
  job: Omit<LoadJob, 'connections' | 'keys'>,
  keys: string[],
  stats?: pg.Client,
): Promise<Figures> {
  // An open loop's rate is shared by the generators like the connections.
  const rate = job.rate ? job.rate / LOADGENS : undefined;
  // pg_stat_database is updated when a backend reports (at most every second or so): wait it out.
  const commits = async () => (stats ? (await new Promise((r) => setTimeout(r, 1200)), Number((await stats.query('SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()')).rows[0].xact_commit)) : 0);
  const gens = await Promise.all(
    Array.from({ length: LOADGENS }, (_, g) => {
      const connections = Math.floor(CONNECTIONS / LOADGENS) + (g < CONNECTIONS % LOADGENS ? 1 : 0);
      const mine = keys.length ? keys.filter((_, i) => i % LOADGENS === g) : [];
      return startLoadGen({ ...job, connections, keys: mine, rate });
    }),
  );
  const tree = processTree(server.child.pid!);
  /** The API process tree's CPU and system time so far (ms), one /proc read per process. */
  const apiCpu = () =>
    tree.reduce(
      (sum, pid) => {
        const c = processCpu(pid);
        return { ms: sum.ms + (c?.ms ?? 0), systemMs: sum.systemMs + (c?.systemMs ?? 0) };
      },
      { ms: 0, systemMs: 0 },
    );
  const commitsBefore = await commits();
  await server.toggleProfile();
  const apiBefore = apiCpu();
  const before = cpuSnapshot({}, { postmasterPid });
  const results = await Promise.all(gens.map((g) => g.go()));
  const apiAfter = apiCpu();
  const after = cpuSnapshot({}, { postmasterPid });
  await server.toggleProfile();
  const requests = results.reduce((s, r) => s + r.requests, 0);
  // The stats query itself commits once (the wait's own commit is excluded by subtracting 1).
  const committed = stats ? (await commits()) - commitsBefore - 1 : undefined;
  const per = (ms: number) => Math.max(0, (ms * 1000) / Math.max(1, requests));
  const cpu = 'postgres' in after ? { api: per(apiAfter.ms - apiBefore.ms), apiSystem: per(apiAfter.systemMs - apiBefore.systemMs), postgres: per(after.postgres - before.postgres), loadGen: per(results.reduce((s, r) => s + r.cpuMs, 0)) } : undefined;
  return {
    name,
    requests,
    processes,
    commits: committed === undefined ? undefined : committed / Math.max(1, requests),
    rps: results.reduce((s, r) => s + r.rps, 0),
    p50: Math.max(...results.map((r) => r.p50)),
    p99: Math.max(...results.map((r) => r.p99)),
    errors: results.reduce((s, r) => s + r.errors, 0),
    non2xx: results.reduce((s, r) => s + r.non2xx, 0),
    cpu,
    offered: job.rate,
  };
}

/**
 * Slices of one case as one figure: rates and CPU per request weighted by requests, p50 and p99 the
 * medians of the slices' (latencies are not additive), `p99max` the highest slice's p99.
 */
function merge(slices: Figures[]): Figures {
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  const requests = slices.reduce((s, r) => s + r.requests, 0);
  const weighted = (f: (r: Figures) => number) => slices.reduce((s, r) => s + f(r) * r.requests, 0) / Math.max(1, requests);
  const withCpu = slices.every((r) => r.cpu);
  return {
    name: slices[0].name,
    processes: slices[0].processes,
    requests,
    commits: slices.every((r) => r.commits !== undefined) ? weighted((r) => r.commits!) : undefined,
    rps: slices.reduce((s, r) => s + r.rps, 0) / slices.length,
    p50: median(slices.map((r) => r.p50)),
    p99: median(slices.map((r) => r.p99)),
    p99max: Math.max(...slices.map((r) => r.p99max ?? r.p99)),
    errors: slices.reduce((s, r) => s + r.errors, 0),
    non2xx: slices.reduce((s, r) => s + r.non2xx, 0),
    cpu: withCpu ? { api: weighted((r) => r.cpu!.api), apiSystem: weighted((r) => r.cpu!.apiSystem), postgres: weighted((r) => r.cpu!.postgres), loadGen: weighted((r) => r.cpu!.loadGen) } : undefined,
    offered: slices[0].offered,
  };
}

/**
 * The top self-time functions and packages of every `.cpuprofile` in `dir` (Chrome DevTools format); with `window`, of
 * only the samples taken from `fromUs` to `toUs`, µs of the monotonic clock the profile's timestamps use (V8's, which
 * is `process.hrtime`'s): e.g. a load's first seconds apart from the rest.
 */
export function printProfile(label: string, dir: string, window: { fromUs?: number; toUs?: number } = {}): void {
  type Node = { id: number; callFrame: { functionName: string; url: string; lineNumber: number }; children?: number[] };
  const fromUs = window.fromUs ?? -Infinity;
  const toUs = window.toUs ?? Infinity;
  const files = fs.readdirSync(dir).filter((f) => f.endsWith('.cpuprofile'));
  const byFn = new Map<string, number>();
  const byPkg = new Map<string, number>();
  let total = 0;
  for (const f of files) {
    const prof = JSON.parse(fs.readFileSync(path.join(dir, f), 'utf8')) as { nodes: Node[]; samples: number[]; timeDeltas: number[]; startTime: number };
    const nodes = new Map(prof.nodes.map((n) => [n.id, n]));
    let at = prof.startTime;
    prof.samples.forEach((id, i) => {
      const n = nodes.get(id)!;
      const us = prof.timeDeltas[i] ?? 0;
      at += us;
      // The first sample's delta runs from the profile's start time and holds the profiler's own start (node:inspector's
      // `dispatch`, a quarter-second on a slow machine, a tenth of a 3 s profile), not the load.
      if (i === 0 || at < fromUs || at >= toUs) return;
      const { functionName, url, lineNumber } = n.callFrame;
      if (functionName === '(idle)' || functionName === '(program)') return;
      total += us;
      const file = url.replace(/^file:\/\//, '').replace(path.resolve(process.env.BENCH_DIST ?? path.join(__dirname, '..', 'dist')), path.join(__dirname, '..'));
      const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(file)?.[1] ?? (file.startsWith('node:') || !file ? file || functionName : path.relative(path.join(__dirname, '..'), file).split('/')[0]);
      const where = /node_modules\/(.*)/.exec(file)?.[1] ?? path.relative(path.join(__dirname, '..'), file);
      const key = `${functionName || '(anonymous)'} ${where}:${lineNumber + 1}`;
      byFn.set(key, (byFn.get(key) ?? 0) + us);
      byPkg.set(pkg, (byPkg.get(pkg) ?? 0) + us);
    });
  }
  const top = (m: Map<string, number>, n: number) => [...m].sort((a, b) => b[1] - a[1]).slice(0, n);
  console.log(`\nprofile of ${label} (${(total / 1000).toFixed(0)} ms busy; ${dir}): top self time`);
  for (const [k, us] of top(byFn, 25)) console.log(`  ${((100 * us) / total).toFixed(1).padStart(5)}%  ${k}`);
  console.log('  by package or folder:');
  for (const [k, us] of top(byPkg, 15)) console.log(`  ${((100 * us) / total).toFixed(1).padStart(5)}%  ${k}`);
}

/** A loopback OTLP/HTTP receiver that accepts and discards `POST /v1/traces` (the traced cases' collector). */
async function otlpSink(): Promise<{ url: string; requests(): number; bytes(): number; close(): Promise<void> }> {
  let requests = 0;
  let bytes = 0;
  const server = http.createServer((req, res) => {
    req.on('data', (c: Buffer) => (bytes += c.length));
    req.on('end', () => {
      requests++;
      res.writeHead(200, { 'content-type': req.headers['content-type'] ?? 'application/x-protobuf' }).end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests: () => requests,
    bytes: () => bytes,
    close: () => new Promise<void>((r) => (server.closeAllConnections(), server.close(() => r()))),
  };
}

/** Runs the HTTP section and prints its table. */
export async function runHttpBench(): Promise<void> {
  if (PROFILE && !process.env.BENCH_DIST && !fs.existsSync(path.join(__dirname, '..', 'dist', 'bench', 'servers.js'))) {
    console.log('building dist/ for the profile (npm run build)…');
    execFileSync(process.execPath, [require.resolve('typescript/bin/tsc'), '-p', path.join(__dirname, '..', 'tsconfig.json')], { stdio: 'inherit' });
  }
  const pgDataDir = path.join(os.tmpdir(), `acp-bench-pg-${process.pid}`);
  const pgServer = await startEmbeddedPostgres({ dataDir: pgDataDir, ephemeral: true, durable: DURABLE });
  postmasterPid = Number(fs.readFileSync(path.join(pgDataDir, 'postmaster.pid'), 'utf8').split('\n')[0]) || undefined;
  const servers: Server[] = [];
  const closers: (() => Promise<void>)[] = [];
  try {
    const url = new URL(pgServer.url);
    url.pathname = '/bench';
    const databaseUrl = url.toString();
    await ensureDatabase(databaseUrl);
    const db = createDb(databaseUrl);
    await migrate(db);
    // One organization and key per connection, as production traffic comes from many tenants.
    const keys: string[] = [];
    for (let i = 0; i < CONNECTIONS; i++) {
      const org = await createOrganization(db, `Bench ${i}`);
      keys.push((await createSecretKey(db, org.id, { brand: 'acp', scopes: NON_RESERVED_SCOPES })).key);
    }
    await db.destroy();
    const stats = new pg.Client({ connectionString: databaseUrl });
    await stats.connect();
    closers.push(() => stats.end());

    const results: Figures[] = [];
    // The bare route stays up (idle while an API case runs) and is measured again right before every API
    // case: the machine's speed drifts between runs (a shared VM), so each ratio compares neighbours.
    const bare = await startServer(['bare']);
    servers.push(bare);
    const bareJob = { url: `http://127.0.0.1:${bare.port}/` };
    await load('warm-up', 1, bare, { ...bareJob, seconds: 1 }, []);
    results.push(await load('bare Koa route', 1, bare, { ...bareJob, seconds: SECONDS }, []));
    const sliceSeconds = Math.max(1, Math.round(SECONDS / SLICES));
    /**
     * One API case as SLICES alternating slices with the bare route, each ratio over the sums: both sides
     * see the same drift of the machine's speed (a shared VM moves by a third within a minute).
     */
    const measure = async (name: string, processes: number, api: Server, job: Omit<LoadJob, 'connections' | 'keys' | 'seconds'>): Promise<Figures> => {
      const bares: Figures[] = [];
      const runs: Figures[] = [];
      for (let i = 0; i < SLICES; i++) {
        // At a fixed rate the bare route is offered the same rate as the API.
        bares.push(await load('bare Koa route', 1, bare, { ...bareJob, seconds: sliceSeconds, rate: job.rate }, []));
        runs.push(await load(name, processes, api, { ...job, seconds: sliceSeconds }, keys, stats));
      }
      const bareFig = merge(bares);
      return { ...merge(runs), bareApi: bareFig.cpu?.api };
    };

    let registered = false;
    for (const processes of STEPS) {
      const cases = [
        { name: 'GET /sms', job: { method: 'GET' as const } },
        { name: 'PUT /sms', job: { method: 'PUT' as const, body: PUT_BODY } },
      ].filter((c) => CASES.includes(c.job.method.toLowerCase()));
      // Profiling: one server per case, so each profile holds one kind of request.
      const groups = PROFILE ? cases.map((c) => [c]) : [cases];
      for (const group of groups) {
        const profileDir = PROFILE ? fs.mkdtempSync(path.join(os.tmpdir(), `acp-prof-${group[0].job.method}-`)) : undefined;
        const api = await startServer(['api', databaseUrl, String(processes)], profileDir);
        servers.push(api);
        const base = `http://127.0.0.1:${api.port}/api/v1`;
        if (!registered) {
          for (const key of keys) {
            await fetch(`${base}/sms`, { method: 'PUT', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: PUT_BODY });
          }
          registered = true;
          // A case answered with errors measures the error path: say so at once.
          const probe = await fetch(`${base}/sms`, { headers: { authorization: `Bearer ${keys[0]}` } });
          if (!probe.ok) console.log(`warning: GET /sms answers ${probe.status}: ${(await probe.text()).slice(0, 300)}`);
        }
        // Warm-up so JIT, pools and caches are hot in every process before measuring.
        for (const c of group) await load('warm-up', processes, { child: api.child, toggleProfile: async () => undefined }, { url: `${base}/sms`, seconds: 2, ...c.job }, keys);
        for (const c of group) {
          const saturated = await measure(c.name, processes, api, { url: `${base}/sms`, ...c.job });
          results.push(saturated);
          if (processes === 1) {
            // The same case as an open loop at one fixed rate, for the API and the bare route alike.
            const rate = RATE || Math.max(100, Math.round((saturated.rps * RATE_FRACTION) / 100) * 100);
            results.push(await measure(`${c.name} @${rate}/s`, processes, api, { url: `${base}/sms`, ...c.job, rate }));
          }
          if (DIAGNOSE_NOTIFY && c.job.method === 'PUT') {
            await stats.query('ALTER TABLE sms_registrations DISABLE TRIGGER sms_registrations_updates');
            results.push(await measure('PUT (no NOTIFY)', processes, api, { url: `${base}/sms`, ...c.job }));
            await stats.query('ALTER TABLE sms_registrations ENABLE TRIGGER sms_registrations_updates');
          }
        }
        await api.stop();
        if (profileDir) printProfile(`${group[0].name} (1 process)`, profileDir);
        if (TRACING && processes === 1) {
          // The same cases on a process that traces (each sampler in turn) to a loopback OTLP sink; with
          // BENCH_PROFILE=1 each traced server is profiled too.
          for (const sampler of TRACE_SAMPLERS) {
            const sink = await otlpSink();
            closers.push(sink.close);
            const tracedProfile = PROFILE ? fs.mkdtempSync(path.join(os.tmpdir(), `acp-prof-traced-${group[0].job.method}-`)) : undefined;
            const traced = await startServer(['api', databaseUrl, '1'], tracedProfile, { OTEL_EXPORTER_OTLP_ENDPOINT: sink.url, OTEL_SERVICE_NAME: 'bench-api', ...sampler.env });
            servers.push(traced);
            const tracedBase = `http://127.0.0.1:${traced.port}/api/v1`;
            for (const c of group) await load('warm-up', 1, { child: traced.child, toggleProfile: async () => undefined }, { url: `${tracedBase}/sms`, seconds: 2, ...c.job }, keys);
            for (const c of group) results.push(await measure(`${c.name} traced ${sampler.label}`, 1, traced, { url: `${tracedBase}/sms`, ...c.job }));
            await traced.stop();
            console.log(`OTLP sink (${sampler.label}) received ${sink.requests()} export requests, ${(sink.bytes() / 1e6).toFixed(1)} MB`);
            if (tracedProfile) printProfile(`${group[0].name} traced ${sampler.label} (1 process)`, tracedProfile);
          }
        }
      }
    }

    const bareFig = results[0];
    console.log(
      `\nHTTP (${CONNECTIONS} connections, ${SECONDS} s each, ${CORES} cores, Node ${process.version}, ${LOADGENS} load generator process${LOADGENS > 1 ? 'es' : ''}, Postgres ${DURABLE ? 'durable (fsync, synchronous_commit on)' : 'fsync off'})`,
    );
    console.log(`API/bare: each API case over the bare route measured in ${SLICES} slices alternating with it (the bare route's API µs in brackets)`);
    console.log(
      `"@N/s": an open loop offering N req/s to the API and to the bare route alike (BENCH_RATE, else ${RATE_FRACTION} of the API's saturated req/s), req/s the rate achieved; the other cases are closed loops (saturated). Targets are read at the fixed rate.`,
    );
    console.log('case                   procs    req/s  ×prev   p50 ms  p99 ms (max)  errors  non-2xx  commits/req   CPU µs/request: API (kernel)  postgres  load gen  API/bare');
    const prev = new Map<string, number>();
    const ratio = (r: Figures) => {
      const base = r.bareApi ?? bareFig.cpu?.api;
      return r.cpu && base ? `${(r.cpu.api / base).toFixed(2).padStart(8)}× (${base.toFixed(0)})` : '';
    };
    for (const r of results) {
      if (r.offered && r.rps < r.offered * 0.97) console.log(`warning: ${r.name} achieved ${r.rps.toFixed(0)} of ${r.offered} req/s offered: the rate is not sustained, lower BENCH_RATE`);
      const factor = prev.has(r.name) ? `×${(r.rps / prev.get(r.name)!).toFixed(2)}` : '';
      prev.set(r.name, r.rps);
      const cpu = r.cpu
        ? `${r.cpu.api.toFixed(0).padStart(23)} ${`(${r.cpu.apiSystem.toFixed(0)})`.padStart(8)} ${r.cpu.postgres.toFixed(0).padStart(9)} ${r.cpu.loadGen.toFixed(0).padStart(9)} ${ratio(r)}`
        : '';
      console.log(
        `${r.name.padEnd(22)} ${String(r.processes).padStart(5)} ${r.rps.toFixed(0).padStart(8)} ${factor.padStart(6)}  ${r.p50.toFixed(1).padStart(7)} ${r.p99.toFixed(1).padStart(7)} ${`(${(r.p99max ?? r.p99).toFixed(0)})`.padStart(5)}  ${String(r.errors).padStart(6)}  ${String(r.non2xx).padStart(7)}  ${(r.commits ?? 0).toFixed(3).padStart(11)}${cpu}`,
      );
    }
    // N cores give N × 1,000,000 CPU µs per second to every party together: the sum of the parties'
    // CPU per request bounds the throughput of this machine whatever the process count.
    console.log(`\nCPU ceiling on ${CORES} cores (1e6 µs/s per core ÷ CPU µs per request of all parties):`);
    for (const r of results.slice(1)) {
      if (!r.cpu) continue;
      const need = r.cpu.api + r.cpu.postgres + r.cpu.loadGen;
      console.log(`  ${r.name} × ${r.processes}: ${need.toFixed(0)} µs per request → at most ${((CORES * 1e6) / need).toFixed(0)} req/s (measured ${r.rps.toFixed(0)})`);
    }
    for (const r of results) {
      const off = results.find((o) => r.name.startsWith(`${o.name} traced `) && o.processes === 1);
      if (off?.cpu && r.cpu) {
        const bareOf = (f: Figures) => f.bareApi ?? bareFig.cpu?.api ?? NaN;
        console.log(
          `tracing on-cost, ${r.name}: API CPU ${r.cpu.api.toFixed(0)} vs ${off.cpu.api.toFixed(0)} µs/request = ${(r.cpu.api / off.cpu.api).toFixed(2)}× untraced; ` +
            `${(r.cpu.api / bareOf(r)).toFixed(2)}× vs ${(off.cpu.api / bareOf(off)).toFixed(2)}× bare (req/s ${r.rps.toFixed(0)} vs ${off.rps.toFixed(0)}, p99 ${r.p99.toFixed(1)} vs ${off.p99.toFixed(1)} ms)`,
        );
      }
    }
    console.log('targets: API CPU per request GET ≤ 2× and PUT ≤ 4× the bare Koa route at the same fixed rate, p99 < 25 ms; × ≥ 1.7 per doubling of processes up to 8 (needs cores for every party)');
  } finally {
    for (const s of servers) if (s.child.exitCode === null) await s.stop();
    for (const close of closers) await close().catch(() => undefined);
    await pgServer.stop();
  }
}

if (require.main === module) {
  runBench('bench http', runHttpBench);
}
