/**
 * One place for Temporal settings (DESIGN.md "temporal.config.ts"): address, namespace, task queues,
 * which workflow runs on which queue at which priority, workflow id formats, search attributes and
 * default activity retry policy. Workflow ids are deterministic so that a repeated request finds the
 * workflow it started before.
 */
import { defineSearchAttributeKey, SearchAttributeType, type SearchAttributePair } from '@temporalio/common';
import { ScheduleAlreadyRunning } from '@temporalio/client';
import type { Priority } from '@temporalio/common';
import type { Client, ScheduleOptions, ScheduleSpec, WorkflowHandleWithFirstExecutionRunId, WorkflowStartOptions } from '@temporalio/client';

/**
 * The base task queue (TEMPORAL_TASK_QUEUE, default `control-plane`): the service's queues are named
 * after it (see {@link TASK_QUEUES}). Everything that starts workflows is handed the base; the start
 * picks the queue of the workflow type.
 */
export const TASK_QUEUE = process.env.TEMPORAL_TASK_QUEUE || 'control-plane';

/**
 * The service's task queues, each a suffix of the base task queue, so a base unique to a test keeps
 * its queues unique too. A queue is a separate worker budget (Temporal "Task Queues": a worker's slots
 * are per queue, and a task a worker has polled waits for that worker's slots whatever its priority):
 * interactive work has the main queue to itself, so its workflow and activity tasks never wait behind a
 * bulk task a worker took first; bulk work runs on a queue with a small budget, and webhook deliveries,
 * which wait on other people's servers, on one of their own (docs/operations.md "Fair sharing").
 */
export const TASK_QUEUES = {
  /** Interactive work (a person waits on it); the SDK's default slot counts. */
  main: { suffix: '' },
  /** Webhook deliveries and replays; activity slots per worker process from WEBHOOK_WORKER_SLOTS. */
  webhooks: { suffix: '-webhooks' },
  /** Every other bulk workflow (knowledge, analysis, reports, evaluations, billing …); activity slots from BULK_WORKER_SLOTS. */
  bulk: { suffix: '-bulk' },
} as const;
/** A queue of {@link TASK_QUEUES}. */
export type QueueName = keyof typeof TASK_QUEUES;
/** Every queue of {@link TASK_QUEUES}, main first. */
export const QUEUE_NAMES = Object.keys(TASK_QUEUES) as QueueName[];

/** The name of `queue` for the base task queue `base` (`control-plane`, `control-plane-webhooks`, `control-plane-bulk`). */
export function taskQueueName(base: string, queue: QueueName): string {
  return `${base}${TASK_QUEUES[queue].suffix}`;
}

/** A positive integer from `env[name]`, else `fallback`. @throws Error naming the variable when malformed */
function positiveInteger(env: NodeJS.ProcessEnv, name: string, fallback: number): number {
  const raw = env[name];
  if (!raw) return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1) throw new Error(`${name} must be a positive integer`);
  return n;
}

/**
 * Activity slots of the webhooks queue per worker process (WEBHOOK_WORKER_SLOTS, default 32):
 * webhook attempts of every organization that run at once in one process.
 * @throws Error naming the variable when it is not a positive integer
 */
export function webhookWorkerSlots(env: NodeJS.ProcessEnv = process.env): number {
  return positiveInteger(env, 'WEBHOOK_WORKER_SLOTS', 32);
}

/**
 * Activity slots of the bulk queue per worker process (BULK_WORKER_SLOTS, default 4): bulk activities
 * (ingestion, re-embedding, analysis, reports, evaluations, billing, imports …) that run at once in one
 * process, which bounds the CPU bulk work can take from interactive work in that process.
 * @throws Error naming the variable when it is not a positive integer
 */
export function bulkWorkerSlots(env: NodeJS.ProcessEnv = process.env): number {
  return positiveInteger(env, 'BULK_WORKER_SLOTS', 4);
}

