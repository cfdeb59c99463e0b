/**
 * Finer server behaviour that SDKs lean on, each checked against what the real server does (the
 * source is named in each test): start delays ended by updates and signal-with-start, queries
 * before the first workflow task.
 */
import { expect } from 'chai';
import { Client } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { startDevServer, DevServer } from '../../devserver';
import { connect, uniqueQueue, withWorker } from './helpers';
import { addUpdate, updatable, stopSignal } from './workflows';

type Svc = Client['workflowService'];
const ET = temporal.api.enums.v1.EventType;

describe('devserver parity with the real server', function () {
  this.timeout(30_000);
  let server: DevServer;
  let conn: Awaited<ReturnType<typeof connect>>;
  let svc: Svc;
  const ns = 'default';

  before(async () => {
    server = await startDevServer({});
    conn = await connect(server.address);
    svc = conn.client.workflowService;
  });
  after(async () => {
    await conn?.close();
    await server?.stop();
  });

  async function startRaw(taskQueue: string, extra: Partial<temporal.api.workflowservice.v1.IStartWorkflowExecutionRequest> = {}) {
    const workflowId = uniqueQueue('raw');
    const r = await svc.startWorkflowExecution({
      namespace: ns,
      workflowId,
      workflowType: { name: 'raw' },
      taskQueue: { name: taskQueue },
      requestId: uniqueQueue('req'),
      ...extra,
    });
    return { workflowId, runId: r.runId! };
  }

  describe('start delay and early queries (history updateworkflow, signalwithstart and queryworkflow APIs)', () => {
    it('ends a start delay when an update arrives: the first workflow task runs at once', async () => {
      const q = uniqueQueue('delay-update');
      const total = await withWorker(conn.native, q, async () => {
        const h = await conn.client.workflow.start(updatable, { taskQueue: q, workflowId: uniqueQueue('delayed'), startDelay: '1 hour' });
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
      await svc.signalWithStartWorkflowExecution(req('first'));
      await svc.signalWorkflowExecution({ namespace: ns, workflowExecution: { workflowId: 'sws-delayed-' + q }, signalName: 'plain', identity: 't' });
      const h0 = await svc.getWorkflowExecutionHistory({ namespace: ns, execution: { workflowId: 'sws-delayed-' + q } });
      expect((h0.history?.events ?? []).map((e) => e.eventType)).to.not.include(ET.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED);
      await svc.signalWithStartWorkflowExecution(req('second'));
      const t = await svc.pollWorkflowTaskQueue({ namespace: ns, taskQueue: { name: q }, identity: 't' });
      const types = (t.history?.events ?? []).map((e) => e.eventType);
      expect(types.filter((e) => e === ET.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED)).to.have.length(3);
    });

    it('answers a query to a run still in its start delay with WorkflowNotReady instead of sending it to a worker', async () => {
      const q = uniqueQueue('delay-query');
      const { workflowId } = await startRaw(q, { workflowStartDelay: { seconds: 3600 as never } });
      const err = await svc
        .queryWorkflow({ namespace: ns, execution: { workflowId }, query: { queryType: 'status' } })
        .catch((e: Error & { code?: number }) => e);
      expect((err as { code?: number }).code).to.equal(9); // FAILED_PRECONDITION
      expect((err as Error).message).to.contain('Workflow task is not scheduled yet');
    });

    it('holds a query sent before the first workflow task and answers it once a worker ran that task', async () => {
      const q = uniqueQueue('early-query');
      const h = await conn.client.workflow.start(updatable, { taskQueue: q, workflowId: uniqueQueue('early') });
      const pending = h.query<number>('__stack_trace').then(
        (v) => ({ ok: true as const, v }),
        (e: Error) => ({ ok: false as const, e }),
      );
      const answered = await withWorker(conn.native, q, async () => {
        const r = await pending;
        await h.signal(stopSignal);
        await h.result();
        return r;
      });
      expect(answered.ok, answered.ok ? '' : String(answered.e)).to.equal(true);
    });
  });
});
