/**
 * The dev server against the real SDK worker and client (in-memory mode): namespaces, workflows,
 * workflow tasks, activities, timers, children, signals, continue-as-new, visibility.
 */
import { expect } from 'chai';
import { status as GrpcStatus } from '@grpc/grpc-js';
import {
  Client,
  WorkflowExecutionAlreadyStartedError,
  WorkflowFailedError,
  WorkflowIdConflictPolicy,
  WorkflowIdReusePolicy,
} from '@temporalio/client';
import { CancelledFailure, TerminatedFailure, TimeoutFailure } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import { NativeConnection } from '@temporalio/worker';
import { startDevServer, DevServer } from '../../devserver';
import { connect, uniqueQueue, withWorker } from './helpers';
import { asyncTokens } from './workflows/activities';

const ET = temporal.api.enums.v1.EventType;

describe('devserver with the real SDK', function () {
  this.timeout(30_000);
  let server: DevServer;
  let conn: Awaited<ReturnType<typeof connect>>;
  let client: Client;
  let native: NativeConnection;

  before(async () => {
    server = await startDevServer({ namespace: 'extra-ns' });
    conn = await connect(server.address);
    client = conn.client;
    native = conn.native;
  });
  after(async () => {
    await conn?.close();
    await server?.stop();
  });

  async function history(workflowId: string, runId?: string) {
    const events: temporal.api.history.v1.IHistoryEvent[] = [];
    let nextPageToken: Uint8Array | undefined;
    do {
      const r = await client.workflowService.getWorkflowExecutionHistory({
        namespace: 'default',
        execution: { workflowId, runId },
        nextPageToken,
      });
      events.push(...(r.history?.events ?? []));
      nextPageToken = r.nextPageToken?.length ? r.nextPageToken : undefined;
    } while (nextPageToken);
    return events;
  }
  const types = (evs: temporal.api.history.v1.IHistoryEvent[]) => evs.map((e) => ET[e.eventType!]);

  async function until<T>(fn: () => Promise<T | undefined | false>, ms = 10_000): Promise<T> {
    const end = Date.now() + ms;
    for (;;) {
      const v = await fn();
      if (v) return v;
      if (Date.now() > end) throw new Error('condition not reached');
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  describe('connection and namespaces', () => {
    it('reports system info with the capabilities it actually has', async () => {
      const info = await client.workflowService.getSystemInfo({});
      expect(info.serverVersion).to.match(/devserver/);
      expect(info.capabilities?.signalAndQueryHeader).to.equal(true);
      expect(info.capabilities?.sdkMetadata).to.equal(true);
      expect(info.capabilities?.supportsSchedules).to.equal(true);
      expect(info.capabilities?.eagerWorkflowStart).to.equal(true);
    });

    it('has default, registers, describes and lists namespaces', async () => {
      const d = await client.workflowService.describeNamespace({ namespace: 'default' });
      expect(d.namespaceInfo?.name).to.equal('default');
      await client.workflowService.registerNamespace({ namespace: 'registered-ns', workflowExecutionRetentionPeriod: { seconds: 3600 as never } });
      const list = await client.workflowService.listNamespaces({});
      const names = list.namespaces.map((n) => n.namespaceInfo?.name);
      expect(names).to.include.members(['default', 'extra-ns', 'registered-ns']);
      const err = await client.workflowService.describeNamespace({ namespace: 'nope' }).catch((e) => e);
      expect(err.code).to.equal(GrpcStatus.NOT_FOUND);
      const dup = await client.workflowService.registerNamespace({ namespace: 'registered-ns' }).catch((e) => e);
      expect(dup.code).to.equal(GrpcStatus.ALREADY_EXISTS);
    });

    it('answers UNIMPLEMENTED naming the method and its feature for unsupported calls', async () => {
      const batch = await client.workflowService.listBatchOperations({ namespace: 'default' }).catch((e) => e);
      expect(batch.code).to.equal(GrpcStatus.UNIMPLEMENTED);
      expect(batch.details ?? batch.message).to.contain('ListBatchOperations').and.contain('batch operations');
      const standalone = await client.workflowService.describeActivityExecution({ namespace: 'default', activityId: 'x' }).catch((e) => e);
      expect(standalone.code).to.equal(GrpcStatus.UNIMPLEMENTED);
      expect(standalone.details ?? standalone.message).to.contain('standalone activities');
      const nexus = await client.connection.operatorService.listNexusEndpoints({}).then(
        () => ({ code: 0, details: '', message: '' }),
        (e: { code: number; details?: string; message: string }) => e,
      );
      expect(nexus.code).to.equal(GrpcStatus.UNIMPLEMENTED);
      expect(nexus.details ?? nexus.message).to.contain('Nexus');
    });
  });

  describe('workflows', () => {
    it('writes the history the real server writes for one activity', async () => {
      const taskQueue = uniqueQueue('hist');
      const workflowId = uniqueQueue('hist-wf');
      const r = await withWorker(native, taskQueue, () => client.workflow.execute('greeting', { taskQueue, workflowId, args: ['you'] }));
      expect(r).to.equal('Hello, you!');
      const evs = await history(workflowId);
      expect(types(evs)).to.deep.equal([
        'EVENT_TYPE_WORKFLOW_EXECUTION_STARTED',
        'EVENT_TYPE_WORKFLOW_TASK_SCHEDULED',
        'EVENT_TYPE_WORKFLOW_TASK_STARTED',
        'EVENT_TYPE_WORKFLOW_TASK_COMPLETED',
        'EVENT_TYPE_ACTIVITY_TASK_SCHEDULED',
        'EVENT_TYPE_ACTIVITY_TASK_STARTED',
        'EVENT_TYPE_ACTIVITY_TASK_COMPLETED',
        'EVENT_TYPE_WORKFLOW_TASK_SCHEDULED',
        'EVENT_TYPE_WORKFLOW_TASK_STARTED',
        'EVENT_TYPE_WORKFLOW_TASK_COMPLETED',
        'EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED',
      ]);
      evs.forEach((e, i) => expect(Number(e.eventId)).to.equal(i + 1));
      const firstSize = Number(evs[2].workflowTaskStartedEventAttributes?.historySizeBytes);
      expect(firstSize).to.be.greaterThan(0);
      expect(Number(evs[8].workflowTaskStartedEventAttributes?.historySizeBytes)).to.be.greaterThan(firstSize);
      expect(evs[8].workflowTaskStartedEventAttributes?.suggestContinueAsNew).to.not.equal(true);
      const sched = evs[4].activityTaskScheduledEventAttributes!;
      expect(sched.scheduleToCloseTimeout).to.not.equal(null);
      expect(sched.scheduleToStartTimeout).to.not.equal(null);
      expect(Number(sched.startToCloseTimeout?.seconds)).to.equal(10);
      expect(sched.retryPolicy?.backoffCoefficient).to.equal(2);
      expect(Number(sched.retryPolicy?.initialInterval?.seconds)).to.equal(1);
      expect(Number(sched.retryPolicy?.maximumInterval?.seconds)).to.equal(100);
      expect(Number(evs[5].activityTaskStartedEventAttributes?.attempt)).to.equal(1);
      expect(Number(evs[6].activityTaskCompletedEventAttributes?.startedEventId)).to.equal(6);
      // The second workflow task went to the worker's sticky queue.
      expect(evs[7].workflowTaskScheduledEventAttributes?.taskQueue?.kind).to.equal(temporal.api.enums.v1.TaskQueueKind.TASK_QUEUE_KIND_STICKY);
    });

    it('applies id conflict and reuse policies and reports "already started"', async () => {
      const taskQueue = uniqueQueue('reuse');
      const workflowId = uniqueQueue('reuse-wf');
      const h = await client.workflow.start('waitForFinish', { taskQueue, workflowId });
      const err = await client.workflow.start('waitForFinish', { taskQueue, workflowId }).catch((e) => e);
      expect(err).to.be.instanceOf(WorkflowExecutionAlreadyStartedError);
      const existing = await client.workflow.start('waitForFinish', {
        taskQueue,
        workflowId,
        workflowIdConflictPolicy: WorkflowIdConflictPolicy.USE_EXISTING,
      });
      expect(existing.firstExecutionRunId).to.equal(h.firstExecutionRunId);
      await h.terminate('done');
      const rejected = await client.workflow
        .start('waitForFinish', { taskQueue, workflowId, workflowIdReusePolicy: WorkflowIdReusePolicy.REJECT_DUPLICATE })
        .catch((e) => e);
      expect(rejected).to.be.instanceOf(WorkflowExecutionAlreadyStartedError);
      const again = await client.workflow.start('waitForFinish', { taskQueue, workflowId });
      expect(again.firstExecutionRunId).to.not.equal(h.firstExecutionRunId);
      const replaced = await client.workflow.start('waitForFinish', {
        taskQueue,
        workflowId,
        workflowIdConflictPolicy: WorkflowIdConflictPolicy.TERMINATE_EXISTING,
      });
      expect((await client.workflow.getHandle(workflowId, again.firstExecutionRunId).describe()).status.name).to.equal('TERMINATED');
      await replaced.terminate();
    });

    it('delivers signals and answers queries', async () => {
      const taskQueue = uniqueQueue('sq');
      await withWorker(native, taskQueue, async () => {
        const h = await client.workflow.start('waitForFinish', { taskQueue, workflowId: uniqueQueue('sq-wf') });
        expect(await h.query('status')).to.equal('waiting');
        await h.signal('finish', 'signal');
        expect(await h.result()).to.equal('Hello, signal!');
        expect(await h.query('status')).to.equal('done');
        const unknown = await h.query('nope').catch((e) => e);
        expect(unknown).to.be.instanceOf(Error);
      });
    });

    it('answers a query sent before any worker polls (attached to the pending workflow task)', async () => {
      const taskQueue = uniqueQueue('qwt');
      const h = await client.workflow.start('accumulate', { taskQueue, workflowId: uniqueQueue('qwt-wf'), args: [3] });
      await h.signal('add', 1);
      const q = h.query<number>('total');
      await new Promise((r) => setTimeout(r, 100));
      await withWorker(native, taskQueue, async () => {
        expect(await q).to.equal(1);
        await h.signal('add', 2);
        expect(await h.result()).to.equal(3);
      });
    });

    it('signal-with-start starts once and then signals the running run', async () => {
      const taskQueue = uniqueQueue('sws');
      const workflowId = uniqueQueue('sws-wf');
      const a = await client.workflow.signalWithStart('accumulate', { taskQueue, workflowId, args: [5], signal: 'add', signalArgs: [2] });
      const b = await client.workflow.signalWithStart('accumulate', { taskQueue, workflowId, args: [5], signal: 'add', signalArgs: [3] });
      expect(b.signaledRunId).to.equal(a.signaledRunId);
      expect(await withWorker(native, taskQueue, () => a.result())).to.equal(5);
    });

    it('describes executions with memo, search attributes and pending activities', async () => {
      const taskQueue = uniqueQueue('desc');
      asyncTokens.length = 0;
      const h = await client.workflow.start('asyncActivity', {
        taskQueue,
        workflowId: uniqueQueue('desc-wf'),
        memo: { owner: 'team-a' },
        searchAttributes: { CustomKeywordField: ['k1'] },
      });
      await withWorker(native, taskQueue, async () => {
        const d = await until(async () => {
          const x = await h.describe();
          return x.raw.pendingActivities?.length ? x : undefined;
        });
        expect(d.status.name).to.equal('RUNNING');
        expect(d.memo).to.deep.equal({ owner: 'team-a' });
        expect(d.searchAttributes.CustomKeywordField).to.deep.equal(['k1']);
        expect(d.raw.pendingActivities?.[0].activityType?.name).to.equal('completeLater');
        expect(d.raw.pendingActivities?.[0].state).to.equal(temporal.api.enums.v1.PendingActivityState.PENDING_ACTIVITY_STATE_STARTED);
        const token = await until(async () => asyncTokens.shift());
        await client.activity.complete(Buffer.from(token, 'base64'), 'described');
        expect(await h.result()).to.equal('described');
      });
    });

    it('paginates history and long-polls for new events', async () => {
      const taskQueue = uniqueQueue('page');
      const workflowId = uniqueQueue('page-wf');
      const h = await client.workflow.start('waitForFinish', { taskQueue, workflowId });
      const first = await client.workflowService.getWorkflowExecutionHistory({
        namespace: 'default',
        execution: { workflowId },
        maximumPageSize: 1,
      });
      expect(first.history?.events).to.have.length(1);
      expect(first.nextPageToken?.length).to.be.greaterThan(0);
      const second = await client.workflowService.getWorkflowExecutionHistory({
        namespace: 'default',
        execution: { workflowId },
        maximumPageSize: 1,
        nextPageToken: first.nextPageToken,
      });
      expect(Number(second.history?.events?.[0].eventId)).to.equal(2);
      // Long-poll from the next event id: resolves when the signal is written.
      const waiting = client.workflowService.getWorkflowExecutionHistory({
        namespace: 'default',
        execution: { workflowId },
        waitNewEvent: true,
        nextPageToken: Buffer.from(JSON.stringify({ r: h.firstExecutionRunId, n: 3 })),
      });
      await new Promise((r) => setTimeout(r, 100));
      await h.signal('finish', 'x');
      const got = await waiting;
      expect(ET[got.history!.events![0].eventType!]).to.equal('EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED');
      await h.terminate();
    });

    it('cancels and terminates workflows', async () => {
      const taskQueue = uniqueQueue('cancel');
      await withWorker(native, taskQueue, async () => {
        const h = await client.workflow.start('waitForFinish', { taskQueue, workflowId: uniqueQueue('c-wf') });
        await h.query('status');
        await h.cancel();
        const err = await h.result().catch((e) => e);
        expect(err).to.be.instanceOf(WorkflowFailedError);
        expect(err.cause).to.be.instanceOf(CancelledFailure);
        expect((await h.describe()).status.name).to.equal('CANCELLED');
        const t = await client.workflow.start('waitForFinish', { taskQueue, workflowId: uniqueQueue('t-wf') });
        await t.terminate('because');
        const terr = await t.result().catch((e) => e);
        expect(terr.cause).to.be.instanceOf(TerminatedFailure);
        const evs = await history(t.workflowId);
        expect(evs.at(-1)?.workflowExecutionTerminatedEventAttributes?.reason).to.equal('because');
      });
    });

    it('retries a failing workflow per its retry policy as new runs', async () => {
      const taskQueue = uniqueQueue('wfretry');
      const workflowId = uniqueQueue('wfretry-wf');
      const r = await withWorker(native, taskQueue, () =>
        client.workflow.execute('retriedWorkflow', {
          taskQueue,
          workflowId,
          retry: { initialInterval: '50ms', maximumAttempts: 5 },
        }),
      );
      expect(r).to.equal(3);
      const runs = await client.workflow.list({ query: `WorkflowId = '${workflowId}'` });
      const statuses: string[] = [];
      for await (const w of runs) statuses.push(w.status.name);
      expect(statuses.sort()).to.deep.equal(['COMPLETED', 'FAILED', 'FAILED']);
    });

    it('times out a run after its run timeout', async () => {
      const taskQueue = uniqueQueue('runto');
      await withWorker(native, taskQueue, async () => {
        const h = await client.workflow.start('waitForFinish', { taskQueue, workflowId: uniqueQueue('runto-wf'), workflowRunTimeout: '400ms' });
        const err = await h.result().catch((e) => e);
        expect(err).to.be.instanceOf(WorkflowFailedError);
        expect((await h.describe()).status.name).to.equal('TIMED_OUT');
        // The execution timeout spans retries: the retried run times out at the same deadline.
        const e = await client.workflow.start('waitForFinish', {
          taskQueue,
          workflowId: uniqueQueue('execto-wf'),
          workflowExecutionTimeout: '400ms',
          retry: { maximumAttempts: 5, initialInterval: '10ms' },
        });
        expect(await e.result().catch((err) => err)).to.be.instanceOf(WorkflowFailedError);
        expect((await e.describe()).status.name).to.equal('TIMED_OUT');
        const signalClosed = await e.signal('finish', 'late').catch((err) => err);
        expect(signalClosed).to.be.instanceOf(Error);
      });
    });
  });

  describe('workflow tasks', () => {
    it('retries a failing workflow task with attempt counting and one failure event', async () => {
      const taskQueue = uniqueQueue('wtfail');
      await withWorker(native, taskQueue, async () => {
        // The SDK reports only the first failure; later attempts end by workflow-task timeout.
        const h = await client.workflow.start('buggy', { taskQueue, workflowId: uniqueQueue('wtfail-wf'), workflowTaskTimeout: '1s' });
        await h.signal('finish', 'boom');
        const d = await until(async () => {
          const x = await h.describe();
          return (x.raw.pendingWorkflowTask?.attempt ?? 0) >= 3 ? x : undefined;
        });
        expect(d.raw.pendingWorkflowTask?.attempt).to.be.at.least(3);
        const evs = await history(h.workflowId);
        expect(types(evs).filter((t) => t === 'EVENT_TYPE_WORKFLOW_TASK_FAILED')).to.have.length(1);
        expect(types(evs)).to.not.include('EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT');
        await h.terminate();
      });
    });

    it('falls back from a shut-down sticky worker to the normal queue with full history', async () => {
      const taskQueue = uniqueQueue('sticky');
      const h = await client.workflow.start('waitForFinish', { taskQueue, workflowId: uniqueQueue('sticky-wf') });
      await withWorker(native, taskQueue, async () => {
        expect(await h.query('status')).to.equal('waiting');
      });
      await h.signal('finish', 'again');
      const started = Date.now();
      const r = await withWorker(native, taskQueue, () => h.result());
      expect(r).to.equal('Hello, again!');
      expect(Date.now() - started).to.be.lessThan(4000);
      const evs = await history(h.workflowId);
      const normal = evs.filter(
        (e) =>
          e.workflowTaskScheduledEventAttributes &&
          e.workflowTaskScheduledEventAttributes.taskQueue?.kind === temporal.api.enums.v1.TaskQueueKind.TASK_QUEUE_KIND_NORMAL,
      );
      expect(normal.length).to.be.at.least(2);
    });
  });

  describe('activities', () => {
    it('retries activities server-side without history events per attempt', async () => {
      const taskQueue = uniqueQueue('aretry');
      const workflowId = uniqueQueue('aretry-wf');
      expect(await withWorker(native, taskQueue, () => client.workflow.execute('retrying', { taskQueue, workflowId, args: [3] }))).to.equal(3);
      const evs = await history(workflowId);
      const started = evs.filter((e) => e.activityTaskStartedEventAttributes);
      expect(started).to.have.length(1);
      expect(started[0].activityTaskStartedEventAttributes?.attempt).to.equal(3);
      expect(started[0].activityTaskStartedEventAttributes?.lastFailure?.message).to.equal('attempt 2 failed');
    });

    it('stops retrying on non-retryable types and at maximum attempts', async () => {
      const taskQueue = uniqueQueue('nonretry');
      await withWorker(native, taskQueue, async () => {
        const a = await client.workflow.execute('failing', { taskQueue, workflowId: uniqueQueue('nr1'), args: ['Fatal', 5] });
        expect(a).to.equal('Fatal:failing with Fatal on attempt 1:NON_RETRYABLE_FAILURE');
        const b = await client.workflow.execute('failing', { taskQueue, workflowId: uniqueQueue('nr2'), args: ['Other', 3] });
        expect(b).to.equal('Other:failing with Other on attempt 3:MAXIMUM_ATTEMPTS_REACHED');
      });
    });

    it('enforces start-to-close, heartbeat and schedule-to-start timeouts', async () => {
      const taskQueue = uniqueQueue('ato');
      await withWorker(native, taskQueue, async () => {
        const [stc, hb, s2s] = await Promise.all([
          client.workflow.execute('timingOut', { taskQueue, workflowId: uniqueQueue('stc') }),
          client.workflow.execute('heartbeatTimeout', { taskQueue, workflowId: uniqueQueue('hb') }),
          client.workflow.execute('scheduleToStart', { taskQueue, workflowId: uniqueQueue('s2s') }),
        ]);
        expect(stc).to.equal('TimeoutFailure:START_TO_CLOSE:MAXIMUM_ATTEMPTS_REACHED');
        expect(hb).to.equal('HEARTBEAT:2');
        expect(s2s).to.equal('SCHEDULE_TO_START');
      });
    });

    it('cancels activities before and after they start', async () => {
      const taskQueue = uniqueQueue('acancel');
      await withWorker(native, taskQueue, async () => {
        const before = uniqueQueue('acb');
        const after = uniqueQueue('aca');
        const [b, a] = await Promise.all([
          client.workflow.execute('cancelActivity', { taskQueue, workflowId: before, args: [false] }),
          client.workflow.execute('cancelActivity', { taskQueue, workflowId: after, args: [true] }),
        ]);
        expect([b, a]).to.deep.equal(['cancelled', 'cancelled']);
        const hb = types(await history(before));
        expect(hb).to.include('EVENT_TYPE_ACTIVITY_TASK_CANCELED');
        expect(hb).to.not.include('EVENT_TYPE_ACTIVITY_TASK_STARTED');
        const ha = types(await history(after));
        expect(ha.indexOf('EVENT_TYPE_ACTIVITY_TASK_CANCEL_REQUESTED')).to.be.lessThan(ha.indexOf('EVENT_TYPE_ACTIVITY_TASK_CANCELED'));
        expect(ha).to.include('EVENT_TYPE_ACTIVITY_TASK_STARTED');
      });
    });

    it('completes activities asynchronously by task token and by id', async () => {
      const taskQueue = uniqueQueue('async');
      await withWorker(native, taskQueue, async () => {
        asyncTokens.length = 0;
        const h1 = await client.workflow.start('asyncActivity', { taskQueue, workflowId: uniqueQueue('as1') });
        const token = await until(async () => asyncTokens.shift());
        await client.activity.heartbeat(Buffer.from(token, 'base64'), 'hb');
        await client.activity.complete(Buffer.from(token, 'base64'), 'by-token');
        expect(await h1.result()).to.equal('by-token');
        const h2 = await client.workflow.start('asyncActivity', { taskQueue, workflowId: uniqueQueue('as2') });
        await until(async () => asyncTokens.shift());
        await client.activity.heartbeat({ workflowId: h2.workflowId, activityId: '1' }, 'hb-by-id');
        await client.activity.complete({ workflowId: h2.workflowId, activityId: '1' }, 'by-id');
        expect(await h2.result()).to.equal('by-id');
        // Failing by id is retried by the server: the second attempt completes by token.
        const h3 = await client.workflow.start('asyncActivity', { taskQueue, workflowId: uniqueQueue('as3') });
        await until(async () => asyncTokens.shift());
        await client.activity.fail({ workflowId: h3.workflowId, activityId: '1' }, new Error('first attempt failed'));
        const second = await until(async () => asyncTokens.shift());
        await client.activity.complete(Buffer.from(second, 'base64'), 'second attempt');
        expect(await h3.result()).to.equal('second attempt');
      });
    });
  });

  describe('timers, children, external signals, continue-as-new', () => {
    it('fires and cancels timers', async () => {
      const taskQueue = uniqueQueue('timer');
      await withWorker(native, taskQueue, async () => {
        const elapsed = await client.workflow.execute('sleeper', { taskQueue, workflowId: uniqueQueue('t1'), args: [300] });
        expect(elapsed).to.be.at.least(300);
        const id = uniqueQueue('t2');
        expect(await client.workflow.execute('cancelTimer', { taskQueue, workflowId: id })).to.equal('cancelled');
        expect(types(await history(id))).to.include('EVENT_TYPE_TIMER_CANCELED');
      });
    });

    it('runs child workflows: result, failure and cancellation', async () => {
      const taskQueue = uniqueQueue('child');
      await withWorker(native, taskQueue, async () => {
        expect(await client.workflow.execute('parent', { taskQueue, workflowId: uniqueQueue('p') })).to.equal('Hello, child!|child failed on purpose');
        const id = uniqueQueue('pc');
        expect(await client.workflow.execute('cancelChild', { taskQueue, workflowId: id })).to.equal('cancelled');
        expect((await client.workflow.getHandle(`${id}-child`).describe()).status.name).to.equal('CANCELLED');
      });
    });

    it('applies parent close policies', async () => {
      const taskQueue = uniqueQueue('pcp');
      await withWorker(native, taskQueue, async () => {
        const t = uniqueQueue('pcp-t');
        const a = uniqueQueue('pcp-a');
        await client.workflow.execute('abandonChild', { taskQueue, workflowId: t, args: ['terminate'] });
        await client.workflow.execute('abandonChild', { taskQueue, workflowId: a, args: ['abandon'] });
        await until(async () => (await client.workflow.getHandle(`${t}-child`).describe()).status.name === 'TERMINATED');
        expect((await client.workflow.getHandle(`${a}-child`).describe()).status.name).to.equal('RUNNING');
        await client.workflow.getHandle(`${a}-child`).terminate();
      });
    });

    it('signals an external workflow', async () => {
      const taskQueue = uniqueQueue('ext');
      await withWorker(native, taskQueue, async () => {
        const target = await client.workflow.start('waitForFinish', { taskQueue, workflowId: uniqueQueue('ext-target') });
        expect(await client.workflow.execute('signaller', { taskQueue, workflowId: uniqueQueue('ext-src'), args: [target.workflowId] })).to.equal('sent');
        expect(await target.result()).to.equal('Hello, from-signaller!');
      });
    });

    it('continues as new, following the run chain to the result', async () => {
      const taskQueue = uniqueQueue('can');
      const workflowId = uniqueQueue('can-wf');
      expect(await withWorker(native, taskQueue, () => client.workflow.execute('countdown', { taskQueue, workflowId, args: [3] }))).to.equal(4);
      let n = 0;
      for await (const w of client.workflow.list({ query: `WorkflowId = '${workflowId}' AND ExecutionStatus = 'ContinuedAsNew'` })) {
        expect(w.workflowId).to.equal(workflowId);
        n++;
      }
      expect(n).to.equal(3);
    });
  });

  describe('visibility', () => {
    it('lists and counts by search attributes upserted from the workflow', async () => {
      const taskQueue = uniqueQueue('vis');
      const tag = uniqueQueue('tag');
      await withWorker(native, taskQueue, async () => {
        const h = await client.workflow.start('searchable', { taskQueue, workflowId: uniqueQueue('vis-wf'), args: [tag] });
        const found = await until(async () => {
          const out: string[] = [];
          for await (const w of client.workflow.list({ query: `CustomKeywordField = '${tag}' AND ExecutionStatus = 'Running'` })) out.push(w.workflowId);
          return out.length ? out : undefined;
        });
        expect(found).to.deep.equal([h.workflowId]);
        const described = await h.describe();
        expect(described.memo).to.deep.equal({ stage: 'searching' });
        expect(described.searchAttributes.CustomIntField).to.deep.equal([tag.length]);
        const c = await client.workflow.count(`CustomIntField = ${tag.length} AND WorkflowType = 'searchable' AND CustomKeywordField = '${tag}'`);
        expect(c.count).to.equal(1);
        await h.signal('finish', '');
        await h.result();
        const closed = await client.workflow.count(`CustomKeywordField = '${tag}' AND ExecutionStatus = 'Completed'`);
        expect(closed.count).to.equal(1);
        const bad = await client.workflow.count('WorkflowId = ').catch((e) => e);
        expect(bad.code ?? bad.cause?.code).to.equal(GrpcStatus.INVALID_ARGUMENT);
      });
    });

    it('orders by StartTime and paginates', async () => {
      const taskQueue = uniqueQueue('order');
      const ids: string[] = [];
      for (let i = 0; i < 5; i++) {
        const id = `${taskQueue}-${i}`;
        ids.push(id);
        await client.workflow.start('waitForFinish', { taskQueue, workflowId: id });
        await new Promise((r) => setTimeout(r, 5));
      }
      const r1 = await client.workflowService.listWorkflowExecutions({
        namespace: 'default',
        query: `TaskQueue = '${taskQueue}' ORDER BY StartTime ASC`,
        pageSize: 2,
      });
      expect(r1.executions.map((e) => e.execution?.workflowId)).to.deep.equal(ids.slice(0, 2));
      const r2 = await client.workflowService.listWorkflowExecutions({
        namespace: 'default',
        query: `TaskQueue = '${taskQueue}' ORDER BY StartTime ASC`,
        pageSize: 2,
        nextPageToken: r1.nextPageToken,
      });
      expect(r2.executions.map((e) => e.execution?.workflowId)).to.deep.equal(ids.slice(2, 4));
      const desc = await client.workflowService.listWorkflowExecutions({ namespace: 'default', query: `TaskQueue = '${taskQueue}'` });
      expect(desc.executions.map((e) => e.execution?.workflowId)).to.deep.equal([...ids].reverse());
      for (const id of ids) await client.workflow.getHandle(id).terminate();
    });
  });
});
