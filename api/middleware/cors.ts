/**
 * CORS for the widget (docs/api-notes.md "Widget"; Fetch standard "CORS protocol"): the chat routes a browser calls
 * from a customer's page — `/api/v1/chat/widget/sessions[/{id}/voice-token]` and `/api/v1/chat/sessions/…` — answer an
 * allowed `Origin` with `Access-Control-Allow-Origin` (and `Vary: Origin`), on errors too, so the page
 * can read a refusal. A preflight (`OPTIONS`) carries no key, so it passes when some live publishable key
 * lists the origin (cached for {@link ORIGIN_CACHE_MS}); any other origin gets 403 `origin_not_allowed`.
 * The request itself is then checked against its own key's list or its session token's origin.
 */
import type { Db } from '../../db';
import { originAllowedByAnyKey } from '../../db/repositories/apiKeys';
import { ApiError } from '../../domain/errors';
import { normalizeOrigin } from '../../domain/keys';
import type { AppContext } from '../context';

/** How long an origin's verdict is reused by preflights, ms. */
export const ORIGIN_CACHE_MS = 30_000;

const WIDGET_PATHS = /^\/api\/v1\/chat\/(widget\/sessions(\/[^/]+\/voice-token)?|sessions\/[^/]+(\/messages)?)$/;

/** The CORS middleware for the widget's routes. */
export function widgetCors(db: Db) {
  const verdicts = new Map<string, { allowed: boolean; until: number }>();
  const allowed = async (origin: string): Promise<boolean> => {
    const hit = verdicts.get(origin);
    if (hit && hit.until > Date.now()) return hit.allowed;
    const ok = await originAllowedByAnyKey(db, origin);
    if (verdicts.size > 10_000) verdicts.clear();
    verdicts.set(origin, { allowed: ok, until: Date.now() + ORIGIN_CACHE_MS });
    return ok;
  };
  // Requests without an Origin or for other paths pass through synchronously (no async frame).
  return (ctx: AppContext, next: () => Promise<unknown>): Promise<unknown> => {
    const raw = ctx.get('origin');
    return raw && WIDGET_PATHS.test(ctx.path) ? cors(ctx, next, raw) : next();
  };
  async function cors(ctx: AppContext, next: () => Promise<unknown>, raw: string): Promise<unknown> {
    const n = normalizeOrigin(raw);
    const origin = 'error' in n ? null : n.origin;
    const ok = origin !== null && (await allowed(origin));
    if (ok) {
      ctx.set('Access-Control-Allow-Origin', raw);
      ctx.set('Access-Control-Expose-Headers', 'RateLimit, RateLimit-Policy, Retry-After');
    }
    ctx.vary('Origin');
    if (ctx.method === 'OPTIONS') {
      if (!ok) throw new ApiError(403, 'origin_not_allowed', `${raw} is not an allowed origin of any publishable key`);
      ctx.set('Access-Control-Allow-Methods', 'GET, POST');
      ctx.set('Access-Control-Allow-Headers', 'Authorization, Content-Type, Accept');
      ctx.set('Access-Control-Max-Age', '600');
      ctx.status = 204;
      return;
    }
    return next();
  }
}
