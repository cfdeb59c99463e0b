/**
 * `npm run start:api` with `API_PROCESSES=2` as a real process tree (docs/operations.md "Scaling out"): requests are
 * served by both children, which share what lives in Postgres — a rate limit counted across them, a
 * revocation effective in both at once (the change feed) — the primary's METRICS_PORT sums both children's
 * metrics, a child that dies is started again, and SIGTERM stops the whole tree.
 */
import { expect } from 'chai';
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { createDb, type Db } from '../db';
import { freePort } from '../db/embedded';
import { createOrganization } from '../db/repositories/organizations';
import { createSecretKey, revokeKey } from '../db/repositories/apiKeys';
import { NON_RESERVED_SCOPES } from '../domain/scopes';
import { SERVICE_SECRETS } from '../secrets';
import { createMigratedTestDatabase } from './helpers/postgres';

const ROOT = path.resolve(__dirname, '..');
const TSX = path.join(ROOT, 'node_modules', 'tsx', 'dist', 'cli.mjs');

interface LogLine {
  msg: string;
  pid: number;
  pids?: number[];
  status?: number;
  keyId?: string;
}

describe('start:api with API_PROCESSES=2', function () {
  this.timeout(120_000);
  let db: Db;
  let child: ChildProcess;
  let exited: Promise<number | null>;
  const lines: LogLine[] = [];
  let base = '';
  let metricsUrl = '';

  before(async () => {
    const databaseUrl = await createMigratedTestDatabase('cluster');
    db = createDb(databaseUrl);
    const port = await freePort();
    const metricsPort = await freePort();
    metricsUrl = `http://127.0.0.1:${metricsPort}/metrics`;
    // Production mode with this run's secrets (test/hooks.ts puts them in the environment): nothing is
    // generated under a data directory.
    for (const s of SERVICE_SECRETS) expect(process.env[s.name], s.name).to.be.a('string');
    const env: NodeJS.ProcessEnv = { ...process.env, NODE_ENV: 'production', DATABASE_URL: databaseUrl, API_PROCESSES: '2', PORT: String(port), METRICS_PORT: String(metricsPort), HOST: '127.0.0.1', PUBLIC_BASE_URL: `http://127.0.0.1:${port}`, LOG_LEVEL: 'info' };
    child = spawn(process.execPath, [TSX, 'api/server.ts'], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
    exited = new Promise((resolve) => child.once('exit', (code) => resolve(code)));
    let stderr = '';
    child.stderr!.on('data', (d) => (stderr += d));
    let buf = '';
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`start:api did not start: ${stderr}`)), 90_000);
      child.stdout!.on('data', (d: Buffer) => {
        buf += d.toString();
        let nl;
        while ((nl = buf.indexOf('\n')) >= 0) {
          const line = buf.slice(0, nl);
          buf = buf.slice(nl + 1);
          try {
            const parsed = JSON.parse(line) as LogLine;
            lines.push(parsed);
            if (parsed.msg === 'API listening') {
              clearTimeout(timer);
              resolve();
            }
          } catch {
            // not a log line
          }
        }
      });
      void exited.then((code) => reject(new Error(`start:api exited (${code}): ${stderr}`)));
    });
    base = `http://127.0.0.1:${port}/api/v1`;
  });

  after(async () => {
    if (child.exitCode === null) child.kill('SIGKILL');
    await db?.destroy();
  });

  const get = (key: string) => fetch(`${base}/sms`, { headers: { authorization: `Bearer ${key}` } }).then((r) => r.status);

  it('forks two processes that both serve requests on one port', async () => {
    const listening = lines.find((l) => l.msg === 'API listening')!;
    expect(listening.pids).to.have.length(2);
    const org = await createOrganization(db, 'Cluster');
    const { key, info } = await createSecretKey(db, org.id, { brand: 'acp', scopes: NON_RESERVED_SCOPES });
    // One connection per request, so the cluster's round-robin hands them to both children.
    const statuses = [];
    for (let i = 0; i < 12; i++) statuses.push(await get(key));
    expect(statuses.every((s) => s !== 401 && s < 500), String(statuses)).to.equal(true);
    await new Promise((r) => setTimeout(r, 200));
    const servedBy = new Set(lines.filter((l) => l.msg === 'request' && l.keyId === info.id).map((l) => l.pid));
    expect([...servedBy].sort()).to.deep.equal([...listening.pids!].sort());
  });

  it('counts one rate limit across processes and revokes a key in both at once', async () => {
    const org = await createOrganization(db, 'Cluster limits');
    const limited = await createSecretKey(db, org.id, { brand: 'acp', scopes: NON_RESERVED_SCOPES, rateLimitPoints: 6, rateLimitWindowSeconds: 60 });
    const statuses = [];
    for (let i = 0; i < 10; i++) statuses.push(await get(limited.key));
    expect(statuses.filter((s) => s === 429)).to.have.length(4);

    const { key, info } = await createSecretKey(db, org.id, { brand: 'acp', scopes: NON_RESERVED_SCOPES });
    for (let i = 0; i < 6; i++) expect(await get(key)).to.not.equal(401); // both children cache it
    await revokeKey(db, org.id, info.id);
    await new Promise((r) => setTimeout(r, 300)); // the NOTIFY reaches both processes
    const after = [];
    for (let i = 0; i < 6; i++) after.push(await get(key));
    expect(after).to.deep.equal([401, 401, 401, 401, 401, 401]);
  });

  it('serves on the primary\'s METRICS_PORT the sum of both children\'s metrics', async () => {
    const count = async () => {
      const text = await (await fetch(metricsUrl)).text();
      return [...text.matchAll(/^http_server_request_duration_seconds_count\{[^}]*operation_id="getSMSRegistration"[^}]*\} (\d+)$/gm)].reduce((s, m) => s + Number(m[1]), 0);
    };
    const before = await count();
    const org = await createOrganization(db, 'Cluster metrics');
    const { key } = await createSecretKey(db, org.id, { brand: 'acp', scopes: NON_RESERVED_SCOPES });
    for (let i = 0; i < 8; i++) await get(key);
    // 8 requests shared by the two children (round-robin), counted once each in the sum.
    expect((await count()) - before).to.equal(8);
  });

  it('starts a child again when it dies, and stops the whole tree on SIGTERM', async () => {
    const pids = lines.find((l) => l.msg === 'API listening')!.pids!;
    process.kill(pids[0], 'SIGKILL');
    const deadline = Date.now() + 60_000;
    while (!lines.some((l) => l.msg === 'process exited; starting it again') && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    expect(lines.some((l) => l.msg === 'process exited; starting it again')).to.equal(true);
    const org = await createOrganization(db, 'Cluster restart');
    const { key } = await createSecretKey(db, org.id, { brand: 'acp', scopes: NON_RESERVED_SCOPES });
    for (let i = 0; i < 4; i++) expect(await get(key)).to.not.equal(401);
    child.kill('SIGTERM');
    expect(await exited).to.equal(0);
    for (const pid of pids.slice(1)) expect(() => process.kill(pid, 0)).to.throw();
  });
});
