/**
 * `GET /metrics` on the API's own port (docs/operations.md "Observability"): this process's Prometheus
 * metrics, for a bearer of `METRICS_TOKEN`. Without the token configured the path does not exist (404),
 * so metrics are never public by accident; `METRICS_PORT` is the other way to scrape (telemetry.ts).
 */
import crypto from 'node:crypto';
import { ApiError } from '../../domain/errors';
import { collectProcessMetrics, metricsRegistry } from '../../metrics';
import type { AppContext } from '../context';

/** Compares in constant time (the token is a secret). */
function sameToken(given: string, expected: string): boolean {
  const a = crypto.createHash('sha256').update(given).digest();
  const b = crypto.createHash('sha256').update(expected).digest();
  return crypto.timingSafeEqual(a, b);
}

/**
 * @param token METRICS_TOKEN; undefined = the route is absent
 * @throws ApiError 401 `unauthorized` (with `WWW-Authenticate: Bearer`) for a missing or wrong token
 */
export function metricsEndpoint(token: string | undefined) {
  if (token) collectProcessMetrics();
  // Other requests pass through synchronously: an async frame here cost every request a promise.
  return (ctx: AppContext, next: () => Promise<unknown>): Promise<unknown> => (!token || ctx.path !== '/metrics' || (ctx.method !== 'GET' && ctx.method !== 'HEAD') ? next() : scrape(ctx, token));
}

/** Answers a scrape of `GET /metrics` for a bearer of `token`. @throws ApiError 401 unauthorized */
async function scrape(ctx: AppContext, token: string): Promise<void> {
  const auth = ctx.get('Authorization');
  const given = auth.startsWith('Bearer ') ? auth.slice(7).trim() : '';
  if (!given || !sameToken(given, token)) throw new ApiError(401, 'unauthorized', 'GET /metrics needs Authorization: Bearer <METRICS_TOKEN>', { headers: { 'WWW-Authenticate': 'Bearer realm="metrics"' } });
  ctx.type = metricsRegistry.contentType;
  ctx.body = await metricsRegistry.metrics();
}
