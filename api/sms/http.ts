/** Small request helpers shared by the SMS and Numbers handlers. */
import { DEFAULT_PAGE_LIMIT, InvalidCursorError, MAX_PAGE_LIMIT } from '../../db/pagination';
import type { AppContext, AppDeps } from '../context';
import { ApiError, validationError } from '../errors';
import { isE164 } from './draftChecks';

/**
 * `?limit=` (1..200, default 50) and `?cursor=` of a list request.
 * @throws ApiError 400 validation_error naming `limit`
 */
export function pageParams(ctx: AppContext): { limit: number; cursor?: string } {
  const rawLimit = ctx.query.limit;
  let limit = DEFAULT_PAGE_LIMIT;
  if (rawLimit !== undefined) {
    const s = Array.isArray(rawLimit) ? rawLimit[0] : rawLimit;
    if (!/^\d+$/.test(s) || Number(s) < 1 || Number(s) > MAX_PAGE_LIMIT) throw validationError([{ field: 'limit', message: `must be an integer from 1 to ${MAX_PAGE_LIMIT}` }]);
    limit = Number(s);
  }
  const c = ctx.query.cursor;
  const cursor = (Array.isArray(c) ? c[0] : c) || undefined;
  return { limit, cursor };
}

/** Runs a list query, turning a foreign cursor into 400 validation_error on `cursor`. */
export async function withCursor<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    if (err instanceof InvalidCursorError) throw validationError([{ field: 'cursor', message: 'is not a cursor of this list' }]);
    throw err;
  }
}

/** The Temporal client, or 503 `temporal_unavailable`. */
export function requireTemporal(deps: AppDeps): NonNullable<AppDeps['temporal']> {
  if (!deps.temporal) throw new ApiError(503, 'temporal_unavailable', 'The workflow service is not reachable; try again later', { headers: { 'Retry-After': '30' } });
  return deps.temporal;
}

/**
 * A `{e164}` path parameter (URL-decoded by the router; `+` may arrive as a space when not percent-encoded).
 * @throws ApiError 400 validation_error naming the parameter
 */
export function e164Param(value: string | undefined, field = 'e164'): string {
  const v = (value ?? '').trim().replace(/^ /, '+');
  const normalized = /^\d/.test(v) ? `+${v}` : v;
  if (!isE164(normalized)) throw validationError([{ field, message: 'must be a phone number in E.164, e.g. +14155550100' }]);
  return normalized;
}
