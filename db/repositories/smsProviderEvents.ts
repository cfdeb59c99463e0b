/**
 * Provider callbacks and the sandbox providers' pending callbacks (docs/sms.md "10DLC review, submission and carrier callbacks",
 * "Sandbox carrier"). Events are stored once per (provider, external id, status, revision): a duplicate
 * delivery changes nothing. Pending sandbox callbacks live in Postgres so they survive a restart.
 */
import type { Db } from '../index';

/** One stored provider event. */
export interface ProviderEventRecord {
  orgId: string;
  provider: string;
  objectType: 'brand' | 'campaign' | 'message' | 'inbound';
  externalId: string;
  status: string;
  revision: number;
  payload: Record<string, unknown>;
}

/**
 * Stores a provider event unless the same (provider, externalId, status, revision) was stored before.
 * @returns true when stored now, false for a duplicate
 */
export async function storeProviderEvent(db: Db, orgId: string, e: Omit<ProviderEventRecord, 'orgId'>): Promise<boolean> {
  const rows = await db('sms_provider_events')
    .insert({
      org_id: orgId,
      provider: e.provider,
      object_type: e.objectType,
      external_id: e.externalId,
      status: e.status,
      revision: e.revision,
      payload: JSON.stringify(e.payload),
    })
    .onConflict(['provider', 'external_id', 'status', 'revision'])
    .ignore()
    .returning('id');
  return rows.length > 0;
}

/** Events stored for one external id, oldest first. */
export async function listProviderEvents(db: Db, orgId: string, externalId: string): Promise<ProviderEventRecord[]> {
  const rows = await db('sms_provider_events').where({ org_id: orgId, external_id: externalId }).orderBy('id');
  return rows.map((r) => ({ orgId: r.org_id, provider: r.provider, objectType: r.object_type, externalId: r.external_id, status: r.status, revision: r.revision, payload: r.payload }));
}

/** Appends a row to the provider request log (`provider_requests`). */
export async function logProviderRequest(db: Db, orgId: string, provider: string, operation: string, request: unknown): Promise<void> {
  await db('provider_requests').insert({ org_id: orgId, provider, operation, request: JSON.stringify(request ?? {}) });
}

/** Provider request log of an organization, oldest first. */
export async function listProviderRequests(db: Db, orgId: string): Promise<{ provider: string; operation: string; request: any }[]> {
  return db('provider_requests').where({ org_id: orgId }).orderBy('id').select('provider', 'operation', 'request');
}

/** A callback a sandbox provider owes. */
export interface SandboxCallback {
  id: number;
  orgId: string;
  provider: string;
  payload: Record<string, unknown>;
  attempts: number;
}

/** Schedules a sandbox callback `delayMs` from now. @returns its id */
export async function scheduleSandboxCallback(db: Db, orgId: string, provider: string, payload: Record<string, unknown>, delayMs: number): Promise<number> {
  const [row] = await db('sandbox_callbacks')
    .insert({ org_id: orgId, provider, payload: JSON.stringify(payload), due_at: db.raw(`now() + make_interval(secs => ?)`, [delayMs / 1000]) })
    .returning('id');
  return row.id;
}

/**
 * Claims up to `limit` due callbacks for delivery (FOR UPDATE SKIP LOCKED, so several dispatchers
 * never deliver one twice at once) and pushes their due time back by `leaseMs` in case this process dies.
 * Only rows of `ids` when given (the in-process timer of one callback).
 */
export async function claimDueSandboxCallbacks(db: Db, limit: number, leaseMs: number, ids?: number[]): Promise<SandboxCallback[]> {
  return db.transaction(async (trx) => {
    const q = trx('sandbox_callbacks').whereNull('delivered_at').where('due_at', '<=', trx.fn.now()).orderBy('due_at').limit(limit).forUpdate().skipLocked();
    if (ids) q.whereIn('id', ids);
    const rows = await q;
    if (!rows.length) return [];
    await trx('sandbox_callbacks')
      .whereIn('id', rows.map((r) => r.id))
      .update({ due_at: trx.raw(`now() + make_interval(secs => ?)`, [leaseMs / 1000]), attempts: trx.raw('attempts + 1') });
    return rows.map((r) => ({ id: Number(r.id), orgId: r.org_id, provider: r.provider, payload: r.payload, attempts: r.attempts + 1 }));
  });
}

/** Marks a sandbox callback delivered (or records the error of a failed attempt; it stays due). */
export async function finishSandboxCallback(db: Db, id: number, result: { delivered: true } | { delivered: false; error: string; retryInMs: number }): Promise<void> {
  if (result.delivered) await db('sandbox_callbacks').where({ id }).update({ delivered_at: db.fn.now(), last_error: null });
  else await db('sandbox_callbacks').where({ id }).update({ last_error: result.error, due_at: db.raw(`now() + make_interval(secs => ?)`, [result.retryInMs / 1000]) });
}

/** Milliseconds until the next undelivered sandbox callback is due, or null when none is pending. */
export async function nextSandboxCallbackDelayMs(db: Db): Promise<number | null> {
  const row = await db('sandbox_callbacks').whereNull('delivered_at').min('due_at as due').first();
  if (!row?.due) return null;
  return Math.max(0, new Date(row.due).getTime() - Date.now());
}

/** Removes a stored event (its signal could not be delivered, so the provider's retry must not count as a duplicate). */
export async function deleteProviderEvent(db: Db, orgId: string, e: { provider: string; externalId: string; status: string; revision: number }): Promise<void> {
  await db('sms_provider_events').where({ org_id: orgId, provider: e.provider, external_id: e.externalId, status: e.status, revision: e.revision }).delete();
}
