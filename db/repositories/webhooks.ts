/**
 * Webhook endpoints, deliveries and attempts (docs/api-notes.md "Webhooks and audit logs"). Every function takes the organization id
 * first; a row of another organization is invisible (undefined / false), exactly like a missing one.
 * Signing secrets leave this module only sealed (see events/signing.ts), and only through
 * `loadDeliveryContext`, which the delivery activity uses.
 */
import type { Knex } from 'knex';
import type { Db } from '../index';
import { newId } from '../ids';
import { keysetPage, type Page } from '../pagination';
import { enqueueDeliveryRun, OUTBOX_CHANNEL } from './events';
import type {
  WebhookDelivery,
  WebhookDeliveryAttempt,
  WebhookDeliveryStatus,
  WebhookDisabledReason,
  WebhookEndpoint,
  WebhookReplay,
} from '../../schemas/types/webhooks';
import type { WebhookEventType } from '../../schemas/types/events';
import { iso } from '../timestamps';
import { fromColumns, fromNullableColumns, fromTimestampColumns } from '../rows';


/** Maps a stored endpoint to its API shape (never the secret). */
export function toEndpoint(r: Record<string, any>): WebhookEndpoint {
  return {
    id: r.id,
    url: r.url,
    description: r.description ?? null,
    eventTypes: r.event_types ?? [],
    enabled: r.enabled,
    disabledReason: r.disabled_reason ?? null,
    disabledAt: iso(r.disabled_at),
    failingSince: iso(r.failing_since),
    secretPrefix: r.secret_prefix,
    createdAt: iso(r.created_at)!,
    updatedAt: iso(r.updated_at)!,
  };
}

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

const live = (db: Db | Knex.Transaction, orgId: string) => db('webhook_endpoints').where({ org_id: orgId }).whereNull('deleted_at');

/** Creates an endpoint. `secretSealed` is the sealed `whsec_…` secret. */
export async function createEndpoint(
  db: Db,
  orgId: string,
  input: { url: string; description: string | null; eventTypes: WebhookEventType[]; enabled: boolean; secretSealed: string; secretPrefix: string },
): Promise<WebhookEndpoint> {
  const [row] = await db('webhook_endpoints')
    .insert({
      id: newId('whk'),
      org_id: orgId,
      url: input.url,
      description: input.description,
      event_types: input.eventTypes,
      enabled: input.enabled,
      disabled_reason: input.enabled ? null : 'manual',
      disabled_at: input.enabled ? null : db.fn.now(),
      secret_sealed: input.secretSealed,
      secret_prefix: input.secretPrefix,
    })
    .returning('*');
  return toEndpoint(row);
}

/** One page of the organization's endpoints, oldest first. @throws InvalidCursorError */
export async function listEndpoints(db: Db, orgId: string, page: { limit: number; cursor?: string }): Promise<Page<WebhookEndpoint>> {
  return keysetPage(live(db, orgId).select('*'), { ...page, column: 'seq', direction: 'asc', map: toEndpoint });
}

/** One endpoint, or undefined (missing, deleted, or another organization's). */
export async function getEndpoint(db: Db, orgId: string, id: string): Promise<WebhookEndpoint | undefined> {
  const row = await live(db, orgId).where({ id }).first();
  return row ? toEndpoint(row) : undefined;
}

/**
 * Updates an endpoint. `enabled: true` clears the disabled reason and the failing period;
 * `enabled: false` disables it with reason `manual` (kept if it was already disabled).
 * @returns the endpoint after the change, or undefined when not found
 */
export async function updateEndpoint(
  db: Db,
  orgId: string,
  id: string,
  patch: { url?: string; description?: string | null; eventTypes?: WebhookEventType[]; enabled?: boolean },
): Promise<WebhookEndpoint | undefined> {
  const set: Record<string, unknown> = { updated_at: db.fn.now() };
  if (patch.url !== undefined) set.url = patch.url;
  if (patch.description !== undefined) set.description = patch.description;
  if (patch.eventTypes !== undefined) set.event_types = patch.eventTypes;
  if (patch.enabled === true) Object.assign(set, { enabled: true, disabled_reason: null, disabled_at: null, failing_since: null });
  if (patch.enabled === false) {
    Object.assign(set, {
      enabled: false,
      disabled_reason: db.raw("CASE WHEN enabled THEN 'manual' ELSE disabled_reason END"),
      disabled_at: db.raw('CASE WHEN enabled THEN now() ELSE disabled_at END'),
    });
  }
  const [row] = await live(db, orgId).where({ id }).update(set).returning('*');
  return row ? toEndpoint(row) : undefined;
}

/** Deletes an endpoint (soft: its deliveries stop; the history stays in the database). @returns false when not found */
export async function deleteEndpoint(db: Db, orgId: string, id: string): Promise<boolean> {
  const n = await live(db, orgId).where({ id }).update({ deleted_at: db.fn.now(), enabled: false, updated_at: db.fn.now() });
  return n > 0;
}

