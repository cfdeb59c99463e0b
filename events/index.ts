/**
 * Events and webhooks (docs/api-notes.md "Webhooks and audit logs"): the catalog, `emitEvent` (call it inside the transaction of the
 * change), the outbox dispatcher, Standard Webhooks signing and the URL policy.
 */
export { EVENT_CATALOG, EVENT_TYPES, eventTypeInfo, type EventTypeInfo } from '../domain/webhooks/catalog';
export { emitEvent, InvalidEventError } from './emit';
export { startWebhookDispatcher, temporalDeliveryStarter, type DeliveryStarter, type DispatcherOptions, type WebhookDispatcher } from './dispatcher';
export { generateSecret, sign, signatureHeaders } from '../domain/webhooks/signing';
export { loadWebhookSettings, type WebhookSettings } from '../domain/webhooks/settings';
export { webhookUrlProblem } from '../domain/webhooks/urlPolicy';
