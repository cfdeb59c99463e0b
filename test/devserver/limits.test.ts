/**
 * Blob size limits as the real server enforces them (dynamic config limit.blobSize.warn 512 KiB /
 * limit.blobSize.error 2 MiB; common.CheckEventBlobSizeLimit "Blob data size exceeds limit.", the
 * history workflow size checker terminating a run whose command payload is too large with
 * "<Cause>: <Command>Attributes.<Field> exceeds size limit.") and advertised where it advertises
 * them (NamespaceInfo.limits of DescribeNamespace). Sources in temporalio/temporal:
 * service/history/api/create_workflow_util.go ValidateStart (a start's memo over limit.memoSize.error:
 * INVALID_ARGUMENT "Memo size exceeds limit."), service/history/api/respondworkflowtaskcompleted
 * workflow_task_completed_handler.go (per command: workflow failure, marker details, memo upsert,
 * child and continue-as-new memo, update protocol message bodies — the workflow task fails with the
 * command's cause and the run is terminated), service/frontend/workflow_handler.go (an activity's
 * oversized result, failure, cancel details or heartbeat details fail the activity with a
 * non-retryable server failure; the call itself succeeds). An update request is admitted whatever its
 * size (update.Registry checks no size); its Acceptance or Response message is checked.
 */
import { expect } from 'chai';
import { temporal } from '@temporalio/proto';
import { startRawWorkflow, uniqueQueue, useDevServer } from './helpers';

const ET = temporal.api.enums.v1.EventType;
const CT = temporal.api.enums.v1.CommandType;
const Cause = temporal.api.enums.v1.WorkflowTaskFailedCause;
const RetryState = temporal.api.enums.v1.RetryState;
const Stage = temporal.api.enums.v1.UpdateWorkflowExecutionLifecycleStage;
const MiB = 1024 * 1024;

/** One json/plain payload of `bytes` bytes of data. */
function bigPayload(bytes: number) {
  return { metadata: { encoding: Buffer.from('json/plain') }, data: Buffer.alloc(bytes, 0x61) };
}
/** Payloads of one json/plain payload of `bytes` bytes of data. */
function bigPayloads(bytes: number) {
  return { payloads: [bigPayload(bytes)] };
}
type Err = { code: number; details: string };