/**
 * Replaces the signing secret. The previous one keeps signing for `previousTtlSeconds` (0: revoked now).
 * @returns the new prefix and the previous secret's expiry, or undefined when not found
 */
export async function rotateEndpointSecret(
  db: Db,
  orgId: string,
  id: string,
  input: { secretSealed: string; secretPrefix: string; previousTtlSeconds: number },
): Promise<{ secretPrefix: string; previousSecretExpiresAt: string | null } | undefined> {
  const keep = input.previousTtlSeconds > 0;
  const [row] = await live(db, orgId)
    .where({ id })
    .update({
      previous_secret_sealed: keep ? db.ref('secret_sealed') : null,
      previous_secret_expires_at: keep ? db.raw("now() + make_interval(secs => ?)", [input.previousTtlSeconds]) : null,
      secret_sealed: input.secretSealed,
      secret_prefix: input.secretPrefix,
      updated_at: db.fn.now(),
    })
    .returning(['secret_prefix', 'previous_secret_expires_at']);
  return row ? { secretPrefix: row.secret_prefix, previousSecretExpiresAt: iso(row.previous_secret_expires_at) } : undefined;
}

/**
 * Re-seals every stored signing secret of the organization, current and previous, deleted endpoints
 * included, with `reseal` (docs/security.md: after a WEBHOOK_SECRET_KEY rotation, so the previous key
 * can be dropped). One transaction; the rows are locked while they change.
 * @param reseal maps a stored value to its new stored value; may throw (nothing is then written)
 * @returns how many endpoints were rewritten
 */
export async function resealEndpointSecrets(db: Db, orgId: string, reseal: (sealed: string) => string): Promise<number> {
  return db.transaction(async (trx) => {
    const rows = await trx('webhook_endpoints').where({ org_id: orgId }).forUpdate().select('id', 'secret_sealed', 'previous_secret_sealed');
    for (const r of rows) {
      await trx('webhook_endpoints')
        .where({ org_id: orgId, id: r.id })
        .update({
          secret_sealed: reseal(r.secret_sealed),
          previous_secret_sealed: r.previous_secret_sealed ? reseal(r.previous_secret_sealed) : null,
        });
    }
    return rows.length;
  });
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
       SELECT id, endpoint_id FROM webhook_deliveries
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
     )
     SELECT (SELECT count(*) FROM upd) AS applied, (SELECT count(*) FROM ep) AS cleared,
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

// Replays (docs/api-notes.md "Replaying missed events")

function toReplay(r: Record<string, any>): WebhookReplay {
  return {
    id: r.id,
    webhookId: r.endpoint_id,
    status: r.status,
    since: iso(r.since)!,
    until: iso(r.until)!,
    eventTypes: r.event_types ?? [],
    ...fromColumns(r, ['total', 'processed', 'queued', 'skipped']),
    error: r.error ?? null,
    ...fromTimestampColumns(r, ['createdAt', 'updatedAt', 'completedAt']),
  };
}

/**
 * The organization's events a replay of `endpoint` covers: in [since, until), of the replay's types and
 * the endpoint's subscription (each, when not empty), never `webhook.test` (meant for one endpoint) nor the
 * endpoint's own `webhook.endpoint.disabled` (meant for the others).
 */
function replayEvents(db: Db | Knex.Transaction, orgId: string, endpoint: { id: string; event_types: string[] }, w: { since: Date; until: Date; eventTypes: string[] }) {
  const q = db('events as e')
    .where('e.org_id', orgId)
    .andWhere('e.created_at', '>=', w.since)
    .andWhere('e.created_at', '<', w.until)
    .andWhereNot('e.type', 'webhook.test')
    .andWhereRaw("NOT (e.type = 'webhook.endpoint.disabled' AND e.data->>'webhookId' = ?)", [endpoint.id]);
  if (w.eventTypes.length) q.whereIn('e.type', w.eventTypes);
  if (endpoint.event_types?.length) q.whereIn('e.type', endpoint.event_types);
  return q;
}

/**
 * Creates a replay of the events of [since, until) to an endpoint, counting them (`total`).
 * @returns the replay, or undefined when the endpoint does not exist
 */
export async function createReplay(
  db: Db,
  orgId: string,
  endpointId: string,
  w: { since: Date; until: Date; eventTypes: WebhookEventType[] },
): Promise<WebhookReplay | undefined> {
  return db.transaction(async (trx) => {
    const ep = await live(trx, orgId).where({ id: endpointId }).first('id', 'event_types');
    if (!ep) return undefined;
    const [{ n }] = await replayEvents(trx, orgId, ep, w).count({ n: '*' });
    const [row] = await trx('webhook_replays')
      .insert({ id: newId('rpl'), org_id: orgId, endpoint_id: endpointId, since: w.since, until: w.until, event_types: w.eventTypes, total: Number(n) })
      .returning('*');
    return toReplay(row);
  });
}

/** One replay of an endpoint, or undefined. */
export async function getReplay(db: Db, orgId: string, endpointId: string, replayId: string): Promise<WebhookReplay | undefined> {
  const row = await db('webhook_replays').where({ org_id: orgId, endpoint_id: endpointId, id: replayId }).first();
  return row ? toReplay(row) : undefined;
}

