/**
 * HTTP benchmark (issue 2 §9): requests/s and p50/p99 latency of `GET /sms` and `PUT /sms` under 100
 * concurrent connections (autocannon), against a bare Koa route measured in the same run, with the
 * ratio; each connection uses its own organization's key. Targets on the 2-core machine: GET ≥ 40 % and PUT ≥ 20 % of bare Koa, p99 < 25 ms.
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
import { NON_RESERVED_SCOPES } from '../api/scopes';

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
}

async function load(name: string, opts: autocannon.Options): Promise<Figures> {
  const r = await autocannon({ connections: CONNECTIONS, duration: SECONDS, ...opts });
  return { name, rps: r.requests.average, p50: r.latency.p50, p99: r.latency.p99, errors: r.errors, non2xx: r.non2xx };
}

/** Runs the HTTP section and prints its table. */
export async function runHttpBench(): Promise<void> {
  const pg = await startEmbeddedPostgres({ dataDir: path.join(os.tmpdir(), `acp-bench-pg-${process.pid}`), ephemeral: true });
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
    results.push(await load('bare Koa route', { url: `http://127.0.0.1:${bare.port}/` }));
    results.push(await load('GET /sms', { url: `${base}/sms`, setupClient } as autocannon.Options));
    results.push(await load('PUT /sms', {
      url: `${base}/sms`,
      method: 'PUT',
      setupClient,
      body: JSON.stringify({ displayName: 'Bench Brand', city: 'Austin', useCase: 'MIXED', quietHoursRepliesExempt: true }),
    } as autocannon.Options));

    const bareRps = results[0].rps;
    console.log(`\nHTTP (${CONNECTIONS} connections, ${SECONDS} s each, ${os.cpus().length} cores, Node ${process.version})`);
    console.log('case              req/s     p50 ms  p99 ms  % of bare  errors  non-2xx');
    for (const r of results) {
      console.log(
        `${r.name.padEnd(16)} ${r.rps.toFixed(0).padStart(7)}  ${r.p50.toFixed(1).padStart(7)} ${r.p99.toFixed(1).padStart(7)}  ${((100 * r.rps) / bareRps).toFixed(1).padStart(8)}%  ${String(r.errors).padStart(6)}  ${String(r.non2xx).padStart(7)}`,
      );
    }
    console.log('targets: GET /sms >= 40% and PUT /sms >= 20% of bare Koa; p99 < 25 ms');
  } finally {
    for (const c of children) c.kill('SIGTERM');
    await pg.stop();
  }
}

if (require.main === module) {
  runHttpBench().then(() => process.exit(0), (err) => {
    console.error(err);
    process.exit(1);
  });
}
