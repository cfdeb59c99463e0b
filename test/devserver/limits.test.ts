/**
 * Blob size limits as the real server enforces them (dynamic config limit.blobSize.warn 512 KiB /
 * limit.blobSize.error 2 MiB; common.CheckEventBlobSizeLimit "Blob data size exceeds limit.", the
 * history workflow size checker terminating a run whose command payload is too large with
 * "<Cause>: <Command>Attributes.<Field> exceeds size limit.") and advertised where it advertises
 * them (NamespaceInfo.limits of DescribeNamespace).
 */
import { expect } from 'chai';
import { temporal } from '@temporalio/proto';
import { uniqueQueue, useDevServer } from './helpers';

const ET = temporal.api.enums.v1.EventType;
const MiB = 1024 * 1024;

/** One json/plain payload of `bytes` bytes of data. */
function bigPayloads(bytes: number) {
  return { payloads: [{ metadata: { encoding: Buffer.from('json/plain') }, data: Buffer.alloc(bytes, 0x61) }] };
}

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
});
