/**
 * The service's pool keeps DB_POOL_MIN connections open and an API process opens them before it listens
 * (db/index.ts `poolMin`, `openPoolMinimum`; runtime.ts `openDatabase`; api/server.ts `startApi`), each with the hot
 * statements prepared, so the first burst after a start does not open a connection per queued statement (docs/benchmarks.md "sms-replies").
 */
import { expect } from 'chai';
import net from 'node:net';
import { loadConfig } from '../../config';
import { DEFAULT_POOL_MIN, poolMin } from '../../db';
import { connectPreparers } from '../../db/groupCommit';
import { startApi } from '../../api/server';
import { createLogger, openDatabase } from '../../runtime';
import { createTestDatabase } from '../helpers/postgres';

describe('the pool minimum opened where the API starts', function () {
  this.timeout(60_000);

  it('reads DB_POOL_MIN (default 8) and refuses anything but a whole number', () => {
    expect(poolMin({})).to.equal(DEFAULT_POOL_MIN);
    expect(DEFAULT_POOL_MIN).to.equal(8);
    expect(poolMin({ DB_POOL_MIN: '0' })).to.equal(0);
    expect(poolMin({ DB_POOL_MIN: '12' })).to.equal(12);
    for (const bad of ['-1', '2.5', 'eight', '']) expect(() => poolMin({ DB_POOL_MIN: bad }), bad).to.throw(/DB_POOL_MIN/);
  });

  it('has DB_POOL_MIN connections open when startApi resolves, on a database opened as the service opens it, each with the hot statements prepared', async () => {
    // Through a proxy that holds each new connection 150 ms before reaching Postgres (a server under load, or across
    // a network): a connection opened for the start arrives after the transactions on connections already open ended.
    const direct = new URL(await createTestDatabase('poolmin'));
    const proxy = await slowConnectProxy(direct.hostname, Number(direct.port || 5432), 150);
    const databaseUrl = Object.assign(new URL(direct.href), { host: `127.0.0.1:${proxy.port}` }).href;
    const saved = process.env.DB_POOL_MIN;
    process.env.DB_POOL_MIN = '5';
    const config = loadConfig({ port: 0, host: '127.0.0.1', logLevel: 'silent', databaseUrl });
    const logger = createLogger('silent');
    const database = await openDatabase(config, logger).finally(() => (saved === undefined ? delete process.env.DB_POOL_MIN : (process.env.DB_POOL_MIN = saved)));
    const name = new URL(databaseUrl).pathname.slice(1);
    const backends = async () => {
      const pool = (database.db.client as { pool: { numUsed(): number; numFree(): number } }).pool;
      return pool.numUsed() + pool.numFree();
    };
    try {
      // Four connections are open and idle (as after a burst): the minimum is not open yet. The start then opens one
      // more while four transactions find a connection at once; each of the five must still come out prepared.
      let opened = 0;
      let allOpen!: () => void;
      const fourOpen = new Promise<void>((resolve) => (allOpen = resolve));
      await Promise.all(
        Array.from({ length: 4 }, () =>
          database.db.transaction(async (trx) => {
            await trx.raw('SELECT 1');
            if (++opened === 4) allOpen();
            await fourOpen; // each holds its connection until all four hold one
          }),
        ),
      );
      expect(await backends()).to.equal(4);
      const api = await startApi({ db: database.db, databaseUrl: database.url, config, logger });
      try {
        expect(await backends()).to.equal(5);
        // Postgres sees them too (this statement's own connection is one of them).
        const { rows } = await database.db.raw('SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = ? AND pid <> pg_backend_pid() AND backend_type = ?', [name, 'client backend']);
        expect(rows[0].n).to.be.at.least(4);
        // Each connection prepared the hot statements (db/groupCommit.ts `prepareOnConnect`) and wrote nothing.
        const perConnection = await Promise.all(
          Array.from({ length: 5 }, () =>
            database.db.transaction(async (trx) => (await trx.raw("SELECT name FROM pg_prepared_statements WHERE name LIKE 'acp_%' ORDER BY name")).rows.map((r: { name: string }) => r.name)),
          ),
        );
        expect(perConnection[0].length).to.be.at.least(connectPreparers().length);
        for (const names of perConnection) expect(names).to.deep.equal(perConnection[0]);
        for (const table of ['conversations', 'events', 'sms_messages', 'sms_provider_events', 'provider_intents', 'conversation_turns']) {
          expect(await database.db(table).count({ n: '*' }), table).to.deep.equal([{ n: 0 }]);
        }
      } finally {
        await api.close();
      }
    } finally {
      await database.close();
      await proxy.close();
    }
  });
});

/** A TCP proxy to `host:port` that waits `delayMs` before connecting each accepted socket upstream. */
async function slowConnectProxy(host: string, port: number, delayMs: number): Promise<{ port: number; close(): Promise<void> }> {
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    sockets.add(client);
    client.pause();
    setTimeout(() => {
      const upstream = net.connect(port, host);
      sockets.add(upstream);
      const end = () => (client.destroy(), upstream.destroy());
      client.on('error', end).on('close', end);
      upstream.on('error', end).on('close', end);
      client.pipe(upstream).pipe(client);
      client.resume();
    }, delayMs);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as net.AddressInfo).port,
    close: () => new Promise<void>((resolve) => (sockets.forEach((s) => s.destroy()), server.close(() => resolve()))),
  };
}
