/**
 * Finer server behaviour that SDKs lean on, each checked against what the real server does (the
 * source is named in each test): start delays ended by updates and signal-with-start, queries
 * before the first workflow task, task tokens, unknown namespaces, the started event of a
 * top-level run.
 */
import { expect } from 'chai';
import { ActivityNotFoundError, Client, WithStartWorkflowOperation } from '@temporalio/client';
import { NamespaceNotFoundError, WorkflowExecutionAlreadyStartedError } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import { uniqueQueue, withWorker, startRawWorkflow, useDevServer } from './helpers';
import { addUpdate, buildIdProbe, updatable, stopSignal } from './workflows';

const ET = temporal.api.enums.v1.EventType;

describe('devserver parity with the real server', function () {
  this.timeout(30_000);
  const dev = useDevServer();
  const ns = 'default';

  const startRaw = (taskQueue: string, extra: Partial<temporal.api.workflowservice.v1.IStartWorkflowExecutionRequest> = {}) => startRawWorkflow(dev.svc, taskQueue, extra, ns);

  describe('start delay and early queries (history updateworkflow, signalwithstart and queryworkflow APIs)', () => {
    it('ends a start delay when an update arrives: the first workflow task runs at once', async () => {
      const q = uniqueQueue('delay-update');
      const total = await withWorker(dev.conn.native, q, async () => {
        const h = await dev.conn.client.workflow.start(updatable, { taskQueue: q, workflowId: uniqueQueue('delayed'), startDelay: '1 hour' });
        const n = await h.executeUpdate(addUpdate, { args: [5] });
        await h.signal(stopSignal);
        expect(n).to.equal(5);
        return h.result();
      });
      expect(total).to.equal(5);
    });

    it('ends a start delay on a second signal-with-start, not on a plain signal', async () => {
      const q = uniqueQueue('delay-sws');
      const req = (signalName: string) => ({
        namespace: ns,
        workflowId: 'sws-delayed-' + q,
        workflowType: { name: 'raw' },
        taskQueue: { name: q },
        signalName,
        workflowStartDelay: { seconds: 3600 as never },
        requestId: uniqueQueue('req'),
      });
      await dev.svc.signalWithStartWorkflowExecution(req('first'));
      await dev.svc.signalWorkflowExecution({ namespace: ns, workflowExecution: { workflowId: 'sws-delayed-' + q }, signalName: 'plain', identity: 't' });
      const h0 = await dev.svc.getWorkflowExecutionHistory({ namespace: ns, execution: { workflowId: 'sws-delayed-' + q } });
      expect((h0.history?.events ?? []).map((e) => e.eventType)).to.not.include(ET.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED);
      await dev.svc.signalWithStartWorkflowExecution(req('second'));
      const t = await dev.svc.pollWorkflowTaskQueue({ namespace: ns, taskQueue: { name: q }, identity: 't' });
      const types = (t.history?.events ?? []).map((e) => e.eventType);
      expect(types.filter((e) => e === ET.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED)).to.have.length(3);
    });

    it('answers a query to a run still in its start delay with WorkflowNotReady instead of sending it to a worker', async () => {
      const q = uniqueQueue('delay-query');
      const { workflowId } = await startRaw(q, { workflowStartDelay: { seconds: 3600 as never } });
      const err = await dev.svc
        .queryWorkflow({ namespace: ns, execution: { workflowId }, query: { queryType: 'status' } })
        .catch((e: Error & { code?: number }) => e);
      expect((err as { code?: number }).code).to.equal(9); // FAILED_PRECONDITION
      expect((err as Error).message).to.contain('Workflow task is not scheduled yet');
    });

    it('holds a query sent before the first workflow task and answers it once a worker ran that task', async () => {
      const q = uniqueQueue('early-query');
      const h = await dev.conn.client.workflow.start(updatable, { taskQueue: q, workflowId: uniqueQueue('early') });
      const pending = h.query<number>('__stack_trace').then(
        (v) => ({ ok: true as const, v }),
        (e: Error) => ({ ok: false as const, e }),
      );
      const answered = await withWorker(dev.conn.native, q, async () => {
        const r = await pending;
        await h.signal(stopSignal);
        await h.result();
        return r;
      });
      expect(answered.ok, answered.ok ? '' : String(answered.e)).to.equal(true);
    });
  });

  describe('task tokens (service/history/consts ErrActivityTaskNotFound; server token proto temporal.server.api.token.v1.Task)', () => {
    /** A task token in the real server's format: 1 namespace id, 2 workflow id, 3 run id, 4 scheduled event id, 5 attempt, 6 activity id, 8 activity type. */
    function serverToken(namespaceId: string, workflowId: string, runId: string): Uint8Array {
      const str = (field: number, v: string) => {
        const b = Buffer.from(v);
        return Buffer.concat([Buffer.from([(field << 3) | 2, b.length]), b]);
      };
      return Buffer.concat([str(1, namespaceId), str(2, workflowId), str(3, runId), Buffer.from([4 << 3, 5, 5 << 3, 1]), str(6, '1'), str(8, 'completeAsync')]);
    }

    it('answers NOT_FOUND (ActivityNotFoundError) to a real-server-format token of an activity that does not exist', async () => {
      const { namespaceInfo } = await dev.svc.describeNamespace({ namespace: ns });
      const token = serverToken(namespaceInfo!.id!, 'c787f7af-23c4-486b-98b2-f57997ad0ae6', '33fe12c8-be49-41a2-8abd-1765496ede9e');
      for (const call of [
        () => dev.conn.client.activity.complete(token, 'success'),
        () => dev.conn.client.activity.fail(token, new Error('failure')),
        () => dev.conn.client.activity.reportCancellation(token, 'cancelled'),
      ]) {
        const err = await call().catch((e: Error) => e);
        expect(err).to.be.instanceOf(ActivityNotFoundError);
      }
    });

    it('answers NOT_FOUND to the token of an activity that already finished', async () => {
      const q = uniqueQueue('done-act');
      const { workflowId } = await startRaw(q);
      const wt = await dev.svc.pollWorkflowTaskQueue({ namespace: ns, taskQueue: { name: q }, identity: 't' });
      await dev.svc.respondWorkflowTaskCompleted({
        namespace: ns,
        taskToken: wt.taskToken,
        identity: 't',
        commands: [
          {
            commandType: temporal.api.enums.v1.CommandType.COMMAND_TYPE_SCHEDULE_ACTIVITY_TASK,
            scheduleActivityTaskCommandAttributes: { activityId: '1', activityType: { name: 'a' }, taskQueue: { name: q }, startToCloseTimeout: { seconds: 30 as never } },
          },
        ],
      });
      const at = await dev.svc.pollActivityTaskQueue({ namespace: ns, taskQueue: { name: q }, identity: 't' });
      expect(at.workflowExecution?.workflowId).to.equal(workflowId);
      await dev.conn.client.activity.complete(at.taskToken!, 'first');
      const err = await dev.conn.client.activity.complete(at.taskToken!, 'again').catch((e: Error) => e);
      expect(err).to.be.instanceOf(ActivityNotFoundError);
    });
  });

  describe('unknown namespace (go.temporal.io/api serviceerror.NamespaceNotFound)', () => {
    it('answers NOT_FOUND with the NamespaceNotFoundFailure detail, which clients raise as NamespaceNotFoundError', async () => {
      const client = new Client({ connection: dev.conn.connection, namespace: 'no-such-namespace' });
      const described = await client.workflow.getHandle('any').describe().catch((e: Error) => e);
      expect(described).to.be.instanceOf(NamespaceNotFoundError);
      const schedule = await client.schedule.getHandle('any').describe().catch((e: Error) => e);
      expect(schedule).to.be.instanceOf(NamespaceNotFoundError);
      const raw = await dev.svc.describeNamespace({ namespace: 'no-such-namespace' }).catch((e: Error & { code?: number }) => e);
      expect((raw as { code?: number }).code).to.equal(5);
    });
  });

  describe('WorkflowExecutionStarted of a top-level run (history builder: unset fields stay unset)', () => {
    const startedAttrs = async (workflowId: string) => {
      const h = await dev.svc.getWorkflowExecutionHistory({ namespace: ns, execution: { workflowId } });
      return h.history!.events![0].workflowExecutionStartedEventAttributes!;
    };

    it('leaves out rootWorkflowExecution and the unset timeouts; a child names its root', async () => {
      const q = uniqueQueue('top');
      const { workflowId, runId } = await startRaw(q);
      const a = await startedAttrs(workflowId);
      expect(a.rootWorkflowExecution ?? null).to.equal(null);
      expect(a.workflowExecutionTimeout ?? null).to.equal(null);
      expect(a.workflowRunTimeout ?? null).to.equal(null);
      expect(Number(a.workflowTaskTimeout?.seconds)).to.equal(10);
      // Describe still names the run its own root.
      const d = await dev.svc.describeWorkflowExecution({ namespace: ns, execution: { workflowId } });
      expect(d.workflowExecutionInfo?.rootExecution).to.deep.include({ workflowId, runId });
      const timed = await startRaw(q, { workflowRunTimeout: { seconds: 60 as never } });
      expect(Number((await startedAttrs(timed.workflowId)).workflowRunTimeout?.seconds)).to.equal(60);

      const wt = await dev.svc.pollWorkflowTaskQueue({ namespace: ns, taskQueue: { name: q }, identity: 't' });
      const parentId = wt.workflowExecution!.workflowId!;
      const childId = uniqueQueue('child');
      await dev.svc.respondWorkflowTaskCompleted({
        namespace: ns,
        taskToken: wt.taskToken,
        identity: 't',
        commands: [
          {
            commandType: temporal.api.enums.v1.CommandType.COMMAND_TYPE_START_CHILD_WORKFLOW_EXECUTION,
            startChildWorkflowExecutionCommandAttributes: { workflowId: childId, workflowType: { name: 'raw' }, taskQueue: { name: q } },
          },
        ],
      });
      let child: Awaited<ReturnType<typeof startedAttrs>> | undefined;
      for (let i = 0; i < 50 && !child; i++) {
        child = await startedAttrs(childId).catch(() => undefined);
        if (!child) await new Promise((r) => setImmediate(r));
      }
      expect(child?.rootWorkflowExecution?.workflowId).to.equal(parentId);
      expect(child?.parentWorkflowExecution?.workflowId).to.equal(parentId);
    });
  });

  describe('user metadata (HistoryEvent.user_metadata, WorkflowExecutionConfig.user_metadata)', () => {
    it("stores a workflow's static summary and details and a timer's summary, and returns them", async () => {
      const q = uniqueQueue('meta');
      const workflowId = uniqueQueue('meta-wf');
      const h = await dev.conn.client.workflow.start('raw', { taskQueue: q, workflowId, staticSummary: 'the summary', staticDetails: 'the **details**' });
      const d = await h.describe();
      expect(await d.staticSummary()).to.equal('the summary');
      expect(await d.staticDetails()).to.equal('the **details**');
      const wt = await dev.svc.pollWorkflowTaskQueue({ namespace: ns, taskQueue: { name: q }, identity: 't' });
      expect(wt.history!.events![0].userMetadata?.summary?.data?.length).to.be.greaterThan(0);
      const summary = { metadata: { encoding: Buffer.from('json/plain') }, data: Buffer.from('"wait a bit"') };
      await dev.svc.respondWorkflowTaskCompleted({
        namespace: ns,
        taskToken: wt.taskToken,
        identity: 't',
        commands: [
          {
            commandType: temporal.api.enums.v1.CommandType.COMMAND_TYPE_START_TIMER,
            startTimerCommandAttributes: { timerId: '1', startToFireTimeout: { seconds: 3600 as never } },
            userMetadata: { summary },
          },
        ],
      });
      const hist = await dev.svc.getWorkflowExecutionHistory({ namespace: ns, execution: { workflowId } });
      const timer = hist.history!.events!.find((e) => e.eventType === ET.EVENT_TYPE_TIMER_STARTED)!;
      expect(Buffer.from(timer.userMetadata!.summary!.data!).toString()).to.equal('"wait a bit"');
      const completed = hist.history!.events!.find((e) => e.eventType === ET.EVENT_TYPE_WORKFLOW_TASK_COMPLETED)!;
      expect(completed.userMetadata ?? null).to.equal(null);
      await h.terminate();
    });
  });

  describe('build ids (GetSystemInfo buildIdBasedVersioning; common/worker_versioning BuildIds values)', () => {
    it("records the worker's build id: workflowInfo().currentBuildId, WorkflowTaskCompleted, describe and the BuildIds attribute", async () => {
      const q = uniqueQueue('build-id');
      const workflowId = uniqueQueue('build-id');
      const seen = await withWorker(dev.conn.native, q, async () => dev.conn.client.workflow.execute(buildIdProbe, { taskQueue: q, workflowId }), { buildId: '1.0' });
      expect(seen).to.deep.equal(['1.0', '1.0']);
      const h = await dev.svc.getWorkflowExecutionHistory({ namespace: ns, execution: { workflowId } });
      const completed = h.history!.events!.filter((e) => e.eventType === ET.EVENT_TYPE_WORKFLOW_TASK_COMPLETED);
      expect(completed.map((e) => e.workflowTaskCompletedEventAttributes!.workerVersion?.buildId)).to.deep.equal(['1.0', '1.0']);
      const d = await dev.svc.describeWorkflowExecution({ namespace: ns, execution: { workflowId } });
      expect(d.workflowExecutionInfo!.mostRecentWorkerVersionStamp?.buildId).to.equal('1.0');
      const list = await dev.svc.listWorkflowExecutions({ namespace: ns, query: `BuildIds = 'unversioned:1.0' AND WorkflowId = '${workflowId}'` });
      expect(list.executions).to.have.length(1);
      const ids = JSON.parse(Buffer.from(list.executions![0].searchAttributes!.indexedFields!.BuildIds.data!).toString());
      expect(ids).to.deep.equal(['unversioned', 'unversioned:1.0']);
    });
  });

  describe('update-with-start (ExecuteMultiOperation; go.temporal.io/api serviceerror.MultiOperationExecution)', () => {
    it('starts the workflow and returns the update outcome in one call, then with USE_EXISTING updates the running run', async () => {
      const q = uniqueQueue('uws');
      const workflowId = uniqueQueue('uws');
      const op = () => new WithStartWorkflowOperation(updatable, { workflowId, taskQueue: q, workflowIdConflictPolicy: 'USE_EXISTING' });
      const result = await withWorker(dev.conn.native, q, async () => {
        const first = op();
        const a = await dev.conn.client.workflow.executeUpdateWithStart(addUpdate, { args: [2], startWorkflowOperation: first });
        const h1 = await first.workflowHandle();
        const second = op();
        const b = await dev.conn.client.workflow.executeUpdateWithStart(addUpdate, { args: [3], startWorkflowOperation: second });
        const h2 = await second.workflowHandle();
        expect((await h2.describe()).runId).to.equal((await h1.describe()).runId);
        await h1.signal(stopSignal);
        return [a, b, await h1.result()];
      });
      expect(result).to.deep.equal([2, 5, 5]);
    });

    it('with FAIL refuses a running workflow: WorkflowExecutionAlreadyStartedError, the update aborted', async () => {
      const q = uniqueQueue('uws-fail');
      const workflowId = uniqueQueue('uws-fail');
      await dev.conn.client.workflow.start(updatable, { workflowId, taskQueue: q });
      const err = await dev.conn.client.workflow
        .executeUpdateWithStart(addUpdate, {
          args: [1],
          startWorkflowOperation: new WithStartWorkflowOperation(updatable, { workflowId, taskQueue: q, workflowIdConflictPolicy: 'FAIL' }),
        })
        .catch((e: Error) => e);
      expect(err).to.be.instanceOf(WorkflowExecutionAlreadyStartedError);
      const raw = await dev.svc
        .executeMultiOperation({
          namespace: ns,
          operations: [
            { startWorkflow: { workflowId, workflowType: { name: 'updatable' }, taskQueue: { name: q }, requestId: uniqueQueue('r'), workflowIdConflictPolicy: 1 } },
            { updateWorkflow: { workflowExecution: { workflowId }, request: { meta: { updateId: 'u1' }, input: { name: 'add' } } } },
          ],
        })
        .catch((e: Error & { code?: number }) => e);
      expect((raw as { code?: number }).code).to.equal(6); // ALREADY_EXISTS, the start's own code
      await dev.conn.client.workflow.getHandle(workflowId).terminate();
    });

    it('refuses an update-with-start without a conflict policy (INVALID_ARGUMENT)', async () => {
      const err = await dev.svc
        .executeMultiOperation({
          namespace: ns,
          operations: [
            { startWorkflow: { workflowId: 'x', workflowType: { name: 'raw' }, taskQueue: { name: 'q' } } },
            { updateWorkflow: { workflowExecution: { workflowId: 'x' }, request: { meta: { updateId: 'u' }, input: { name: 'add' } } } },
          ],
        })
        .catch((e: Error & { code?: number }) => e);
      expect((err as { code?: number }).code).to.equal(3);
    });
  });

  describe('activity pause, unpause and reset (WorkflowService PauseActivity / UnpauseActivity / ResetActivity)', () => {
    it('keeps a paused activity from retrying until unpaused, then dispatches at once; reset restarts at attempt 1', async () => {
      const q = uniqueQueue('pause');
      const { workflowId } = await startRaw(q);
      const wt = await dev.svc.pollWorkflowTaskQueue({ namespace: ns, taskQueue: { name: q }, identity: 't' });
      await dev.svc.respondWorkflowTaskCompleted({
        namespace: ns,
        taskToken: wt.taskToken,
        identity: 't',
        commands: [
          {
            commandType: temporal.api.enums.v1.CommandType.COMMAND_TYPE_SCHEDULE_ACTIVITY_TASK,
            scheduleActivityTaskCommandAttributes: {
              activityId: 'a1',
              activityType: { name: 'flaky' },
              taskQueue: { name: q },
              startToCloseTimeout: { seconds: 60 as never },
              // A one-hour backoff: a retry within the test can only come from unpause or reset.
              retryPolicy: { initialInterval: { seconds: 3600 as never }, backoffCoefficient: 1 },
            },
          },
        ],
      });
      const execution = { workflowId };
      const pollAct = () => dev.svc.pollActivityTaskQueue({ namespace: ns, taskQueue: { name: q }, identity: 't' });
      const first = await pollAct();
      expect(first.attempt).to.equal(1);
      await dev.svc.pauseActivity({ namespace: ns, execution, id: 'a1', identity: 't', reason: 'test' });
      const hb = await dev.svc.recordActivityTaskHeartbeat({ namespace: ns, taskToken: first.taskToken });
      expect(hb.activityPaused).to.equal(true);
      await dev.svc.respondActivityTaskFailed({ namespace: ns, taskToken: first.taskToken, failure: { message: 'boom', applicationFailureInfo: {} } });
      const paused = await dev.svc.describeWorkflowExecution({ namespace: ns, execution });
      expect(paused.pendingActivities![0].paused).to.equal(true);
      await dev.svc.unpauseActivity({ namespace: ns, execution, id: 'a1', identity: 't' });
      const second = await pollAct();
      expect(second.attempt).to.equal(2);
      await dev.svc.respondActivityTaskFailed({ namespace: ns, taskToken: second.taskToken, failure: { message: 'boom', applicationFailureInfo: {} } });
      await dev.svc.resetActivity({ namespace: ns, execution, id: 'a1', identity: 't' });
      const third = await pollAct();
      expect(third.attempt).to.equal(1);
      const missing = await dev.svc.pauseActivity({ namespace: ns, execution, id: 'nope', identity: 't' }).catch((e: { code?: number }) => e);
      expect((missing as { code?: number }).code).to.equal(5);
      await dev.conn.client.workflow.getHandle(workflowId).terminate();
    });
  });

  describe('eager workflow start (StartWorkflowExecutionRequest.request_eager_execution; NamespaceInfo.Capabilities.eager_workflow_start)', () => {
    it('hands the first workflow task to a start that asked for it, started under its identity; a plain start gets none', async () => {
      const d = await dev.svc.describeNamespace({ namespace: ns });
      expect(d.namespaceInfo?.capabilities?.eagerWorkflowStart).to.equal(true);
      const q = uniqueQueue('eager');
      const workflowId = uniqueQueue('eager');
      const r = await dev.svc.startWorkflowExecution({
        namespace: ns,
        workflowId,
        workflowType: { name: 'raw' },
        taskQueue: { name: q },
        requestId: uniqueQueue('req'),
        identity: 'eager-worker',
        requestEagerExecution: true,
      });
      const task = r.eagerWorkflowTask!;
      expect(task.taskToken?.length).to.be.greaterThan(0);
      const events = task.history?.events ?? [];
      expect(events.map((e) => e.eventType)).to.deep.equal([ET.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED, ET.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED, ET.EVENT_TYPE_WORKFLOW_TASK_STARTED]);
      expect(events[2].workflowTaskStartedEventAttributes?.identity).to.equal('eager-worker');
      await dev.svc.respondWorkflowTaskCompleted({
        taskToken: task.taskToken,
        identity: 'eager-worker',
        commands: [{ commandType: temporal.api.enums.v1.CommandType.COMMAND_TYPE_COMPLETE_WORKFLOW_EXECUTION, completeWorkflowExecutionCommandAttributes: {} }],
      });
      const described = await dev.svc.describeWorkflowExecution({ namespace: ns, execution: { workflowId } });
      expect(described.workflowExecutionInfo?.status).to.equal(temporal.api.enums.v1.WorkflowExecutionStatus.WORKFLOW_EXECUTION_STATUS_COMPLETED);
      const plain = await startRaw(q);
      const again = await dev.svc.describeWorkflowExecution({ namespace: ns, execution: { workflowId: plain.workflowId } });
      expect(again.pendingWorkflowTask?.state).to.equal(temporal.api.enums.v1.PendingWorkflowTaskState.PENDING_WORKFLOW_TASK_STATE_SCHEDULED);
      await dev.conn.client.workflow.getHandle(plain.workflowId).terminate();
    });
  });
});