/**
 * Activities per second the bulk queue's Worker starts in one worker process (BULK_ACTIVITIES_PER_SECOND, default 20):
 * the SDK's `maxActivitiesPerSecond` (a worker-side limit: the Worker does not poll while taking another activity
 * would exceed it; Temporal TypeScript SDK `WorkerOptions`). A flood of ingestion, analysis or reports then
 * takes a bounded rate of work from the dev server, Postgres and the cores, and still progresses (a text
 * source is three activities: about 6 pages a second per process at the default).
 * @throws Error naming the variable when it is not a positive integer
 */
export function bulkActivitiesPerSecond(env: NodeJS.ProcessEnv = process.env): number {
  return positiveInteger(env, 'BULK_ACTIVITIES_PER_SECOND', 20);
}

/**
 * Activities per second the webhooks queue's Worker starts in one worker process (WEBHOOK_ACTIVITIES_PER_SECOND,
 * default 50; the SDK's `maxActivitiesPerSecond`, as {@link bulkActivitiesPerSecond}): bounds the attempts of
 * receivers that fail at once (a name that does not resolve), which the limits of attempts in flight do not.
 * @throws Error naming the variable when it is not a positive integer
 */
export function webhookActivitiesPerSecond(env: NodeJS.ProcessEnv = process.env): number {
  return positiveInteger(env, 'WEBHOOK_ACTIVITIES_PER_SECOND', 50);
}

/** A fraction in (0, 1] from `env[name]`, else `fallback`. @throws Error naming the variable when malformed */
function fraction(env: NodeJS.ProcessEnv, name: string, fallback: number): number {
  const raw = env[name]?.trim();
  if (!raw) return fallback;
  const n = Number(raw);
  if (!Number.isFinite(n) || n <= 0 || n > 1) throw new Error(`${name} must be a fraction above 0 and at most 1 (e.g. 0.5), or off`);
  return n;
}

/**
 * What the bulk and webhooks queues' Workers keep the machine at (the Temporal SDK's resource-based slot supplier,
 * `ResourceBasedTunerOptions`): a new bulk activity slot is handed out only while the machine's CPU use is under
 * BULK_TARGET_CPU (default 0.5: half of every core) and its memory use under BULK_TARGET_MEMORY (default 0.8),
 * both fractions of the whole. The SDK samples them every 100 ms (Temporal sdk-core `RealSysInfo`: the host's CPU and
 * memory, or the container's own use of its quota under a cgroup v2 `cpu.max` limit) and decides by a PID controller,
 * so bulk work takes what interactive work leaves and still progresses (the minimum slots are always handed out).
 * BULK_TARGET_CPU=off keeps fixed slot counts ({@link bulkWorkerSlots}, {@link webhookWorkerSlots}).
 * @returns the targets, or undefined when BULK_TARGET_CPU is `off`
 * @throws Error naming the variable when it is not a fraction above 0 and at most 1
 */
export function bulkResourceTargets(env: NodeJS.ProcessEnv = process.env): { targetCpuUsage: number; targetMemoryUsage: number } | undefined {
  if (env.BULK_TARGET_CPU?.trim().toLowerCase() === 'off') return undefined;
  return { targetCpuUsage: fraction(env, 'BULK_TARGET_CPU', 0.5), targetMemoryUsage: fraction(env, 'BULK_TARGET_MEMORY', 0.8) };
}

/**
 * Activity slots of the webhooks queue handed out however busy the machine is, when its slots follow the machine's
 * load ({@link bulkResourceTargets}): an attempt waits on the receiver's network, not on the cores, so one
 * organization's attempts in flight (WEBHOOK_MAX_IN_FLIGHT_PER_ORG, default 8) always have slots.
 */
export const WEBHOOK_MIN_ACTIVITY_SLOTS = 8;

/**
 * Workflow task slots of the webhooks and bulk queues per worker process: few, since bulk workflow tasks
 * are short and may wait, and every one in flight takes CPU from interactive work (the SDK's default, 40,
 * stays on the main queue).
 */
export const BULK_WORKFLOW_TASK_SLOTS = 8;

/**
 * The queues a worker process polls (WORKER_QUEUES: comma-separated names of {@link TASK_QUEUES},
 * default every queue), so bulk queues can run in processes of their own (docs/operations.md "Fair sharing").
 * @throws Error naming the variable when it is empty or names an unknown queue
 */
