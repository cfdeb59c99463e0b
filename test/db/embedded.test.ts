/** The embedded Postgres (README "Durability", "Security"): durable by default, no fixed password, joinable by the CLI. */
import { expect } from 'chai';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { attachRunningPostgres, startEmbeddedPostgres, type EmbeddedPostgresHandle } from '../../db/embedded';

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
