/**
 * Workflow updates against the dev server with the real SDK client and worker:
 * UpdateWorkflowExecution / PollWorkflowExecutionUpdate through `executeUpdate`, `startUpdate` and
 * the handle's `result()`, the history events the real server writes, validators, deduplication
 * by update id, updates racing continue-as-new, and an accepted update surviving a restart.
 */
import { expect } from 'chai';
import { temporal } from '@temporalio/proto';
import { WorkflowUpdateFailedError, WorkflowUpdateStage } from '@temporalio/client';
import { startDevServer } from '../../devserver';
import { createTestDatabase } from '../helpers/postgres';
import { Worker } from '@temporalio/worker';
import { connect, uniqueQueue, withWorker, workflowBundle } from './helpers';

const ET = temporal.api.enums.v1.EventType;

async function historyTypes(client: Awaited<ReturnType<typeof connect>>['client'], workflowId: string, runId?: string): Promise<number[]> {
  const evs = (await client.workflowService.getWorkflowExecutionHistory({ namespace: 'default', execution: { workflowId, runId } })).history?.events ?? [];
  return evs.map((e) => Number(e.eventType));
}

describe('devserver workflow updates', function () {
  this.timeout(60_000);

  it('accepts and completes updates, rejects by validator without events, deduplicates by update id, runs an activity in a handler', async () => {
    const server = await startDevServer();
    const c = await connect(server.address);
    try {
      const taskQueue = uniqueQueue('upd');
      await withWorker(c.native, taskQueue, async () => {
        const h = await c.client.workflow.start('updatable', { taskQueue, workflowId: uniqueQueue('upd-wf') });
        expect(await h.executeUpdate('add', { args: [5] })).to.equal(5);
        // startUpdate returns once ACCEPTED; result() polls PollWorkflowExecutionUpdate.
        const started = await h.startUpdate('add', { args: [2], waitForStage: WorkflowUpdateStage.ACCEPTED, updateId: 'same-id' });
        expect(await started.result()).to.equal(7);
        // The same update id again: the first outcome, the handler does not run twice.
        expect(await h.executeUpdate('add', { args: [2], updateId: 'same-id' })).to.equal(7);
        const rejected = await h.executeUpdate('add', { args: [-1] }).then(
          () => null,
          (e) => e,
        );
        expect(rejected).to.be.instanceOf(WorkflowUpdateFailedError);
        expect(String(rejected.cause?.message)).to.contain('negative amount -1');
        expect(await h.executeUpdate('greetViaActivity', { args: ['ada'] })).to.equal('Hello, ada!');
        // An accepted update whose handler waits: result() waits for its completion.
        const waiting = await h.startUpdate('waitForRelease', { waitForStage: WorkflowUpdateStage.ACCEPTED });
        await h.signal('release');
        expect(await waiting.result()).to.equal('released');
        // A handle obtained later by id polls the same outcome.
        expect(await h.getUpdateHandle<number>('same-id').result()).to.equal(7);
        await h.signal('stop');
        expect(await h.result()).to.equal(7);
        const types = await historyTypes(c.client, h.workflowId);
        // add(5), add(2), greetViaActivity, waitForRelease: accepted and completed; the rejected one left nothing.
        expect(types.filter((t) => t === ET.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED)).to.have.length(4);
        expect(types.filter((t) => t === ET.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_COMPLETED)).to.have.length(4);
        // The history replays with the official SDK (a fresh worker without sticky cache).
        const hist = await c.client.workflow.getHandle(h.workflowId).fetchHistory();
        await Worker.runReplayHistory({ workflowBundle: await workflowBundle() }, hist);
      });
    } finally {
      await c.close();
      await server.stop();
    }
  });

  it('updates racing continue-as-new each complete exactly once on some run of the chain', async () => {
    const server = await startDevServer();
    const c = await connect(server.address);
    try {
      const taskQueue = uniqueQueue('upd-can');
      await withWorker(c.native, taskQueue, async () => {
        const workflowId = uniqueQueue('upd-can-wf');
        const h = await c.client.workflow.start('updatableChain', { taskQueue, workflowId, args: [6] });
        const results = await Promise.all(
          Array.from({ length: 8 }, (_, i) =>
            new Promise((r) => setTimeout(r, i * 5)).then(() => c.client.workflow.getHandle(workflowId).executeUpdate<number, [number]>('add', { args: [1], updateId: `u-${i}` })),
          ),
        );
        for (const r of results) expect(r).to.be.a('number');
        // Every run of the chain: each update id accepted and completed exactly once overall.
        const runs = await c.client.workflow.list({ query: `WorkflowId = '${workflowId}'` });
        let accepted = 0;
        let completed = 0;
        for await (const run of runs) {
          const types = await historyTypes(c.client, workflowId, run.runId);
          accepted += types.filter((t) => t === ET.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED).length;
          completed += types.filter((t) => t === ET.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_COMPLETED).length;
        }
        expect(accepted).to.equal(8);
        expect(completed).to.equal(8);
        await c.client.workflow.getHandle(workflowId).terminate('test done');
        void h;
      });
    } finally {
      await c.close();
      await server.stop();
    }
  });

  it('keeps an accepted update across a restart: its result arrives after the new life', async () => {
    const databaseUrl = await createTestDatabase('devserver_updates');
    const taskQueue = uniqueQueue('upd-durable');
    const workflowId = uniqueQueue('upd-durable-wf');
    const s1 = await startDevServer({ databaseUrl });
    const c1 = await connect(s1.address);
    await withWorker(c1.native, taskQueue, async () => {
      const h = await c1.client.workflow.start('updatable', { taskQueue, workflowId });
      await h.startUpdate('waitForRelease', { waitForStage: WorkflowUpdateStage.ACCEPTED, updateId: 'durable-update' });
      expect(await h.executeUpdate('add', { args: [3], updateId: 'done-before' })).to.equal(3);
    });
    await c1.close();
    await s1.stop();
    const s2 = await startDevServer({ databaseUrl, port: 0 });
    const c2 = await connect(s2.address);
    try {
      await withWorker(c2.native, taskQueue, async () => {
        const h = c2.client.workflow.getHandle(workflowId);
        expect(await h.getUpdateHandle<number>('done-before').result()).to.equal(3);
        // The same id again after the restart is deduplicated.
        expect(await h.executeUpdate('add', { args: [3], updateId: 'done-before' })).to.equal(3);
        await h.signal('release');
        expect(await h.getUpdateHandle<string>('durable-update').result()).to.equal('released');
        await h.signal('stop');
        expect(await h.result()).to.equal(3);
      });
    } finally {
      await c2.close();
      await s2.stop();
    }
  });
});