export function workerQueueSelection(env: NodeJS.ProcessEnv = process.env): QueueName[] {
  const raw = env.WORKER_QUEUES?.trim();
  if (!raw) return [...QUEUE_NAMES];
  const names = [...new Set(raw.split(',').map((s) => s.trim()).filter(Boolean))];
  const unknown = names.filter((n) => !(QUEUE_NAMES as string[]).includes(n));
  if (!names.length || unknown.length) throw new Error(`WORKER_QUEUES must name queues among ${QUEUE_NAMES.join(', ')}${unknown.length ? ` (unknown: ${unknown.join(', ')})` : ''}`);
  return QUEUE_NAMES.filter((q) => names.includes(q));
}

/**
 * Transport compression of the worker's gRPC requests to Temporal (TEMPORAL_GRPC_COMPRESSION: `gzip` or `none`;
 * the SDK's `NativeConnectionOptions.grpcCompression`, whose default is gzip). Unset: `none` when the frontend is on
 * this machine (a loopback `address`: `localhost`, 127.0.0.0/8, `[::1]`), where compression saves no network and
 * costs a gzip per request on the worker and a gunzip per request on the frontend (the dev server spent a sixth
 * of its CPU there: docs/benchmarks.md noisy-neighbour), else `gzip`.
 * @param address the frontend's `host:port`
 * @throws Error naming the variable when it is neither value
 */
export function grpcCompression(address: string, env: NodeJS.ProcessEnv = process.env): { codec: 'gzip' | 'none' } {
  const raw = env.TEMPORAL_GRPC_COMPRESSION?.trim();
  if (raw === 'gzip' || raw === 'none') return { codec: raw };
  if (raw) throw new Error('TEMPORAL_GRPC_COMPRESSION must be gzip or none');
  const host = address.replace(/:\d+$/, '').replace(/^\[|\]$/g, '').toLowerCase();
  const loopback = host === 'localhost' || host === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host);
  return { codec: loopback ? 'none' : 'gzip' };
}

/**
 * Temporal priority keys by workload class (Temporal "Task Queue Priority and Fairness": 1 to 5,
 * lower first, 3 when unset). Interactive work is what a person is waiting on; bulk work may wait.
 */
export const PRIORITY_KEYS = { interactive: 1, bulk: 4 } as const;
/** A workload class of {@link PRIORITY_KEYS}. */
export type WorkloadClass = keyof typeof PRIORITY_KEYS;

/**
 * Fairness weight of every organization: each gets an equal share of a queue's dispatch within a
 * priority (Temporal "Task Queue Priority and Fairness": weighted round-robin across fairness keys).
 */
export const FAIRNESS_WEIGHT = 1;

/** Fairness keys are limited to 64 bytes (Temporal `Priority.fairnessKey`). */
export const FAIRNESS_KEY_MAX_BYTES = 64;

