/**
 * The event catalog (spec "Events": event type names and payload shapes are "not shown"; decided here
 * and documented in docs/api-notes.md). One payload type per event type; `npm run schemas`
 * generates one JSON Schema each, which the OpenAPI document lists under components and
 * `emitEvent` validates every payload against. Text-message payloads carry attachment ids.
 */

import type { EvalCompletedEventData } from './evals';

/** Every event type a webhook endpoint can subscribe to. */
export type WebhookEventType =
  | 'sms.registration.updated'
  | 'sms.message.received'
  | 'sms.message.updated'
  | 'agent.published'
  | 'agent.rolled_back'
  | 'eval.completed'
  | 'traffic.updated'
  | 'knowledge.source.updated'
  | 'campaign.updated'
  | 'call.started'
  | 'call.completed'
  | 'call.transferred'
  | 'voicemail.received'
  | 'conversation.escalated'
  | 'conversation.started'
  | 'conversation.ended'
  | 'conversation.analyzed'
  | 'conversation.taken_over'
  | 'conversation.handed_back'
  | 'analysis.completed'
  | 'agent.deleted'
  | 'knowledge.source.deleted'
  | 'playbook.deleted'
  | 'number.released'
  | 'message.created'
  | 'billing.wallet.low'
  | 'billing.auto_recharge.failed'
  | 'invoice.finalized'
  | 'provider.intent.unknown'
  | 'integration.needs_reauth'
  | 'webhook.test'
  | 'webhook.endpoint.disabled';

/** `sms.registration.updated`: the 10DLC registration changed status (e.g. submitted → brand_approved). */
export interface SmsRegistrationUpdatedEventData {
  registrationId: string;
  /** Status after the change, e.g. `submitted`, `brand_approved`, `active`, `rejected`. */
  status: string;
  /** Status before the change; null on the first transition. */
  previousStatus: string | null;
  /** Raw status as the carrier reported it, when there is one. */
  providerStatus?: string | null;
  /** The carrier's reason when rejected or failed. */
  lastError?: string | null;
  /** TCR brand id once assigned. */
  brandId?: string | null;
  /** TCR campaign id once assigned. */
  campaignId?: string | null;
}

/** `sms.message.received`: an inbound text message arrived on one of the organization's numbers. */
export interface SmsMessageReceivedEventData {
  messageId: string;
  conversationId?: string | null;
  /** Sender, E.164. */
  from: string;
  /** The organization's number, E.164. */
  to: string;
  body: string;
  /** Ids of stored attachments (MMS media); fetch them through the API, never from the carrier. */
  attachmentIds: string[];
  /** @format date-time */
  receivedAt: string;
}

/** `sms.message.updated`: an outbound (or inbound) text message changed delivery status. */
export interface SmsMessageUpdatedEventData {
  messageId: string;
  conversationId?: string | null;
  direction: 'inbound' | 'outbound';
  /** Status after the change, e.g. `queued`, `scheduled`, `sent`, `delivered`, `failed`, `blocked`. */
  status: string;
  previousStatus?: string | null;
  from: string;
  to: string;
  /** Ids of the attachments carried by the message. */
  attachmentIds: string[];
  /** Carrier error code when failed. */
  errorCode?: string | null;
  errorMessage?: string | null;
  /** @format date-time */
  updatedAt: string;
}

/** `agent.published`: a draft was frozen as a new version and became the published one. */
export interface AgentPublishedEventData {
  agentId: string;
  versionId: string;
  /** Version number, 1-based. */
  version: number;
  /** @format date-time */
  publishedAt: string;
}

/** `agent.rolled_back`: the published version was re-pointed at an earlier version. */
export interface AgentRolledBackEventData {
  agentId: string;
  /** The version now published. */
  versionId: string;
  version: number;
  /** The version that was published before the rollback. */
  previousVersionId: string | null;
  /** @format date-time */
  rolledBackAt: string;
}

