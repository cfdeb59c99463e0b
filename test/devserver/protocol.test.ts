/**
 * Workflow-task protocol details checked with raw WorkflowService calls (a hand-driven worker),
 * where timing must be deterministic: held events, UNHANDLED_COMMAND, sticky schedule-to-start
 * fallback and an unavailable sticky worker (StickyWorkerUnavailable), workflow-task timeouts with transient attempts, server-filled activity defaults, and
 * queries arriving while a workflow task is in flight, and the id reuse policy's refusals of a start
 * over a closed run (ALREADY_EXISTS with the real server's messages, service/history/api
 * create_workflow_util.go).
 */
import { expect } from 'chai';
import { temporal } from '@temporalio/proto';
import { msToTs } from '@temporalio/common/lib/time';
import { uniqueQueue, startRawWorkflow, useDevServer } from './helpers';

const ET = temporal.api.enums.v1.EventType;

describe('devserver workflow-task protocol (raw gRPC)', function () {
  this.timeout(20_000);
  const dev = useDevServer();
  const ns = 'default';

  const start = (taskQueue: string, extra: Partial<temporal.api.workflowservice.v1.IStartWorkflowExecutionRequest> = {}) => startRawWorkflow(dev.svc, taskQueue, extra, ns);
  const poll = (name: string) => dev.svc.pollWorkflowTaskQueue({ namespace: ns, taskQueue: { name }, identity: 'raw-test' });
  async function events(workflowId: string) {
    const r = await dev.svc.getWorkflowExecutionHistory({ namespace: ns, execution: { workflowId } });
    return (r.history?.events ?? []).map((e) => ET[e.eventType!].replace('EVENT_TYPE_', ''));
  }
  const signal = (workflowId: string, name = 's') => dev.svc.signalWorkflowExecution({ namespace: ns, workflowExecution: { workflowId }, signalName: name, identity: 't' });

  it('holds events that arrive during a workflow task and writes them after its completion', async () => {
    const q = uniqueQueue('held');
    const { workflowId } = await start(q);
    const t = await poll(q);
    expect(Number(t.startedEventId)).to.equal(3);
    await signal(workflowId);
    expect(await events(workflowId)).to.deep.equal(['WORKFLOW_EXECUTION_STARTED', 'WORKFLOW_TASK_SCHEDULED', 'WORKFLOW_TASK_STARTED']);
    await dev.svc.respondWorkflowTaskCompleted({ namespace: ns, taskToken: t.taskToken, commands: [], identity: 'raw-test' });
    expect((await events(workflowId)).slice(3)).to.deep.equal(['WORKFLOW_TASK_COMPLETED', 'WORKFLOW_EXECUTION_SIGNALED', 'WORKFLOW_TASK_SCHEDULED']);
    const t2 = await poll(q);
    expect(Number(t2.previousStartedEventId)).to.equal(3);
    expect(Number(t2.startedEventId)).to.equal(7);
  });

  it('rejects a completion that closes the workflow while new events are held (UNHANDLED_COMMAND)', async () => {
    const q = uniqueQueue('unhandled');
    const { workflowId } = await start(q);
    const t = await poll(q);
    await signal(workflowId);
    await dev.svc.respondWorkflowTaskCompleted({
      namespace: ns,
      taskToken: t.taskToken,
      commands: [{ commandType: temporal.api.enums.v1.CommandType.COMMAND_TYPE_COMPLETE_WORKFLOW_EXECUTION, completeWorkflowExecutionCommandAttributes: {} }],
    });
    const h = await dev.svc.getWorkflowExecutionHistory({ namespace: ns, execution: { workflowId } });
    const evs = h.history!.events!;
    expect(evs.map((e) => ET[e.eventType!].replace('EVENT_TYPE_', '')).slice(3)).to.deep.equal([
      'WORKFLOW_TASK_FAILED',
      'WORKFLOW_EXECUTION_SIGNALED',
      'WORKFLOW_TASK_SCHEDULED',
    ]);
    expect(evs[3].workflowTaskFailedEventAttributes?.cause).to.equal(temporal.api.enums.v1.WorkflowTaskFailedCause.WORKFLOW_TASK_FAILED_CAUSE_UNHANDLED_COMMAND);
  });

  /** Polls a queue and abandons the poll (the worker stays, busy): the queue counts as polled just now. */
  async function pollAndAbandon(name: string): Promise<void> {
    const ctrl = new AbortController();
    const pending = dev.conn.connection.withAbortSignal(ctrl.signal, () => poll(name)).catch(() => undefined);
    // Abort once the poll is waiting at the server (DescribeTaskQueue lists its poller).
    for (let i = 0; i < 100; i++) {
      const d = await dev.svc.describeTaskQueue({ namespace: ns, taskQueue: { name, kind: 2 }, taskQueueType: 1 });
      if ((d.pollers ?? []).length > 0) break;
      await new Promise((r) => setTimeout(r, 10));
    }
    ctrl.abort();
    await pending;
  }

  it('falls back from a sticky queue its worker polls but does not answer, after schedule-to-start, with full history', async () => {
    const q = uniqueQueue('stickyto');
    const sticky = uniqueQueue('sticky-worker');
    const { workflowId } = await start(q);
    const t = await poll(q);
    await pollAndAbandon(sticky);
    await dev.svc.respondWorkflowTaskCompleted({
      namespace: ns,
      taskToken: t.taskToken,
      commands: [],
      stickyAttributes: { workerTaskQueue: { name: sticky, kind: 2 }, scheduleToStartTimeout: { nanos: 200_000_000 } },
    });
    await signal(workflowId);
    const t2 = await poll(q); // blocks until the sticky task times out to the normal queue
    const evs = t2.history!.events!;
    expect(Number(evs[0].eventId)).to.equal(1);
    const names = evs.map((e) => ET[e.eventType!].replace('EVENT_TYPE_', ''));
    expect(names.slice(-4)).to.deep.equal(['WORKFLOW_TASK_SCHEDULED', 'WORKFLOW_TASK_TIMED_OUT', 'WORKFLOW_TASK_SCHEDULED', 'WORKFLOW_TASK_STARTED']);
    const timedOut = evs[evs.length - 3].workflowTaskTimedOutEventAttributes!;
    expect(timedOut.timeoutType).to.equal(temporal.api.enums.v1.TimeoutType.TIMEOUT_TYPE_SCHEDULE_TO_START);
  });

  it('sends a task for a sticky queue nobody polls within 10 s straight to the normal queue (StickyWorkerUnavailable)', async () => {
    const q = uniqueQueue('stickyna');
    const { workflowId } = await start(q);
    const t = await poll(q);
    await dev.svc.respondWorkflowTaskCompleted({
      namespace: ns,
      taskToken: t.taskToken,
      commands: [],
      // A schedule-to-start far beyond the test's timeout: only the unavailability check can move the task.
      stickyAttributes: { workerTaskQueue: { name: uniqueQueue('sticky-never'), kind: 2 }, scheduleToStartTimeout: msToTs(60_000) },
    });
    await signal(workflowId);
    const t2 = await poll(q);
    const names = t2.history!.events!.map((e) => ET[e.eventType!].replace('EVENT_TYPE_', ''));
    expect(Number(t2.history!.events![0].eventId)).to.equal(1);
    expect(names.slice(-3)).to.deep.equal(['WORKFLOW_EXECUTION_SIGNALED', 'WORKFLOW_TASK_SCHEDULED', 'WORKFLOW_TASK_STARTED']);
  });

  it('never re-sticks a run to the sticky queue of a worker that called ShutdownWorker, even when its last completion names it', async () => {
    const q = uniqueQueue('stickysd');
    const sticky = uniqueQueue('sticky-departing');
    const key = uniqueQueue('worker-key');
    const { workflowId } = await start(q);
    const t = await dev.svc.pollWorkflowTaskQueue({ namespace: ns, taskQueue: { name: q }, identity: 'departing', workerInstanceKey: key });
    await pollAndAbandon(sticky);
    // The worker shuts down while its task is in flight, then answers the task naming its sticky queue.
    await dev.svc.shutdownWorker({ namespace: ns, identity: 'departing', workerInstanceKey: key, stickyTaskQueue: sticky });
    await dev.svc.respondWorkflowTaskCompleted({
      namespace: ns,
      taskToken: t.taskToken,
      identity: 'departing',
      commands: [],
      stickyAttributes: { workerTaskQueue: { name: sticky, kind: 2 }, scheduleToStartTimeout: msToTs(60_000) },
    });
    await signal(workflowId);
    const t2 = await poll(q); // another worker on the normal queue gets it at once, with full history
    expect(Number(t2.history!.events![0].eventId)).to.equal(1);
    expect(await events(workflowId)).to.not.include('WORKFLOW_TASK_TIMED_OUT');
  });

  it('times out a started workflow task and retries it as a transient attempt', async () => {
    const q = uniqueQueue('wtto');
    const { workflowId } = await start(q, { workflowTaskTimeout: { nanos: 300_000_000 } });
    const t1 = await poll(q);
    expect(t1.attempt).to.equal(1);
    const t2 = await poll(q); // after the 300 ms start-to-close timeout
    expect(t2.attempt).to.equal(2);
    const names = t2.history!.events!.map((e) => ET[e.eventType!].replace('EVENT_TYPE_', ''));
    expect(names).to.deep.equal([
      'WORKFLOW_EXECUTION_STARTED',
      'WORKFLOW_TASK_SCHEDULED',
      'WORKFLOW_TASK_STARTED',
      'WORKFLOW_TASK_TIMED_OUT',
      'WORKFLOW_TASK_SCHEDULED',
      'WORKFLOW_TASK_STARTED',
    ]);
    // The transient attempt is not in the stored history until it completes.
    expect(await events(workflowId)).to.have.length(4);
    const old = await dev.svc.respondWorkflowTaskCompleted({ namespace: ns, taskToken: t1.taskToken, commands: [] }).catch((e) => e);
    expect(old.code).to.equal(5);
    await dev.svc.respondWorkflowTaskCompleted({ namespace: ns, taskToken: t2.taskToken, commands: [] });
    expect((await events(workflowId)).slice(4)).to.deep.equal(['WORKFLOW_TASK_SCHEDULED', 'WORKFLOW_TASK_STARTED', 'WORKFLOW_TASK_COMPLETED']);
  });

  it('fills activity timeouts and retry policy defaults like the real server', async () => {
    const q = uniqueQueue('defaults');
    const { workflowId } = await start(q, { workflowRunTimeout: { seconds: 3600 as never } });
    const t = await poll(q);
    await dev.svc.respondWorkflowTaskCompleted({
      namespace: ns,
      taskToken: t.taskToken,
      commands: [
        {
          commandType: temporal.api.enums.v1.CommandType.COMMAND_TYPE_SCHEDULE_ACTIVITY_TASK,
          scheduleActivityTaskCommandAttributes: {
            activityId: 'a1',
            activityType: { name: 'x' },
            startToCloseTimeout: { seconds: 30 as never },
            heartbeatTimeout: { seconds: 60 as never },
            retryPolicy: { maximumAttempts: 3 },
          },
        },
      ],
    });
    const h = await dev.svc.getWorkflowExecutionHistory({ namespace: ns, execution: { workflowId } });
    const a = h.history!.events!.find((e) => e.activityTaskScheduledEventAttributes)!.activityTaskScheduledEventAttributes!;
    expect(Number(a.scheduleToCloseTimeout?.seconds)).to.equal(3600);
    expect(Number(a.scheduleToStartTimeout?.seconds)).to.equal(3600);
    expect(Number(a.startToCloseTimeout?.seconds)).to.equal(30);
    expect(Number(a.heartbeatTimeout?.seconds)).to.equal(30);
    expect(a.taskQueue?.name).to.equal(q);
    expect(a.retryPolicy?.maximumAttempts).to.equal(3);
    expect(Number(a.retryPolicy?.initialInterval?.seconds)).to.equal(1);
    expect(a.retryPolicy?.backoffCoefficient).to.equal(2);
    const bad = await dev.svc
      .respondWorkflowTaskCompleted({
        namespace: ns,
        taskToken: (await (async () => {
          await signal(workflowId);
          return poll(q);
        })()).taskToken,
        commands: [{ commandType: 1, scheduleActivityTaskCommandAttributes: { activityId: 'a2', activityType: { name: 'x' } } }],
      })
      .catch((e) => e);
    expect(bad.code).to.equal(3);
  });

  it('dispatches activities eagerly in the completion response when asked and on the workflow task queue', async () => {
    const q = uniqueQueue('eager');
    const other = uniqueQueue('eager-other');
    const { workflowId } = await start(q);
    const t = await poll(q);
    const sched = (activityId: string, eager: boolean, taskQueue?: string) => ({
      commandType: temporal.api.enums.v1.CommandType.COMMAND_TYPE_SCHEDULE_ACTIVITY_TASK,
      scheduleActivityTaskCommandAttributes: {
        activityId,
        activityType: { name: 'x' },
        startToCloseTimeout: { seconds: 30 as never },
        requestEagerExecution: eager,
        ...(taskQueue ? { taskQueue: { name: taskQueue } } : {}),
      },
    });
    const r = await dev.svc.respondWorkflowTaskCompleted({
      namespace: ns,
      taskToken: t.taskToken,
      identity: 'eager-worker',
      commands: [sched('e1', true), sched('n1', false), sched('o1', true, other)],
    });
    // Only the activity that asked and runs on the workflow's own task queue comes back.
    expect((r.activityTasks ?? []).map((a) => a.activityId)).to.deep.equal(['e1']);
    const a = r.activityTasks![0];
    expect(a.attempt).to.equal(1);
    expect(a.workflowExecution?.workflowId).to.equal(workflowId);
    expect(Number(a.startToCloseTimeout?.seconds)).to.equal(30);
    // The others are on their queues; the eager one is not handed out again.
    const p1 = await dev.svc.pollActivityTaskQueue({ namespace: ns, taskQueue: { name: q }, identity: 'p' });
    expect(p1.activityId).to.equal('n1');
    const p2 = await dev.svc.pollActivityTaskQueue({ namespace: ns, taskQueue: { name: other }, identity: 'p' });
    expect(p2.activityId).to.equal('o1');
    await dev.svc.respondActivityTaskCompleted({ namespace: ns, taskToken: a.taskToken, identity: 'eager-worker' });
    const h = await dev.svc.getWorkflowExecutionHistory({ namespace: ns, execution: { workflowId } });
    const evs = h.history!.events!;
    const started = evs.find((e) => e.activityTaskStartedEventAttributes)!;
    expect(started.activityTaskStartedEventAttributes!.identity).to.equal('eager-worker');
    expect(evs.filter((e) => e.activityTaskCompletedEventAttributes)).to.have.length(1);
    // A completion that closes the workflow returns no activity task.
    const t2 = await poll(q);
    const r2 = await dev.svc.respondWorkflowTaskCompleted({
      namespace: ns,
      taskToken: t2.taskToken,
      commands: [sched('e2', true), { commandType: temporal.api.enums.v1.CommandType.COMMAND_TYPE_COMPLETE_WORKFLOW_EXECUTION, completeWorkflowExecutionCommandAttributes: {} }],
    });
    expect(r2.activityTasks ?? []).to.have.length(0);
  });

  it('answers a query that arrives while a workflow task is in flight after that task completes', async () => {
    const q = uniqueQueue('qflight');
    const { workflowId } = await start(q);
    const t = await poll(q);
    let answered = false;
    const query = dev.svc
      .queryWorkflow({ namespace: ns, execution: { workflowId }, query: { queryType: 'state' } })
      .then((r) => {
        answered = true;
        return r;
      });
    await new Promise((r) => setTimeout(r, 100));
    expect(answered).to.equal(false);
    await dev.svc.respondWorkflowTaskCompleted({ namespace: ns, taskToken: t.taskToken, commands: [] });
    const qt = await poll(q);
    expect(qt.query?.queryType).to.equal('state');
    expect(Number(qt.history?.events?.length)).to.equal(4);
    await dev.svc.respondQueryTaskCompleted({
      namespace: ns,
      taskToken: qt.taskToken,
      completedType: temporal.api.enums.v1.QueryResultType.QUERY_RESULT_TYPE_ANSWERED,
      queryResult: { payloads: [{ metadata: { encoding: Buffer.from('json/plain') }, data: Buffer.from('"ok"') }] },
    });
    const r = await query;
    expect(Buffer.from(r.queryResult!.payloads![0].data!).toString()).to.equal('"ok"');
  });
  it("refuses a start over a closed run per id reuse policy with the real server's messages", async () => {
    const Reuse = temporal.api.enums.v1.WorkflowIdReusePolicy;
    const q = uniqueQueue('reuse');
    const { workflowId, runId } = await start(q);
    const t = await poll(q);
    await dev.svc.respondWorkflowTaskCompleted({
      taskToken: t.taskToken,
      identity: 'raw-test',
      commands: [{ commandType: temporal.api.enums.v1.CommandType.COMMAND_TYPE_COMPLETE_WORKFLOW_EXECUTION, completeWorkflowExecutionCommandAttributes: {} }],
    });
    const again = (policy: number) =>
      dev.svc
        .startWorkflowExecution({ namespace: ns, workflowId, workflowType: { name: 'raw' }, taskQueue: { name: q }, requestId: uniqueQueue('r'), workflowIdReusePolicy: policy })
        .catch((e: { code: number; details: string }) => e);
    expect(await again(Reuse.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE)).to.include({
      code: 6,
      details: `Workflow execution already finished. WorkflowId: ${workflowId}, RunId: ${runId}. Workflow Id reuse policy: reject duplicate workflow Id.`,
    });
    expect(await again(Reuse.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE_FAILED_ONLY)).to.include({
      code: 6,
      details: `Workflow execution already finished successfully. WorkflowId: ${workflowId}, RunId: ${runId}. Workflow Id reuse policy: allow duplicate workflow Id if last run failed.`,
    });
    // A terminated run counts as failed: FAILED_ONLY starts a new run.
    const second = (await again(Reuse.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE)) as { runId?: string };
    expect(second.runId).to.be.a('string');
    await dev.svc.terminateWorkflowExecution({ namespace: ns, workflowExecution: { workflowId }, reason: 'test' });
    expect(((await again(Reuse.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE_FAILED_ONLY)) as { runId?: string }).runId).to.be.a('string');
    await dev.svc.terminateWorkflowExecution({ namespace: ns, workflowExecution: { workflowId }, reason: 'test done' });
  });
});