describe('devserver blob size limits', function () {
  this.timeout(30_000);
  const dev = useDevServer();
  const ns = 'default';

  it('advertises the error limits in DescribeNamespace (NamespaceInfo.limits)', async () => {
    const d = await dev.conn.client.workflowService.describeNamespace({ namespace: ns });
    expect(Number(d.namespaceInfo?.limits?.blobSizeLimitError)).to.equal(2 * MiB);
    expect(Number(d.namespaceInfo?.limits?.memoSizeLimitError)).to.equal(2 * MiB);
  });

  it('refuses a start or a signal whose input is over 2 MiB with INVALID_ARGUMENT "Blob data size exceeds limit."; 1 MiB (over the warn limit) passes', async () => {
    const svc = dev.conn.client.workflowService;
    const q = uniqueQueue('blob');
    const start = (bytes: number) =>
      svc.startWorkflowExecution({ namespace: ns, workflowId: uniqueQueue('blob'), workflowType: { name: 'raw' }, taskQueue: { name: q }, requestId: uniqueQueue('r'), input: bigPayloads(bytes) });
    const refused = (await start(2 * MiB + 1).catch((e: { code: number; details: string }) => e)) as { code: number; details: string };
    expect(refused.code).to.equal(3);
    expect(refused.details).to.equal('Blob data size exceeds limit.');
    const ok = await start(MiB);
    expect(ok.runId).to.be.a('string');
    const signal = (await svc
      .signalWorkflowExecution({ namespace: ns, workflowExecution: { workflowId: (await svc.listWorkflowExecutions({ namespace: ns, query: `TaskQueue = '${q}'` })).executions[0].execution!.workflowId }, signalName: 's', input: bigPayloads(2 * MiB + 1) })
      .catch((e: { code: number; details: string }) => e)) as { code: number; details: string };
    expect(signal.code).to.equal(3);
    expect(signal.details).to.equal('Blob data size exceeds limit.');
  });

  it('fails the workflow task of a command over the limit with its cause and terminates the run', async () => {
    const svc = dev.conn.client.workflowService;
    const q = uniqueQueue('blob-cmd');
    const workflowId = uniqueQueue('blob-cmd');
    await svc.startWorkflowExecution({ namespace: ns, workflowId, workflowType: { name: 'raw' }, taskQueue: { name: q }, requestId: uniqueQueue('r') });
    const task = await svc.pollWorkflowTaskQueue({ namespace: ns, taskQueue: { name: q }, identity: 'raw-worker' });
    await svc.respondWorkflowTaskCompleted({
      taskToken: task.taskToken,
      identity: 'raw-worker',
      commands: [
        {
          commandType: temporal.api.enums.v1.CommandType.COMMAND_TYPE_SCHEDULE_ACTIVITY_TASK,
          scheduleActivityTaskCommandAttributes: { activityId: '1', activityType: { name: 'big' }, taskQueue: { name: q }, startToCloseTimeout: { seconds: 10 as never }, input: bigPayloads(2 * MiB + 100) },
        },
      ],
    });
    const events = (await svc.getWorkflowExecutionHistory({ namespace: ns, execution: { workflowId } })).history?.events ?? [];
    expect(events.map((e) => e.eventType)).to.deep.equal([
      ET.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED,
      ET.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED,
      ET.EVENT_TYPE_WORKFLOW_TASK_STARTED,
      ET.EVENT_TYPE_WORKFLOW_TASK_FAILED,
      ET.EVENT_TYPE_WORKFLOW_EXECUTION_TERMINATED,
    ]);
    const failed = events[3].workflowTaskFailedEventAttributes!;
    expect(failed.cause).to.equal(temporal.api.enums.v1.WorkflowTaskFailedCause.WORKFLOW_TASK_FAILED_CAUSE_BAD_SCHEDULE_ACTIVITY_ATTRIBUTES);
    expect(failed.failure?.message).to.equal('ScheduleActivityTaskCommandAttributes.Input exceeds size limit.');
    expect(events[4].workflowExecutionTerminatedEventAttributes?.reason).to.equal('BadScheduleActivityAttributes: ScheduleActivityTaskCommandAttributes.Input exceeds size limit.');
  });
  it('refuses a start or signal-with-start whose memo is over 2 MiB with INVALID_ARGUMENT "Memo size exceeds limit."', async () => {
    const svc = dev.svc;
    const q = uniqueQueue('memo');
    const memo = { fields: { big: bigPayload(2 * MiB + 1) } };
    const start = (await startRawWorkflow(svc, q, { memo }).catch((e: Err) => e)) as Err;
    expect(start.code).to.equal(3);
    expect(start.details).to.equal('Memo size exceeds limit.');
    const sws = (await svc
      .signalWithStartWorkflowExecution({ namespace: ns, workflowId: uniqueQueue('memo'), workflowType: { name: 'raw' }, taskQueue: { name: q }, requestId: uniqueQueue('r'), signalName: 's', memo })
      .catch((e: Err) => e)) as Err;
    expect(sws.code).to.equal(3);
    expect(sws.details).to.equal('Memo size exceeds limit.');
    // Over the 2 KiB memo warn limit but under the error limit: started.
    expect((await startRawWorkflow(svc, q, { memo: { fields: { big: bigPayload(64 * 1024) } } })).runId).to.be.a('string');
  });

  /** Starts a raw run, completes its first workflow task with `commands`, and returns the run's events. */
  async function completeWith(commands: temporal.api.command.v1.ICommand[], extra: Partial<temporal.api.workflowservice.v1.IStartWorkflowExecutionRequest> = {}) {
    const svc = dev.svc;
    const q = uniqueQueue('blob-cmds');
    const { workflowId } = await startRawWorkflow(svc, q, extra);
    const task = await svc.pollWorkflowTaskQueue({ namespace: ns, taskQueue: { name: q }, identity: 'raw-worker' });
    await svc.respondWorkflowTaskCompleted({ taskToken: task.taskToken, identity: 'raw-worker', commands });
    return (await svc.getWorkflowExecutionHistory({ namespace: ns, execution: { workflowId } })).history?.events ?? [];
  }

  const oversizedCommands: Array<[string, temporal.api.command.v1.ICommand, number, string]> = [
    [
      'a workflow failure',
      { commandType: CT.COMMAND_TYPE_FAIL_WORKFLOW_EXECUTION, failWorkflowExecutionCommandAttributes: { failure: { message: 'x'.repeat(2 * MiB + 10) } } },
      Cause.WORKFLOW_TASK_FAILED_CAUSE_BAD_FAIL_WORKFLOW_EXECUTION_ATTRIBUTES,
      'BadFailWorkflowExecutionAttributes: FailWorkflowExecutionCommandAttributes.Failure exceeds size limit.',
    ],
    [
      "a marker's details",
      { commandType: CT.COMMAND_TYPE_RECORD_MARKER, recordMarkerCommandAttributes: { markerName: 'm', details: { data: bigPayloads(2 * MiB + 10) } } },
      Cause.WORKFLOW_TASK_FAILED_CAUSE_BAD_RECORD_MARKER_ATTRIBUTES,
      'BadRecordMarkerAttributes: RecordMarkerCommandAttributes.Details exceeds size limit.',
    ],
    [
      'an upserted memo',
      { commandType: CT.COMMAND_TYPE_MODIFY_WORKFLOW_PROPERTIES, modifyWorkflowPropertiesCommandAttributes: { upsertedMemo: { fields: { big: bigPayload(2 * MiB + 10) } } } },
      Cause.WORKFLOW_TASK_FAILED_CAUSE_BAD_MODIFY_WORKFLOW_PROPERTIES_ATTRIBUTES,
      'BadModifyWorkflowPropertiesAttributes: ModifyWorkflowPropertiesCommandAttributes exceeds size limit.',
    ],
    [
      "a child's memo",
      {
        commandType: CT.COMMAND_TYPE_START_CHILD_WORKFLOW_EXECUTION,
        startChildWorkflowExecutionCommandAttributes: { workflowId: uniqueQueue('child'), workflowType: { name: 'raw' }, taskQueue: { name: 'blob-child' }, memo: { fields: { big: bigPayload(2 * MiB + 10) } } },
      },
      Cause.WORKFLOW_TASK_FAILED_CAUSE_BAD_START_CHILD_EXECUTION_ATTRIBUTES,
      'BadStartChildExecutionAttributes: StartChildWorkflowExecutionCommandAttributes.Memo exceeds size limit.',
    ],
    [
      "a continue-as-new's memo",
      { commandType: CT.COMMAND_TYPE_CONTINUE_AS_NEW_WORKFLOW_EXECUTION, continueAsNewWorkflowExecutionCommandAttributes: { workflowType: { name: 'raw' }, taskQueue: { name: 'blob-can' }, memo: { fields: { big: bigPayload(2 * MiB + 10) } } } },
      Cause.WORKFLOW_TASK_FAILED_CAUSE_BAD_CONTINUE_AS_NEW_ATTRIBUTES,
      'BadContinueAsNewAttributes: ContinueAsNewWorkflowExecutionCommandAttributes. Memo exceeds size limit.',
    ],
  ];
  for (const [what, command, cause, reason] of oversizedCommands) {
    it(`fails the workflow task of ${what} over the limit with its cause and terminates the run`, async () => {
      const events = await completeWith([command]);
      expect(events.map((e) => e.eventType)).to.deep.equal([
        ET.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED,
        ET.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED,
        ET.EVENT_TYPE_WORKFLOW_TASK_STARTED,
        ET.EVENT_TYPE_WORKFLOW_TASK_FAILED,
        ET.EVENT_TYPE_WORKFLOW_EXECUTION_TERMINATED,
      ]);
      expect(events[3].workflowTaskFailedEventAttributes?.cause).to.equal(cause);
      expect(events[4].workflowExecutionTerminatedEventAttributes?.reason).to.equal(reason);
    });
  }

  it('checks an upserted memo merged into the run memo against the memo limit ("ModifyWorkflowPropertiesCommandAttributes. Memo exceeds size limit.")', async () => {
    // Each part is under 2 MiB; together they are over.
    const events = await completeWith(
      [{ commandType: CT.COMMAND_TYPE_MODIFY_WORKFLOW_PROPERTIES, modifyWorkflowPropertiesCommandAttributes: { upsertedMemo: { fields: { b: bigPayload(MiB + 10) } } } }],
      { memo: { fields: { a: bigPayload(MiB + 10) } } },
    );
    expect(events.at(-1)?.workflowExecutionTerminatedEventAttributes?.reason).to.equal('BadModifyWorkflowPropertiesAttributes: ModifyWorkflowPropertiesCommandAttributes. Memo exceeds size limit.');
  });

  it('terminates a run whose update Response message is over the limit (BAD_UPDATE_WORKFLOW_EXECUTION_MESSAGE) and admits the update itself', async () => {
    const svc = dev.svc;
    const q = uniqueQueue('blob-upd');
    const { workflowId } = await startRawWorkflow(svc, q);
    const request = { meta: { updateId: 'big', identity: 'client' }, input: { name: 'u', args: bigPayloads(16) } };
    const pending = svc
      .updateWorkflowExecution({ namespace: ns, workflowExecution: { workflowId }, request, waitPolicy: { lifecycleStage: Stage.UPDATE_WORKFLOW_EXECUTION_LIFECYCLE_STAGE_COMPLETED } })
      .catch((e: Err) => e);
    const task = await svc.pollWorkflowTaskQueue({ namespace: ns, taskQueue: { name: q }, identity: 'raw-worker' });
    expect(task.messages).to.have.length(1);
    const body = (name: 'Acceptance' | 'Response', msg: object) => {
      const T = temporal.api.update.v1[name] as unknown as { encode(m: object): { finish(): Uint8Array }; fromObject(o: object): object };
      return { type_url: `type.googleapis.com/temporal.api.update.v1.${name}`, value: T.encode(T.fromObject(msg)).finish() } as never;
    };
    await svc.respondWorkflowTaskCompleted({
      taskToken: task.taskToken,
      identity: 'raw-worker',
      messages: [
        { id: 'big/accept', protocolInstanceId: 'big', body: body('Acceptance', { acceptedRequestMessageId: 'big/request', acceptedRequestSequencingEventId: Number(task.messages![0].eventId) }) },
        { id: 'big/complete', protocolInstanceId: 'big', body: body('Response', { meta: { updateId: 'big' }, outcome: { success: bigPayloads(2 * MiB + 10) } }) },
      ],
      commands: [
        { commandType: CT.COMMAND_TYPE_PROTOCOL_MESSAGE, protocolMessageCommandAttributes: { messageId: 'big/accept' } },
        { commandType: CT.COMMAND_TYPE_PROTOCOL_MESSAGE, protocolMessageCommandAttributes: { messageId: 'big/complete' } },
      ],
    });
    const events = (await svc.getWorkflowExecutionHistory({ namespace: ns, execution: { workflowId } })).history?.events ?? [];
    expect(events.map((e) => e.eventType)).to.deep.equal([
      ET.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED,
      ET.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED,
      ET.EVENT_TYPE_WORKFLOW_TASK_STARTED,
      ET.EVENT_TYPE_WORKFLOW_TASK_FAILED,
      ET.EVENT_TYPE_WORKFLOW_EXECUTION_TERMINATED,
    ]);
    expect(events[3].workflowTaskFailedEventAttributes?.cause).to.equal(Cause.WORKFLOW_TASK_FAILED_CAUSE_BAD_UPDATE_WORKFLOW_EXECUTION_MESSAGE);
    expect(events[4].workflowExecutionTerminatedEventAttributes?.reason).to.equal('BadUpdateWorkflowExecutionMessage: Message type temporal.api.update.v1.Response exceeds size limit.');
    // The caller waiting for the outcome learns the run closed without it (consts.ErrWorkflowCompleted).
    const outcome = await pending;
    expect(outcome, JSON.stringify(outcome)).to.include({ code: 5, details: 'workflow execution already completed' });
  });

  /** Starts a raw run that schedules one activity (retried up to 5 times), polls its task, and returns the task. */
  async function activityTask() {
    const svc = dev.svc;
    const q = uniqueQueue('blob-act');
    const { workflowId } = await startRawWorkflow(svc, q);
    const wt = await svc.pollWorkflowTaskQueue({ namespace: ns, taskQueue: { name: q }, identity: 'raw-worker' });
    await svc.respondWorkflowTaskCompleted({
      taskToken: wt.taskToken,
      identity: 'raw-worker',
      commands: [
        {
          commandType: CT.COMMAND_TYPE_SCHEDULE_ACTIVITY_TASK,
          scheduleActivityTaskCommandAttributes: { activityId: 'a1', activityType: { name: 'big' }, taskQueue: { name: q }, startToCloseTimeout: { seconds: 60 as never }, retryPolicy: { maximumAttempts: 5 } },
        },
      ],
    });
    const task = await svc.pollActivityTaskQueue({ namespace: ns, taskQueue: { name: q }, identity: 'raw-worker' });
    const failed = async () => {
      const events = (await svc.getWorkflowExecutionHistory({ namespace: ns, execution: { workflowId } })).history?.events ?? [];
      return events.find((e) => e.eventType === ET.EVENT_TYPE_ACTIVITY_TASK_FAILED)?.activityTaskFailedEventAttributes;
    };
    return { task, failed };
  }

  it('fails an activity whose result is over the limit with the non-retryable server failure "Complete result exceeds size limit." (the call succeeds)', async () => {
    const { task, failed } = await activityTask();
    await dev.svc.respondActivityTaskCompleted({ taskToken: task.taskToken, identity: 'raw-worker', result: bigPayloads(2 * MiB + 10) });
    const f = await failed();
    expect(f?.failure?.message).to.equal('Complete result exceeds size limit.');
    expect(f?.failure?.serverFailureInfo?.nonRetryable).to.equal(true);
    expect(f?.retryState).to.equal(RetryState.RETRY_STATE_NON_RETRYABLE_FAILURE);
  });

  it('replaces an activity failure over the limit by "Failure exceeds size limit." caused by the original cut to 512 KiB, and lists it in the response', async () => {
    const { task, failed } = await activityTask();
    const r = await dev.svc.respondActivityTaskFailed({
      taskToken: task.taskToken,
      identity: 'raw-worker',
      failure: { message: 'boom', stackTrace: 's'.repeat(3 * MiB), applicationFailureInfo: { type: 'Big' } },
    });
    expect(r.failures?.map((x) => x.message)).to.deep.equal(['Failure exceeds size limit.']);
    const f = await failed();
    expect(f?.failure?.message).to.equal('Failure exceeds size limit.');
    expect(f?.failure?.cause?.message).to.equal('boom');
    expect(f?.failure?.cause?.applicationFailureInfo?.type).to.equal('Big');
    expect(f?.failure?.cause?.stackTrace?.length).to.be.below(512 * 1024);
    expect(f?.retryState).to.equal(RetryState.RETRY_STATE_NON_RETRYABLE_FAILURE);
  });

  it('fails an activity whose heartbeat details are over the limit ("Heartbeat details exceed size limit.") and answers cancelRequested', async () => {
    const { task, failed } = await activityTask();
    const hb = await dev.svc.recordActivityTaskHeartbeat({ taskToken: task.taskToken, identity: 'raw-worker', details: bigPayloads(2 * MiB + 10) });
    expect(hb.cancelRequested).to.equal(true);
    expect((await failed())?.failure?.message).to.equal('Heartbeat details exceed size limit.');
  });
});