/** Marks a replay stopped (its workflow could not be started, say). */
export async function stopReplay(db: Db, orgId: string, replayId: string, error: string): Promise<void> {
  await db('webhook_replays')
    .where({ org_id: orgId, id: replayId, status: 'running' })
    .update({ status: 'stopped', error, completed_at: db.fn.now(), updated_at: db.fn.now() });
}

/**
 * One step of a replay, in one transaction: the next `batchSize` events after the cursor each become a
 * delivery to the endpoint unless it already has one (unique endpoint + event: a new delivery with its
 * outbox row; a `failed` one gets a new run instead; one delivered or on its way is skipped), and the
 * cursor moves on. `step` must be the replay's current step (compare-and-set): a step retried after it
 * committed finds the step moved on and changes nothing, so no event is queued twice.
 * Stops the replay when the endpoint is disabled or deleted; completes it when the window is exhausted.
 * @returns the replay after the step (its `status` tells whether another step is due), or undefined when it does not exist
 */
export async function replayStep(db: Db, orgId: string, replayId: string, step: number, batchSize: number): Promise<(WebhookReplay & { step: number }) | undefined> {
  return db.transaction(async (trx) => {
    const r = await trx('webhook_replays').where({ org_id: orgId, id: replayId }).forUpdate().first();
    if (!r) return undefined;
    const answer = (row: Record<string, any>) => ({ ...toReplay(row), step: row.step as number });
    if (r.step !== step || r.status !== 'running') return answer(r);
    const replays = trx('webhook_replays').where({ org_id: orgId, id: replayId });
    const ep = await trx('webhook_endpoints').where({ org_id: orgId, id: r.endpoint_id }).forShare().first('id', 'event_types', 'enabled', 'deleted_at', 'disabled_reason');
    if (!ep || ep.deleted_at || !ep.enabled) {
      const error = !ep || ep.deleted_at ? 'endpoint deleted' : `endpoint disabled (${ep.disabled_reason ?? 'manual'})`;
      const [row] = await replays.update({ status: 'stopped', error, step: step + 1, completed_at: trx.fn.now(), updated_at: trx.fn.now() }).returning('*');
      return answer(row);
    }
    const q = replayEvents(trx, orgId, ep, { since: r.since, until: r.until, eventTypes: r.event_types ?? [] });
    // Compared in SQL: the cursor read into a JS Date would lose the microseconds of created_at.
    if (r.cursor_id) q.andWhereRaw('(e.created_at, e.id) > (SELECT cursor_at, cursor_id FROM webhook_replays WHERE org_id = ? AND id = ?)', [orgId, replayId]);
    const events = await q.orderBy([{ column: 'e.created_at' }, { column: 'e.id' }]).limit(batchSize).select('e.id', 'e.type', 'e.created_at');
    let queued = 0;
    if (events.length) {
      const ids = events.map((e: any) => e.id);
      const fresh = await trx.raw(
        `INSERT INTO webhook_deliveries (id, org_id, endpoint_id, event_id, event_type, replay_id)
         SELECT 'whd_' || replace(gen_random_uuid()::text, '-', ''), ?, ?, e.id, e.type, ? FROM events e WHERE e.org_id = ? AND e.id = ANY(?)
         ON CONFLICT (endpoint_id, event_id) DO NOTHING
         RETURNING id, run`,
        [orgId, ep.id, replayId, orgId, ids],
      );
      const rerun = await trx('webhook_deliveries')
        .where({ org_id: orgId, endpoint_id: ep.id, status: 'failed' })
        .whereIn('event_id', ids)
        .update({ run: trx.raw('run + 1'), status: 'pending', last_error: null, replay_id: replayId, updated_at: trx.fn.now() })
        .returning(['id', 'run']);
      const runs = [...fresh.rows, ...rerun] as Array<{ id: string; run: number }>;
      queued = runs.length;
      if (runs.length) {
        await trx('webhook_outbox')
          .insert(runs.map((d) => ({ org_id: orgId, delivery_id: d.id, run: d.run })))
          .onConflict(['delivery_id', 'run'])
          .ignore();
        await trx.raw('SELECT pg_notify(?, ?)', [OUTBOX_CHANNEL, '']);
      }
    }
    const last = events[events.length - 1];
    const done = events.length < batchSize;
    const [row] = await replays
      .update({
        step: step + 1,
        processed: trx.raw('processed + ?', [events.length]),
        queued: trx.raw('queued + ?', [queued]),
        skipped: trx.raw('skipped + ?', [events.length - queued]),
        // The cursor's time is copied in SQL: a JS Date would drop the microseconds of created_at.
        ...(last ? { cursor_at: trx('events').where({ org_id: orgId, id: last.id }).select('created_at'), cursor_id: last.id } : {}),
        ...(done ? { status: 'completed', completed_at: trx.fn.now() } : {}),
        updated_at: trx.fn.now(),
      })
      .returning('*');
    return answer(row);
  });
}
