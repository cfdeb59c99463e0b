/**
 * Schedules and cron workflows against the dev server with the real SDK client and worker, on a
 * time-skipping server that starts locked: `UnlockTimeSkippingWithSleep` moves the virtual clock
 * through the schedule's times (each started workflow runs before the next jump).
 */
import { expect } from 'chai';
import { temporal } from '@temporalio/proto';
import { Connection, ScheduleAlreadyRunning, ScheduleOverlapPolicy } from '@temporalio/client';
import { startDevServer } from '../../devserver';
import { InternalConnectionOptionsSymbol } from '@temporalio/client/lib/connection';
import { createTestDatabase } from '../helpers/postgres';
import { connect, uniqueQueue, withWorker } from './helpers';

const ET = temporal.api.enums.v1.EventType;
const HOUR = 3_600_000;

const testConnections = new Map<string, Promise<Connection>>();
/** A connection with the TestService (as @temporalio/testing opens it) for a client's server. */
function testServiceOf(connection: Connection): Promise<Connection> {
  const address = connection.options.address;
  let p = testConnections.get(address);
  if (!p) {
    p = Connection.connect({ address, [InternalConnectionOptionsSymbol]: { supportsTestService: true } } as never);
    testConnections.set(address, p);
  }
  return p;
}

/** Skips `ms` of virtual time (the server is locked outside this call). */
async function skip(connection: Connection, ms: number): Promise<void> {
  await (await testServiceOf(connection)).testService!.unlockTimeSkippingWithSleep({ duration: { seconds: Math.floor(ms / 1000) } as never });
}

async function now(connection: Connection): Promise<number> {
  const t = (await (await testServiceOf(connection)).testService!.getCurrentTime({})).time!;
  return Number(t.seconds) * 1000 + Math.floor((t.nanos ?? 0) / 1e6);
}

