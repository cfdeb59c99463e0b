/**
 * One failing test fails only itself (DESIGN.md "Tests that stay fast"): the run's dev server is shared and
 * its time skipping is one switch for all of it, so the root hooks (test/hooks.ts with the cleanup of
 * test/helpers/temporal.ts) end what a failed test, or a finished top-level suite, left there. These tests
 * play the failed test's part: a workflow no worker will ever run (as when a failed suite's worker
 * stopped), a `withTimeSkipping` window left open and a `skipTime` that cannot end while that workflow
 * holds the clock.
 */
import crypto from 'node:crypto';
import { expect } from 'chai';
import type { WorkflowHandle } from '@temporalio/client';
import { cleanUpAfterTest, skipTime, testTemporal, uniqueTaskQueue, withTimeSkipping } from './helpers/temporal';

/** Starts a workflow on a task queue no worker polls: its first workflow task stays outstanding, which holds time skipping. */
async function orphanWorkflow(label: string): Promise<WorkflowHandle> {
  const { client } = await testTemporal();
  return client.workflow.start('isolationOrphan', { taskQueue: uniqueTaskQueue(label), workflowId: `${label}-${crypto.randomBytes(4).toString('hex')}`, args: [] });
}

/** Creates a paused schedule (it arms no timer, so it holds nothing). @returns its id */
async function pausedSchedule(label: string): Promise<string> {
  const { client } = await testTemporal();
  const scheduleId = `${label}-${crypto.randomBytes(4).toString('hex')}`;
  await client.schedule.create({
    scheduleId,
    spec: { intervals: [{ every: '1h' }] },
    action: { type: 'startWorkflow', workflowType: 'isolationOrphan', taskQueue: uniqueTaskQueue(label), args: [] },
    state: { paused: true },
  });
  return scheduleId;
}

const statusOf = async (h: WorkflowHandle) => (await h.describe()).status.name;

/** Whether the schedule still exists. */
async function scheduleExists(scheduleId: string): Promise<boolean> {
  const { client } = await testTemporal();
  return client.schedule.getHandle(scheduleId).describe().then(
    () => true,
    (e: Error) => (e.name === 'ScheduleNotFoundError' ? false : Promise.reject(e)),
  );
}

/** Resolves to `what` once `p` settles, or to 'pending' after `ms`. */
const settledWithin = <T>(p: Promise<T>, ms: number, what: string) =>
  Promise.race([p.then(() => what, () => what), new Promise<string>((r) => setTimeout(() => r('pending'), ms))]);

/** What the suites below leave for the last one to check (top-level suites of one file run in order). */
const leftBehind: { workflows: WorkflowHandle[]; schedules: string[] } = { workflows: [], schedules: [] };

describe('after a failed test, the shared dev server is as the next test expects', function () {
  // The suite's own, from before its test: the cleanup after the test leaves it (the suite's end removes it).
  let suiteSchedule = '';
  before(async () => {
    suiteSchedule = await pausedSchedule('isolation-suite');
    leftBehind.schedules.push(suiteSchedule);
  });

  it('terminates the workflows the test started, lets its skipTime end and locks time skipping again once', async () => {
    const { connection } = await testTemporal();
    const orphan = await orphanWorkflow('isolation-orphan');
    let release!: () => void;
    const window = withTimeSkipping(() => new Promise<void>((r) => (release = r)));
    const skip = skipTime(60_000);
    // The orphan's workflow task is outstanding: the clock cannot move, as in the reported run.
    expect(await settledWithin(skip, 500, 'skipped')).to.equal('pending');

    await cleanUpAfterTest(true); // what the root afterEach hook does after a failed test

    expect(await statusOf(orphan)).to.equal('TERMINATED');
    expect(await scheduleExists(suiteSchedule)).to.equal(true);
    expect(await settledWithin(skip, 0, 'skipped')).to.equal('skipped');
    // The window's own end does not lock a second time: one unlock opens time skipping again (a second
    // lock would keep this sleep waiting an hour; none left would refuse the unlock: "not locked").
    release();
    await window;
    const slept = withTimeSkipping(() => connection.testService!.sleep({ duration: { seconds: 3600 as never } }));
    expect(await settledWithin(slept, 10_000, 'slept')).to.equal('slept');
    await slept;
  });
});

describe('a passing test may leave work for the rest of its suite', function () {
  it('leaves a workflow and a schedule on the dev server', async () => {
    leftBehind.workflows.push(await orphanWorkflow('isolation-passing'));
    leftBehind.schedules.push(await pausedSchedule('isolation-passing'));
  });
});

describe('the next top-level suite finds nothing the earlier ones left', function () {
  it('finds their workflows terminated and their schedules deleted', async () => {
    expect(leftBehind.workflows).to.have.length(1);
    expect(leftBehind.schedules).to.have.length(2);
    for (const h of leftBehind.workflows) expect(await statusOf(h), h.workflowId).to.equal('TERMINATED');
    for (const id of leftBehind.schedules) expect(await scheduleExists(id), id).to.equal(false);
  });
});
