/**
 * Webhook deliveries and their attempts (docs/api-notes.md "Webhooks and audit logs"): listing, the
 * context of one attempt, recording an attempt with its effect on the endpoint, giving up a run and a
 * manual retry. Every function takes the organization id first; a row of another organization is
 * invisible (undefined / false), exactly like a missing one.
 */
import type { Knex } from 'knex';
import type { Db } from '../index';
import { keysetPage, type Page } from '../pagination';
import { enqueueDeliveryRun, OUTBOX_CHANNEL } from './events';
import type { WebhookDelivery, WebhookDeliveryAttempt, WebhookDeliveryStatus, WebhookDisabledReason } from '../../schemas/types/webhooks';
import { iso } from '../timestamps';
import { fromColumns, fromNullableColumns, fromTimestampColumns } from '../rows';

function toAttempt(r: Record<string, any>): WebhookDeliveryAttempt {
  return {
    attempt: r.attempt,
    run: r.run,
    attemptedAt: iso(r.attempted_at)!,
    statusCode: r.status_code ?? null,
    durationMs: r.duration_ms,
    responseBody: r.response_body ?? null,
    error: r.error ?? null,
    outcome: r.outcome,
  };
}

function toDelivery(r: Record<string, any>, attempts: WebhookDeliveryAttempt[]): WebhookDelivery {
  return {
    id: r.id,
    webhookId: r.endpoint_id,
    ...fromColumns(r, ['eventId', 'eventType', 'status', 'attemptCount', 'run']),
    ...fromNullableColumns(r, ['lastStatusCode', 'lastError']),
    ...fromTimestampColumns(r, ['createdAt', 'updatedAt', 'succeededAt']),
    attempts,
  };
}

async function attemptsOf(db: Db, orgId: string, deliveryIds: string[]): Promise<Map<string, WebhookDeliveryAttempt[]>> {
  const out = new Map<string, WebhookDeliveryAttempt[]>();
  if (!deliveryIds.length) return out;
  const rows = await db('webhook_delivery_attempts').where({ org_id: orgId }).whereIn('delivery_id', deliveryIds).orderBy(['run', 'attempt']);
  for (const r of rows) out.set(r.delivery_id, [...(out.get(r.delivery_id) ?? []), toAttempt(r)]);
  return out;
}

/**
 * One page of an endpoint's deliveries, newest first, each with its attempts.
 * @param opts.status only deliveries in this status
 * @throws InvalidCursorError
 */
export async function listDeliveries(
  db: Db,
  orgId: string,
  endpointId: string,
  opts: { limit: number; cursor?: string; status?: WebhookDeliveryStatus },
): Promise<Page<WebhookDelivery>> {
  const q = db('webhook_deliveries').select('*').where({ org_id: orgId, endpoint_id: endpointId });
  if (opts.status) q.andWhere({ status: opts.status });
  const page = await keysetPage(q, { limit: opts.limit, cursor: opts.cursor, column: 'seq', direction: 'desc', map: (r) => r });
  const attempts = await attemptsOf(db, orgId, page.items.map((r: any) => r.id));
  return { ...page, items: page.items.map((r: any) => toDelivery(r, attempts.get(r.id) ?? [])) };
}

/** One delivery with its attempts, or undefined. `endpointId`, when given, must match. */
export async function getDelivery(db: Db, orgId: string, deliveryId: string, endpointId?: string): Promise<WebhookDelivery | undefined> {
  const q = db('webhook_deliveries').where({ org_id: orgId, id: deliveryId });
  if (endpointId) q.andWhere({ endpoint_id: endpointId });
  const row = await q.first();
  if (!row) return undefined;
  return toDelivery(row, (await attemptsOf(db, orgId, [row.id])).get(row.id) ?? []);
}

/** What the delivery activity needs for one attempt (sealed secrets; the caller opens them). */
export interface DeliveryContext {
  deliveryId: string;
  orgId: string;
  run: number;
  status: WebhookDeliveryStatus;
  endpoint: {
    id: string;
    url: string;
    enabled: boolean;
    deleted: boolean;
    disabledReason: WebhookDisabledReason | null;
    secretSealed: string;
    /** The previous secret while its rotation grace period lasts. */
    previousSecretSealed: string | null;
  };
  event: { id: string; type: string; data: Record<string, unknown>; createdAt: Date };
}

