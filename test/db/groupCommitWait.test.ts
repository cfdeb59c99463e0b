/** The wait a group commit counts per item (db/groupCommit.ts `GroupCommitStats.waitMs`, bench/smsReplies.ts per step). */
import { expect } from 'chai';
import type { Knex } from 'knex';
import { addStats, GroupCommit, PerOrgGroupCommit } from '../../db/groupCommit';

describe('GroupCommit waits', () => {
  it('counts each item from its submit to its batch\'s outcome, the batch in flight before it included', async () => {
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    const g = new GroupCommit<string, string>(async (batch) => {
      if (batch[0] === 'a') await held;
      return batch;
    });
    const spans: number[] = [];
    const timed = (s: string) => {
      const t = performance.now();
      return g.submit(s).then((out) => (spans.push(performance.now() - t), out));
    };
    const first = timed('a');
    await new Promise((r) => setImmediate(r)); // ['a'] is in flight
    const later = ['b', 'c'].map(timed);
    for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
    release();
    await Promise.all([first, ...later]);
    expect(g.stats).to.include({ batches: 2, items: 3 });
    // b and c waited for ['a'] and then for their own batch: together more than the batches' own time.
    expect(g.stats.waitMs).to.be.greaterThan(g.stats.ms);
    // Measured inside what the callers saw.
    expect(g.stats.waitMs).to.be.at.most(spans.reduce((x, y) => x + y, 0));
  });

  it('sums the waits of every organization\'s writer, those let go when idle included', async () => {
    const g = new PerOrgGroupCommit<number, number>(async (_db, _orgId, batch) => batch);
    const handle = {} as Knex;
    await Promise.all([g.submit(handle, 'a', 1), g.submit(handle, 'b', 2)]);
    const s = g.stats(handle);
    expect(s).to.include({ batches: 2, items: 2 });
    expect(s.waitMs).to.be.greaterThan(0);
    expect(addStats({ batches: 1, items: 1, ms: 1, waitMs: 1 }, s)).to.deep.equal({ batches: 3, items: 3, ms: 1 + s.ms, waitMs: 1 + s.waitMs });
  });
});
