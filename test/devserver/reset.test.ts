/**
 * ResetWorkflowExecution as the real server resets (temporalio/temporal
 * service/history/api/resetworkflow, ndc/workflow_resetter.go, common/util.go
 * GetResetReapplyExcludeTypes): a new run continues the history up to the reset point's
 * WorkflowTaskStarted, then WorkflowTaskFailed (cause RESET_WORKFLOW, baseRunId/newRunId), the
 * reapplied signals and updates and a new workflow task; a running base run is terminated with the
 * reason; describe links the base run to the new one (WorkflowExecutionExtendedInfo.reset_run_id).
 */
import { expect } from 'chai';
import { temporal } from '@temporalio/proto';
import { uniqueQueue, withWorker, useDevServer } from './helpers';
import { addUpdate, updatable, stopSignal, finishSignal, waitForFinish } from './workflows';

const ET = temporal.api.enums.v1.EventType;
const Reapply = temporal.api.enums.v1.ResetReapplyType;

describe('devserver ResetWorkflowExecution', function () {
  this.timeout(30_000);
  const dev = useDevServer();
  const ns = 'default';

  async function history(workflowId: string, runId: string) {
    const h = await dev.conn.client.workflowService.getWorkflowExecutionHistory({ namespace: ns, execution: { workflowId, runId } });
    return h.history?.events ?? [];
  }

  /** The event id of the first WorkflowTaskCompleted, the Web UI's usual reset point. */
  async function firstTaskCompleted(workflowId: string, runId: string): Promise<number> {
    const ev = (await history(workflowId, runId)).find((e) => e.eventType === ET.EVENT_TYPE_WORKFLOW_TASK_COMPLETED);
    return Number(ev!.eventId);
  }

  /** ResetWorkflowExecution of the handle's first run at `point`; `extra` adds request fields. @returns the new run id */
  async function resetRun(h: { workflowId: string; firstExecutionRunId: string }, point: number, reason: string, requestId = uniqueQueue('req'), extra: Record<string, unknown> = {}): Promise<string> {
    const { runId } = await dev.conn.client.workflowService.resetWorkflowExecution({
      namespace: ns,
      workflowExecution: { workflowId: h.workflowId, runId: h.firstExecutionRunId },
      reason,
      workflowTaskFinishEventId: point as never,
      requestId,
      ...extra,
    });
    return runId!;
  }

  it('terminates the running base run, links the new run and reapplies updates by default (ALL_ELIGIBLE)', async () => {
    const q = uniqueQueue('reset-run');
    await withWorker(dev.conn.native, q, async () => {
      const h = await dev.conn.client.workflow.start(updatable, { taskQueue: q, workflowId: uniqueQueue('reset') });
      expect(await h.executeUpdate(addUpdate, { args: [5] })).to.equal(5);
      expect(await h.executeUpdate(addUpdate, { args: [7] })).to.equal(12);
      const point = await firstTaskCompleted(h.workflowId, h.firstExecutionRunId);
      let runId = await resetRun(h, point, 'bad deploy', 'reset-req-1');
      expect(runId).to.be.a('string').and.not.equal(h.firstExecutionRunId);
      // The same request id answers the same new run (resetworkflow dedups by request id).
      expect(await resetRun(h, point, 'bad deploy', 'reset-req-1')).to.equal(runId);
      // Resetting the base run again terminates the workflow's current run, the first reset's.
      const second = await resetRun(h, point, 'bad deploy', 'reset-req-2');
      const first = await dev.conn.client.workflowService.describeWorkflowExecution({ namespace: ns, execution: { workflowId: h.workflowId, runId } });
      expect(first.workflowExecutionInfo?.status).to.equal(temporal.api.enums.v1.WorkflowExecutionStatus.WORKFLOW_EXECUTION_STATUS_TERMINATED);
      runId = second;

      const base = await history(h.workflowId, h.firstExecutionRunId);
      const term = base[base.length - 1];
      expect(term.eventType).to.equal(ET.EVENT_TYPE_WORKFLOW_EXECUTION_TERMINATED);
      expect(term.workflowExecutionTerminatedEventAttributes?.reason).to.equal('bad deploy');
      expect(term.workflowExecutionTerminatedEventAttributes?.identity).to.equal('history-service');
      const described = await dev.conn.client.workflowService.describeWorkflowExecution({ namespace: ns, execution: { workflowId: h.workflowId, runId: h.firstExecutionRunId } });
      expect(described.workflowExtendedInfo?.resetRunId).to.equal(runId);

      const fresh = dev.conn.client.workflow.getHandle(h.workflowId, runId);
      await fresh.signal(stopSignal);
      expect(await fresh.result()).to.equal(12);
      const events = await history(h.workflowId, runId);
      // Events before the reset point are the base run's; the reset point becomes WorkflowTaskFailed.
      expect(events.slice(0, point - 1).map((e) => e.eventType)).to.deep.equal(base.slice(0, point - 1).map((e) => e.eventType));
      const failed = events[point - 1];
      expect(failed.eventType).to.equal(ET.EVENT_TYPE_WORKFLOW_TASK_FAILED);
      const fa = failed.workflowTaskFailedEventAttributes!;
      expect(fa.cause).to.equal(temporal.api.enums.v1.WorkflowTaskFailedCause.WORKFLOW_TASK_FAILED_CAUSE_RESET_WORKFLOW);
      expect(fa.baseRunId).to.equal(h.firstExecutionRunId);
      expect(fa.newRunId).to.equal(runId);
      expect(fa.failure?.message).to.equal('bad deploy');
      expect(events.filter((e) => e.eventType === ET.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_COMPLETED)).to.have.length(2);
    });
  });

  it('with RESET_REAPPLY_TYPE_SIGNAL reapplies signals only; a closed run can be reset', async () => {
    const q = uniqueQueue('reset-signal');
    await withWorker(dev.conn.native, q, async () => {
      const h = await dev.conn.client.workflow.start(updatable, { taskQueue: q, workflowId: uniqueQueue('reset') });
      await h.executeUpdate(addUpdate, { args: [5] });
      await h.signal(stopSignal);
      expect(await h.result()).to.equal(5);
      const point = await firstTaskCompleted(h.workflowId, h.firstExecutionRunId);
      const runId = await resetRun(h, point, 'replay without updates', uniqueQueue('req'), { resetReapplyType: Reapply.RESET_REAPPLY_TYPE_SIGNAL });
      expect(await dev.conn.client.workflow.getHandle(h.workflowId, runId).result()).to.equal(0);
    });
  });

  it('resets a run whose first workflow task started after a signal: WorkflowTaskFailed names the task\'s own scheduled event', async () => {
    const q = uniqueQueue('reset-early-signal');
    // Signalled before any worker polls: the signal lies between the first task's scheduled and started events.
    const h = await dev.conn.client.workflow.start(waitForFinish, { taskQueue: q, workflowId: uniqueQueue('reset') });
    await h.signal(finishSignal, 'Ada');
    await withWorker(dev.conn.native, q, async () => {
      expect(await h.result()).to.equal('Hello, Ada!');
      const base = await history(h.workflowId, h.firstExecutionRunId);
      expect(base.slice(0, 4).map((e) => e.eventType)).to.deep.equal([
        ET.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED,
        ET.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED,
        ET.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED,
        ET.EVENT_TYPE_WORKFLOW_TASK_STARTED,
      ]);
      const point = await firstTaskCompleted(h.workflowId, h.firstExecutionRunId);
      const runId = await resetRun(h, point, 'after an early signal');
      // The SDK replays the new run: a WorkflowTaskFailed naming another event than its task's is a nondeterminism error.
      expect(await dev.conn.client.workflow.getHandle(h.workflowId, runId).result()).to.equal('Hello, Ada!');
      const failed = (await history(h.workflowId, runId))[point - 1].workflowTaskFailedEventAttributes!;
      expect(Number(failed.scheduledEventId)).to.equal(2);
      expect(Number(failed.startedEventId)).to.equal(4);
    });
  });

  it('refuses a finish event id outside the history or not ending a workflow task (INVALID_ARGUMENT)', async () => {
    const h = await dev.conn.client.workflow.start(updatable, { taskQueue: uniqueQueue('reset-nobody'), workflowId: uniqueQueue('reset') });
    const reset = (id: number) =>
      dev.conn.client.workflowService
        .resetWorkflowExecution({ namespace: ns, workflowExecution: { workflowId: h.workflowId }, reason: 'x', workflowTaskFinishEventId: id as never, requestId: uniqueQueue('req') })
        .catch((e: { code: number; details: string }) => e);
    const outside = (await reset(99)) as { code: number; details: string };
    expect(outside.code).to.equal(3);
    expect(outside.details).to.match(/Workflow task finish ID must be > 1/);
    const notTask = (await reset(2)) as { code: number };
    expect(notTask.code).to.equal(3);
    await h.terminate('done');
  });
});