/** Loads a delivery with its endpoint and event, or undefined when the delivery does not exist. */
export async function loadDeliveryContext(db: Db, orgId: string, deliveryId: string): Promise<DeliveryContext | undefined> {
  const r = await db('webhook_deliveries as d')
    .join('webhook_endpoints as w', 'w.id', 'd.endpoint_id')
    .join('events as e', 'e.id', 'd.event_id')
    .where({ 'd.org_id': orgId, 'd.id': deliveryId })
    .first(
      'd.id as delivery_id',
      'd.run',
      'd.status',
      'w.id as endpoint_id',
      'w.url',
      'w.enabled',
      'w.deleted_at',
      'w.disabled_reason',
      'w.secret_sealed',
      db.raw('CASE WHEN w.previous_secret_expires_at > now() THEN w.previous_secret_sealed END AS previous_secret_sealed'),
      'e.id as event_id',
      'e.type as event_type',
      'e.data as event_data',
      'e.created_at as event_created_at',
    );
  if (!r) return undefined;
  return {
    deliveryId: r.delivery_id,
    orgId,
    run: r.run,
    status: r.status,
    endpoint: {
      id: r.endpoint_id,
      url: r.url,
      enabled: r.enabled,
      deleted: !!r.deleted_at,
      disabledReason: r.disabled_reason ?? null,
      secretSealed: r.secret_sealed,
      previousSecretSealed: r.previous_secret_sealed ?? null,
    },
    event: { id: r.event_id, type: r.event_type, data: r.event_data, createdAt: r.event_created_at },
  };
}

/** One recorded attempt and what it does to the delivery and the endpoint. */
export interface AttemptRecord {
  deliveryId: string;
  run: number;
  attempt: number;
  attemptedAt: Date;
  statusCode: number | null;
  durationMs: number;
  responseBody: string | null;
  error: string | null;
  outcome: 'succeeded' | 'failed';
  /** Delivery status after this attempt when the endpoint stays enabled. */
  nextStatus: 'succeeded' | 'retrying' | 'failed';
  /** `gone`: disable the endpoint (410); `failure`: extend its failing period; `success`: end it. */
  endpointEffect: 'success' | 'failure' | 'gone' | 'none';
  /** Disable the endpoint when its failing period reaches this many ms. */
  disableAfterFailingMs: number;
  /**
   * Clock of the failing period (default `attemptedAt`). The workflow passes its own time, so the
   * period follows the retry schedule's timers (and time skipping in tests).
   */
  clock?: Date;
  /**
   * Called inside the transaction when this attempt disabled the endpoint, so what reports it (the
   * `webhook.endpoint.disabled` event, the audit entry) commits or rolls back with the disablement.
   */
  onDisabled?: (trx: Knex.Transaction, info: EndpointDisabled) => Promise<void>;
}

/** An endpoint that an attempt just disabled. */
export interface EndpointDisabled {
  endpointId: string;
  url: string;
  reason: 'gone' | 'failing';
  /** The attempt that disabled it. */
  deliveryId: string;
  lastStatusCode: number | null;
  lastError: string | null;
  disabledAt: Date;
}

/**
 * Records one attempt and applies it, in one transaction: the attempt row (idempotent on
 * delivery+run+attempt), the delivery's status (only while this run is current and not finished),
 * and the endpoint's failing period or disablement.
 * @returns `applied` false when the run is stale or finished; `endpointDisabled` the reason when
 *   this attempt disabled the endpoint; `status` the delivery status after it
 */
