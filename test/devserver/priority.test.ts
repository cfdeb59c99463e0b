/**
 * Task Queue Priority and Fairness at the protocol level (raw WorkflowService calls, no worker
 * polling until the backlog is in place): lower priority key first (1..5, default 3), weighted
 * round-robin across fairness keys, FIFO within a key; activities and child workflows inherit the
 * workflow's priority field by field; an over-long fairness key is refused as the real server
 * refuses it. Sources: docs.temporal.io "Task Queue Priority and Fairness"; temporalio/temporal
 * common/priorities/priority_util.go (Merge, Validate) and service/matching (clipPriority,
 * fair_task_writer.go pickPasses, fairness_util.go getEffectiveWeight).
 */
import { expect } from 'chai';
import { temporal } from '@temporalio/proto';
import { uniqueQueue, withWorker, useDevServer } from './helpers';
import { priorityParent } from './workflows';

type IPriority = temporal.api.common.v1.IPriority;
const CT = temporal.api.enums.v1.CommandType;
const ET = temporal.api.enums.v1.EventType;

describe('devserver task queue priority and fairness', function () {
  this.timeout(30_000);
  const dev = useDevServer();
  const ns = 'default';

  async function start(taskQueue: string, workflowId: string, priority?: IPriority) {
    await dev.svc.startWorkflowExecution({
      namespace: ns,
      workflowId,
      workflowType: { name: 'raw' },
      taskQueue: { name: taskQueue },
      requestId: uniqueQueue('req'),
      priority,
    });
  }
  /** Polls `n` workflow tasks of a backlogged queue and returns their workflow ids in dispatch order. */
  async function drain(taskQueue: string, n: number): Promise<string[]> {
    const ids: string[] = [];
    for (let i = 0; i < n; i++) {
      const t = await dev.svc.pollWorkflowTaskQueue({ namespace: ns, taskQueue: { name: taskQueue }, identity: 'prio-test' });
      ids.push(t.workflowExecution!.workflowId!);
    }
    return ids;
  }

  it('dispatches a lower priority key first, an unset key as 3, and FIFO within a priority', async () => {
    const q = uniqueQueue('prio');
    await start(q, 'p5', { priorityKey: 5 });
    await start(q, 'p3-unset');
    await start(q, 'p1', { priorityKey: 1 });
    await start(q, 'p3', { priorityKey: 3 });
    await start(q, 'p9-clipped-to-5', { priorityKey: 9 });
    await start(q, 'p2', { priorityKey: 2 });
    expect(await drain(q, 6)).to.deep.equal(['p1', 'p2', 'p3-unset', 'p3', 'p5', 'p9-clipped-to-5']);
  });

  it("never lets one fairness key's backlog delay another key's next task by more than one round", async () => {
    const q = uniqueQueue('fair');
    for (let i = 0; i < 30; i++) await start(q, `a-${i}`, { fairnessKey: 'org-a' });
    await start(q, 'b-0', { fairnessKey: 'org-b' });
    const first = await drain(q, 2);
    expect(first).to.include('b-0');
    // Key A keeps its order (FIFO within a key).
    expect(first.filter((id) => id.startsWith('a-'))).to.deep.equal(first.filter((id) => id.startsWith('a-')).sort());
    // Later, after A has been dispatched a while, B's next task again waits at most one A task.
    await drain(q, 10);
    await start(q, 'b-1', { fairnessKey: 'org-b' });
    expect(await drain(q, 2)).to.include('b-1');
  });

  it('reports the backlog in all and per priority key (DescribeTaskQueue reportStats)', async () => {
    const q = uniqueQueue('stats');
    await start(q, 's1-a', { priorityKey: 1 });
    await start(q, 's4-a', { priorityKey: 4, fairnessKey: 'org-a' });
    await start(q, 's4-b', { priorityKey: 4, fairnessKey: 'org-b' });
    await start(q, 's3-unset');
    const describe = async () => {
      const r = await dev.svc.describeTaskQueue({ namespace: ns, taskQueue: { name: q }, taskQueueType: temporal.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW, reportStats: true });
      const byKey = Object.fromEntries(Object.entries(r.statsByPriorityKey ?? {}).map(([k, v]) => [k, Number(v.approximateBacklogCount)]));
      return { total: Number(r.stats?.approximateBacklogCount ?? 0), byKey };
    };
    expect(await describe()).to.deep.equal({ total: 4, byKey: { 1: 1, 3: 1, 4: 2 } });
    await drain(q, 2);
    expect(await describe()).to.deep.equal({ total: 2, byKey: { 4: 2 } });
    // Without reportStats: no stats, as the real server.
    const plain = await dev.svc.describeTaskQueue({ namespace: ns, taskQueue: { name: q }, taskQueueType: temporal.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW });
    expect(plain.stats).to.equal(null);
    await drain(q, 2);
  });

  it('dispatches fairness keys in proportion to their weights (3:1)', async () => {
    const q = uniqueQueue('weight');
    for (let i = 0; i < 60; i++) {
      await start(q, `heavy-${i}`, { fairnessKey: 'heavy', fairnessWeight: 3 });
      await start(q, `light-${i}`, { fairnessKey: 'light', fairnessWeight: 1 });
    }
    const ids = await drain(q, 40);
    const heavy = ids.filter((id) => id.startsWith('heavy-')).length;
    expect(heavy).to.be.within(29, 31);
    expect(40 - heavy).to.be.within(9, 11);
  });

  it('lets activities inherit the workflow priority field by field unless they set their own', async () => {
    const wq = uniqueQueue('act-wf');
    const aq = uniqueQueue('act');
    const schedule = (activityId: string, priority?: IPriority) => ({
      commandType: CT.COMMAND_TYPE_SCHEDULE_ACTIVITY_TASK,
      scheduleActivityTaskCommandAttributes: {
        activityId,
        activityType: { name: 'act' },
        taskQueue: { name: aq },
        startToCloseTimeout: { seconds: 10 as never },
        priority,
      },
    });
    await start(wq, 'wf-p4', { priorityKey: 4, fairnessKey: 'org-4' });
    await start(wq, 'wf-p2', { priorityKey: 2 });
    for (let i = 0; i < 2; i++) {
      const t = await dev.svc.pollWorkflowTaskQueue({ namespace: ns, taskQueue: { name: wq }, identity: 'prio-test' });
      const commands =
        t.workflowExecution!.workflowId === 'wf-p4'
          ? [schedule('inherits-4')]
          : [schedule('overrides-5', { priorityKey: 5 }), schedule('inherits-2')];
      await dev.svc.respondWorkflowTaskCompleted({ namespace: ns, taskToken: t.taskToken, commands, identity: 'prio-test' });
    }
    const order: string[] = [];
    for (let i = 0; i < 3; i++) {
      const t = await dev.svc.pollActivityTaskQueue({ namespace: ns, taskQueue: { name: aq }, identity: 'prio-test' });
      order.push(t.activityId!);
    }
    expect(order).to.deep.equal(['inherits-2', 'inherits-4', 'overrides-5']);
    // The scheduled event keeps the command's own priority; describe shows the workflow's.
    const h = await dev.svc.getWorkflowExecutionHistory({ namespace: ns, execution: { workflowId: 'wf-p2' } });
    const scheduled = h.history!.events!.filter((e) => e.eventType === ET.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED);
    expect(scheduled.map((e) => e.activityTaskScheduledEventAttributes!.priority?.priorityKey ?? 0)).to.deep.equal([5, 0]);
    const d = await dev.svc.describeWorkflowExecution({ namespace: ns, execution: { workflowId: 'wf-p4' } });
    expect(d.workflowExecutionInfo!.priority).to.include({ priorityKey: 4, fairnessKey: 'org-4' });
    const list = await dev.svc.listWorkflowExecutions({ namespace: ns, query: `WorkflowId = 'wf-p2'` });
    expect(list.executions![0].priority?.priorityKey).to.equal(2);
  });

  it('gives a child workflow its parent priority, field by field, in its started event and workflowInfo().priority', async () => {
    const q = uniqueQueue('child-prio');
    const result = await withWorker(dev.conn.native, q, async () =>
      dev.conn.client.workflow.execute(priorityParent, {
        taskQueue: q,
        workflowId: uniqueQueue('prio-parent'),
        priority: { priorityKey: 2, fairnessKey: 'org-7', fairnessWeight: 2 },
      }),
    );
    expect(result).to.deep.equal([
      { priorityKey: 2, fairnessKey: 'org-7', fairnessWeight: 2 },
      { priorityKey: 5, fairnessKey: 'org-7', fairnessWeight: 2 },
    ]);
  });

  it('refuses a fairness key over 64 bytes as the real server does (INVALID_ARGUMENT) and accepts 64', async () => {
    const q = uniqueQueue('long-key');
    await start(q, uniqueQueue('k64'), { fairnessKey: 'k'.repeat(64) });
    // 22 three-byte characters: 66 bytes though only 22 characters.
    const err = await start(q, uniqueQueue('k66'), { fairnessKey: '€'.repeat(22) }).catch((e: Error & { code?: number }) => e);
    expect(err).to.be.instanceOf(Error);
    expect((err as { code?: number }).code).to.equal(3);
    expect((err as Error).message).to.contain('fairness key length exceeds limit');
  });
});
