/** Group commit (db/groupCommit.ts) and the batched draft save built on it (PUT /sms). */
import { expect } from 'chai';
import type { Knex } from 'knex';
import { GroupCommit, PerOrgGroupCommit } from '../../db/groupCommit';
import { createOrganization } from '../../db/repositories/organizations';
import { getRegistrationRecord, saveDraftIfVersion, saveDraftRecord } from '../../db/repositories/smsRegistrations';
import { useMigratedDb } from '../helpers/postgres';

describe('GroupCommit', () => {
  it('writes items submitted together in one batch and hands each caller its own outcome', async () => {
    const batches: number[][] = [];
    const g = new GroupCommit<number, number>(async (batch) => {
      batches.push(batch);
      return batch.map((n) => n * 10);
    });
    const out = await Promise.all([1, 2, 3, 4].map((n) => g.submit(n)));
    expect(out).to.deep.equal([10, 20, 30, 40]);
    expect(batches).to.deep.equal([[1, 2, 3, 4]]);
  });

  it('keeps one batch in flight and gathers what arrives meanwhile into the next', async () => {
    let inFlight = 0;
    let maxInFlight = 0;
    const batches: string[][] = [];
    let release!: () => void;
    const firstHeld = new Promise<void>((r) => (release = r));
    const g = new GroupCommit<string, string>(async (batch) => {
      inFlight++;
      maxInFlight = Math.max(maxInFlight, inFlight);
      batches.push(batch);
      if (batches.length === 1) await firstHeld;
      inFlight--;
      return batch;
    });
    const first = g.submit('a');
    await new Promise((r) => setImmediate(r)); // the first batch ['a'] is now running
    const later = ['b', 'c', 'd'].map((s) => g.submit(s));
    release();
    expect(await Promise.all([first, ...later])).to.deep.equal(['a', 'b', 'c', 'd']);
    expect(batches).to.deep.equal([['a'], ['b', 'c', 'd']]);
    expect(maxInFlight).to.equal(1);
    // The counters the chat benchmark prints (bench/chat.ts "turn batches").
    expect(g.stats).to.include({ batches: 2, items: 4 });
    expect(g.stats.ms).to.be.greaterThan(0);
  });

  it('fails only the items of a failed batch, and splits at the batch limit', async () => {
    const g = new GroupCommit<number, number>(async (batch) => {
      if (batch.includes(3)) throw new Error('boom');
      return batch;
    }, 2);
    const settled = await Promise.allSettled([1, 2, 3, 4, 5].map((n) => g.submit(n)));
    expect(settled.map((s) => s.status)).to.deep.equal(['fulfilled', 'fulfilled', 'rejected', 'rejected', 'fulfilled']);
    expect((settled[2] as PromiseRejectedResult).reason.message).to.equal('boom');
  });

  it('with isolateFailures, writes a failed batch again item by item so only the item at fault fails', async () => {
    const batches: number[][] = [];
    const g = new GroupCommit<number, number>(
      async (batch) => {
        batches.push(batch);
        if (batch.includes(3)) throw new Error(`boom ${batch.join(',')}`);
        return batch.map((n) => n * 10);
      },
      500,
      { isolateFailures: true },
    );
    const settled = await Promise.allSettled([1, 2, 3, 4].map((n) => g.submit(n)));
    expect(settled.map((s) => (s.status === 'fulfilled' ? s.value : (s.reason as Error).message))).to.deep.equal([10, 20, 'boom 3', 40]);
    expect(batches).to.deep.equal([[1, 2, 3, 4], [1], [2], [3], [4]]);
  });
});

describe('PerOrgGroupCommit', () => {
  it('batches each organization apart, and counts every batch after an idle organization\'s writer was let go', async () => {
    const batches: string[] = [];
    const g = new PerOrgGroupCommit<number, number>(async (_db, orgId, batch) => {
      batches.push(`${orgId}:${batch.join(',')}`);
      return batch.map((n) => n + 1);
    });
    const handle = {} as Knex; // only the key the writers are kept under; the run above never uses it
    expect(await Promise.all([g.submit(handle, 'a', 1), g.submit(handle, 'b', 2), g.submit(handle, 'a', 3)])).to.deep.equal([2, 3, 4]);
    // Both writers went idle; a later round starts new ones and the figures still count the first round.
    expect(await Promise.all([g.submit(handle, 'a', 5), g.submit(handle, 'a', 6)])).to.deep.equal([6, 7]);
    expect(batches).to.deep.equal(['a:1,3', 'b:2', 'a:5,6']);
    expect(g.stats(handle)).to.include({ batches: 3, items: 5 });
  });
});