/** Workflow id formats (DESIGN.md "Durable processes"). */
export const workflowIds = {
  /** 10DLC registration submission of one organization. */
  smsRegistration: (orgId: string) => `sms-registration/${orgId}`,
  /** Ingestion of one knowledge source. */
  knowledgeSource: (sourceId: string) => `knowledge-source/${sourceId}`,
  /** Re-embedding of one organization's knowledge with the configured embeddings model (docs/knowledge.md). */
  knowledgeReembed: (orgId: string) => `knowledge-reembed/${orgId}`,
  /** Refresh schedule of one URL knowledge source (docs/knowledge.md "Refresh and crawl"); its runs are `knowledge-refresh/{sourceId}-<time>`. */
  knowledgeRefresh: (sourceId: string) => `knowledge-refresh/${sourceId}`,
  /** A refresh asked for now (`POST /agents/{agentId}/knowledge/sources/{id}/refresh`). */
  knowledgeRefreshNow: (sourceId: string) => `knowledge-refresh/${sourceId}/now`,
  /** One publish of an agent; the Idempotency-Key makes retries find the same workflow. */
  agentPublish: (agentId: string, idempotencyKey: string) => `agent-publish/${agentId}/${idempotencyKey}`,
  /** Import and scrub of one contact list's CSV. */
  contactImport: (listId: string) => `contact-import/${listId}`,
  /** Dialer of one outbound campaign. */
  campaign: (campaignId: string) => `campaign/${campaignId}`,
  /** One outgoing text message. */
  smsMessage: (messageId: string) => `sms-message/${messageId}`,
  /** The agent's answer to one inbound text (docs/sms.md "Agents answer texts"). */
  smsReply: (inboundMessageId: string) => `sms-reply/${inboundMessageId}`,
  /** One simulated conversation of an agent (`POST /agents/{agentId}/simulate`). */
  agentSimulation: (simulationId: string) => `agent-simulation/${simulationId}`,
  /** One run of an evaluation suite (`POST /eval-suites/{id}/runs`, a gated publish; docs/evals.md). */
  agentEval: (runId: string) => `agent-eval/${runId}`,
  /** Closing of the months' invoices for every organization (docs/api-notes.md "Billing"); continues as new each month. */
  billingMonth: () => 'billing-month',
  /**
   * The wallet auto-recharge of one organization: one at a time (docs/api-notes.md "Billing": auto-recharge). The
   * charging SQL writes it too: domain/billing/wallet.ts `autoRechargeWorkflowId` must agree.
   */
  walletAutoRecharge: (orgId: string) => `wallet-recharge/${orgId}`,
  /** Records sync of one integration connection (docs/api-notes.md "Integrations and records"). */
  recordsSync: (connectionId: string) => `records-sync/${connectionId}`,
  /** The lifecycle of one phone call (docs/voice.md). */
  voiceCall: (callId: string) => `voice-call/${callId}`,
  /** The post-conversation analysis of one conversation (docs/api-notes.md "Conversation analysis"). */
  conversationAnalysis: (conversationId: string) => `conversation-analysis/${conversationId}`,
  /** A bulk re-run of the analysis over a filter (`POST /conversations/analysis-runs`). */
  analysisRun: (runId: string) => `analysis-run/${runId}`,
  /** One webhook delivery with its retries. */
  webhookDelivery: (deliveryId: string) => `webhook-delivery/${deliveryId}`,
  /** One replay of past events to a webhook endpoint (`POST /webhooks/{id}/replay`). */
  webhookReplay: (replayId: string) => `webhook-replay/${replayId}`,
  /** One report export, on demand or on its schedule (`POST /reports`). */
  reportExport: (reportId: string) => `report-export/${reportId}`,
} as const;

/**
 * Custom search attributes set on every workflow (Temporal UI filters). Keyword type.
 * On a real cluster, register them once: `temporal operator search-attribute create --name OrganizationId --type Keyword` (and ResourceId).
 */
export const SEARCH_ATTRIBUTES = { organization: 'OrganizationId', resource: 'ResourceId' } as const;

const ORGANIZATION_KEY = defineSearchAttributeKey(SEARCH_ATTRIBUTES.organization, SearchAttributeType.KEYWORD);
const RESOURCE_KEY = defineSearchAttributeKey(SEARCH_ATTRIBUTES.resource, SearchAttributeType.KEYWORD);

/**
 * The typed search attributes every workflow start carries, so the Temporal UI can list one
 * organization's (or one resource's) workflows: `OrganizationId` and, when given, `ResourceId`.
 */
export function workflowSearchAttributes(orgId: string | null, resourceId?: string): SearchAttributePair[] {
  const pairs: SearchAttributePair[] = orgId === null ? [] : [{ key: ORGANIZATION_KEY, value: orgId }];
  if (resourceId) pairs.push({ key: RESOURCE_KEY, value: resourceId });
  return pairs;
}

// The named activity retry policies live in workflows/retryPolicies.ts: the workflow bundle loads them
// there, and this module imports no workflow code.

/**
 * The service's workflow functions by type name (the worker's workflowsPath exports, workflows/index.ts). Declared
 * empty here and filled in by workflows/registry.ts through declaration merging (TypeScript module augmentation),
 * so this module, which every layer below the entry points reads, imports no workflow code, not even its types:
 * the import graph has a top and a bottom (docs/architecture.md "Layers").
 */
