/**
 * One place for Temporal settings (DESIGN.md "temporal.config.ts"): address, namespace, task queue,
 * workflow id formats, search attributes and default activity retry policy. Workflow ids are
 * deterministic so that a repeated request finds the workflow it started before.
 */
import { defineSearchAttributeKey, SearchAttributeType, type RetryPolicy, type SearchAttributePair } from '@temporalio/common';

/** Task queue every workflow and activity of the service runs on. */
export const TASK_QUEUE = process.env.TEMPORAL_TASK_QUEUE || 'control-plane';

/** Workflow id formats (DESIGN.md "Durable processes"). */
export const workflowIds = {
  /** 10DLC registration submission of one organization. */
  smsRegistration: (orgId: string) => `sms-registration/${orgId}`,
  /** Ingestion of one knowledge source. */
  knowledgeSource: (sourceId: string) => `knowledge-source/${sourceId}`,
  /** One publish of an agent; the Idempotency-Key makes retries find the same workflow. */
  agentPublish: (agentId: string, idempotencyKey: string) => `agent-publish/${agentId}/${idempotencyKey}`,
  /** Import and scrub of one contact list's CSV. */
  contactImport: (listId: string) => `contact-import/${listId}`,
  /** Dialer of one outbound campaign. */
  campaign: (campaignId: string) => `campaign/${campaignId}`,
  /** One outgoing text message. */
  smsMessage: (messageId: string) => `sms-message/${messageId}`,
  /** One webhook delivery with its retries. */
  webhookDelivery: (deliveryId: string) => `webhook-delivery/${deliveryId}`,
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
export function workflowSearchAttributes(orgId: string, resourceId?: string): SearchAttributePair[] {
  const pairs: SearchAttributePair[] = [{ key: ORGANIZATION_KEY, value: orgId }];
  if (resourceId) pairs.push({ key: RESOURCE_KEY, value: resourceId });
  return pairs;
}

/** Default retry policy of activities: exponential backoff from 1 s, capped at 1 min, unlimited attempts unless a workflow says otherwise. */
export const DEFAULT_ACTIVITY_RETRY: RetryPolicy = {
  initialInterval: '1s',
  backoffCoefficient: 2,
  maximumInterval: '1m',
};

/** Where the service finds Temporal: TEMPORAL_ADDRESS, else the embedded dev server started by `npm start`. */
export interface TemporalSettings {
  address: string;
  namespace: string;
  taskQueue: string;
}