describe('saveDraftIfVersion (batched optimistic draft save)', () => {
  const db = useMigratedDb('groupcommit');

  /** An organization with a saved draft; returns its id and record. */
  async function orgWithDraft(name: string) {
    const org = await createOrganization(db(), name);
    const record = await saveDraftRecord(db(), org.id, () => ({ displayName: name, city: 'Austin', website: 'https://example.com', quietHoursRepliesExempt: true }));
    return { orgId: org.id, record };
  }

  it('writes concurrent saves of many organizations in fewer statements, each exactly as the locking save would', async () => {
    const orgs = await Promise.all(Array.from({ length: 30 }, (_, i) => orgWithDraft(`Batch ${i}`)));
    let updates = 0;
    const count = (q: { sql: string }) => {
      if (/^WITH w AS \(UPDATE sms_registrations r/.test(q.sql)) updates++;
    };
    db().on('query', count);
    try {
      const saved = await Promise.all(
        orgs.map(({ orgId, record }, i) => saveDraftIfVersion(db(), orgId, record.version, { city: `City ${i}`, website: null, sendsLinks: i % 2 === 0 }, record.registration)),
      );
      expect(updates).to.be.within(1, 29);
      for (const [i, { orgId, record }] of orgs.entries()) {
        const s = saved[i]!;
        expect(s, `save ${i}`).to.not.equal(undefined);
        expect(s.version).to.equal(record.version + 1);
        const stored = (await getRegistrationRecord(db(), orgId))!;
        // What the batch returns is what a fresh read shows, and only the given fields moved.
        expect(s.registration).to.deep.equal(stored.registration);
        expect(stored.registration).to.include({ city: `City ${i}`, website: null, sendsLinks: i % 2 === 0, displayName: `Batch ${i}`, status: 'draft' });
        expect(stored.registration.description).to.equal(record.registration.description);
      }
    } finally {
      db().removeListener('query', count);
    }
  });

  it('writes nothing when the row moved since the cached version, or left draft', async () => {
    const a = await orgWithDraft('Stale');
    await db()('sms_registrations').where({ org_id: a.orgId }).update({ city: 'Elsewhere' }); // version + 1
    expect(await saveDraftIfVersion(db(), a.orgId, a.record.version, { city: 'Lost' }, a.record.registration)).to.equal(undefined);
    expect((await getRegistrationRecord(db(), a.orgId))!.registration.city).to.equal('Elsewhere');

    const b = await orgWithDraft('Submitted');
    await db()('sms_registrations').where({ org_id: b.orgId }).update({ status: 'submitted' });
    const current = (await getRegistrationRecord(db(), b.orgId))!;
    expect(await saveDraftIfVersion(db(), b.orgId, current.version, { city: 'Lost' }, current.registration)).to.equal(undefined);
    expect((await getRegistrationRecord(db(), b.orgId))!.registration).to.include({ city: 'Austin', status: 'submitted' });
  });

  it('hands every save of a batch back to the locking path when the statement fails, writing none', async () => {
    const a = await orgWithDraft('Refused neighbour A');
    const b = await orgWithDraft('Refused neighbour B');
    // jsonb refuses U+0000 (the API answers 400 before this point; here the repository is called directly).
    const [ra, rb] = await Promise.all([
      saveDraftIfVersion(db(), a.orgId, a.record.version, { city: 'Fine' }, a.record.registration),
      saveDraftIfVersion(db(), b.orgId, b.record.version, { city: 'Bad\u0000' }, b.record.registration),
    ]);
    expect([ra, rb]).to.deep.equal([undefined, undefined]);
    expect((await getRegistrationRecord(db(), a.orgId))!.registration.city).to.equal('Austin');
  });

  it('writes one of two saves of the same organization in one batch and hands the other back', async () => {
    const { orgId, record } = await orgWithDraft('Twice');
    const [first, second] = await Promise.all([
      saveDraftIfVersion(db(), orgId, record.version, { city: 'First' }, record.registration),
      saveDraftIfVersion(db(), orgId, record.version, { city: 'Second' }, record.registration),
    ]);
    expect(first?.registration.city).to.equal('First');
    expect(second).to.equal(undefined);
    expect((await getRegistrationRecord(db(), orgId))!.registration.city).to.equal('First');
  });
});