export async function recordAttempt(
  db: Db,
  orgId: string,
  rec: AttemptRecord,
): Promise<{ applied: boolean; endpointDisabled: WebhookDisabledReason | null; status: WebhookDeliveryStatus | null }> {
  if (rec.endpointEffect === 'success' && rec.nextStatus === 'succeeded') return recordSuccess(db, orgId, rec);
  return db.transaction(async (trx) => {
    const delivery = await trx('webhook_deliveries').where({ org_id: orgId, id: rec.deliveryId }).forUpdate().first();
    if (!delivery || delivery.run !== rec.run || !['pending', 'retrying'].includes(delivery.status)) {
      return { applied: false, endpointDisabled: null, status: delivery?.status ?? null };
    }
    const inserted = await trx('webhook_delivery_attempts')
      .insert({
        org_id: orgId,
        delivery_id: rec.deliveryId,
        run: rec.run,
        attempt: rec.attempt,
        attempted_at: rec.attemptedAt,
        status_code: rec.statusCode,
        duration_ms: rec.durationMs,
        response_body: rec.responseBody,
        error: rec.error,
        outcome: rec.outcome,
      })
      .onConflict(['delivery_id', 'run', 'attempt'])
      .ignore()
      .returning('id');
    if (!inserted.length) return { applied: false, endpointDisabled: null, status: delivery.status };

    let disabled: WebhookDisabledReason | null = null;
    let disabledRow: { url: string; disabled_at: Date } | undefined;
    const endpoint = trx('webhook_endpoints').where({ org_id: orgId, id: delivery.endpoint_id });
    if (rec.endpointEffect === 'success') {
      await endpoint.clone().whereNotNull('failing_since').update({ failing_since: null });
    } else if (rec.endpointEffect === 'gone') {
      const [row] = await endpoint
        .clone()
        .where({ enabled: true })
        .update({ enabled: false, disabled_reason: 'gone', disabled_at: trx.fn.now(), updated_at: trx.fn.now() })
        .returning(['url', 'disabled_at']);
      if (row) {
        disabled = 'gone';
        disabledRow = row;
      }
    } else if (rec.endpointEffect === 'failure') {
      const clock = rec.clock ?? rec.attemptedAt;
      // Only the first failure of a period writes (no row lock shared by every failing delivery).
      await endpoint.clone().whereNull('failing_since').update({ failing_since: clock });
      const ep = await endpoint
        .clone()
        .first('enabled', trx.raw('(?::timestamptz - failing_since) >= make_interval(secs => ?::double precision) AS expired', [clock, rec.disableAfterFailingMs / 1000]));
      if (ep?.enabled && ep.expired) {
        [disabledRow] = await endpoint
          .clone()
          .update({ enabled: false, disabled_reason: 'failing', disabled_at: trx.fn.now(), updated_at: trx.fn.now() })
          .returning(['url', 'disabled_at']);
        disabled = 'failing';
      }
    }
    const status: WebhookDeliveryStatus = disabled && rec.nextStatus === 'retrying' ? 'failed' : rec.nextStatus;
    const lastError =
      disabled === 'failing'
        ? `endpoint disabled: failing continuously for ${Math.round(rec.disableAfterFailingMs / 1000)} s; last error: ${rec.error ?? `HTTP ${rec.statusCode}`}`
        : disabled === 'gone'
          ? 'endpoint answered 410 Gone and was disabled'
          : rec.outcome === 'failed'
            ? rec.error ?? `HTTP ${rec.statusCode}`
            : null;
    await trx('webhook_deliveries')
      .where({ id: rec.deliveryId })
      .update({
        status,
        attempt_count: trx.raw('attempt_count + 1'),
        last_status_code: rec.statusCode,
        last_error: lastError,
        succeeded_at: status === 'succeeded' ? rec.attemptedAt : null,
        updated_at: trx.fn.now(),
      });
    // The first attempt of a run ends its admission: the dispatcher may start the organization's next outbox row.
    if (delivery.status === 'pending') await trx.raw("SELECT pg_notify(?, '') WHERE EXISTS (SELECT 1 FROM webhook_outbox WHERE org_id = ?)", [OUTBOX_CHANNEL, orgId]);
    if (disabled && disabledRow && rec.onDisabled) {
      await rec.onDisabled(trx, {
        endpointId: delivery.endpoint_id,
        url: disabledRow.url,
        reason: disabled,
        deliveryId: rec.deliveryId,
        lastStatusCode: rec.statusCode,
        lastError: rec.error,
        disabledAt: new Date(disabledRow.disabled_at),
      });
    }
    return { applied: true, endpointDisabled: disabled, status };
  });
}

/**
 * The hot path of {@link recordAttempt} (a 2xx): one atomic statement instead of a five-statement
 * transaction — lock the delivery while its run is current and open, insert the attempt, mark the
 * delivery succeeded, end the endpoint's failing period. Same effects, one round trip.
 */
