/**
 * The webhook outbox's admission query (db/repositories/events.ts `lockOutboxBatch`, docs/operations.md "Fair
 * sharing"): per endpoint and per organization, only the oldest rows that fit under the limits of deliveries admitted
 * and not yet attempted, whatever the backlog, and each row knows its endpoint (migration 20261129002601).
 */
import { expect } from 'chai';
import { createDb, type Db } from '../../db';
import { createOrganization } from '../../db/repositories/organizations';
import { createEndpoint } from '../../db/repositories/webhookEndpoints';
import { deleteOutboxRows, enqueueDeliveryRun, lockOutboxBatch, type OutboxRow } from '../../db/repositories/events';
import { emitEvent } from '../../events/emit';
import { createMigratedTestDatabase } from '../helpers/postgres';

const ADMISSION = { perEndpoint: 4, perOrg: 8, leaseMs: 300_000 };
const at = new Date().toISOString();
const completed = (i: number) => ({ callId: `call_${i}`, direction: 'outbound', from: '+15550001111', to: '+15550002222', startedAt: at, endedAt: at, durationSeconds: 30 }) as never;

describe('webhook outbox admission: the oldest rows each endpoint and organization may start, whatever the backlog', function () {
  this.timeout(60_000);
  let db: Db;

  before(async () => {
    db = createDb(await createMigratedTestDatabase('outbox_admission'));
  });
  after(async () => {
    await db?.destroy();
  });

  /** An organization with `n` endpoints subscribed to call.completed. */
  async function orgWithEndpoints(name: string, n: number): Promise<{ orgId: string; endpoints: string[] }> {
    const org = await createOrganization(db, name);
    const endpoints: string[] = [];
    for (let i = 0; i < n; i++) endpoints.push((await createEndpoint(db, org.id, { url: `https://hooks.example/${name}/${i}`, description: null, eventTypes: ['call.completed'], enabled: true, secretSealed: 'sealed', secretPrefix: 'whsec_x' })).id);
    return { orgId: org.id, endpoints };
  }

  /** Locks the admitted rows, then marks them started, as the dispatcher does. */
  const admit = (): Promise<OutboxRow[]> =>
    db.transaction(async (trx) => {
      const rows = await lockOutboxBatch(trx, 100, ADMISSION);
      await deleteOutboxRows(trx, rows);
      return rows;
    });

  it('admits at most 4 per endpoint and 8 per organization, oldest first, and another organization\'s younger rows at once; the rest only as admitted ones are attempted', async () => {
    const a = await orgWithEndpoints('flood', 3);
    for (let i = 0; i < 30; i++) await emitEvent(db, a.orgId, 'call.completed', completed(i));
    const b = await orgWithEndpoints('quiet', 1);
    await emitEvent(db, b.orgId, 'call.completed', completed(1000));
    const rows = await db('webhook_outbox').whereIn('org_id', [a.orgId, b.orgId]).orderBy('id');
    const endpointOf = new Map(rows.map((r) => [r.delivery_id as string, r.endpoint_id as string]));
    // Every row carries its delivery's endpoint.
    const deliveries = await db('webhook_deliveries').whereIn('id', [...endpointOf.keys()]).select('id', 'endpoint_id');
    for (const d of deliveries) expect(endpointOf.get(d.id)).to.equal(d.endpoint_id);

    const first = await admit();
    const aRows = first.filter((r) => r.orgId === a.orgId);
    expect(first.filter((r) => r.orgId === b.orgId)).to.have.length(1);
    // 8 of A's 90 rows: the oldest 3 + 3 + 2 across its endpoints (events go to the 3 endpoints in turn), no endpoint over 4.
    expect(aRows.map((r) => r.id)).to.deep.equal(rows.filter((r) => r.org_id === a.orgId).slice(0, 8).map((r) => Number(r.id)));
    const perEndpoint = new Map<string, number>();
    for (const r of aRows) perEndpoint.set(endpointOf.get(r.deliveryId)!, (perEndpoint.get(endpointOf.get(r.deliveryId)!) ?? 0) + 1);
    expect(Math.max(...perEndpoint.values())).to.be.at.most(4);
    // Full: nothing more until admitted deliveries are attempted.
    expect(await admit()).to.have.length(0);
    // Two of A's admitted deliveries attempted (no longer waiting for their first attempt): two more rows go.
    await db('webhook_deliveries').whereIn('id', aRows.slice(0, 2).map((r) => r.deliveryId)).update({ admitted_run: null });
    const next = await admit();
    expect(next).to.have.length(2);
    expect(Math.min(...next.map((r) => r.id))).to.be.above(Math.max(...aRows.map((r) => r.id)));
  });

  it('a manual retry\'s run waits in the outbox with its endpoint', async () => {
    const c = await orgWithEndpoints('retry', 1);
    const { deliveryIds } = await emitEvent(db, c.orgId, 'call.completed', completed(1));
    await db.transaction((trx) => enqueueDeliveryRun(trx, c.orgId, deliveryIds[0], 2));
    const row = await db('webhook_outbox').where({ org_id: c.orgId, delivery_id: deliveryIds[0], run: 2 }).first();
    expect(row.endpoint_id).to.equal(c.endpoints[0]);
  });
});