// eslint-disable-next-line @typescript-eslint/no-empty-object-type
export interface WorkflowRegistry {}
/** Workflow functions by type name (see {@link WorkflowRegistry}). */
export type WorkflowTypes = WorkflowRegistry;
/** The arguments a workflow type takes, checked against its function. */
export type WorkflowArgs<K extends WorkflowName> = Parameters<WorkflowTypes[K]>;
/** A workflow type name the worker registers. */
export type WorkflowName = keyof WorkflowTypes & string;

/**
 * Which workflow type runs on which task queue at which priority: the one table of the service's
 * workloads (docs/operations.md "Fair sharing"). Activities and child workflows inherit their
 * workflow's priority (the server does that), so a row covers the whole workflow; no workflow of the
 * service mixes classes, so no activity sets a priority of its own. A new workflow type fails to
 * type-check until it has a row.
 */
export const WORKFLOW_ROUTES: { readonly [K in WorkflowName]: { queue: QueueName; workload: WorkloadClass } } = {
  // Interactive: a person is waiting on it.
  agentPublishWorkflow: { queue: 'main', workload: 'interactive' },
  agentSimulation: { queue: 'main', workload: 'interactive' },
  voiceCall: { queue: 'main', workload: 'interactive' },
  smsMessage: { queue: 'main', workload: 'interactive' },
  smsReply: { queue: 'main', workload: 'interactive' },
  smsRegistration: { queue: 'main', workload: 'interactive' },
  // Bulk: may wait behind interactive work, on queues of their own.
  webhookDelivery: { queue: 'webhooks', workload: 'bulk' },
  webhookReplay: { queue: 'webhooks', workload: 'bulk' },
  knowledgeIngestionWorkflow: { queue: 'bulk', workload: 'bulk' },
  knowledgeRefreshWorkflow: { queue: 'bulk', workload: 'bulk' },
  knowledgeReembedWorkflow: { queue: 'bulk', workload: 'bulk' },
  conversationAnalysis: { queue: 'bulk', workload: 'bulk' },
  analysisRun: { queue: 'bulk', workload: 'bulk' },
  reportExport: { queue: 'bulk', workload: 'bulk' },
  agentEval: { queue: 'bulk', workload: 'bulk' },
  billingMonth: { queue: 'bulk', workload: 'bulk' },
  walletAutoRecharge: { queue: 'bulk', workload: 'bulk' },
  recordsSync: { queue: 'bulk', workload: 'bulk' },
  contactImport: { queue: 'bulk', workload: 'bulk' },
  // Bulk priority on the main queue: each dial is an activity, and a campaign's concurrency (up to
  // hundreds of calls) must not be capped by the bulk queue's few slots.
  campaignDialer: { queue: 'main', workload: 'bulk' },
};

/**
 * The longest prefix of `key` of at most 64 UTF-8 bytes, never splitting a character: the limit of a
 * Temporal fairness key (Temporal `Priority.fairnessKey`).
 */
export function fairnessKeyOf(key: string): string {
  if (Buffer.byteLength(key, 'utf8') <= FAIRNESS_KEY_MAX_BYTES) return key;
  let out = '';
  let bytes = 0;
  for (const ch of key) {
    const n = Buffer.byteLength(ch, 'utf8');
    if (bytes + n > FAIRNESS_KEY_MAX_BYTES) break;
    out += ch;
    bytes += n;
  }
  return out;
}

/**
 * Where and how a workflow of `type` owned by `orgId` runs: its task queue (from the base `taskQueue`)
 * and its Temporal priority (the row's priority key; the organization as fairness key, cut to 64
 * bytes, with {@link FAIRNESS_WEIGHT}). Work of every organization (`orgId` null) has no fairness key.
 */
export function workflowPlacement(taskQueue: string, type: WorkflowName, orgId: string | null): { taskQueue: string; priority: Priority } {
  const route = WORKFLOW_ROUTES[type];
  const priority: Priority = { priorityKey: PRIORITY_KEYS[route.workload] };
  if (orgId) Object.assign(priority, { fairnessKey: fairnessKeyOf(orgId), fairnessWeight: FAIRNESS_WEIGHT });
  return { taskQueue: taskQueueName(taskQueue, route.queue), priority };
}

