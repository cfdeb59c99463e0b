/**
 * The service's pool keeps DB_POOL_MIN connections open and an API process opens them before it listens
 * (db/index.ts `poolMin`, `openPoolMinimum`; runtime.ts `openDatabase`; api/server.ts `startApi`), each with the hot
 * statements prepared, so the first burst after a start does not open a connection per queued statement (docs/benchmarks.md "sms-replies").
 */
import { expect } from 'chai';
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
    const databaseUrl = await createTestDatabase('poolmin');
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
      // Migrations ran on one connection: the minimum is not open yet.
      expect(await backends()).to.be.below(5);
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
    }
  });
});
