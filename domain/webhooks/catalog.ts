/**
 * The event catalog (spec "Events"): every event type, its payload schema (generated from
 * schemas/types/events.ts) and what it means. The event types of docs/api-notes.md "Webhooks and audit logs" are this list.
 */
import type { WebhookEventType } from '../../schemas/types/events';

/** One catalog entry. */
export interface EventTypeInfo {
  type: WebhookEventType;
  /** Name of the generated JSON Schema of `data` (schemas/<name>.schema.json). */
  schema: string;
  description: string;
}

/** Every event type, in catalog order. */
export const EVENT_CATALOG: readonly EventTypeInfo[] = [
  { type: 'sms.registration.updated', schema: 'SmsRegistrationUpdatedEventData', description: 'The 10DLC registration changed status' },
  { type: 'sms.message.received', schema: 'SmsMessageReceivedEventData', description: 'An inbound text message arrived (with attachment ids)' },
  { type: 'sms.message.updated', schema: 'SmsMessageUpdatedEventData', description: 'A text message changed delivery status (with attachment ids)' },
  { type: 'agent.published', schema: 'AgentPublishedEventData', description: 'An agent draft was published as a new version' },
  { type: 'agent.rolled_back', schema: 'AgentRolledBackEventData', description: "An agent's published version was rolled back" },
  { type: 'eval.completed', schema: 'EvalCompletedEventData', description: 'A run of an evaluation suite finished (or failed): pass rate, flaky scenarios, whether a publish gate ran it' },
  { type: 'traffic.updated', schema: 'TrafficUpdatedEventData', description: "An agent's traffic split over its published versions was set, or reset to the new live version by a publish or rollback" },
  { type: 'knowledge.source.updated', schema: 'KnowledgeSourceUpdatedEventData', description: 'A knowledge source ingestion progressed, finished or failed' },
  { type: 'campaign.updated', schema: 'CampaignUpdatedEventData', description: 'An outbound campaign changed status' },
  { type: 'call.started', schema: 'CallStartedEventData', description: 'A call was placed (POST /calls) or an inbound call was answered' },
  { type: 'call.completed', schema: 'CallCompletedEventData', description: 'A call ended' },
  { type: 'call.transferred', schema: 'CallTransferredEventData', description: 'A call was handed to an escalation destination, with a summary for the person taking it' },
  { type: 'voicemail.received', schema: 'VoicemailReceivedEventData', description: 'A caller left a voicemail (after hours, or when the destination did not answer)' },
  { type: 'conversation.escalated', schema: 'ConversationEscalatedEventData', description: 'A chat, widget or SMS conversation was handed to a person: the destination and a summary' },
  { type: 'conversation.started', schema: 'ConversationStartedEventData', description: 'A conversation began (chat, widget, SMS, voice or a simulation)' },
  { type: 'conversation.ended', schema: 'ConversationEndedEventData', description: 'A conversation ended, with why and its message and token counts' },
  { type: 'conversation.analyzed', schema: 'ConversationAnalyzedEventData', description: 'The post-conversation analysis of an ended conversation finished: summary, outcome, sentiment and extracted fields (or failed)' },
  // Beyond the spec's list: live control (docs/api-notes.md "Live control").
  { type: 'conversation.taken_over', schema: 'ConversationTakeoverEventData', description: 'A member took a chat, widget or SMS conversation over: the agent stops answering until it is handed back' },
  { type: 'conversation.handed_back', schema: 'ConversationTakeoverEventData', description: 'A member handed a conversation they took over back to its agent' },
  { type: 'analysis.completed', schema: 'AnalysisCompletedEventData', description: 'A bulk analysis re-run (POST /conversations/analysis-runs) finished: how many conversations were analysed and failed' },
  { type: 'agent.deleted', schema: 'AgentDeletedEventData', description: 'An agent was deleted (archived): its numbers unassigned and publishable keys revoked; versions and conversations stay' },
  { type: 'knowledge.source.deleted', schema: 'KnowledgeSourceDeletedEventData', description: "A knowledge source left an agent's draft (published versions that list it keep its chunks)" },
  { type: 'playbook.deleted', schema: 'PlaybookDeletedEventData', description: "A playbook left an agent's draft (published versions keep their copy)" },
  { type: 'number.released', schema: 'NumberReleasedEventData', description: 'A number was released at the provider (or a reservation let go)' },
  { type: 'message.created', schema: 'MessageCreatedEventData', description: 'A user or agent message of a conversation was stored (verbatim)' },
  { type: 'billing.wallet.low', schema: 'BillingWalletLowEventData', description: 'A usage charge took the wallet balance below its low-balance threshold (once per crossing)' },
  { type: 'billing.auto_recharge.failed', schema: 'BillingAutoRechargeFailedEventData', description: "An auto-recharge credited nothing: its card payment was declined (auto-recharge turned off until saved again), or the payment provider stayed unavailable through every retry (code provider_unavailable)" },
  { type: 'invoice.finalized', schema: 'InvoiceFinalizedEventData', description: "A month's invoice was closed (once per organization and month)" },
  { type: 'provider.intent.unknown', schema: 'ProviderIntentUnknownEventData', description: 'A write at a provider (dial, brand or campaign create, number purchase, text, CRM note, booking, auto-recharge payment) may have happened and the provider cannot tell: an operator settles it' },
  { type: 'integration.needs_reauth', schema: 'IntegrationNeedsReauthEventData', description: "The provider revoked an integration's OAuth grant: the connection is needs_reauth and its skills fail until it is connected again" },
  { type: 'webhook.test', schema: 'WebhookTestEventData', description: 'Test event sent by POST /webhooks/{id}/test to one endpoint' },
  { type: 'webhook.endpoint.disabled', schema: 'WebhookEndpointDisabledEventData', description: "An endpoint was disabled by its deliveries (failing continuously, or 410 Gone); sent to the organization's other endpoints" },
];

/** Every event type name. */
export const EVENT_TYPES: readonly WebhookEventType[] = EVENT_CATALOG.map((e) => e.type);

const BY_TYPE = new Map(EVENT_CATALOG.map((e) => [e.type as string, e]));

/** The catalog entry of a type, or undefined for an unknown type. */
export function eventTypeInfo(type: string): EventTypeInfo | undefined {
  return BY_TYPE.get(type);
}
