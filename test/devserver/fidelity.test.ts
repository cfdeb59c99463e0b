/**
 * Behaviours matched to the real server: the timeout type of an activity no worker ever polls
 * (schedule-to-close only → SCHEDULE_TO_START), and worker shutdown as DescribeNamespace advertises
 * it (workerPollCompleteOnShutdown: polls complete at shutdown; a task handed to the departing
 * worker just before its ShutdownWorker is answered or times out after the short grace, never
 * failed and never stuck for the full task timeout), repeated so a race would show.
 */
import { expect } from 'chai';
import { temporal } from '@temporalio/proto';
import { Worker } from '@temporalio/worker';
import { startDevServer } from '../../devserver';
import { connect, uniqueQueue, withWorker, workflowBundle } from './helpers';
import * as activities from './workflows/activities';

const ET = temporal.api.enums.v1.EventType;

describe('devserver fidelity with the real server', function () {
  this.timeout(120_000);

  it('fails an activity that no worker polls, with only schedule-to-close, as SCHEDULE_TO_START', async () => {
    const server = await startDevServer();
    const c = await connect(server.address);
    try {
      const taskQueue = uniqueQueue('s2c-only');
      await withWorker(c.native, taskQueue, async () => {
        expect(await c.client.workflow.execute('unpolledScheduleToClose', { taskQueue, workflowId: uniqueQueue('s2c') })).to.equal('SCHEDULE_TO_START');
      });
    } finally {
      await c.close();
      await server.stop();
    }
  });

  it('advertises poll completion on shutdown; a workflow task racing the shutdown never fails and never waits out the task timeout', async () => {
    const server = await startDevServer();
    const c = await connect(server.address);
    try {
      const ns = await c.client.workflowService.describeNamespace({ namespace: 'default' });
      expect(ns.namespaceInfo?.capabilities?.workerPollCompleteOnShutdown).to.equal(true);
      for (let round = 0; round < 5; round++) {
        const taskQueue = uniqueQueue('shutdown');
        const workflowId = uniqueQueue('shutdown-wf');
        const worker = await Worker.create({ connection: c.native, taskQueue, workflowBundle: await workflowBundle(), activities });
        const running = worker.run();
        const h = await c.client.workflow.start('waitForFinish', { taskQueue, workflowId });
        // Wait until the first workflow task completed (the run is now sticky to this worker).
        for (let i = 0; i < 200; i++) {
          const evs = (await c.client.workflowService.getWorkflowExecutionHistory({ namespace: 'default', execution: { workflowId } })).history?.events ?? [];
          if (evs.some((e) => e.eventType === ET.EVENT_TYPE_WORKFLOW_TASK_COMPLETED)) break;
          await new Promise((r) => setTimeout(r, 10));
        }
        // A signal racing the shutdown: its task goes to the sticky queue or, after ShutdownWorker, the normal one.
        const signalled = h.signal('finish', `round ${round}`);
        worker.shutdown();
        await Promise.all([running, signalled]);
        // A new worker finishes the workflow well inside the 10 s workflow task timeout.
        const t0 = Date.now();
        await withWorker(c.native, taskQueue, async () => {
          expect(await h.result()).to.equal(`Hello, round ${round}!`);
        });
        expect(Date.now() - t0, `round ${round}`).to.be.lessThan(5000);
        const evs = (await c.client.workflowService.getWorkflowExecutionHistory({ namespace: 'default', execution: { workflowId } })).history?.events ?? [];
        expect(evs.map((e) => Number(e.eventType)), `round ${round}`).to.not.include(ET.EVENT_TYPE_WORKFLOW_TASK_FAILED);
      }
    } finally {
      await c.close();
      await server.stop();
    }
  });
});
