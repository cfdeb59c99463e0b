/**
 * Events and the delivery outbox (docs/api-notes.md "Webhooks and audit logs"). `recordEvent` runs inside the caller's transaction: the
 * event, one delivery per subscribed endpoint and one outbox row per delivery commit (or roll back)
 * with the change that caused them. The dispatcher (events/dispatcher.ts) drains the outbox.
 */
import type { Knex } from 'knex';
import { prepared, type Db, type SqlPart } from '../index';
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

const toEvent = (r: Record<string, any>): StoredEvent => ({ id: r.id, orgId: r.org_id, type: r.type, data: r.data, createdAt: new Date(r.created_at) });

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
 * Common table expressions (`ev_x`, `ev_e`, `ev_d`, `ev_o`, `ev_n`) that store events, a delivery per
 * subscribed endpoint with its outbox row, and NOTIFY the dispatcher when there are deliveries, in the
 * statement they join (e.g. a chat turn's). Read the stored events with {@link EVENTS_SELECT}.
 * @param events each with an optional key `k` that the gate may test (`ev_x.k`; null when not given)
 * @param opts.gate a SQL condition the inserts are subject to (default `TRUE`)
 * @param opts.onlyEndpointId deliver to this endpoint only (test events)
 * @param opts.extraRows a SELECT of further rows `(id, ord, type, data, k)` computed by the statement itself
 */
export function eventCtes(
  orgId: string,
  events: readonly { type: string; data: Record<string, unknown>; k?: number }[],
  opts: { gate?: string; onlyEndpointId?: string; extraRows?: SqlPart } = {},
): SqlPart {
  const rows = events.map((e, ord) => ({ id: newId('evt'), ord, type: e.type, data: e.data, k: e.k ?? null }));
  return {
    sql: `ev_x AS (
       SELECT * FROM jsonb_to_recordset(?::jsonb) AS x(id text, ord int, type text, data jsonb, k int)${opts.extraRows ? ` UNION ALL ${opts.extraRows.sql}` : ''}
     ),
     ev_e AS (INSERT INTO events (id, org_id, type, data) SELECT ev_x.id, ?, ev_x.type, ev_x.data FROM ev_x WHERE ${opts.gate ?? 'TRUE'} ORDER BY ev_x.ord RETURNING *),
     ev_d AS (
       INSERT INTO webhook_deliveries (id, org_id, endpoint_id, event_id, event_type)
       SELECT 'whd_' || replace(gen_random_uuid()::text, '-', ''), ?, ep.id, ev_e.id, ev_e.type
         FROM ev_e JOIN webhook_endpoints ep
           ON ep.org_id = ? AND ep.enabled AND ep.deleted_at IS NULL
          AND ${opts.onlyEndpointId ? 'ep.id = ?' : "(ep.event_types = '{}' OR ev_e.type = ANY(ep.event_types))"}
       RETURNING id, event_id, endpoint_id
     ),
     ev_o AS (INSERT INTO webhook_outbox (org_id, delivery_id, run, endpoint_id) SELECT ?, ev_d.id, 1, ev_d.endpoint_id FROM ev_d RETURNING delivery_id),
     ev_n AS (SELECT pg_notify(?, '') AS sent WHERE EXISTS (SELECT 1 FROM ev_o))`,
    bindings: [
      JSON.stringify(rows),
      ...(opts.extraRows?.bindings ?? []),
      orgId,
      orgId,
      orgId,
      ...(opts.onlyEndpointId ? [opts.onlyEndpointId] : []),
      orgId,
      OUTBOX_CHANNEL,
    ],
  };
}

/** The select-list expression (a json array named `events`: stored events in order, each with `delivery_ids`) after {@link eventCtes}. */
export const EVENTS_SELECT = `(SELECT coalesce(json_agg(r ORDER BY r.ord), '[]'::json) FROM (
       SELECT ev_e.*, ev_x.ord, coalesce((SELECT array_agg(ev_d.id) FROM ev_d WHERE ev_d.event_id = ev_e.id), '{}') AS delivery_ids,
              (SELECT count(*) FROM ev_n) AS notified
         FROM ev_e JOIN ev_x ON ev_x.id = ev_e.id) r) AS events`;

/**
 * The select-list expression that runs {@link eventCtes}'s NOTIFY (`ev_n`, a plain CTE, which Postgres runs only when the
 * statement reads it) without returning the stored events: for a statement whose caller does not read them, so
 * Postgres builds and the service parses no JSON of them. A column `notified` (0 or 1).
 */
export const EVENTS_NOTIFY_SELECT = `(SELECT count(*) FROM ev_n) AS notified`;

/** Stored events (with their deliveries) from the `events` column of {@link EVENTS_SELECT}. */
export function storedEvents(rows: Record<string, any>[]): { event: StoredEvent; deliveryIds: string[] }[] {
  return rows.map((r) => ({ event: toEvent(r), deliveryIds: r.delivery_ids ?? [] }));
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
  const part = eventCtes(orgId, events, { onlyEndpointId });
  const sql = `WITH ${part.sql} SELECT ${EVENTS_SELECT}`;
  const res = await trx.raw(sql, part.bindings).options(prepared(sql));
  return storedEvents(res.rows[0].events);
}

/** One event of the organization, or undefined. */
export async function getEvent(db: Db, orgId: string, eventId: string): Promise<StoredEvent | undefined> {
  const row = await db('events').where({ org_id: orgId, id: eventId }).first();
  return row ? toEvent(row) : undefined;
}

/**
 * Whether the organization has an event of `type` whose data's `key` equals `value`: the guard of an event
 * emitted once per subject by a step that may run again (an activity retried after its commit).
 */
export async function hasEventFor(db: Db | Knex.Transaction, orgId: string, type: string, key: string, value: string): Promise<boolean> {
  const row = await db('events').where({ org_id: orgId, type }).whereRaw('data->>? = ?', [key, value]).first('id');
  return row !== undefined;
}

/**
 * Queues another run of a delivery (manual retry) in the caller's transaction and NOTIFYs the dispatcher.
 */
export async function enqueueDeliveryRun(trx: Knex | Knex.Transaction, orgId: string, deliveryId: string, run: number): Promise<void> {
  await trx('webhook_outbox')
    .insert({ org_id: orgId, delivery_id: deliveryId, run, endpoint_id: trx.raw('(SELECT endpoint_id FROM webhook_deliveries WHERE org_id = ? AND id = ?)', [orgId, deliveryId]) })
    .onConflict(['delivery_id', 'run'])
    .ignore();
  await trx.raw('SELECT pg_notify(?, ?)', [OUTBOX_CHANNEL, '']);
}

/**
 * Admission limits of {@link lockOutboxBatch} (docs/operations.md "Fair sharing"): a delivery's workflow starts only
 * while its endpoint and its organization have fewer admitted deliveries waiting for their first attempt than these.
 */
export interface OutboxAdmission {
  /** Admitted, not yet attempted deliveries per endpoint (WEBHOOK_MAX_IN_FLIGHT_PER_ENDPOINT). */
  perEndpoint: number;
  /** Admitted, not yet attempted deliveries per organization (WEBHOOK_MAX_IN_FLIGHT_PER_ORG). */
  perOrg: number;
  /** How long an admission counts, ms: a workflow lost before its first attempt frees its place after this. */
  leaseMs: number;
}

/**
 * Locks up to `limit` outbox rows (oldest first, skipping rows another dispatcher holds) inside `trx`.
 * Deliberately across organizations: the dispatcher serves every tenant, as key lookup does. With `admission`,
 * only the rows each endpoint and organization may start now, oldest first within each: an organization's
 * backlog stays in the outbox without holding back another's rows behind it.
 */
export async function lockOutboxBatch(trx: Knex.Transaction, limit: number, admission?: OutboxAdmission): Promise<OutboxRow[]> {
  let rows: Record<string, any>[];
  if (!admission) {
    rows = await trx('webhook_outbox').select('id', 'org_id', 'delivery_id', 'run').orderBy('id').limit(limit).forUpdate().skipLocked();
  } else {
    // Proportional to what it admits, not to the backlog: the organizations with waiting rows by a loose index scan
    // of (org_id, id); their admitted deliveries from the partial index webhook_deliveries_admitted; for each endpoint
    // of an organization with room, its oldest rows up to the per-endpoint limit through (endpoint_id, id), less those
    // the endpoint has admitted; then each organization's oldest of those up to its own room. The endpoint is matched
    // as a range, not with `=`: with `=` the planner may drop it from the order and walk the primary key in id order
    // with a filter, which reads the whole backlog for an endpoint whose rows are all recent. The row's organization
    // is matched too: an endpoint's rows are its organization's, and the join never leans on ids being global.
    const sql = `WITH RECURSIVE orgs AS (
         (SELECT org_id FROM webhook_outbox ORDER BY org_id LIMIT 1)
         UNION ALL
         SELECT (SELECT o.org_id FROM webhook_outbox o WHERE o.org_id > g.org_id ORDER BY o.org_id LIMIT 1) FROM orgs g WHERE g.org_id IS NOT NULL
       ),
       admitted AS (
         SELECT d.org_id, d.endpoint_id, count(*)::int AS n FROM webhook_deliveries d
          WHERE d.org_id IN (SELECT org_id FROM orgs WHERE org_id IS NOT NULL)
            AND d.status = 'pending' AND d.admitted_run = d.run AND d.admitted_at > now() - make_interval(secs => :leaseS)
          GROUP BY d.org_id, d.endpoint_id
       ),
       room AS MATERIALIZED (
         SELECT * FROM (
           SELECT g.org_id, :perOrg - coalesce((SELECT sum(a.n) FROM admitted a WHERE a.org_id = g.org_id), 0) AS org_room
             FROM orgs g WHERE g.org_id IS NOT NULL
         ) x WHERE x.org_room > 0
       ),
       endpoints AS MATERIALIZED (
         SELECT e.id, e.org_id, coalesce((SELECT a.n FROM admitted a WHERE a.org_id = e.org_id AND a.endpoint_id = e.id), 0) AS held
           FROM room r JOIN webhook_endpoints e ON e.org_id = r.org_id
       ),
       candidates AS (
         SELECT c.id, e.org_id, e.held + row_number() OVER (PARTITION BY e.id ORDER BY c.id) AS endpoint_n
           FROM endpoints e
           CROSS JOIN LATERAL (SELECT o.id FROM webhook_outbox o WHERE o.endpoint_id >= e.id AND o.endpoint_id <= e.id AND o.org_id = e.org_id ORDER BY o.endpoint_id, o.id LIMIT :perEndpoint) c
          WHERE e.held < :perEndpoint
       ),
       by_org AS (
         SELECT c.id, r.org_room, row_number() OVER (PARTITION BY c.org_id ORDER BY c.id) AS org_n
           FROM candidates c JOIN room r ON r.org_id = c.org_id
          WHERE c.endpoint_n <= :perEndpoint
       )
       SELECT o.id, o.org_id, o.delivery_id, o.run FROM webhook_outbox o
        WHERE o.id = ANY(ARRAY(SELECT id FROM by_org WHERE org_n <= org_room))
        ORDER BY o.id LIMIT :limit FOR UPDATE OF o SKIP LOCKED`;
    rows = (await trx.raw(sql, { leaseS: admission.leaseMs / 1000, perEndpoint: admission.perEndpoint, perOrg: admission.perOrg, limit })).rows;
  }
  return rows.map((r: Record<string, any>) => ({ id: Number(r.id), orgId: r.org_id, deliveryId: r.delivery_id, run: r.run }));
}

/**
 * Removes outbox rows whose workflows were started (inside the transaction that locked them) and notes their
 * deliveries' runs as admitted now ({@link lockOutboxBatch}).
 */
export async function deleteOutboxRows(trx: Knex.Transaction, rows: readonly OutboxRow[]): Promise<void> {
  if (!rows.length) return;
  await trx('webhook_outbox')
    .whereIn(
      'id',
      rows.map((r) => r.id),
    )
    .delete();
  await trx.raw(
    `UPDATE webhook_deliveries d SET admitted_run = x.run, admitted_at = now()
       FROM jsonb_to_recordset(?::jsonb) AS x(org_id text, delivery_id text, run int)
      WHERE d.org_id = x.org_id AND d.id = x.delivery_id AND d.run = x.run`,
    [JSON.stringify(rows.map((r) => ({ org_id: r.orgId, delivery_id: r.deliveryId, run: r.run })))],
  );
}

/** Number of outbox rows waiting (monitoring, tests, benchmarks). */
export async function outboxDepth(db: Db): Promise<number> {
  const [{ n }] = await db('webhook_outbox').count({ n: '*' });
  return Number(n);
}
