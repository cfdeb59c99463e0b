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
  const [one] = await recordEvents(trx, orgId, [event], event.onlyEndpointId);
  return one;
}

/**
 * Writes several events of one organization with their deliveries and outbox rows, and the NOTIFY when
 * there is a delivery, in one statement (one round trip to Postgres, however many events and endpoints).
 * @param onlyEndpointId deliver to this endpoint only (`webhook.test`)
 * @returns each event (in order) with the ids of its deliveries
 */
export async function recordEvents(
  trx: Knex | Knex.Transaction,
  orgId: string,
  events: readonly { type: string; data: Record<string, unknown> }[],
  onlyEndpointId?: string,
): Promise<{ event: StoredEvent; deliveryIds: string[] }[]> {
  if (!events.length) return [];
  const rows = events.map((e, ord) => ({ id: newId('evt'), ord, type: e.type, data: e.data }));
  const res = await trx.raw(
    `WITH x AS (SELECT * FROM jsonb_to_recordset(?::jsonb) AS x(id text, ord int, type text, data jsonb)),
     e AS (INSERT INTO events (id, org_id, type, data) SELECT x.id, ?, x.type, x.data FROM x ORDER BY x.ord RETURNING *),
     d AS (
       INSERT INTO webhook_deliveries (id, org_id, endpoint_id, event_id, event_type)
       SELECT 'whd_' || replace(gen_random_uuid()::text, '-', ''), ?, ep.id, e.id, e.type
         FROM e JOIN webhook_endpoints ep
           ON ep.org_id = ? AND ep.enabled AND ep.deleted_at IS NULL
          AND ${onlyEndpointId ? 'ep.id = ?' : "(ep.event_types = '{}' OR e.type = ANY(ep.event_types))"}
       RETURNING id, event_id
     ),
     o AS (INSERT INTO webhook_outbox (org_id, delivery_id, run) SELECT ?, d.id, 1 FROM d RETURNING delivery_id),
     n AS (SELECT pg_notify(?, '') AS sent WHERE EXISTS (SELECT 1 FROM o))
     SELECT e.*, x.ord, coalesce((SELECT array_agg(d.id) FROM d WHERE d.event_id = e.id), '{}') AS delivery_ids, (SELECT count(*) FROM n) AS notified
       FROM e JOIN x ON x.id = e.id ORDER BY x.ord`,
    [JSON.stringify(rows), orgId, orgId, orgId, ...(onlyEndpointId ? [onlyEndpointId] : []), orgId, OUTBOX_CHANNEL],
  );
  return (res.rows as Record<string, any>[]).map((r) => ({ event: toEvent(r), deliveryIds: r.delivery_ids ?? [] }));
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
