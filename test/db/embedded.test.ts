/** The embedded Postgres (docs/operations.md "Durability", docs/security.md): durable by default, no fixed password, joinable by the CLI. */
import { expect } from 'chai';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { attachRunningPostgres, startEmbeddedPostgres, type EmbeddedPostgresHandle } from '../../db/embedded';
import { isServerShutdown } from '../../db';

async function show(url: string, setting: string): Promise<string> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query(`SHOW ${setting}`)).rows[0][setting];
  } finally {
    await client.end();
  }
}

describe('embedded Postgres (db/embedded.ts)', function () {
  this.timeout(120_000);
  let dataDir: string;
  let running: EmbeddedPostgresHandle | undefined;
  before(() => {
    dataDir = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'acp-embedded-')), 'pg');
  });
  after(async () => {
    await running?.stop();
    fs.rmSync(path.dirname(dataDir), { recursive: true, force: true });
  });

  it('tells a server shutting down (Ctrl-C of npm start) from other connection errors (isServerShutdown)', async () => {
    const server = await startEmbeddedPostgres({ dataDir: path.join(path.dirname(dataDir), 'shutdown'), password: 'x', durable: false });
    const client = new pg.Client({ connectionString: server.url });
    const errors: unknown[] = [];
    client.on('error', (err) => errors.push(err));
    await client.connect();
    await server.stop();
    // The open connection is ended by the server (57P01).
    for (let i = 0; i < 100 && !errors.length; i++) await new Promise((r) => setTimeout(r, 20));
    expect(errors.length).to.be.greaterThan(0);
    expect(isServerShutdown(errors[0]), String(errors[0])).to.equal(true);
    // A new connection refused while the server stops (57P03) is the same stop; other errors are not.
    expect(['57P01', '57P02', '57P03'].map((code) => isServerShutdown({ code }))).to.deep.equal([true, true, true]);
    expect(['28P01', '57014', 'ECONNREFUSED', undefined].map((code) => isServerShutdown({ code }))).to.deep.equal([false, false, false, false]);
    expect(isServerShutdown(null)).to.equal(false);
  });

  it('is durable unless told otherwise, switches a cluster made with the old fixed password to the given one, and can be joined', async () => {
    // A cluster as earlier versions created it: password `postgres`.
    running = await startEmbeddedPostgres({ dataDir, password: 'postgres', durable: false });
    expect(await show(running.url, 'fsync')).to.equal('off');
    await running.stop();

    running = await startEmbeddedPostgres({ dataDir, password: 'generated-secret' });
    for (const s of ['fsync', 'synchronous_commit', 'full_page_writes']) expect(await show(running.url, s), s).to.equal('on');
    expect(running.url).to.include('generated-secret');
    const legacy = new pg.Client({ connectionString: running.url.replace('generated-secret', 'postgres') });
    legacy.on('error', () => undefined);
    const refused = await legacy.connect().then(
      () => undefined,
      (err: { code?: string }) => err.code,
    );
    await legacy.end().catch(() => undefined);
    expect(refused).to.equal('28P01');

    // The CLI's way in: the port from postmaster.pid, the same password; stopping the joined handle leaves it running.
    const joined = await attachRunningPostgres(dataDir, 'generated-secret');
    expect(joined).to.include({ port: running.port, attached: true });
    await joined!.stop();
    expect(await show(running.url, 'fsync')).to.equal('on');
    await expectRejected(attachRunningPostgres(dataDir, 'wrong'), /refuses the password/);

    await running.stop();
    running = undefined;
    // A stale or absent cluster is not joined.
    expect(await attachRunningPostgres(dataDir, 'generated-secret')).to.equal(undefined);
  });
});

async function expectRejected(p: Promise<unknown>, re: RegExp): Promise<void> {
  const err = await p.then(
    () => undefined,
    (e: Error) => e,
  );
  expect(err?.message).to.match(re);
}