/**
 * `traffic.updated`: an agent's traffic split changed — set by `PUT /agents/{id}/traffic`, or reset to 100 % on the
 * new live version by a publish or a rollback (docs/api-notes.md "Traffic splits").
 */
export interface TrafficUpdatedEventData {
  agentId: string;
  splits: { versionId: string; percent: number }[];
  stickiness: 'counterpart' | 'none';
  /** `put`: set through the API; `published` / `rolled_back`: reset by a publish or a rollback. */
  reason: 'put' | 'published' | 'rolled_back';
  /** @format date-time */
  updatedAt: string;
}

/** `knowledge.source.updated`: ingestion of a knowledge source progressed, finished or failed. */
export interface KnowledgeSourceUpdatedEventData {
  agentId: string;
  sourceId: string;
  /** e.g. `pending`, `processing`, `ready`, `failed`. */
  status: string;
  error?: string | null;
  chunkCount?: number | null;
}

/** `campaign.updated`: an outbound campaign changed status (launched, paused, resumed, completed, canceled). */
export interface CampaignUpdatedEventData {
  campaignId: string;
  status: string;
  previousStatus?: string | null;
  /** Counters at the time of the change, by recipient outcome. */
  counts?: Record<string, number>;
}

/** `call.started`: a call was placed (`POST /calls`) or an inbound call was answered. */
export interface CallStartedEventData {
  /** `call_…` (`GET /calls/{id}`). */
  callId: string;
  agentId: string | null;
  direction: 'inbound' | 'outbound';
  from: string;
  to: string;
  /** @format date-time */
  startedAt: string;
  campaignId?: string | null;
}

/** `call.transferred`: a call was handed to an escalation destination (docs/voice.md "Escalation"). */
export interface CallTransferredEventData {
  callId: string;
  agentId: string | null;
  conversationId: string | null;
  /** The escalation destination (`esc_…`), when one was used. */
  destinationId: string | null;
  /** The number or SIP URI dialed. */
  destination: string;
  /** Why: `escalation` (a guardrail, the model's `escalate` tool or a playbook), `after_hours`, `transfer_call` (a skill). */
  reason: string;
  /** What the conversation was about, for the person taking the call. */
  summary: string | null;
}

/** `voicemail.received`: a caller left a voicemail (after hours, or when the destination did not answer). */
export interface VoicemailReceivedEventData {
  callId: string;
  agentId: string | null;
  numberId: string | null;
  from: string;
  to: string;
  /** The recording's duration in seconds. */
  durationSeconds: number;
  /** The carrier's URL of the recording (Twilio `RecordingUrl`; fetched with the carrier's credentials). */
  recordingUrl: string | null;
  /** The carrier's transcription, when it sent one. */
  transcript: string | null;
  /** @format date-time */
  receivedAt: string;
}

/** `conversation.escalated`: a chat, widget or SMS conversation was handed to a person (it ends `escalated`). */
export interface ConversationEscalatedEventData {
  conversationId: string;
  agentId: string;
  channel: 'chat' | 'web' | 'sms' | 'voice';
  /** The escalation destination (`esc_…`) the conversation went to, or null when the agent has none. */
  destinationId: string | null;
  /** The destination's kind and address (phone, sip, email, webhook). */
  destination: { kind: string; address: string } | null;
  /** Why: the guardrail rule, `escalate_tool`, a playbook node or `after_hours`. */
  reason: string;
  /** What the conversation was about. */
  summary: string | null;
}

/**
 * `conversation.taken_over` / `conversation.handed_back`: a member (or a key) took a chat, widget or SMS conversation
 * over — the agent stops answering — or handed it back (docs/api-notes.md "Live control").
 */
export interface ConversationTakeoverEventData {
  conversationId: string;
  agentId: string;
  channel: 'chat' | 'web' | 'sms' | 'voice';
  /** Who: a member (`mem_…`) or the key (`key_…`) of the control. */
  actor: string;
  /** @format date-time */
  at: string;
}

