/**
 * `Idempotency-Key` (DESIGN.md "Wire conventions"; Stripe's convention and the IETF httpapi
 * Idempotency-Key header draft): the one implementation for every operation that takes a key — every
 * creating POST (201/202), plus the operations the route table marks (`idempotencyKey`), such as
 * publish (key required) and SMS submit.
 * - The same key and body replays the first response with `Idempotent-Replayed: true`.
 * - The same key with another body answers 422 `idempotency_key_reused`.
 * - A retry that arrives while the first request still runs waits for it (up to
 *   {@link IN_FLIGHT_WAIT_MS}) and replays its answer; after that wait it answers 409
 *   `idempotency_request_in_progress`.
 * - A request that fails (any error) releases its key, so a retry runs again; a claim left by a process
 *   that died mid-request is released after {@link ABANDONED_AFTER_MS}.
 * Keys are scoped by organization, operation and the path's resource ids. A handler whose effect commits
 * in its own transaction stores the response there (`ctx.state.idempotency.complete`), so the effect and
 * its replay commit together.
 */
import crypto from 'node:crypto';
import type { Knex } from 'knex';
import type { Db } from '../../db';
import { claimKey, completeKey, getStoredResponse, releaseKey } from '../../db/repositories/idempotency';
import { ApiError, validationError } from '../../domain/errors';
import type { AppContext } from '../context';
import type { RouteDef } from '../routes/table';

/** A claim still in progress after this long (ms) belongs to a request that died; it is released. */
export const ABANDONED_AFTER_MS = 60_000;
/** How long (ms) a retry waits for the first request with its key before answering 409. */
export const IN_FLIGHT_WAIT_MS = 15_000;

/** The claimed key of the request being handled (on `ctx.state.idempotency`). */
export interface IdempotencyClaim {
  key: string;
  /**
   * Stores the success response inside the handler's transaction (the envelope `{success, data}`);
   * the middleware then does not store it again. Call it as the last write of the transaction.
   */
  complete(trx: Knex.Transaction, status: number, data: unknown): Promise<void>;
}

/** True for the operations this middleware covers: creating POSTs (201/202) and routes that declare a key policy. */
export function usesIdempotencyKeys(route: RouteDef): boolean {
  if (route.idempotencyKey) return route.idempotencyKey !== 'none';
  return route.method === 'POST' && (route.successStatus === 201 || route.successStatus === 202) && (route.auth ?? 'secret') === 'secret';
}

const KEY_FORMAT = /^[\x21-\x7e]{1,255}$/;

/** Middleware for one route (after body parsing, before the handler). */
export function idempotency(route: RouteDef, db: Db) {
  const required = route.idempotencyKey === 'required';
  return async (ctx: AppContext, next: () => Promise<unknown>) => {
    const key = ctx.get('idempotency-key');
    const orgId = ctx.state.auth?.orgId;
    if (!key) {
      if (required) {
        throw new ApiError(400, 'idempotency_key_required', 'Send an Idempotency-Key header (e.g. a UUID) so a retried request does not take effect twice', {
          errors: [{ field: 'Idempotency-Key', message: 'is required' }],
        });
      }
      return next();
    }
    if (!orgId) return next();
    if (!KEY_FORMAT.test(key)) throw validationError([{ field: 'Idempotency-Key', message: 'must be 1 to 255 visible ASCII characters' }]);
    const params = Object.values((ctx as unknown as { params?: Record<string, string> }).params ?? {});
    const operation = [route.operationId, ...params].join('/');
    const hash = crypto.createHash('sha256').update(JSON.stringify(ctx.request.body ?? null)).digest('hex');

    const deadline = Date.now() + IN_FLIGHT_WAIT_MS;
    for (let pollMs = 25; !(await claimKey(db, orgId, operation, key, hash)); pollMs = Math.min(pollMs * 2, 250)) {
      const stored = await getStoredResponse(db, orgId, operation, key);
      if (!stored) continue; // released since the claim was tried
      if (stored.requestHash !== hash) {
        throw new ApiError(422, 'idempotency_key_reused', 'This Idempotency-Key was used with a different request body; use a new key');
      }
      if (stored.status !== 0) {
        ctx.status = stored.status;
        ctx.set('Idempotent-Replayed', 'true');
        ctx.body = stored.response;
        return;
      }
      if (Date.now() - new Date(stored.createdAt).getTime() > ABANDONED_AFTER_MS) {
        await releaseKey(db, orgId, operation, key);
        continue;
      }
      if (Date.now() >= deadline) {
        throw new ApiError(409, 'idempotency_request_in_progress', 'A request with this Idempotency-Key is still being processed; retry later');
      }
      await new Promise((resolve) => setTimeout(resolve, pollMs));
    }

    let completed = false;
    ctx.state.idempotency = {
      key,
      complete: async (trx, status, data) => {
        await completeKey(trx, orgId, operation, key, status, { success: true, data });
        completed = true;
      },
    };
    try {
      await next();
    } catch (err) {
      await releaseKey(db, orgId, operation, key).catch(() => undefined);
      throw err;
    }
    if (!completed) await completeKey(db, orgId, operation, key, ctx.status, ctx.body);
  };
}
