/** Rate limiting on Postgres shared by every API process, exact for small limits, leased for large ones. */
import { expect } from 'chai';
import { createDb, migrate, type Db } from '../../db';
import { RateLimits, leaseSize } from '../../api/middleware/rateLimit';
import { createTestDatabase } from '../helpers/postgres';

describe('RateLimits (rate-limiter-flexible on Postgres)', () => {
  let url: string;
  let db: Db;
  before(async () => {
    url = await createTestDatabase('ratelimit');
    db = createDb(url);
    await migrate(db);
  });
  after(async () => db.destroy());

  it('counts small limits exactly across processes', async () => {
    const a = new RateLimits(url, { points: 5, windowSeconds: 60 });
    const b = new RateLimits(url, { points: 5, windowSeconds: 60 });
    try {
      const results = [];
      for (let i = 0; i < 8; i++) results.push(await (i % 2 ? a : b).take('key_small', 5, 60));
      expect(results.map((r) => r.ok)).to.deep.equal([true, true, true, true, true, false, false, false]);
      expect(results.slice(0, 5).map((r) => r.remaining)).to.deep.equal([4, 3, 2, 1, 0]);
      expect(results[5].msBeforeNext).to.be.within(1, 60_000);
    } finally {
      await a.close();
      await b.close();
    }
  });

  it('never lets a leased high limit be exceeded by two processes taking points concurrently', async () => {
    const limit = 1000;
    expect(leaseSize(limit)).to.equal(10);
    const a = new RateLimits(url, { points: limit, windowSeconds: 60 });
    const b = new RateLimits(url, { points: limit, windowSeconds: 60 });
    try {
      const takes = await Promise.all(Array.from({ length: 1100 }, (_, i) => (i % 2 ? a : b).take('key_big', limit, 60)));
      const granted = takes.filter((t) => t.ok).length;
      expect(granted).to.be.at.most(limit);
      // At most (lease − 1) points per process may sit unused in a lease.
      expect(granted).to.be.at.least(limit - 2 * (leaseSize(limit) - 1));
      const row = await db('rate_limits').where('key', 'like', '%key_big').first();
      expect(row.points).to.be.at.least(limit);
    } finally {
      await a.close();
      await b.close();
    }
  });
});
