/**
 * The update protocol checked with raw WorkflowService calls (a hand-driven worker), where the
 * order must be deterministic: the request message on the workflow task (id, protocol instance,
 * sequencing event id), Acceptance / Response applied at their ProtocolMessage commands and
 * written as WorkflowExecutionUpdateAccepted / Completed, and an update admitted while the task
 * that continues as new is in flight delivered on the new run.
 */
import { expect } from 'chai';
import { temporal } from '@temporalio/proto';
import { uniqueQueue, useDevServer } from './helpers';

const ET = temporal.api.enums.v1.EventType;
const CT = temporal.api.enums.v1.CommandType;
const Stage = temporal.api.enums.v1.UpdateWorkflowExecutionLifecycleStage;
const up = temporal.api.update.v1;

/** An Any holding `msg` of message type `name` (temporal.api.update.v1.*). */
function any(name: 'Acceptance' | 'Response', msg: object): temporal.api.protocol.v1.IMessage['body'] {
  const T = up[name] as unknown as { encode(m: object): { finish(): Uint8Array }; fromObject(o: object): object };
  return { type_url: `type.googleapis.com/temporal.api.update.v1.${name}`, value: T.encode(T.fromObject(msg)).finish() } as never;
}

describe('devserver update protocol (raw gRPC)', function () {
  this.timeout(20_000);
  const dev = useDevServer();
  const ns = 'default';

  const poll = (name: string) => dev.svc.pollWorkflowTaskQueue({ namespace: ns, taskQueue: { name }, identity: 'raw-test' });
  const payloads = (s: string) => ({ payloads: [{ metadata: { encoding: Buffer.from('json/plain') }, data: Buffer.from(JSON.stringify(s)) }] });

  it('delivers an update admitted during a continue-as-new task on the new run, and writes accepted/completed events there', async () => {
    const q = uniqueQueue('upd-raw');
    const workflowId = uniqueQueue('upd-raw-wf');
    const first = await dev.svc.startWorkflowExecution({ namespace: ns, workflowId, workflowType: { name: 'raw' }, taskQueue: { name: q }, requestId: uniqueQueue('req') });
    const t1 = await poll(q);
    // The update arrives while the task that continues as new is started.
    const request = { meta: { updateId: 'u1', identity: 'client' }, input: { name: 'add', args: payloads('x') } };
    const pending = dev.svc.updateWorkflowExecution({
      namespace: ns,
      workflowExecution: { workflowId },
      request,
      waitPolicy: { lifecycleStage: Stage.UPDATE_WORKFLOW_EXECUTION_LIFECYCLE_STAGE_COMPLETED },
    });
    await new Promise((r) => setTimeout(r, 100));
    await dev.svc.respondWorkflowTaskCompleted({
      namespace: ns,
      taskToken: t1.taskToken,
      identity: 'raw-test',
      commands: [{ commandType: CT.COMMAND_TYPE_CONTINUE_AS_NEW_WORKFLOW_EXECUTION, continueAsNewWorkflowExecutionCommandAttributes: { workflowType: { name: 'raw' }, taskQueue: { name: q } } }],
    });
    const t2 = await poll(q);
    expect(t2.workflowExecution?.runId).to.not.equal(first.runId);
    expect(t2.messages).to.have.length(1);
    const m = t2.messages![0];
    expect(m.id).to.equal('u1/request');
    expect(m.protocolInstanceId).to.equal('u1');
    expect(Number(m.eventId)).to.equal(Number(t2.startedEventId) - 1);
    expect(m.body?.type_url).to.equal('type.googleapis.com/temporal.api.update.v1.Request');
    await dev.svc.respondWorkflowTaskCompleted({
      namespace: ns,
      taskToken: t2.taskToken,
      identity: 'raw-test',
      messages: [
        { id: 'u1/accept', protocolInstanceId: 'u1', body: any('Acceptance', { acceptedRequestMessageId: 'u1/request', acceptedRequestSequencingEventId: Number(m.eventId), acceptedRequest: request }) },
        { id: 'u1/complete', protocolInstanceId: 'u1', body: any('Response', { meta: { updateId: 'u1' }, outcome: { success: payloads('done') } }) },
      ],
      commands: [
        { commandType: CT.COMMAND_TYPE_PROTOCOL_MESSAGE, protocolMessageCommandAttributes: { messageId: 'u1/accept' } },
        { commandType: CT.COMMAND_TYPE_PROTOCOL_MESSAGE, protocolMessageCommandAttributes: { messageId: 'u1/complete' } },
      ],
    });
    const r = await pending;
    expect(r.stage).to.equal(Stage.UPDATE_WORKFLOW_EXECUTION_LIFECYCLE_STAGE_COMPLETED);
    expect(r.updateRef?.workflowExecution?.runId).to.equal(t2.workflowExecution?.runId);
    expect(Buffer.from(r.outcome!.success!.payloads![0].data!).toString()).to.equal('"done"');
    const h = await dev.svc.getWorkflowExecutionHistory({ namespace: ns, execution: { workflowId, runId: t2.workflowExecution!.runId } });
    const evs = h.history!.events!;
    expect(evs.map((e) => ET[e.eventType!].replace('EVENT_TYPE_', ''))).to.deep.equal([
      'WORKFLOW_EXECUTION_STARTED',
      'WORKFLOW_TASK_SCHEDULED',
      'WORKFLOW_TASK_STARTED',
      'WORKFLOW_TASK_COMPLETED',
      'WORKFLOW_EXECUTION_UPDATE_ACCEPTED',
      'WORKFLOW_EXECUTION_UPDATE_COMPLETED',
    ]);
    const accepted = evs[4].workflowExecutionUpdateAcceptedEventAttributes!;
    expect(accepted).to.include({ protocolInstanceId: 'u1', acceptedRequestMessageId: 'u1/request' });
    expect(Number(accepted.acceptedRequestSequencingEventId)).to.equal(Number(m.eventId));
    expect(Number(evs[5].workflowExecutionUpdateCompletedEventAttributes!.acceptedEventId)).to.equal(5);
    // The first run has no update events; the same id again answers the same outcome.
    const firstRun = await dev.svc.getWorkflowExecutionHistory({ namespace: ns, execution: { workflowId, runId: first.runId } });
    expect(firstRun.history!.events!.map((e) => e.eventType)).to.not.include(ET.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED);
    const again = await dev.svc.pollWorkflowExecutionUpdate({ namespace: ns, updateRef: { workflowExecution: { workflowId }, updateId: 'u1' }, waitPolicy: { lifecycleStage: Stage.UPDATE_WORKFLOW_EXECUTION_LIFECYCLE_STAGE_COMPLETED } });
    expect(again.stage).to.equal(Stage.UPDATE_WORKFLOW_EXECUTION_LIFECYCLE_STAGE_COMPLETED);
    await dev.svc.terminateWorkflowExecution({ namespace: ns, workflowExecution: { workflowId }, reason: 'test done' });
  });
});
