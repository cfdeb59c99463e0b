/**
 * Fair sharing (docs/operations.md "Fair sharing"): every workflow start carries the priority of its
 * workload class and the organization as fairness key (Temporal "Task Queue Priority and Fairness"),
 * on the task queue of its type (temporal.config.ts WORKFLOW_ROUTES). Checked on the unit level and on
 * workflows started through the API (api/server.ts) and the webhook dispatcher, run by the service's
 * activities on a worker polling every queue, as the dev server records them in each workflow's history.
 */
import { expect } from 'chai';
import type { Client } from '@temporalio/client';
import { startTestApi, type TestApi } from '../helpers/api';
import { testTemporal } from '../helpers/temporal';
import { createActivities } from '../../activities';
import {
  BULK_WORKFLOW_TASK_SLOTS,
  bulkResourceTargets,
  FAIRNESS_KEY_MAX_BYTES,
  fairnessKeyOf,
  grpcCompression,
  PRIORITY_KEYS,
  taskQueueName,
  WORKFLOW_ROUTES,
  workflowIds,
  workerQueueSelection,
  workflowPlacement,
  WEBHOOK_MIN_ACTIVITY_SLOTS,
  type WorkflowName,
} from '../../temporal.config';
import { serviceQueues, shareResourceController } from '../../worker';
import { ResourceBasedController } from '@temporalio/worker';
import { ensureBillingCalendar } from '../../activities/billing';

/** The queue and priority the dev server recorded on the first event of workflow `workflowId`. */
async function recordedStart(client: Client, workflowId: string): Promise<{ taskQueue: string; priority: { priorityKey: number; fairnessKey: string; fairnessWeight: number } }> {
  const history = await client.workflow.getHandle(workflowId).fetchHistory();
  const started = history.events![0].workflowExecutionStartedEventAttributes!;
  const p = started.priority ?? {};
  return { taskQueue: started.taskQueue!.name!, priority: { priorityKey: p.priorityKey ?? 0, fairnessKey: p.fairnessKey ?? '', fairnessWeight: p.fairnessWeight ?? 0 } };
}

