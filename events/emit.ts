/**
 * The one entry point for events (docs/api-notes.md "Webhooks and audit logs", spec "Events"): `emitEvent(trx, orgId, type, data)`.
 *
 * Call it inside the transaction that makes the change the event reports. It writes the event, one
 * delivery per subscribed endpoint and one outbox row per delivery in that same transaction, so there
 * is no event without its change and no change without its event. Nothing is sent here: after commit
 * the dispatcher (events/dispatcher.ts) starts `webhook-delivery/{deliveryId}` for each outbox row; a
 * crash between commit and start only delays the delivery until the next sweep.
 */
import type { Knex } from 'knex';
import { recordEvents, type StoredEvent } from '../db/repositories/events';
import type { WebhookEventDataMap, WebhookEventType } from '../schemas/types/events';
import { schemaErrors } from '../domain/validation';
import { eventTypeInfo } from '../domain/webhooks/catalog';

/** The payload does not match the catalog's schema for its type (a programming error of the emitter). */
export class InvalidEventError extends Error {
  constructor(
    readonly type: string,
    readonly problems: Array<{ field: string; message: string }>,
  ) {
    super(`event ${type} does not match its schema: ${problems.map((p) => `${p.field} ${p.message}`).join('; ')}`);
    this.name = 'InvalidEventError';
  }
}

/**
 * Records an event and its webhook deliveries in the caller's transaction.
 * @param trx the transaction of the change (a plain Db also works for changes with no other write)
 * @param type catalog event type; `data` must match its payload schema
 * @param opts.onlyEndpointId deliver to this endpoint only (used by `webhook.test`); otherwise every
 *   enabled endpoint of the organization subscribed to `type`
 * @returns the stored event and the delivery ids created (empty when nobody subscribes)
 * @throws InvalidEventError for an unknown type or a payload that does not match its schema, which
 *   rolls the caller's transaction back (the change and its event stay together)
 */
export async function emitEvent<T extends WebhookEventType>(
  trx: Knex | Knex.Transaction,
  orgId: string,
  type: T,
  data: WebhookEventDataMap[T],
  opts: { onlyEndpointId?: string } = {},
): Promise<{ event: StoredEvent; deliveryIds: string[] }> {
  const [one] = await emitEvents(trx, orgId, [{ type, data } as EventOf], opts);
  return one;
}

/** One event of a batch: its catalog type and payload. */
export type EventOf<T extends WebhookEventType = WebhookEventType> = { [K in T]: { type: K; data: WebhookEventDataMap[K] } }[T];

/**
 * Records several events of one organization in the caller's transaction in one round trip (hot paths:
 * a conversation turn). Same checks and guarantees as {@link emitEvent}.
 * @throws InvalidEventError for an unknown type or a payload that does not match its schema
 */
export async function emitEvents(
  trx: Knex | Knex.Transaction,
  orgId: string,
  events: readonly EventOf[],
  opts: { onlyEndpointId?: string } = {},
): Promise<{ event: StoredEvent; deliveryIds: string[] }[]> {
  return recordEvents(trx, orgId, checkedEvents(events), opts.onlyEndpointId);
}

/**
 * Events checked against the catalog and their data schemas (spec "Events"), as the rows a repository
 * stores (e.g. with a chat turn, db/repositories/conversations.ts `saveTurns`).
 * @throws InvalidEventError naming the type and the fields that do not match
 */
export function checkedEvents(events: readonly EventOf[]): { type: string; data: Record<string, unknown> }[] {
  for (const e of events) {
    const info = eventTypeInfo(e.type);
    if (!info) throw new InvalidEventError(e.type, [{ field: 'type', message: 'is not in the event catalog' }]);
    const problems = schemaErrors(info.schema, e.data);
    if (problems.length) throw new InvalidEventError(e.type, problems);
  }
  return events.map((e) => ({ type: e.type, data: e.data as unknown as Record<string, unknown> }));
}
