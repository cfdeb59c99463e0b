/**
 * `npm start` as a real child process (docs/operations.md "Durability", docs/security.md, docs/operations.md "Operator CLI"): acknowledged
 * writes survive a SIGKILL of the whole process group (Postgres included), the embedded Postgres runs
 * with fsync, synchronous_commit and full_page_writes on, secrets are generated once and kept
 * owner-only, the bootstrap key is printed once, and the CLI works beside the running service.
 * Rounds: CRASH_TEST_ROUNDS (default 2; 5 when CI is set).
 */
import { expect } from 'chai';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { freePort } from '../db/embedded';
import { SERVICE_SECRETS } from '../secrets';
import { api, childEnv, listening, postgresPort, runTsx, startService, type Service } from './helpers/service';
import { COMPLETE_BRAND } from './api/sms-fixtures';
import { START_WORKFLOW_BUNDLE_PATH } from '../scripts/build-workflow-bundle';
import { createDb } from '../db';
import { createOrganization } from '../db/repositories/organizations';
import { createSecretKey } from '../db/repositories/apiKeys';
import { NON_RESERVED_SCOPES } from '../domain/scopes';

const ROUNDS = Number(process.env.CRASH_TEST_ROUNDS || (process.env.CI ? 5 : 2));

describe('npm start (main.ts) as a child process', function () {
  this.timeout(600_000);
  let dataDir: string;
  let service: Service | undefined;

  before(() => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'acp-main-'));
  });
  after(async () => {
    if (service?.child.exitCode === null) {
      try {
        process.kill(-service.child.pid!, 'SIGKILL');
      } catch {
        // the group is gone already
      }
      await service.exited;
    }
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  it(`keeps every acknowledged write across ${ROUNDS} SIGKILLs of the whole process group, with the CLI working beside it`, async () => {
    const env = childEnv({ DATA_DIR: dataDir, PORT: String(await freePort()) });
    const agents: { id: string; name: string }[] = [];
    const cliKeys: string[] = [];
    let bootKey = '';
    let mediaSecret = '';

    let bundleWrittenAt = 0;
    for (let round = 0; round <= ROUNDS; round++) {
      service = await startService(env);
      // The workflow bundle of unchanged sources is kept between starts, not built again (ensureWorkflowBundle).
      const bundleMtime = fs.statSync(START_WORKFLOW_BUNDLE_PATH).mtimeMs;
      if (round > 0) expect(bundleMtime, 'the kept workflow bundle').to.equal(bundleWrittenAt);
      bundleWrittenAt = bundleMtime;
      if (round === 0) {
        // The bootstrap key appears once in everything the first start printed.
        const keys = service.stdout.match(/acp_sk_live_[A-Za-z0-9]+/g) ?? [];
        expect(keys, service.stdout).to.have.length(1);
        bootKey = keys[0] ?? '';
        // Secrets were generated owner-only; the embedded Postgres is durable.
        const dir = path.join(dataDir, 'secrets');
        expect(fs.statSync(dir).mode & 0o777).to.equal(0o700);
        for (const name of [...SERVICE_SECRETS.map((s) => s.name), 'EMBEDDED_POSTGRES_PASSWORD']) {
          expect(fs.statSync(path.join(dir, name)).mode & 0o777, name).to.equal(0o600);
        }
        mediaSecret = fs.readFileSync(path.join(dir, 'MEDIA_URL_SECRET'), 'utf8');
        const password = fs.readFileSync(path.join(dir, 'EMBEDDED_POSTGRES_PASSWORD'), 'utf8').trim();
        expect(password).to.not.equal('postgres');
        const client = new pg.Client({ host: '127.0.0.1', port: postgresPort(dataDir), user: 'postgres', password, database: 'acp' });
        await client.connect();
        try {
          for (const setting of ['fsync', 'synchronous_commit', 'full_page_writes']) {
            expect((await client.query(`SHOW ${setting}`)).rows[0][setting], setting).to.equal('on');
          }
        } finally {
          await client.end();
        }
      } else {
        expect(service.stdout).to.not.include('acp_sk_live_');
        expect(fs.readFileSync(path.join(dataDir, 'secrets', 'MEDIA_URL_SECRET'), 'utf8')).to.equal(mediaSecret);
        // Everything acknowledged before the previous SIGKILL is there.
        for (const a of agents) {
          const got = await api(service, 'GET', `/agents/${a.id}`, bootKey);
          expect(got.status, a.id).to.equal(200);
          expect(got.body.data.name).to.equal(a.name);
        }
        const sms = await api(service, 'GET', '/sms', bootKey);
        expect(sms.status).to.equal(200);
        expect(sms.body.data.street).to.equal(`${round} Main St`);
        expect(sms.body.data.status).to.not.equal('draft');
        for (const k of cliKeys) expect((await api(service, 'GET', '/agents', k)).status, k).to.equal(200);
      }
      if (round === ROUNDS) break;

      // Acknowledged writes through the HTTP API…
      const put = await api(service, 'PUT', '/sms', bootKey, { ...COMPLETE_BRAND, street: `${round + 1} Main St` });
      expect(put.status, JSON.stringify(put.body)).to.equal(200);
      // A save returns the registration to draft; the submission that follows is acknowledged too.
      // A 503 temporal_unavailable acknowledges nothing and asks to submit again (the dev server may still be
      // recovering from the last SIGKILL): a client does so, a few times.
      let submitted = await api(service, 'POST', '/sms/submit', bootKey);
      for (let i = 0; i < 10 && submitted.status === 503 && submitted.body?.code === 'temporal_unavailable'; i++) {
        await new Promise((r) => setTimeout(r, 1_000));
        submitted = await api(service, 'POST', '/sms/submit', bootKey);
      }
      expect(submitted.status, JSON.stringify(submitted.body)).to.equal(200);
      expect(submitted.body.data.status).to.equal('submitted');
      for (let i = 0; i < 3; i++) {
        const name = `Crash ${round}-${i}`;
        const created = await api(service, 'POST', '/agents', bootKey, { name });
        expect(created.status, JSON.stringify(created.body)).to.equal(201);
        agents.push({ id: created.body.data.id, name });
      }
      // …and through the CLI beside the running service (same DATA_DIR, no second cluster).
      const org = await runTsx('cli.ts', ['orgs', 'create', `Beside ${round}`], env);
      expect(org.code, org.stderr).to.equal(0);
      const orgId = JSON.parse(org.stdout.trim().split('\n').pop()!).id as string;
      const minted = await runTsx('cli.ts', ['keys', 'create', '--org', orgId, '--scopes', 'agents:read'], env);
      expect(minted.code, minted.stderr).to.equal(0);
      const key = /secret:\s+(\S+)/.exec(minted.stdout)![1];
      expect((await api(service, 'GET', '/agents', key)).status).to.equal(200);
      cliKeys.push(key);

      // No graceful shutdown: the whole group, Postgres included, dies at once.
      const pgPort = postgresPort(dataDir);
      const postmaster = Number(fs.readFileSync(path.join(dataDir, 'pg', 'postmaster.pid'), 'utf8').split('\n')[0]);
      process.kill(-service.child.pid!, 'SIGKILL');
      await service.exited;
      for (let i = 0; i < 100 && (await listening(pgPort)); i++) await new Promise((r) => setTimeout(r, 100));
      // The postmaster is gone, or a zombie nobody reaps yet (db/embedded.ts treats its lock as stale).
      const alive = () => {
        try {
          const stat = fs.readFileSync(`/proc/${postmaster}/stat`, 'utf8');
          return !/^[ZX]$/.test(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[0]);
        } catch {
          return false;
        }
      };
      for (let i = 0; i < 100 && alive(); i++) await new Promise((r) => setTimeout(r, 100));
    }

    // Stopped gracefully, the CLI starts the cluster itself.
    process.kill(-service!.child.pid!, 'SIGTERM');
    await service!.exited;
    const listed = await runTsx('cli.ts', ['orgs', 'list'], env);
    expect(listed.code, listed.stderr).to.equal(0);
    expect(listed.stdout.match(/Beside \d/g)).to.have.length(ROUNDS);
  });

  it('stops cleanly on Ctrl-C (SIGINT) and SIGTERM to the process group of `npm start`: npm exits 0, no warning or error line', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'acp-stop-'));
    try {
      const env = childEnv({ DATA_DIR: dir, PORT: String(await freePort()), LOG_LEVEL: 'info' });
      const outcomes: Record<string, unknown> = {};
      for (const signal of ['SIGINT', 'SIGTERM'] as const) {
        const s = await startService(env, true);
        expect((await fetch(`${s.baseUrl}/agents`)).status).to.equal(401);
        // As a terminal's Ctrl-C does: every process of the group (npm, tsx, the service, Postgres) gets it.
        process.kill(-s.child.pid!, signal);
        const status = await s.exited;
        const { stdout, stderr } = s.output();
        const loud = stdout
          .split('\n')
          .filter((l) => l.startsWith('{'))
          .map((l) => JSON.parse(l) as { level: number; msg: string })
          .filter((l) => l.level >= 40);
        outcomes[signal] = { status, loud: loud.map((l) => l.msg), stderr: stderr.trim() };
        expect(stdout).to.include('"msg":"shutting down"');
      }
      expect(outcomes).to.deep.equal({ SIGINT: { status: 0, loud: [], stderr: '' }, SIGTERM: { status: 0, loud: [], stderr: '' } });
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('brings every 10DLC registration to active within 15 s of a restart after a SIGKILL right after the submits were acknowledged', async () => {
    const TRIALS = Number(process.env.REGISTRATION_CRASH_TRIALS || 10);
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'acp-10dlc-'));
    let s: Awaited<ReturnType<typeof startService>> | undefined;
    try {
      // Short carrier verdicts, so the time measured is the recovery's.
      const env = childEnv({ DATA_DIR: dir, PORT: String(await freePort()), SANDBOX_CARRIER_DELAY_MS: '200' });
      s = await startService(env);
      const password = fs.readFileSync(path.join(dir, 'secrets', 'EMBEDDED_POSTGRES_PASSWORD'), 'utf8').trim();
      const db = createDb(`postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:${postgresPort(dir)}/acp`);
      const keys: string[] = [];
      try {
        for (let i = 0; i < TRIALS; i++) {
          const org = await createOrganization(db, `Crash trial ${i}`);
          keys.push((await createSecretKey(db, org.id, { brand: 'acp', scopes: NON_RESERVED_SCOPES })).key);
        }
      } finally {
        await db.destroy();
      }
      for (const k of keys) expect((await api(s, 'PUT', '/sms', k, COMPLETE_BRAND)).status).to.equal(200);
      // Every submit acknowledged, then the whole group dies within a few milliseconds.
      const acks = await Promise.all(keys.map((k) => api(s!, 'POST', '/sms/submit', k)));
      const ackedAt = Date.now();
      process.kill(-s.child.pid!, 'SIGKILL');
      const killedAfterMs = Date.now() - ackedAt;
      expect(acks.map((a) => a.status)).to.deep.equal(keys.map(() => 200));
      // Within a few ms on an idle machine (the report: within 60 ms); a loaded one may stall the event loop.
      expect(killedAfterMs).to.be.below(250);
      await s.exited;
      const pgPort = postgresPort(dir);
      for (let i = 0; i < 100 && (await listening(pgPort)); i++) await new Promise((r) => setTimeout(r, 100));

      s = await startService(env);
      const restartedAt = Date.now();
      const outcomes = await Promise.all(
        keys.map(async (k) => {
          for (;;) {
            const got = await api(s!, 'GET', '/sms', k);
            const d = got.body?.data ?? {};
            if (d.status === 'active' || d.status === 'failed' || Date.now() - restartedAt > 60_000) {
              return { ms: Date.now() - restartedAt, status: `${d.status}${d.status === 'active' ? '' : ` ${d.providerStatus} ${d.lastError ?? ''}`}` };
            }
            await new Promise((r) => setTimeout(r, 200));
          }
        }),
      );
      const report = outcomes.map((o) => `${o.ms} ms ${o.status}`).join('; ');
      if (process.env.DEBUG_CRASH) console.log(`killed ${killedAfterMs} ms after the acks; after the restart: ${report}\n${s.output().stdout.split('\n').filter((l) => l.startsWith('{')).join('\n')}`);
      expect(outcomes.filter((o) => o.status !== 'active' || o.ms > 15_000), report).to.deep.equal([]);
    } finally {
      if (s?.child.exitCode === null) {
        try {
          process.kill(-s.child.pid!, 'SIGKILL');
        } catch {
          // gone already
        }
        await s.exited;
      }
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('stops with one line naming the variable when NODE_ENV=production lacks a secret', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'acp-prod-'));
    try {
      const r = await runTsx('main.ts', [], childEnv({ DATA_DIR: dir, NODE_ENV: 'production', CARRIER_CALLBACK_SECRET: 'x', WEBHOOK_SECRET_KEY: Buffer.alloc(32, 1).toString('base64') }));
      expect(r.code).to.equal(1);
      expect(r.stderr.trim().split('\n')).to.have.length(1);
      expect(r.stderr).to.match(/^npm start: MEDIA_URL_SECRET is not set/);
      expect(fs.existsSync(path.join(dir, 'secrets'))).to.equal(false);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('prints one error line and exits 1 when the CLI cannot reach its database', async () => {
    const r = await runTsx('cli.ts', ['orgs', 'list'], childEnv({ DATABASE_URL: `postgres://u:p@127.0.0.1:${await freePort()}/x` }));
    expect(r.code).to.equal(1);
    expect(r.stderr.trim().split('\n')).to.have.length(1);
    expect(r.stderr).to.match(/^error: .*ECONNREFUSED/);
  });
});
