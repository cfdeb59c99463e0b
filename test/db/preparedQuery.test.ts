/**
 * db/preparedQuery.ts `runPrepared`: a hot path's statement on a pooled connection without Knex's per-call formatting
 * answers what Knex's `raw(...).options(prepared(sql))` answers — `?` placeholders numbered, `\?` a literal `?`, the
 * same statement name, a transaction's own connection — and refuses what Knex refuses.
 */
import { expect } from 'chai';
import { createDb, prepared, type Db } from '../../db';
import { runPrepared } from '../../db/preparedQuery';
import { createMigratedTestDatabase } from '../helpers/postgres';

describe('runPrepared (db/preparedQuery.ts)', function () {
  this.timeout(60_000);
  let db: Db;
  let url: string;

  before(async () => {
    url = await createMigratedTestDatabase('prepared_query');
    db = createDb(url);
  });
  after(async () => {
    await db?.destroy();
  });

  it('answers the rows Knex raw answers, numbering ? and keeping \\? as the jsonb operator', async () => {
    const sql = `SELECT ?::int + ?::int AS sum, ?::jsonb \\? 'a' AS has_a, ?::text AS word`;
    const bindings = [2, 40, JSON.stringify({ a: 1 }), 'it?s'];
    const ours = await runPrepared(db, sql, bindings);
    const knexs = await db.raw(sql, bindings).options(prepared(sql));
    expect(ours.rows).to.deep.equal([{ sum: 42, has_a: true, word: 'it?s' }]);
    expect(ours.rows).to.deep.equal(knexs.rows);
  });

  it('runs as one named prepared statement, the same text under the same name as Knex raw prepares it', async () => {
    // One connection, so both paths meet on it: pg refuses a name prepared again with another text.
    const one = createDb(url, { poolMax: 1 });
    try {
      const sql = `SELECT ?::text AS v, ?::int AS n FROM organizations WHERE id = ? OR TRUE LIMIT 1`;
      await one('organizations').insert({ id: 'org_prepared', name: 'Prepared' }).onConflict('id').ignore();
      expect((await runPrepared(one, sql, ['x', 1, 'org_prepared'])).rows).to.deep.equal([{ v: 'x', n: 1 }]);
      const names = (await one.raw('SELECT name FROM pg_prepared_statements')).rows.map((r: { name: string }) => r.name);
      expect(names).to.include(prepared(sql).name);
      expect((await one.raw(sql, ['y', 2, 'org_prepared']).options(prepared(sql))).rows).to.deep.equal([{ v: 'y', n: 2 }]);
    } finally {
      await one.destroy();
    }
  });

  it('runs inside a transaction on its connection: a rollback undoes its write', async () => {
    await db.raw('CREATE TABLE IF NOT EXISTS prepared_probe (v text)');
    await db
      .transaction(async (trx) => {
        await runPrepared(trx, 'INSERT INTO prepared_probe (v) VALUES (?)', ['rolled back']);
        expect((await trx('prepared_probe').where({ v: 'rolled back' })).length).to.equal(1);
        throw new Error('roll back');
      })
      .catch((err: Error) => expect(err.message).to.equal('roll back'));
    expect((await db('prepared_probe').where({ v: 'rolled back' })).length).to.equal(0);
  });

  it('refuses an undefined binding and a ?? identifier binding, as Knex refuses or formats them', async () => {
    const undefinedBinding = await runPrepared(db, 'SELECT ?::text AS v', [undefined]).then(() => null, (e: Error) => e);
    expect(undefinedBinding?.message).to.match(/undefined binding at 0/);
    const identifier = await runPrepared(db, 'SELECT ?? FROM organizations', ['id']).then(() => null, (e: Error) => e);
    expect(identifier?.message).to.match(/identifier bindings/);
  });

  it('passes a statement error through and gives the connection back to the pool', async () => {
    await db.raw('CREATE TABLE IF NOT EXISTS prepared_unique (v text PRIMARY KEY)');
    await runPrepared(db, 'INSERT INTO prepared_unique (v) VALUES (?)', ['once']);
    const err = await runPrepared(db, 'INSERT INTO prepared_unique (v) VALUES (?)', ['once']).then(() => null, (e: { code?: string }) => e);
    expect(err?.code).to.equal('23505');
    const pool = db.client.pool as { numUsed(): number };
    expect(pool.numUsed()).to.equal(0);
  });
});
