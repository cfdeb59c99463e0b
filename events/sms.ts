/**
 * The SMS hub's webhook events (docs/sms.md "Numbers, consent and sending" and docs/api-notes.md "Webhooks and audit logs"): `sms.registration.updated`, `sms.message.received`
 * and `sms.message.updated`, each written by `emitEvent` inside the transaction of the change it reports.
 * The repositories call these hooks from within that transaction (the OnRegistrationChange /
 * OnMessageChange parameters), only when the status actually moved, so a duplicate callback, a retried
 * activity or a refused (lower-ranked) status report emits nothing.
 */
import { checkedEvents, emitEvent } from './emit';
import type { OnRegistrationChange } from '../db/repositories/smsRegistrations';
import type { MessageChange, OnMessageChange } from '../db/repositories/smsMessages';

/** Emits `sms.registration.updated` for a registration status/providerStatus change of `orgId`. */
export const registrationChanged =
  (orgId: string): OnRegistrationChange =>
  (trx, c) =>
    emitEvent(trx, orgId, 'sms.registration.updated', {
      registrationId: c.registrationId,
      status: c.status,
      previousStatus: c.previousStatus,
      providerStatus: c.providerStatus,
      lastError: c.lastError,
      brandId: c.brandId,
      campaignId: c.campaignId,
    });

/**
 * Our stored message error is either a stable code of a local refusal (`recipient_opted_out`,
 * `number_not_sms_enabled`, `registration_not_active`, `workflow_not_started`) or the carrier's free text.
 * @returns the event's `errorCode` / `errorMessage` pair
 */
function errorFields(error: string | null): { errorCode: string | null; errorMessage: string | null } {
  if (!error) return { errorCode: null, errorMessage: null };
  return /^[a-z][a-z0-9_]*$/.test(error) ? { errorCode: error, errorMessage: null } : { errorCode: null, errorMessage: error };
}

/** The `sms.message.updated` payload of a change. */
export function messageUpdatedData(c: MessageChange) {
  return {
    messageId: c.messageId,
    direction: c.direction,
    status: c.status,
    previousStatus: c.previousStatus,
    from: c.from,
    to: c.to,
    attachmentIds: c.attachmentIds,
    ...errorFields(c.error),
    updatedAt: c.at,
  };
}

/** Emits `sms.message.updated` for a status change (or creation, previousStatus null) of a message of `orgId`. */
export const messageChanged =
  (orgId: string): OnMessageChange =>
  (trx, c) =>
    emitEvent(trx, orgId, 'sms.message.updated', messageUpdatedData(c));

/** Emits `sms.message.received` for an inbound text of `orgId` stored now. */
export const messageReceived =
  (orgId: string): OnMessageChange =>
  (trx, c) =>
    emitEvent(trx, orgId, 'sms.message.received', receivedData(c));

/** The `sms.message.received` payload of a text stored now. */
function receivedData(c: MessageChange) {
  return { messageId: c.messageId, from: c.from, to: c.to, body: c.body, attachmentIds: c.attachmentIds, receivedAt: c.at };
}

/**
 * The rows of `sms.message.received` for a text about to be stored by a statement that writes its events itself
 * (db/repositories/smsMessages.ts `storeInboundText`), checked against the catalog.
 * @throws InvalidEventError when the payload does not match its schema
 */
export function receivedEventRows(c: MessageChange): { type: string; data: Record<string, unknown> }[] {
  return checkedEvents([{ type: 'sms.message.received', data: receivedData(c) }]);
}

/**
 * The rows of `sms.message.updated` for changes a statement writes with their events itself (an agent's reply
 * queued and sent, db/repositories/smsMessages.ts), checked against the catalog.
 * @throws InvalidEventError when a payload does not match its schema
 */
export function updatedEventRows(changes: readonly MessageChange[]): { type: string; data: Record<string, unknown> }[] {
  return checkedEvents(changes.map((c) => ({ type: 'sms.message.updated' as const, data: messageUpdatedData(c) })));
}
