/**
 * Events and the delivery outbox (README "Webhooks and audit logs"). `recordEvent` runs inside the caller's transaction: the
 * event, one delivery per subscribed endpoint and one outbox row per delivery commit (or roll back)
 * with the change that caused them. The dispatcher (events/dispatcher.ts) drains the outbox.
 */
import type { Knex } from 'knex';
import type { Db } from '../index';
import { newId } from '../ids';

/** Postgres NOTIFY channel raised (on commit) whenever outbox rows are written. */
export const OUTBOX_CHANNEL = 'webhook_outbox';

/** A stored event. */
export interface StoredEvent {
  id: string;
  orgId: string;
  type: string;
  data: Record<string, unknown>;
  createdAt: Date;
}

/** One row of the outbox: a delivery run waiting for its workflow to be started. */
export interface OutboxRow {
  id: number;
  orgId: string;
  deliveryId: string;
  run: number;
}

const toEvent = (r: Record<string, any>): StoredEvent => ({ id: r.id, orgId: r.org_id, type: r.type, data: r.data, createdAt: r.created_at });

/**
 * Writes an event, its deliveries (one per enabled endpoint of the organization subscribed to the
 * type, or only `onlyEndpointId`) and their outbox rows, then NOTIFYs the dispatcher (delivered at commit).
 * @param trx the caller's transaction (or a Db for a standalone write)
 * @returns the event and the ids of the deliveries created
 */
export async function recordEvent(
  trx: Knex | Knex.Transaction,
  orgId: string,
  event: { type: string; data: Record<string, unknown>; onlyEndpointId?: string },
): Promise<{ event: StoredEvent; deliveryIds: string[] }> {
  const [row] = await trx('events').insert({ id: newId('evt'), org_id: orgId, type: event.type, data: JSON.stringify(event.data) }).returning('*');
  const endpoints = trx('webhook_endpoints').select('id').where({ org_id: orgId, enabled: true }).whereNull('deleted_at');
  if (event.onlyEndpointId) endpoints.andWhere({ id: event.onlyEndpointId });
  else endpoints.andWhere((q) => q.whereRaw("event_types = '{}'").orWhereRaw('? = ANY(event_types)', [event.type]));
  const ids: string[] = (await endpoints).map((e: { id: string }) => e.id);
  if (!ids.length) return { event: toEvent(row), deliveryIds: [] };
  const deliveries = ids.map((endpointId) => ({ id: newId('whd'), org_id: orgId, endpoint_id: endpointId, event_id: row.id, event_type: event.type }));
  await trx('webhook_deliveries').insert(deliveries);
  await trx('webhook_outbox').insert(deliveries.map((d) => ({ org_id: orgId, delivery_id: d.id, run: 1 })));
  await trx.raw('SELECT pg_notify(?, ?)', [OUTBOX_CHANNEL, '']);
  return { event: toEvent(row), deliveryIds: deliveries.map((d) => d.id) };
}

/** One event of the organization, or undefined. */
export async function getEvent(db: Db, orgId: string, eventId: string): Promise<StoredEvent | undefined> {
  const row = await db('events').where({ org_id: orgId, id: eventId }).first();
  return row ? toEvent(row) : undefined;
}

/**
 * Queues another run of a delivery (manual retry) in the caller's transaction and NOTIFYs the dispatcher.
 */
export async function enqueueDeliveryRun(trx: Knex | Knex.Transaction, orgId: string, deliveryId: string, run: number): Promise<void> {
  await trx('webhook_outbox').insert({ org_id: orgId, delivery_id: deliveryId, run }).onConflict(['delivery_id', 'run']).ignore();
  await trx.raw('SELECT pg_notify(?, ?)', [OUTBOX_CHANNEL, '']);
}

/**
 * Locks up to `limit` outbox rows (oldest first, skipping rows another dispatcher holds) inside `trx`.
 * Deliberately across organizations: the dispatcher serves every tenant, as key lookup does.
 */
export async function lockOutboxBatch(trx: Knex.Transaction, limit: number): Promise<OutboxRow[]> {
  const rows = await trx('webhook_outbox').select('id', 'org_id', 'delivery_id', 'run').orderBy('id').limit(limit).forUpdate().skipLocked();
  return rows.map((r: Record<string, any>) => ({ id: Number(r.id), orgId: r.org_id, deliveryId: r.delivery_id, run: r.run }));
}

/** Removes outbox rows whose workflows were started (inside the transaction that locked them). */
export async function deleteOutboxRows(trx: Knex.Transaction, ids: number[]): Promise<void> {
  if (ids.length) await trx('webhook_outbox').whereIn('id', ids).delete();
}

/** Number of outbox rows waiting (monitoring, tests, benchmarks). */
export async function outboxDepth(db: Db): Promise<number> {
  const [{ n }] = await db('webhook_outbox').count({ n: '*' });
  return Number(n);
}