/** `call.completed`: a call ended. */
export interface CallCompletedEventData {
  callId: string;
  agentId?: string | null;
  direction: 'inbound' | 'outbound';
  from: string;
  to: string;
  /** @format date-time */
  startedAt: string;
  /** @format date-time */
  endedAt: string;
  durationSeconds: number;
  /** e.g. `completed`, `no_answer`, `busy`, `failed`, `voicemail`. */
  outcome?: string | null;
  campaignId?: string | null;
}

/** `conversation.started`: a conversation began on some channel (docs/api-notes.md "Conversations"). */
export interface ConversationStartedEventData {
  conversationId: string;
  agentId: string;
  channel: 'chat' | 'web' | 'sms' | 'voice';
  mode: 'published' | 'draft';
  versionId: string | null;
  simulation: boolean;
  /** @format date-time */
  startedAt: string;
}

/** `conversation.ended`: a conversation ended (by the user, the agent, a guardrail or the API). */
export interface ConversationEndedEventData {
  conversationId: string;
  agentId: string;
  channel: 'chat' | 'web' | 'sms' | 'voice';
  endReason: string;
  messageCount: number;
  totalTokens: number;
  /** @format date-time */
  startedAt: string;
  /** @format date-time */
  endedAt: string;
}

/**
 * `conversation.analyzed`: the post-conversation analysis of an ended conversation finished (docs/api-notes.md
 * "Conversation analysis"); `status: failed` carries `error` and no results.
 */
export interface ConversationAnalyzedEventData {
  conversationId: string;
  agentId: string;
  channel: 'chat' | 'web' | 'sms' | 'voice';
  status: 'completed' | 'failed';
  summary: string | null;
  /** `resolved`, `transferred`, `abandoned` or `unresolved`; null when failed. */
  outcome: string | null;
  sentiment: 'positive' | 'neutral' | 'negative' | null;
  /** Extracted values by field name (only the valid ones). */
  fields: Record<string, string | number | boolean>;
  /** Why a value was dropped, one line each. */
  notes: string[];
  error: string | null;
  /** @format date-time */
  analyzedAt: string;
  /** The revision this analysis is (1: after the conversation ended; higher: a re-run). */
  revision?: number;
  /** The bulk run (`arn_…`) that re-ran it, when one did. */
  runId?: string | null;
}

/** `analysis.completed`: a bulk analysis re-run (`POST /conversations/analysis-runs`) finished. */
export interface AnalysisCompletedEventData {
  /** `arn_…` */
  runId: string;
  status: 'completed' | 'failed';
  /** Conversations the run covered. */
  total: number;
  /** Of those, analysed (`completed`) and failed analyses. */
  completed: number;
  failed: number;
  filter: { agentId?: string; channel?: string; from?: string; to?: string };
  /** @format date-time */
  completedAt: string;
}

/** `agent.deleted`: an agent was deleted (archived: its versions and conversations stay readable). */
export interface AgentDeletedEventData {
  agentId: string;
  name: string;
  /** Numbers that were assigned to it and are now unassigned. */
  unassignedNumberIds: string[];
  /** Its publishable (widget) keys, revoked. */
  revokedPublishableKeyIds: string[];
  /** @format date-time */
  archivedAt: string;
}

/** `knowledge.source.deleted`: a knowledge source left the agent's draft. */
export interface KnowledgeSourceDeletedEventData {
  agentId: string;
  sourceId: string;
  /** `ready` or `failed`. */
  status: string;
  chunkCount: number;
  /** True when a published version lists the source and keeps its chunks. */
  chunksKept: boolean;
  /** @format date-time */
  deletedAt: string;
}

/** `playbook.deleted`: a playbook left the agent's draft (published versions keep their copy). */
export interface PlaybookDeletedEventData {
  agentId: string;
  playbookId: string;
  name: string;
  /** The draft version after the delete. */
  draftVersion: number;
  /** @format date-time */
  deletedAt: string;
}

/** `number.released`: a number the organization held was released (at the provider, when it was bought). */
export interface NumberReleasedEventData {
  numberId: string;
  e164: string;
  /** The telephony provider; null for a reservation let go (nothing was bought). */
  provider: string | null;
  providerNumberId: string | null;
  /** @format date-time */
  releasedAt: string;
}

