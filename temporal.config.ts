/**
 * One place for Temporal settings (DESIGN.md "temporal.config.ts"): address, namespace, task queue,
 * workflow id formats, search attributes and default activity retry policy. Workflow ids are
 * deterministic so that a repeated request finds the workflow it started before.
 */
import { defineSearchAttributeKey, SearchAttributeType, type SearchAttributePair } from '@temporalio/common';
import { ScheduleAlreadyRunning } from '@temporalio/client';
import type { Client, ScheduleOptions, ScheduleSpec, WorkflowHandleWithFirstExecutionRunId, WorkflowStartOptions } from '@temporalio/client';
import type * as workflows from './workflows';

/** Task queue every workflow and activity of the service runs on. */
export const TASK_QUEUE = process.env.TEMPORAL_TASK_QUEUE || 'control-plane';

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
// there, and this module, read by every layer below the entry points, imports workflow code only as types.

/** Workflow functions by type name: the worker's workflowsPath exports (workflows/index.ts). */
export type WorkflowTypes = typeof workflows;
/** A workflow type name the worker registers. */
export type WorkflowName = keyof WorkflowTypes & string;

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
 * workflow function, the id from {@link workflowIds}, and the search attributes every workflow carries.
 * @param target Temporal client and the task queue the worker polls
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
    taskQueue: target.taskQueue,
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
 * with checked arguments and the search attributes every workflow carries. Creating it again is a
 * no-op (the existing schedule is kept as it is).
 * @param target Temporal client and the task queue the worker polls
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
        taskQueue: target.taskQueue,
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
