/**
 * The change feed (db/changeFeed.ts, migrations 20261122000050 and 20261123000300; docs/operations.md "Scaling out"):
 * one notification per statement on `sms_registrations`, up to 200 rows each, and every cached row of the
 * statement evicted in a listening process; `phone_numbers` keyed by the number (migration 20261129001600).
 */
import { expect } from 'chai';
import pg from 'pg';
import { createDb, type Db } from '../../db';
import { ChangeFeed, ReadCache } from '../../db/changeFeed';
import { createOrganization } from '../../db/repositories/organizations';
import { findOwnerOfNumber, setSmsEnabled, type NumberOwner } from '../../db/repositories/numbers';
import { createMigratedTestDatabase } from '../helpers/postgres';

describe('change feed', function () {
  this.timeout(60_000);
  let db: Db;
  let url: string;
  let listener: pg.Client;
  const payloads: string[] = [];
  const orgIds: string[] = [];
  const settle = () => new Promise((r) => setTimeout(r, 300));

  before(async () => {
    url = await createMigratedTestDatabase('change_feed');
    db = createDb(url);
    for (let i = 0; i < 450; i++) orgIds.push((await createOrganization(db, `Feed ${i}`)).id);
    listener = new pg.Client({ connectionString: url });
    await listener.connect();
    listener.on('notification', (m) => m.payload && payloads.push(m.payload));
    await listener.query('LISTEN acp_changes');
  });
  after(async () => {
    await listener?.end();
    await db?.destroy();
  });

  it('sends one notification per 200 rows of a statement, each entry with its version', async () => {
    // One INSERT statement of 450 rows (the test writes the rows directly; the API saves them in batches).
    await db('sms_registrations').insert(orgIds.map((orgId, i) => ({ id: `smsreg_feed_${i}`, org_id: orgId })));
    await settle();
    expect(payloads).to.have.length(3);
    const entries = payloads.flatMap((p) => {
      expect(p.startsWith('sms_registrations:')).to.equal(true);
      return p.slice('sms_registrations:'.length).split(',');
    });
    expect(entries.sort()).to.deep.equal(orgIds.map((id) => `${id}:0`).sort());
  });

  it('evicts every cached row an UPDATE statement changed, and a deleted row', async () => {
    const feed = new ChangeFeed();
    await feed.start(url);
    try {
      const cache = new ReadCache<{ version: number }>(feed, 'sms_registrations', 30, { versionOf: (r) => r.version });
      const held = [orgIds[0], orgIds[250], orgIds[449]];
      for (const id of held) expect(await cache.get(id, async () => ({ version: 0 }))).to.deep.equal({ version: 0 });
      expect(held.map((id) => cache.peek(id))).to.deep.equal([{ version: 0 }, { version: 0 }, { version: 0 }]);
      payloads.length = 0;
      await db('sms_registrations').whereIn('org_id', orgIds).update({ city: 'Austin' });
      await settle();
      expect(payloads).to.have.length(3);
      expect(held.map((id) => cache.peek(id))).to.deep.equal([undefined, undefined, undefined]);

      await cache.get(orgIds[7], async () => ({ version: 1 }));
      payloads.length = 0;
      await db('sms_registrations').where({ org_id: orgIds[7] }).delete();
      await settle();
      expect(payloads).to.deep.equal([`sms_registrations:${orgIds[7]}`]);
      expect(cache.peek(orgIds[7])).to.equal(undefined);
    } finally {
      await feed.close();
    }
  });

  it('evicts a cached number owner when the number changes, keyed by the number', async () => {
    const feed = new ChangeFeed();
    await feed.start(url);
    try {
      const cache = new ReadCache<NumberOwner>(feed, 'phone_numbers', 30);
      const e164 = '+13125550177';
      await db('phone_numbers').insert({ id: 'num_feed_1', org_id: orgIds[3], e164, status: 'purchased', sms_enabled: true });
      await settle();
      const first = await cache.get(e164, () => findOwnerOfNumber(db, e164));
      expect(first?.orgId).to.equal(orgIds[3]);
      expect(cache.peek(e164)?.number.smsEnabled).to.equal(true);
      payloads.length = 0;
      await setSmsEnabled(db, orgIds[3], 'num_feed_1', false);
      await settle();
      expect(payloads).to.deep.equal([`phone_numbers:${e164}`]);
      expect(cache.peek(e164)).to.equal(undefined);
      expect((await cache.get(e164, () => findOwnerOfNumber(db, e164)))?.number.smsEnabled).to.equal(false);
      await db('phone_numbers').where({ id: 'num_feed_1' }).delete();
      await settle();
      expect(cache.peek(e164)).to.equal(undefined);
    } finally {
      await feed.close();
    }
  });
});