/** `message.created`: a user or agent message was stored (verbatim; tool exchanges are in the receipt). */
export interface MessageCreatedEventData {
  conversationId: string;
  messageId: string;
  agentId: string;
  channel: 'chat' | 'web' | 'sms' | 'voice';
  role: 'user' | 'assistant';
  content: string;
  turn: number;
  /** @format date-time */
  createdAt: string;
}

/**
 * `billing.wallet.low`: a usage charge moved the wallet balance from at or above its low-balance
 * threshold to below it (docs/api-notes.md "Billing"; once per crossing, not on every charge below it).
 */
export interface BillingWalletLowEventData {
  /** Balance after the charge, US cents (may be negative). */
  balanceCents: number;
  /** Balance before the charge, US cents. */
  previousBalanceCents: number;
  lowBalanceThresholdCents: number;
  /** `USD`. */
  currency: string;
  /** The ledger entry of the charge (`led_…`). */
  ledgerEntryId: string;
  /** The usage entry charged (`use_…`). */
  usageEntryId: string | null;
}

/**
 * `billing.auto_recharge.failed`: an auto-recharge credited nothing (docs/api-notes.md "Billing": auto-recharge).
 * Its card payment was declined: auto-recharge is now off (`autoRechargeEnabled: false`) until it is saved again,
 * and the card is never charged again by it meanwhile. Or the payment provider stayed unavailable through every
 * retry (`code: provider_unavailable`): auto-recharge stays as it was and the next crossing tries again.
 */
export interface BillingAutoRechargeFailedEventData {
  /** The recharge attempt (`rch_…`): the payment's idempotency key derives from it. */
  attemptId: string;
  /** What was asked, US cents. */
  amountCents: number;
  /** `USD`. */
  currency: string;
  /** Why: `card_declined`, `insufficient_funds`, `authentication_required`, `payment_method_required`, `provider_unavailable`. */
  code: string;
  /** The provider's message (the last one, when it stayed unavailable). */
  reason: string;
  /** Whether auto-recharge is on after it: false after a decline. */
  autoRechargeEnabled: boolean;
  /** Balance when it failed, US cents. */
  balanceCents: number;
}

/** One line of a finalized invoice: the usage of one kind in the month. */
export interface InvoiceFinalizedLine {
  kind: string;
  quantity: number;
  unitPriceCents: number | null;
  amountCents: number;
  entries: number;
}

/** `invoice.finalized`: the `billing-month` workflow closed the organization's invoice of a month (once). */
export interface InvoiceFinalizedEventData {
  /** `inv_…` */
  invoiceId: string;
  /** `yyyy-mm` (UTC month). */
  period: string;
  /** @format date-time */
  periodStart: string;
  /** @format date-time */
  periodEnd: string;
  currency: string;
  totalCents: number;
  lines: InvoiceFinalizedLine[];
}

/**
 * `provider.intent.unknown`: a write at an outside provider (a dial, a 10DLC brand or campaign create, a
 * number purchase, a text, a CRM note, a booking, an auto-recharge payment) may or may not have happened and the provider's look-ups cannot tell
 * (docs/operations.md "Provider calls happen once"): an operator checks at the provider and settles it.
 */
export interface ProviderIntentUnknownEventData {
  /** `pin_…` */
  intentId: string;
  kind: 'dial' | 'brand_create' | 'campaign_create' | 'number_purchase' | 'sms_send' | 'number_release' | 'crm_note' | 'booking' | 'recharge';
  /** The client reference the request carried (dial key, registration, number or message id). */
  reference: string;
  /** Our resource the write was for (attempt, registration, number or message id). */
  subjectId: string;
  provider: string;
  /** What the provider's look-up answered. */
  reason: string;
}

/**
 * `integration.needs_reauth`: the provider refused the connection's OAuth grant (RFC 6749 §5.2 `invalid_grant`: revoked
 * or expired); its skills fail until someone connects it again (`POST /integrations/{kind}/connect`).
 */
