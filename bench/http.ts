/**
 * HTTP benchmark (README "Benchmarks"): requests/s and p50/p99 latency of `GET /sms` and `PUT /sms` under 100
 * concurrent connections (autocannon), against a bare Koa route measured in the same run, with the
 * ratio; each connection uses its own organization's key. On Linux it also prints the CPU each request
 * costs in the server process, in Postgres and in the load generator, and what the targets need in
 * cores. Targets on the 2-core machine: GET ≥ 40 % and PUT ≥ 20 % of bare Koa, p99 < 25 ms.
 * BENCH_SECONDS sets each run's duration (default 10).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import os from 'node:os';
import path from 'node:path';
import autocannon from 'autocannon';
import { createDb, ensureDatabase, migrate } from '../db';
import { startEmbeddedPostgres } from '../db/embedded';
import { createOrganization } from '../db/repositories/organizations';
import { createSecretKey } from '../db/repositories/apiKeys';
import { NON_RESERVED_SCOPES } from '../domain/scopes';
import { cpuSnapshot } from './harness';
import { runBench } from './entry';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const CONNECTIONS = 100;

function startServer(args: string[]): Promise<{ child: ChildProcess; port: number }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', path.join(__dirname, 'servers.ts'), ...args], { stdio: ['ignore', 'pipe', 'inherit'] });
    child.stdout!.on('data', (buf: Buffer) => {
      const m = /PORT (\d+)/.exec(buf.toString());
      if (m) resolve({ child, port: Number(m[1]) });
    });
    child.once('exit', (code) => reject(new Error(`server exited with ${code}`)));
  });
}

interface Figures {
  name: string;
  rps: number;
  p50: number;
  p99: number;
  errors: number;
  non2xx: number;
  /** CPU µs per request of the server process, of Postgres and of the load generator (Linux only). */
  cpu?: { server: number; postgres: number; loadGen: number };
}

async function load(name: string, server: ChildProcess, opts: autocannon.Options): Promise<Figures> {
  const pids = { server: server.pid!, loadGen: process.pid };
  const before = cpuSnapshot(pids);
  const r = await autocannon({ connections: CONNECTIONS, duration: SECONDS, ...opts });
  const after = cpuSnapshot(pids);
  const per = (k: string) => Math.max(0, ((after[k] - before[k]) * 1000) / Math.max(1, r.requests.total));
  const cpu = 'server' in after ? { server: per('server'), postgres: per('postgres'), loadGen: per('loadGen') } : undefined;
  return { name, rps: r.requests.average, p50: r.latency.p50, p99: r.latency.p99, errors: r.errors, non2xx: r.non2xx, cpu };
}

/** Runs the HTTP section and prints its table. */
export async function runHttpBench(): Promise<void> {
  const pg = await startEmbeddedPostgres({ dataDir: path.join(os.tmpdir(), `acp-bench-pg-${process.pid}`), ephemeral: true, durable: false });
  const children: ChildProcess[] = [];
  try {
    const url = new URL(pg.url);
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

    const bare = await startServer(['bare']);
    children.push(bare.child);
    const api = await startServer(['api', databaseUrl]);
    children.push(api.child);
    const base = `http://127.0.0.1:${api.port}/api/v1`;
    for (const key of keys) {
      await fetch(`${base}/sms`, { method: 'PUT', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify({ displayName: 'Bench Brand', useCase: 'MIXED' }) });
    }
    const headers = { 'content-type': 'application/json' };
    let next = 0;
    // Each autocannon connection gets its own organization's key.
    const setupClient = (client: { setHeaders(h: Record<string, string>): void }) => {
      client.setHeaders({ ...headers, authorization: `Bearer ${keys[next++ % keys.length]}` });
    };

    // Short warm-up so JIT and pools are hot before measuring.
    await autocannon({ url: `http://127.0.0.1:${bare.port}/`, connections: 10, duration: 1 });
    await autocannon({ url: `${base}/sms`, setupClient, connections: 10, duration: 1 } as autocannon.Options);

    const results: Figures[] = [];
    results.push(await load('bare Koa route', bare.child, { url: `http://127.0.0.1:${bare.port}/` }));
    results.push(await load('GET /sms', api.child, { url: `${base}/sms`, setupClient } as autocannon.Options));
    results.push(await load('PUT /sms', api.child, {
      url: `${base}/sms`,
      method: 'PUT',
      setupClient,
      body: JSON.stringify({ displayName: 'Bench Brand', city: 'Austin', useCase: 'MIXED', quietHoursRepliesExempt: true }),
    } as autocannon.Options));

    const bareRps = results[0].rps;
    console.log(`\nHTTP (${CONNECTIONS} connections, ${SECONDS} s each, ${os.cpus().length} cores, Node ${process.version})`);
    console.log('case              req/s     p50 ms  p99 ms  % of bare  errors  non-2xx   CPU µs/request: server  postgres  load gen');
    for (const r of results) {
      const cpu = r.cpu ? `${r.cpu.server.toFixed(0).padStart(30)} ${r.cpu.postgres.toFixed(0).padStart(9)} ${r.cpu.loadGen.toFixed(0).padStart(9)}` : '';
      console.log(
        `${r.name.padEnd(16)} ${r.rps.toFixed(0).padStart(7)}  ${r.p50.toFixed(1).padStart(7)} ${r.p99.toFixed(1).padStart(7)}  ${((100 * r.rps) / bareRps).toFixed(1).padStart(8)}%  ${String(r.errors).padStart(6)}  ${String(r.non2xx).padStart(7)}${cpu}`,
      );
    }
    // N cores give N × 1,000,000 CPU µs per second to everything in the run: the target's rate times
    // the CPU one request needs across processes must fit in that.
    for (const [r, share] of [[results[1], 0.4], [results[2], 0.2]] as const) {
      if (!r.cpu) continue;
      const need = r.cpu.server + r.cpu.postgres + r.cpu.loadGen;
      console.log(
        `${r.name}: the ${share * 100}% target is ${(share * bareRps).toFixed(0)} req/s; at ${need.toFixed(0)} CPU µs per request that needs ` +
          `${((share * bareRps * need) / 1e6).toFixed(2)} cores (this machine has ${os.cpus().length})`,
      );
    }
    console.log('targets: GET /sms >= 40% and PUT /sms >= 20% of bare Koa; p99 < 25 ms');
  } finally {
    for (const c of children) c.kill('SIGTERM');
    await pg.stop();
  }
}

if (require.main === module) {
  runBench('bench http', runHttpBench);
}
