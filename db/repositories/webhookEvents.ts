/**
 * Replays of an organization's past events to one webhook endpoint (docs/api-notes.md "Replaying missed
 * events"): which events a replay covers, and the paced steps that queue them as deliveries. Every
 * function takes the organization id first; a row of another organization is invisible (undefined).
 */
import type { Knex } from 'knex';
import type { Db } from '../index';
import { newId } from '../ids';
import { OUTBOX_CHANNEL } from './events';
import type { WebhookReplay } from '../../schemas/types/webhooks';
import type { WebhookEventType } from '../../schemas/types/events';
import { iso } from '../timestamps';
import { fromColumns, fromTimestampColumns } from '../rows';
import { live } from './webhookEndpoints';

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
          .insert(runs.map((d) => ({ org_id: orgId, delivery_id: d.id, run: d.run, endpoint_id: ep.id })))
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