export interface IntegrationNeedsReauthEventData {
  /** `int_…` */
  connectionId: string;
  kind: string;
  /** `google`, `hubspot`, … */
  provider: string;
  /** The provider's answer. */
  reason: string;
}

/** `webhook.test`: sent by `POST /webhooks/{id}/test` to that endpoint only. */
export interface WebhookTestEventData {
  webhookId: string;
  message: string;
}

/**
 * `webhook.endpoint.disabled`: an endpoint was disabled by its deliveries, after failing continuously for
 * WEBHOOK_DISABLE_AFTER_FAILING (`failing`) or on a 410 Gone answer (`gone`). Delivered to the
 * organization's other enabled endpoints subscribed to it (never to the disabled one) and written to the
 * audit log (docs/api-notes.md "Webhooks and audit logs").
 */
export interface WebhookEndpointDisabledEventData {
  /** `whk_…` */
  webhookId: string;
  url: string;
  /** The endpoint's `disabledReason` (schemas/types/webhooks.ts WebhookDisabledReason), the same value. */
  reason: 'failing' | 'gone';
  /** HTTP status of the last attempt; null when it got no answer (timeout, network error). */
  lastStatusCode: number | null;
  /** The last attempt's error, or null (a 410 is its own explanation). */
  lastError: string | null;
  /** @format date-time */
  disabledAt: string;
}

/** Payload type of each event type (used by `emitEvent` to type `data`). */
export interface WebhookEventDataMap {
  'sms.registration.updated': SmsRegistrationUpdatedEventData;
  'sms.message.received': SmsMessageReceivedEventData;
  'sms.message.updated': SmsMessageUpdatedEventData;
  'agent.published': AgentPublishedEventData;
  'agent.rolled_back': AgentRolledBackEventData;
  'eval.completed': EvalCompletedEventData;
  'traffic.updated': TrafficUpdatedEventData;
  'knowledge.source.updated': KnowledgeSourceUpdatedEventData;
  'campaign.updated': CampaignUpdatedEventData;
  'call.started': CallStartedEventData;
  'call.completed': CallCompletedEventData;
  'call.transferred': CallTransferredEventData;
  'voicemail.received': VoicemailReceivedEventData;
  'conversation.escalated': ConversationEscalatedEventData;
  'conversation.started': ConversationStartedEventData;
  'conversation.ended': ConversationEndedEventData;
  'conversation.analyzed': ConversationAnalyzedEventData;
  'conversation.taken_over': ConversationTakeoverEventData;
  'conversation.handed_back': ConversationTakeoverEventData;
  'analysis.completed': AnalysisCompletedEventData;
  'agent.deleted': AgentDeletedEventData;
  'knowledge.source.deleted': KnowledgeSourceDeletedEventData;
  'playbook.deleted': PlaybookDeletedEventData;
  'number.released': NumberReleasedEventData;
  'message.created': MessageCreatedEventData;
  'billing.wallet.low': BillingWalletLowEventData;
  'billing.auto_recharge.failed': BillingAutoRechargeFailedEventData;
  'invoice.finalized': InvoiceFinalizedEventData;
  'provider.intent.unknown': ProviderIntentUnknownEventData;
  'integration.needs_reauth': IntegrationNeedsReauthEventData;
  'webhook.test': WebhookTestEventData;
  'webhook.endpoint.disabled': WebhookEndpointDisabledEventData;
}

/**
 * The JSON body POSTed to a webhook endpoint (Standard Webhooks layout: `type`, `timestamp`, `data`).
 * `id` equals the `webhook-id` header and is the same on every retry of the delivery, so receivers
 * deduplicate on it.
 */
export interface WebhookEventEnvelope {
  /** Event id (`evt_…`). */
  id: string;
  type: WebhookEventType;
  /** When the event happened. @format date-time */
  timestamp: string;
  organizationId: string;
  data: Record<string, unknown>;
}
