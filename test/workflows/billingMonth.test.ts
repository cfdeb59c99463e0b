/**
 * The month-closing workflow `billing-month` (docs/api-notes.md "Billing") with the real SDK against the dev
 * server: it sleeps on a durable timer to the month's end (time skipping, no real sleep), survives a
 * worker restart, closes one immutable invoice per organization whose total equals the month's usage,
 * exactly once even when the close activity runs again, emits `invoice.finalized` once each, and
 * continues as new with the next month.
 */
import crypto from 'node:crypto';
import { expect } from 'chai';
import { startTestApi, type TestApi } from '../helpers/api';
import { serverNow, skipTime, startTestWorker, testTemporal, uniqueTaskQueue, withTimeSkipping } from '../helpers/temporal';
import { createBillingActivities, ensureBillingCalendar } from '../../activities/billing';
import { recordUsage } from '../../services/billing/usage';
import { CLOSE_GRACE_MS, nextPeriod, periodOf, periodRange, previousPeriod } from '../../domain/billing/periods';
import { startWorkflow } from '../../temporal.config';

describe('billing-month workflow (dev server, real SDK)', function () {
  this.timeout(60_000);
  let t: TestApi;
  let taskQueue: string;
  let worker: { stop(): Promise<void> } | undefined;

  before(async () => {
    t = await startTestApi('billing_wf');
    taskQueue = uniqueTaskQueue('billing-wf');
  });
  after(async () => {
    await worker?.stop();
    await t?.close();
  });

  const startBillingWorker = async () => {
    await worker?.stop();
    worker = await startTestWorker(taskQueue, createBillingActivities({ db: t.db }) as never);
  };

  /** Records usage and dates it `at` (the month under test follows the server's skipped clock, not the database's). */
  const usageAt = async (orgId: string, amountCents: number, at: Date, kind = 'conversation_message') => {
    const dedupeKey = `wf:${crypto.randomUUID()}`;
    await recordUsage(t.db, orgId, { kind, amountCents, quantity: amountCents, unitPriceCents: 1, dedupeKey });
    await t.db('usage_entries').where({ org_id: orgId, dedupe_key: dedupeKey }).update({ created_at: at });
  };

  it('sleeps to the month boundary, then closes one invoice per organization equal to its usage, exactly once', async () => {
    const period = periodOf(await serverNow());
    const { start, end } = periodRange(period);
    const a = await t.org('A');
    const b = await t.org('B');
    const idle = await t.org('Idle');
    // Organizations must exist before the month ends to be billed for it.
    await t.db('organizations').whereIn('id', [a.orgId, b.orgId, idle.orgId]).update({ created_at: start });
    const mid = new Date(start.getTime() + 3 * 86_400_000);
    await usageAt(a.orgId, 120, mid);
    await usageAt(a.orgId, 30, new Date(end.getTime() - 1), 'phone_number_purchase');
    await usageAt(a.orgId, 5000, new Date(end.getTime())); // next month
    await usageAt(a.orgId, 7000, new Date(start.getTime() - 1)); // previous month
    await usageAt(b.orgId, 42, mid);

    await startBillingWorker();
    const { client } = await testTemporal();
    const workflowId = `billing-month-test-${crypto.randomBytes(4).toString('hex')}`;
    const handle = await startWorkflow({ client, taskQueue }, 'billingMonth', { workflowId, args: [{ period, once: true, batchSize: 2 }], orgId: null });
    await new Promise((r) => setTimeout(r, 500));
    expect(await t.db('invoices').count({ n: '*' }).first()).to.deep.equal({ n: 0 }); // still sleeping: time is locked
    await startBillingWorker(); // a worker restart mid-sleep: the durable timer survives
    const result = await withTimeSkipping(() => handle.result());
    expect(result).to.deep.equal({ period, invoices: 3, totalCents: 192 });

    const invoices = await t.db('invoices').where({ period }).orderBy('org_id');
    expect(invoices).to.have.length(3);
    const byOrg = new Map(invoices.map((i: any) => [i.org_id, i]));
    expect(Number(byOrg.get(a.orgId).total_cents)).to.equal(150);
    expect(byOrg.get(a.orgId).lines).to.deep.equal([
      { kind: 'conversation_message', quantity: 120, unitPriceCents: 1, amountCents: 120, entries: 1 },
      { kind: 'phone_number_purchase', quantity: 30, unitPriceCents: 1, amountCents: 30, entries: 1 },
    ]);
    expect(Number(byOrg.get(b.orgId).total_cents)).to.equal(42);
    expect(Number(byOrg.get(idle.orgId).total_cents)).to.equal(0);

    // The close activity running again (a retry after a lost completion) changes nothing and emits nothing.
    const again = await createBillingActivities({ db: t.db }).closeBillingPeriodBatch({ period, afterOrgId: '' });
    expect(again).to.include({ invoices: 0, totalCents: 0 });
    const rerun = await startWorkflow({ client, taskQueue }, 'billingMonth', { workflowId: `${workflowId}-again`, args: [{ period, once: true }], orgId: null });
    expect(await withTimeSkipping(() => rerun.result())).to.deep.equal({ period, invoices: 0, totalCents: 0 });
    expect(await t.db('invoices').where({ period }).count({ n: '*' }).first()).to.deep.equal({ n: 3 });
    const finalized = await t.db('events').where({ org_id: a.orgId, type: 'invoice.finalized' });
    expect(finalized).to.have.length(1);
    expect(finalized[0].data).to.include({ invoiceId: byOrg.get(a.orgId).id, period, totalCents: 150, currency: 'USD' });

    // Closed invoices are immutable, listed by the API, and only to their own organization.
    let refused = '';
    await t.db('invoices').where({ id: byOrg.get(a.orgId).id }).update({ total_cents: 1 }).catch((e: Error) => (refused = e.message));
    expect(refused).to.match(/append-only/);
    const listed = await t.call('GET', '/billing/invoices', { key: a.key });
    const closed = listed.body.data.items.find((i: any) => i.period === period && i.status === 'closed');
    expect(closed).to.include({ id: byOrg.get(a.orgId).id, totalCents: 150 });
    const theirs = await t.call('GET', '/billing/invoices', { key: b.key });
    expect(theirs.body.data.items.filter((i: any) => i.status === 'closed').map((i: any) => i.totalCents)).to.deep.equal([42]);
  });

  it('is on a schedule: created once, it starts a close of the month that ended at 00:01 UTC on the 1st', async () => {
    await startBillingWorker();
    const { client } = await testTemporal();
    const scheduleId = `billing-month-test-${crypto.randomBytes(4).toString('hex')}`;
    expect(await ensureBillingCalendar({ client, taskQueue, scheduleId })).to.equal(true);
    expect(await ensureBillingCalendar({ client, taskQueue, scheduleId })).to.equal(false); // every worker's start after the first
    const schedule = client.schedule.getHandle(scheduleId);
    try {
      const now = await serverNow();
      const period = periodOf(now);
      const { start, end } = periodRange(period);
      const org = await t.org('Scheduled');
      await t.db('organizations').where({ id: org.orgId }).update({ created_at: start });
      await usageAt(org.orgId, 77, new Date(Math.max(start.getTime(), now.getTime() - 1000)));
      const d = await schedule.describe();
      expect(d.info.nextActionTimes[0].getTime()).to.equal(end.getTime() + CLOSE_GRACE_MS);
      // Skip to the month boundary: the schedule starts billingMonth, which closes the month that ended.
      await skipTime(end.getTime() + CLOSE_GRACE_MS - now.getTime() + 1000);
      let invoice: any;
      for (let i = 0; i < 200 && !invoice; i++) {
        invoice = await t.db('invoices').where({ org_id: org.orgId, period }).first();
        if (!invoice) await new Promise((r) => setTimeout(r, 50));
      }
      expect(Number(invoice?.total_cents)).to.equal(77);
      const action = (await schedule.describe()).info.recentActions[0];
      expect(action.scheduledAt.getTime()).to.equal(end.getTime() + CLOSE_GRACE_MS);
      // The run is done (time stays locked: unlocking it would fire next month's close as well).
      const run = client.workflow.getHandle(action.action.workflow.workflowId, action.action.workflow.firstExecutionRunId);
      expect((await run.result()) as unknown).to.deep.include({ period });
    } finally {
      // Nothing the schedule started may stay queued on this suite's task queue once its worker stops.
      for (const r of (await schedule.describe()).info.runningActions) await client.workflow.getHandle(r.workflow.workflowId).terminate('test done');
      await schedule.delete();
    }
  });

  it('continues as new with the next month after closing one', async () => {
    await startBillingWorker();
    const { client } = await testTemporal();
    const period = previousPeriod(periodOf(await serverNow())); // ended: closed at once
    const workflowId = `billing-month-test-${crypto.randomBytes(4).toString('hex')}`;
    const handle = await startWorkflow({ client, taskQueue }, 'billingMonth', { workflowId, args: [{ period }], orgId: null });
    try {
      const deadline = Date.now() + 20_000;
      let runId = handle.firstExecutionRunId;
      while (runId === handle.firstExecutionRunId && Date.now() < deadline) {
        runId = (await client.workflow.getHandle(workflowId).describe()).runId;
        if (runId === handle.firstExecutionRunId) await new Promise((r) => setTimeout(r, 100));
      }
      expect(runId).to.not.equal(handle.firstExecutionRunId);
      expect(await t.db('invoices').where({ period }).count({ n: '*' }).first()).to.deep.equal({ n: await t.db('organizations').count({ n: '*' }).first().then((r: any) => r.n) });
      expect(await t.db('invoices').where({ period: nextPeriod(period) }).count({ n: '*' }).first()).to.deep.equal({ n: 0 });
    } finally {
      await client.workflow.getHandle(workflowId).terminate('test done');
    }
  });
});
