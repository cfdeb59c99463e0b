/**
 * `Idempotency-Key` on every creating POST (DESIGN.md "Wire conventions"; Stripe's convention): the same
 * key and body replays the first response (header `Idempotent-Replayed: true`); the same key with another
 * body answers 422 `idempotency_key_reused`; a retry while the first request still runs answers 409
 * `idempotency_request_in_progress`. A request that fails (any error) releases its key, so a retry runs
 * again. Keys are scoped by organization and operation; the header is optional.
 * Operations that replay inside their own transaction (publish, SMS submit and send) are excluded.
 */
import crypto from 'node:crypto';
import type { Db } from '../../db';
import { claimKey, completeKey, getStoredResponse, releaseKey } from '../../db/repositories/idempotency';
import { ApiError, validationError } from '../errors';
import type { AppContext } from '../context';
import type { RouteDef } from '../routes/table';

/** A claim still in progress after this long (ms) belongs to a request that died; it is released. */
const ABANDONED_AFTER_MS = 60_000;

/** Operations whose handlers implement Idempotency-Key themselves. */
const SELF_MANAGED = new Set(['publishAgent', 'submitSMSRegistration', 'sendSMSMessage', 'createUpload']);

/** True for the operations this middleware covers: POSTs that create (201/202), key-authenticated. */
export function usesIdempotencyKeys(route: RouteDef): boolean {
  return route.method === 'POST' && (route.successStatus === 201 || route.successStatus === 202) && (route.auth ?? 'secret') === 'secret' && !SELF_MANAGED.has(route.operationId);
}

/** Middleware for one route (after body parsing, before the handler). */
export function idempotency(route: RouteDef, db: Db) {
  return async (ctx: AppContext, next: () => Promise<unknown>) => {
    const key = ctx.get('idempotency-key');
    const orgId = ctx.state.auth?.orgId;
    if (!key || !orgId) return next();
    if (!/^[\x21-\x7e]{1,255}$/.test(key)) {
      throw validationError([{ field: 'Idempotency-Key', message: 'must be 1 to 255 visible ASCII characters' }]);
    }
    const hash = crypto.createHash('sha256').update(JSON.stringify(ctx.request.body ?? null)).digest('hex');
    let claimed = await claimKey(db, orgId, route.operationId, key, hash);
    if (!claimed) {
      const first = await getStoredResponse(db, orgId, route.operationId, key);
      // A claim left by a process that died mid-request is released after a minute.
      if (first && first.status === 0 && Date.now() - new Date(first.createdAt).getTime() > ABANDONED_AFTER_MS) {
        await releaseKey(db, orgId, route.operationId, key);
        claimed = await claimKey(db, orgId, route.operationId, key, hash);
      }
    }
    if (!claimed) {
      const stored = await getStoredResponse(db, orgId, route.operationId, key);
      if (stored && stored.requestHash !== hash) {
        throw new ApiError(422, 'idempotency_key_reused', 'This Idempotency-Key was used with a different request body');
      }
      if (!stored || stored.status === 0) {
        throw new ApiError(409, 'idempotency_request_in_progress', 'A request with this Idempotency-Key is still being processed; retry later');
      }
      ctx.status = stored.status;
      ctx.set('Idempotent-Replayed', 'true');
      ctx.body = stored.response;
      return;
    }
    try {
      await next();
    } catch (err) {
      await releaseKey(db, orgId, route.operationId, key).catch(() => undefined);
      throw err;
    }
    await completeKey(db, orgId, route.operationId, key, ctx.status, ctx.body);
  };
}
