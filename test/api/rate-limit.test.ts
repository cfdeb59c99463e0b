/** Rate limiting on Postgres shared by every API process, exact for small limits, leased for large ones, with a burst policy beside the window. */
import { expect } from 'chai';
import { createDb, type Db } from '../../db';
import { RateLimits, burstPolicy, leaseSize } from '../../api/middleware/rateLimit';
import { createMigratedTestDatabase } from '../helpers/postgres';

describe('RateLimits (rate-limiter-flexible on Postgres)', () => {
  let url: string;
  let db: Db;
  before(async () => {
    url = await createMigratedTestDatabase('ratelimit');
    db = createDb(url);
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

  it("derives the burst policy from the key's own rate: twice its average per second, at least 10, only where it can bind", () => {
    const shape = { factor: 2, seconds: 1 };
    expect(burstPolicy(600, 60, shape)).to.deep.equal({ points: 20, seconds: 1 });
    expect(burstPolicy(3000, 60, shape)).to.deep.equal({ points: 100, seconds: 1 });
    expect(burstPolicy(100, 60, shape)).to.deep.equal({ points: 10, seconds: 1 });
    expect(burstPolicy(1000, 10, { factor: 1.5, seconds: 2 })).to.deep.equal({ points: 300, seconds: 2 });
    // A budget of 10 or fewer may be spent at once; a burst window as long as the key's own cannot bind.
    expect(burstPolicy(6, 60, shape)).to.equal(undefined);
    expect(burstPolicy(600, 1, shape)).to.equal(undefined);
    expect(burstPolicy(600, 60, { factor: 0, seconds: 1 })).to.equal(undefined);
  });

  it('counts a burst window exactly across processes and frees it when the window passes', async () => {
    const a = new RateLimits(url, { points: 600, windowSeconds: 60, burstFactor: 2, burstSeconds: 1 });
    const b = new RateLimits(url, { points: 600, windowSeconds: 60, burstFactor: 2, burstSeconds: 1 });
    const realNow = Date.now;
    const start = realNow();
    let now = start;
    Date.now = () => now; // the wall clock stands still, then skips one burst window: no real sleep
    try {
      const takes = [];
      for (let i = 0; i < 24; i++) takes.push(await (i % 2 ? a : b).take('key_burst', 20, 1));
      expect(takes.filter((r) => r.ok)).to.have.length(20);
      expect(takes.slice(0, 20).every((r) => r.ok)).to.equal(true);
      expect(takes[20].ok).to.equal(false);
      expect(takes[20].msBeforeNext).to.be.within(1, 1000);
      now = start + 1000;
      const next = await a.take('key_burst', 20, 1);
      expect(next.ok).to.equal(true);
      expect(next.remaining).to.equal(19);
    } finally {
      Date.now = realNow;
      await a.close();
      await b.close();
    }
  });
});