/** Options of {@link startWorkflow}. */
export interface StartWorkflowOptions<K extends WorkflowName> {
  /** Deterministic id from {@link workflowIds}. */
  workflowId: string;
  /** The workflow function's arguments, type-checked against it. */
  args: Parameters<WorkflowTypes[K]>;
  /** Organization that owns the work: search attribute `OrganizationId`; null only for work of every organization (`billing-month`). */
  orgId: string | null;
  /** Resource the workflow moves forward: search attribute `ResourceId`. */
  resourceId?: string;
  memo?: Record<string, unknown>;
  /** What a start finds when a workflow with this id is running: `FAIL` (the default) or `USE_EXISTING`. */
  workflowIdConflictPolicy?: 'FAIL' | 'USE_EXISTING';
}

/**
 * The one way the service starts a workflow: the type name and its arguments checked against the
 * workflow function, the id from {@link workflowIds}, the search attributes every workflow carries, and
 * the task queue and priority of {@link WORKFLOW_ROUTES} (see {@link workflowPlacement}).
 * @param target Temporal client and the base task queue
 * @returns the started (or, with `USE_EXISTING`, the running) workflow's handle
 * @throws WorkflowExecutionAlreadyStartedError when the id is running and the policy is `FAIL`; any
 *   connection error of the client
 */
export function startWorkflow<K extends WorkflowName>(
  target: { client: Client; taskQueue: string },
  type: K,
  opts: StartWorkflowOptions<K>,
): Promise<WorkflowHandleWithFirstExecutionRunId<WorkflowTypes[K]>> {
  return target.client.workflow.start<WorkflowTypes[K]>(type, {
    ...workflowPlacement(target.taskQueue, type, opts.orgId),
    workflowId: opts.workflowId,
    args: opts.args,
    memo: opts.memo,
    workflowIdConflictPolicy: opts.workflowIdConflictPolicy,
    typedSearchAttributes: workflowSearchAttributes(opts.orgId, opts.resourceId),
  } as WorkflowStartOptions<WorkflowTypes[K]>);
}

/** Options of {@link ensureSchedule}. */
export interface EnsureScheduleOptions<K extends WorkflowName> {
  /** Schedule id (also the base of the started workflows' ids: the server appends the nominal time). */
  scheduleId: string;
  /** When the workflow starts (Temporal ScheduleSpec: calendars, intervals, time zone). */
  spec: ScheduleSpec;
  /** The workflow function's arguments, type-checked against it (the same for every start). */
  args: Parameters<WorkflowTypes[K]>;
  /** Organization that owns the work (search attribute `OrganizationId`); null for work of every organization. */
  orgId: string | null;
  resourceId?: string;
  /** Overlap policy, catch-up window (Temporal SchedulePolicies). */
  policies?: ScheduleOptions['policies'];
}

/**
 * The one way the service puts a workflow on a calendar: a Temporal schedule that starts `type`
 * with checked arguments, the search attributes every workflow carries, and the task queue and
 * priority of {@link WORKFLOW_ROUTES}. Creating it again is a no-op (the existing schedule is kept as it is).
 * @param target Temporal client and the base task queue
 * @returns true when this call created the schedule, false when it existed
 * @throws any connection error of the client
 */
export async function ensureSchedule<K extends WorkflowName>(target: { client: Client; taskQueue: string }, type: K, opts: EnsureScheduleOptions<K>): Promise<boolean> {
  try {
    await target.client.schedule.create({
      scheduleId: opts.scheduleId,
      spec: opts.spec,
      policies: opts.policies,
      action: {
        type: 'startWorkflow',
        workflowType: type,
        workflowId: opts.scheduleId,
        args: opts.args as unknown[],
        ...workflowPlacement(target.taskQueue, type, opts.orgId),
        typedSearchAttributes: workflowSearchAttributes(opts.orgId, opts.resourceId),
      },
    });
    return true;
  } catch (err) {
    if (err instanceof ScheduleAlreadyRunning) return false;
    throw err;
  }
}

/** Where the service finds Temporal: TEMPORAL_ADDRESS, else the embedded dev server started by `npm start`. */
export interface TemporalSettings {
  address: string;
  namespace: string;
  taskQueue: string;
}