describe('Fair sharing: task queue and priority of every workflow (temporal.config.ts)', function () {
  this.timeout(120_000);

  describe('the table', () => {
    it('runs what a person waits on ahead of bulk work on the main queue, webhook deliveries and replays on a queue of their own, other bulk work on the bulk queue but the campaign dialer (whose dials need the main queue\'s slots)', () => {
      const interactive: WorkflowName[] = ['agentPublishWorkflow', 'agentSimulation', 'voiceCall', 'smsMessage', 'smsReply', 'smsRegistration'];
      for (const [type, route] of Object.entries(WORKFLOW_ROUTES) as Array<[WorkflowName, (typeof WORKFLOW_ROUTES)[WorkflowName]]>) {
        expect(route.workload, type).to.equal(interactive.includes(type) ? 'interactive' : 'bulk');
        const queue = type === 'webhookDelivery' || type === 'webhookReplay' ? 'webhooks' : route.workload === 'bulk' && type !== 'campaignDialer' ? 'bulk' : 'main';
        expect(route.queue, type).to.equal(queue);
      }
      expect(PRIORITY_KEYS.interactive).to.be.lessThan(PRIORITY_KEYS.bulk);
      for (const key of Object.values(PRIORITY_KEYS)) expect(key).to.be.within(1, 5);
    });

    it('derives every queue from the base task queue, and the worker polls each of them', () => {
      expect(taskQueueName('tq-1', 'main')).to.equal('tq-1');
      expect(taskQueueName('tq-1', 'webhooks')).to.equal('tq-1-webhooks');
      expect(taskQueueName('tq-1', 'bulk')).to.equal('tq-1-bulk');
      expect(serviceQueues('tq-1', {}).map((q) => q.taskQueue)).to.deep.equal(['tq-1', 'tq-1-webhooks', 'tq-1-bulk']);
      const fixed = { BULK_TARGET_CPU: 'off', WEBHOOK_WORKER_SLOTS: '7', BULK_WORKER_SLOTS: '3', WEBHOOK_ACTIVITIES_PER_SECOND: '9', BULK_ACTIVITIES_PER_SECOND: '2' };
      const [main, webhooks, bulk] = serviceQueues('tq-1', fixed);
      expect(main.options).to.deep.equal({});
      expect(webhooks.options).to.deep.equal({ maxConcurrentActivityTaskExecutions: 7, maxConcurrentWorkflowTaskExecutions: BULK_WORKFLOW_TASK_SLOTS, maxActivitiesPerSecond: 9, maxEagerActivityReservationsPerWorkflowTask: 0 });
      expect(bulk.options).to.deep.equal({ maxConcurrentActivityTaskExecutions: 3, maxConcurrentWorkflowTaskExecutions: BULK_WORKFLOW_TASK_SLOTS, maxActivitiesPerSecond: 2, maxEagerActivityReservationsPerWorkflowTask: 0 });
      expect(serviceQueues('tq-1', { BULK_TARGET_CPU: 'off' })[2].options.maxConcurrentActivityTaskExecutions).to.equal(4);
      // Bulk work takes a bounded rate of activities per process by default; the main queue none.
      expect(serviceQueues('tq-1', {}).map((q) => q.options.maxActivitiesPerSecond)).to.deep.equal([undefined, 50, 20]);
      expect(() => serviceQueues('tq-1', { BULK_ACTIVITIES_PER_SECOND: '0' })).to.throw(/BULK_ACTIVITIES_PER_SECOND/);
      expect(() => serviceQueues('tq-1', { WEBHOOK_WORKER_SLOTS: '0' })).to.throw(/WEBHOOK_WORKER_SLOTS/);
      expect(() => serviceQueues('tq-1', { BULK_WORKER_SLOTS: '1.5' })).to.throw(/BULK_WORKER_SLOTS/);
    });

    it('hands the bulk queues\' activity slots out by what the machine has to spare (the SDK\'s resource-based slot supplier), the fixed counts as caps, one activity (eight webhook attempts) always, and fixed workflow task slots', () => {
      const [main, webhooks, bulk] = serviceQueues('tq-1', { WEBHOOK_WORKER_SLOTS: '7', BULK_WORKER_SLOTS: '3', BULK_ACTIVITIES_PER_SECOND: '2' });
      expect(main.options).to.deep.equal({});
      const targets = { targetCpuUsage: 0.5, targetMemoryUsage: 0.8 };
      expect(bulk.options).to.deep.equal({
        tuner: {
          tunerOptions: targets,
          workflowTaskSlots: BULK_WORKFLOW_TASK_SLOTS,
          activityTaskSlotOptions: { minimumSlots: 1, maximumSlots: 3 },
          localActivityTaskSlotOptions: { minimumSlots: 1, maximumSlots: 3 },
        },
        maxActivitiesPerSecond: 2,
        maxEagerActivityReservationsPerWorkflowTask: 0,
      });
      // Webhook attempts wait on the network: one organization's attempts in flight always have slots (at most the cap).
      expect(webhooks.options.tuner?.activityTaskSlotOptions).to.deep.equal({ minimumSlots: 7, maximumSlots: 7 });
      expect(serviceQueues('tq-1', {})[1].options.tuner?.activityTaskSlotOptions).to.deep.equal({ minimumSlots: WEBHOOK_MIN_ACTIVITY_SLOTS, maximumSlots: 32 });
      expect(bulkResourceTargets({ BULK_TARGET_CPU: '0.7', BULK_TARGET_MEMORY: '0.9' })).to.deep.equal({ targetCpuUsage: 0.7, targetMemoryUsage: 0.9 });
      expect(bulkResourceTargets({ BULK_TARGET_CPU: 'off' })).to.equal(undefined);
      for (const bad of ['0', '1.5', '-0.2', 'half']) expect(() => serviceQueues('tq-1', { BULK_TARGET_CPU: bad }), bad).to.throw(/BULK_TARGET_CPU/);
      expect(() => serviceQueues('tq-1', { BULK_TARGET_MEMORY: '80' })).to.throw(/BULK_TARGET_MEMORY/);
      // One process's bulk Workers share one resource controller (one sampler, one target), as worker.ts builds them.
      const shared = shareResourceController(serviceQueues('tq-1', {}));
      expect(shared[0]).to.deep.equal({});
      const [a, b] = [shared[1].tuner!, shared[2].tuner!];
      const [aActivities, bActivities, bLocal] = [a.activityTaskSlotSupplier, b.activityTaskSlotSupplier, b.localActivityTaskSlotSupplier] as Array<{ controller: unknown; tunerOptions?: unknown; minimumSlots: number }>;
      expect(aActivities.controller).to.be.instanceOf(ResourceBasedController);
      expect(aActivities.controller).to.equal(bActivities.controller);
      expect(bLocal.controller).to.equal(bActivities.controller);
      expect(aActivities.tunerOptions).to.equal(undefined);
      expect(aActivities.minimumSlots).to.equal(WEBHOOK_MIN_ACTIVITY_SLOTS);
      // Workflow task slots stay fixed, so the SDK core shares them between the sticky and the normal poller.
      expect(b.workflowTaskSlotSupplier).to.deep.equal({ type: 'fixed-size', numSlots: BULK_WORKFLOW_TASK_SLOTS });
    });

    it('polls only the queues WORKER_QUEUES names, so bulk queues can run in processes of their own', () => {
      expect(serviceQueues('tq-1', { WORKER_QUEUES: 'main' }).map((q) => q.taskQueue)).to.deep.equal(['tq-1']);
      expect(serviceQueues('tq-1', { WORKER_QUEUES: ' bulk, webhooks ' }).map((q) => q.queue)).to.deep.equal(['webhooks', 'bulk']);
      expect(workerQueueSelection({})).to.deep.equal(['main', 'webhooks', 'bulk']);
      expect(() => workerQueueSelection({ WORKER_QUEUES: 'main,reports' })).to.throw(/WORKER_QUEUES.*unknown: reports/);
      expect(() => workerQueueSelection({ WORKER_QUEUES: ' , ' })).to.throw(/WORKER_QUEUES/);
    });

    it('sends the worker\'s requests uncompressed to a frontend on this machine, gzip-compressed (the SDK\'s default) elsewhere, as TEMPORAL_GRPC_COMPRESSION overrides', () => {
      for (const local of ['127.0.0.1:7233', 'localhost:7233', '[::1]:7233', '127.0.1.1:40001']) expect(grpcCompression(local, {}), local).to.deep.equal({ codec: 'none' });
      for (const remote of ['temporal:7233', 'my-ns.a1b2c.tmprl.cloud:7233', '10.0.0.7:7233']) expect(grpcCompression(remote, {}), remote).to.deep.equal({ codec: 'gzip' });
      expect(grpcCompression('temporal:7233', { TEMPORAL_GRPC_COMPRESSION: 'none' })).to.deep.equal({ codec: 'none' });
      expect(grpcCompression('127.0.0.1:7233', { TEMPORAL_GRPC_COMPRESSION: 'gzip' })).to.deep.equal({ codec: 'gzip' });
      expect(() => grpcCompression('127.0.0.1:7233', { TEMPORAL_GRPC_COMPRESSION: 'zstd' })).to.throw(/TEMPORAL_GRPC_COMPRESSION/);
    });

    it('uses the organization as fairness key, cut to 64 bytes without splitting a character', () => {
      expect(workflowPlacement('base', 'smsMessage', 'org_1')).to.deep.equal({ taskQueue: 'base', priority: { priorityKey: 1, fairnessKey: 'org_1', fairnessWeight: 1 } });
      expect(workflowPlacement('base', 'webhookDelivery', 'org_1').taskQueue).to.equal('base-webhooks');
      // Work of every organization (the billing month) has no fairness key: the server's default key.
      expect(workflowPlacement('base', 'billingMonth', null).priority).to.deep.equal({ priorityKey: 4 });
      expect(fairnessKeyOf('a'.repeat(70))).to.equal('a'.repeat(FAIRNESS_KEY_MAX_BYTES));
      const cut = fairnessKeyOf('é'.repeat(40)); // 2 bytes each: 80 bytes
      expect(Buffer.byteLength(cut)).to.equal(64);
      expect(cut).to.equal('é'.repeat(32));
      const odd = fairnessKeyOf('a' + 'é'.repeat(40)); // 1 + 2n bytes: the 64th byte would split an é
      expect(Buffer.byteLength(odd)).to.equal(63);
    });
  });

  describe('starts through the API', () => {
    let t: TestApi;
    let client: Client;
    before(async () => {
      t = await startTestApi('fairshare', {}, { worker: (deps) => createActivities(deps) });
      client = (await testTemporal()).client;
    });
    after(async () => {
      await t?.close();
    });

    it('a publish runs on the main queue at the interactive priority with the organization as fairness key', async () => {
      const org = await t.org('Quiet org');
      const agent = await t.call('POST', '/agents', { key: org.key, json: { name: 'Front desk' } });
      expect(agent.status, agent.text).to.equal(201);
      const res = await t.call('POST', `/agents/${agent.body.data.id}/publish`, { key: org.key, json: {}, headers: { 'idempotency-key': 'fair-1' } });
      expect(res.status, res.text).to.be.oneOf([200, 201]);
      const start = await recordedStart(client, workflowIds.agentPublish(agent.body.data.id, 'fair-1'));
      expect(start).to.deep.equal({ taskQueue: t.taskQueue, priority: { priorityKey: PRIORITY_KEYS.interactive, fairnessKey: org.orgId, fairnessWeight: 1 } });
    });

    it('a knowledge ingestion runs on the bulk queue at the bulk priority, fair per organization', async () => {
      const org = await t.org('Bulk org');
      const agent = await t.call('POST', '/agents', { key: org.key, json: { name: 'Library' } });
      const res = await t.call('POST', `/agents/${agent.body.data.id}/knowledge/sources`, { key: org.key, json: { kind: 'text', text: 'We open at nine.' } });
      expect(res.status, res.text).to.equal(202);
      const workflowId = workflowIds.knowledgeSource(res.body.data.id);
      const start = await recordedStart(client, workflowId);
      expect(start).to.deep.equal({ taskQueue: taskQueueName(t.taskQueue!, 'bulk'), priority: { priorityKey: PRIORITY_KEYS.bulk, fairnessKey: org.orgId, fairnessWeight: 1 } });
      await client.workflow.getHandle(workflowId).result();
    });

    it('a schedule starts its workflow on the queue and at the priority of its type (ensureSchedule)', async () => {
      const scheduleId = `fair-billing-${t.taskQueue}`;
      expect(await ensureBillingCalendar({ client, taskQueue: t.taskQueue!, scheduleId })).to.equal(true);
      const schedule = client.schedule.getHandle(scheduleId);
      try {
        const { action } = await schedule.describe();
        expect(action.type).to.equal('startWorkflow');
        expect(action).to.include({ taskQueue: taskQueueName(t.taskQueue!, 'bulk') });
        // Work of every organization: the bulk priority and the server's default fairness key.
        expect((action as { priority?: object }).priority).to.deep.include({ priorityKey: PRIORITY_KEYS.bulk });
        expect((action as { priority?: { fairnessKey?: string } }).priority?.fairnessKey ?? '').to.equal('');
      } finally {
        await schedule.delete();
      }
    });
  });
});