async function recordSuccess(db: Db, orgId: string, rec: AttemptRecord): Promise<{ applied: boolean; endpointDisabled: null; status: WebhookDeliveryStatus | null }> {
  const r = await db.raw(
    `WITH d AS (
       SELECT id, endpoint_id, status FROM webhook_deliveries
        WHERE org_id = :orgId AND id = :deliveryId AND run = :run AND status IN ('pending', 'retrying')
        FOR UPDATE
     ), ins AS (
       INSERT INTO webhook_delivery_attempts (org_id, delivery_id, run, attempt, attempted_at, status_code, duration_ms, response_body, error, outcome)
       SELECT :orgId, d.id, :run, :attempt, :attemptedAt, :statusCode, :durationMs, :responseBody, NULL, 'succeeded' FROM d
       ON CONFLICT (delivery_id, run, attempt) DO NOTHING
       RETURNING delivery_id
     ), upd AS (
       UPDATE webhook_deliveries w
          SET status = 'succeeded', attempt_count = w.attempt_count + 1, last_status_code = :statusCode,
              last_error = NULL, succeeded_at = :attemptedAt, updated_at = now()
         FROM ins WHERE w.id = ins.delivery_id
       RETURNING w.id
     ), ep AS (
       UPDATE webhook_endpoints SET failing_since = NULL
        WHERE org_id = :orgId AND id = (SELECT endpoint_id FROM d) AND failing_since IS NOT NULL AND EXISTS (SELECT 1 FROM upd)
       RETURNING id
     ), nt AS (
       -- The first attempt of a run ends its admission: the dispatcher may start the organization's next outbox row.
       SELECT pg_notify(:channel, '') WHERE EXISTS (SELECT 1 FROM upd) AND (SELECT status FROM d) = 'pending'
          AND EXISTS (SELECT 1 FROM webhook_outbox WHERE org_id = :orgId)
     )
     SELECT (SELECT count(*) FROM upd) AS applied, (SELECT count(*) FROM ep) AS cleared, (SELECT count(*) FROM nt) AS notified,
            (SELECT status FROM webhook_deliveries WHERE org_id = :orgId AND id = :deliveryId) AS status_before`,
    {
      orgId,
      deliveryId: rec.deliveryId,
      run: rec.run,
      attempt: rec.attempt,
      attemptedAt: rec.attemptedAt,
      statusCode: rec.statusCode,
      durationMs: rec.durationMs,
      responseBody: rec.responseBody,
      channel: OUTBOX_CHANNEL,
    },
  );
  const row = r.rows[0];
  const applied = Number(row.applied) > 0;
  return { applied, endpointDisabled: null, status: applied ? 'succeeded' : (row.status_before ?? null) };
}

/** Gives up a delivery run without an attempt (endpoint deleted or disabled). @returns false when the run is stale or finished */
export async function abandonDelivery(db: Db, orgId: string, deliveryId: string, run: number, reason: string): Promise<boolean> {
  const n = await db('webhook_deliveries')
    .where({ org_id: orgId, id: deliveryId, run })
    .whereIn('status', ['pending', 'retrying'])
    .update({ status: 'failed', last_error: reason, updated_at: db.fn.now() });
  return n > 0;
}

/**
 * Starts a new run of a failed delivery (manual retry): run + 1, status `pending`, and an outbox row,
 * in one transaction.
 * @returns `not_found`, `not_failed` (still pending/retrying or already delivered) or the delivery
 */
export async function retryDelivery(
  db: Db,
  orgId: string,
  endpointId: string,
  deliveryId: string,
): Promise<{ kind: 'not_found' } | { kind: 'not_failed'; status: WebhookDeliveryStatus } | { kind: 'queued'; delivery: WebhookDelivery }> {
  const result = await db.transaction(async (trx) => {
    const row = await trx('webhook_deliveries').where({ org_id: orgId, id: deliveryId, endpoint_id: endpointId }).forUpdate().first();
    if (!row) return { kind: 'not_found' as const };
    if (row.status !== 'failed') return { kind: 'not_failed' as const, status: row.status as WebhookDeliveryStatus };
    await trx('webhook_deliveries')
      .where({ id: deliveryId })
      .update({ run: row.run + 1, status: 'pending', last_error: null, updated_at: trx.fn.now() });
    await enqueueDeliveryRun(trx, orgId, deliveryId, row.run + 1);
    return { kind: 'queued' as const };
  });
  if (result.kind !== 'queued') return result;
  return { kind: 'queued', delivery: (await getDelivery(db, orgId, deliveryId))! };
}