describe('devserver schedules and cron workflows', function () {
  this.timeout(60_000);
  after(async () => {
    for (const p of testConnections.values()) await (await p).close();
  });

  it('fires interval and cron specs on the skipped clock; trigger, pause/unpause, backfill; a duplicate id is refused', async () => {
    const server = await startDevServer({ timeSkipping: true, timeSkippingInitiallyLocked: true });
    const c = await connect(server.address);
    try {
      const taskQueue = uniqueQueue('sched');
      await withWorker(c.native, taskQueue, async () => {
        const action = { type: 'startWorkflow' as const, workflowType: 'echo', args: ['tick'], taskQueue };
        const every = await c.client.schedule.create({ scheduleId: uniqueQueue('every'), spec: { intervals: [{ every: '1h' }] }, action });
        const cron = await c.client.schedule.create({ scheduleId: uniqueQueue('cron'), spec: { cronExpressions: ['30 * * * *'] }, action });
        await skip(c.connection, 3 * HOUR);
        const d1 = await every.describe();
        const d2 = await cron.describe();
        expect(d1.info.recentActions).to.have.length(3);
        expect(d2.info.recentActions).to.have.length(3);
        // Cron strings come back as structured calendars, as on the real server.
        expect(d2.spec.calendars?.[0].minute).to.deep.equal([{ start: 30, end: 30, step: 1 }]);
        for (const a of d1.info.recentActions) {
          expect(a.scheduledAt.getTime() % HOUR).to.equal(0);
          const wf = c.client.workflow.getHandle(a.action.workflow.workflowId, a.action.workflow.firstExecutionRunId);
          expect(await wf.result()).to.equal('tick');
        }
        expect(d1.info.nextActionTimes[0].getTime() % HOUR).to.equal(0);

        await every.trigger();
        expect((await every.describe()).info.numActionsTaken).to.equal(4);

        await every.pause('maintenance');
        await skip(c.connection, 2 * HOUR);
        const paused = await every.describe();
        expect(paused.state.paused).to.equal(true);
        expect(paused.state.note).to.equal('maintenance');
        expect(paused.info.numActionsTaken).to.equal(4);
        await every.unpause('back');
        await skip(c.connection, HOUR);
        expect((await every.describe()).info.numActionsTaken).to.equal(5);

        // Backfill five past hours with ALLOW_ALL: five more starts with their nominal times.
        const top = Math.floor((await now(c.connection)) / HOUR) * HOUR;
        await every.backfill({ start: new Date(top - 10 * HOUR), end: new Date(top - 6 * HOUR), overlap: ScheduleOverlapPolicy.ALLOW_ALL });
        const bf = await every.describe();
        expect(bf.info.numActionsTaken).to.equal(10);
        const nominal = bf.info.recentActions.map((a) => a.scheduledAt.getTime());
        for (let h = 10; h >= 6; h--) expect(nominal).to.include(top - h * HOUR);

        const dup = await c.client.schedule.create({ scheduleId: every.scheduleId, spec: { intervals: [{ every: '1h' }] }, action }).then(
          () => null,
          (e) => e,
        );
        expect(dup).to.be.instanceOf(ScheduleAlreadyRunning);
        const listed: string[] = [];
        for await (const s of c.client.schedule.list()) listed.push(s.scheduleId);
        expect(listed).to.include.members([every.scheduleId, cron.scheduleId]);
        await every.delete();
        await cron.delete();
        const gone = await every.describe().then(
          () => null,
          (e) => e,
        );
        expect(gone?.name).to.equal('ScheduleNotFoundError');
      });
    } finally {
      await c.close();
      await server.stop();
    }
  });

  it('applies overlap policies: SKIP counts skipped times, BUFFER_ONE starts one buffered run when the running one closes', async () => {
    const server = await startDevServer({ timeSkipping: true, timeSkippingInitiallyLocked: true });
    const c = await connect(server.address);
    try {
      const taskQueue = uniqueQueue('overlap');
      await withWorker(c.native, taskQueue, async () => {
        const action = { type: 'startWorkflow' as const, workflowType: 'waitForFinish', taskQueue };
        const skipS = await c.client.schedule.create({ scheduleId: uniqueQueue('skip'), spec: { intervals: [{ every: '1h' }] }, action, policies: { overlap: ScheduleOverlapPolicy.SKIP } });
        const buf = await c.client.schedule.create({ scheduleId: uniqueQueue('buf'), spec: { intervals: [{ every: '1h' }] }, action, policies: { overlap: ScheduleOverlapPolicy.BUFFER_ONE } });
        await skip(c.connection, 3 * HOUR);
        const s = await skipS.describe();
        expect(s.info.numActionsTaken).to.equal(1);
        expect(s.info.numActionsSkippedOverlap).to.equal(2);
        const b = await buf.describe();
        expect(b.info.numActionsTaken).to.equal(1);
        expect(b.info.runningActions).to.have.length(1);
        // Finishing the running one starts the single buffered time.
        await c.client.workflow.getHandle(b.info.runningActions[0].workflow.workflowId).signal('finish', 'done');
        for (let i = 0; i < 100 && (await buf.describe()).info.numActionsTaken < 2; i++) await new Promise((r) => setTimeout(r, 50));
        expect((await buf.describe()).info.numActionsTaken).to.equal(2);
        for (const sch of [skipS, buf]) {
          for (const r of (await sch.describe()).info.runningActions) await c.client.workflow.getHandle(r.workflow.workflowId).terminate('test done');
          await sch.delete();
        }
      });
    } finally {
      await c.close();
      await server.stop();
    }
  });

  it('runs cron workflows: the first run waits for the first tick, each run continues at the next cron time with the last result', async () => {
    const server = await startDevServer({ timeSkipping: true, timeSkippingInitiallyLocked: true });
    const c = await connect(server.address);
    try {
      const taskQueue = uniqueQueue('cronwf');
      await withWorker(c.native, taskQueue, async () => {
        const workflowId = uniqueQueue('cron-wf');
        const first = await c.client.workflow.start('cronCounter', { taskQueue, workflowId, cronSchedule: '0 * * * *' });
        await skip(c.connection, 3 * HOUR);
        const runs: { runId: string; status: string }[] = [];
        for await (const r of c.client.workflow.list({ query: `WorkflowId = '${workflowId}'` })) runs.push({ runId: r.runId, status: r.status.name });
        expect(runs.length).to.equal(4); // three completed hourly runs and the next one waiting
        const hist = (await c.client.workflowService.getWorkflowExecutionHistory({ namespace: 'default', execution: { workflowId, runId: first.firstExecutionRunId } })).history!.events!;
        const started = hist[0].workflowExecutionStartedEventAttributes!;
        expect(started.cronSchedule).to.equal('0 * * * *');
        expect(Number(started.firstWorkflowTaskBackoff?.seconds ?? 0)).to.be.greaterThan(0);
        const completed = hist[hist.length - 1];
        expect(completed.eventType).to.equal(ET.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED);
        const nextRunId = completed.workflowExecutionCompletedEventAttributes!.newExecutionRunId!;
        const next = (await c.client.workflowService.getWorkflowExecutionHistory({ namespace: 'default', execution: { workflowId, runId: nextRunId } })).history!.events!;
        const nextStarted = next[0].workflowExecutionStartedEventAttributes!;
        expect(nextStarted.initiator).to.equal(temporal.api.enums.v1.ContinueAsNewInitiator.CONTINUE_AS_NEW_INITIATOR_CRON_SCHEDULE);
        expect(Number(nextStarted.firstWorkflowTaskBackoff?.seconds)).to.be.within(3599, 3600);
        // The third run saw the second run's result: 1, 2, 3.
        const third = (await c.client.workflow.getHandle(workflowId).describe()).runId;
        expect(third).to.not.equal(first.firstExecutionRunId);
        const bad = await c.client.workflow.start('cronCounter', { taskQueue, workflowId: uniqueQueue('bad-cron'), cronSchedule: 'not a cron' }).then(
          () => null,
          (e) => e,
        );
        expect(String(bad?.cause?.message ?? bad?.message)).to.match(/invalid cron schedule/);
        // A child workflow with a cron schedule: its runs follow the same cron, each naming the parent.
        const childId = uniqueQueue('cron-child');
        const parentId = uniqueQueue('cron-parent');
        expect(await c.client.workflow.execute('cronParent', { taskQueue, workflowId: parentId, args: [childId] })).to.equal(childId);
        await skip(c.connection, 2 * HOUR);
        const childRuns: string[] = [];
        for await (const r of c.client.workflow.list({ query: `WorkflowId = '${childId}'` })) childRuns.push(r.runId);
        expect(childRuns.length).to.equal(3);
        for (const runId of childRuns) {
          const ev = (await c.client.workflowService.getWorkflowExecutionHistory({ namespace: 'default', execution: { workflowId: childId, runId } })).history!.events![0];
          expect(ev.workflowExecutionStartedEventAttributes?.parentWorkflowExecution?.workflowId).to.equal(parentId);
        }
        await c.client.workflow.getHandle(childId).terminate('test done');
        await c.client.workflow.getHandle(workflowId).terminate('test done');
      });
    } finally {
      await c.close();
      await server.stop();
    }
  });

  it('keeps a schedule and a waiting cron workflow across a restart and fires both on the new life', async () => {
    const databaseUrl = await createTestDatabase('devserver_schedules');
    const taskQueue = uniqueQueue('sched-durable');
    const scheduleId = uniqueQueue('durable-schedule');
    const s1 = await startDevServer({ databaseUrl, timeSkipping: true, timeSkippingInitiallyLocked: true });
    const c1 = await connect(s1.address);
    await c1.client.schedule.create({ scheduleId, spec: { intervals: [{ every: '1h' }] }, action: { type: 'startWorkflow', workflowType: 'echo', args: ['x'], taskQueue } });
    await c1.client.schedule.getHandle(scheduleId).pause('before restart');
    // A cron workflow waiting for its first tick is kept too.
    const cronId = uniqueQueue('durable-cron');
    await c1.client.workflow.start('cronCounter', { taskQueue, workflowId: cronId, cronSchedule: '0 * * * *' });
    await c1.close();
    await s1.stop();
    const s2 = await startDevServer({ databaseUrl, timeSkipping: true, timeSkippingInitiallyLocked: true });
    const c2 = await connect(s2.address);
    try {
      await withWorker(c2.native, taskQueue, async () => {
        const h = c2.client.schedule.getHandle(scheduleId);
        const d = await h.describe();
        expect(d.state.paused).to.equal(true);
        expect(d.state.note).to.equal('before restart');
        await h.unpause();
        await skip(c2.connection, 2 * HOUR);
        expect((await h.describe()).info.numActionsTaken).to.equal(2);
        await h.delete();
        const cronRuns: string[] = [];
        for await (const r of c2.client.workflow.list({ query: `WorkflowId = '${cronId}'` })) cronRuns.push(r.status.name);
        expect(cronRuns.sort()).to.deep.equal(['COMPLETED', 'COMPLETED', 'RUNNING']);
        await c2.client.workflow.getHandle(cronId).terminate('test done');
      });
    } finally {
      await c2.close();
      await s2.stop();
    }
  });
});
