/**
 * Authentication and authorization for one route (spec "Authentication", "Scopes", "Scope rules";
 * RFC 6750 for the WWW-Authenticate challenges).
 * - 401 `unauthorized` with `WWW-Authenticate: Bearer realm="api"` (plus `error="invalid_token"` when a key was sent;
 *   an expired key, e.g. a rotated one past its grace period, answers the same)
 * - 403 `publishable_key_not_allowed` for a valid publishable key on a route that is not a publishable-key route
 * - 403 `reserved_endpoint` for reserved-scope endpoints, even for correctly scoped calls (rule 5)
 * - 403 `insufficient_scope` naming the missing scope(s)
 */
import { hashKey } from '../../db/repositories/apiKeys';
import { ApiError } from '../../domain/errors';
import type { KeyCache } from '../keyCache';
import type { KeyUsageTracker } from '../keyUsage';
import type { ApiKeyInfo } from '../../db/repositories/apiKeys';
import type { AppContext } from '../context';
import type { RouteDef } from '../routes/table';
import { isWidgetSessionToken, type WidgetSessionClaims } from '../widgetSession';

const KEY_SHAPE = {
  secret: /^[a-z][a-z0-9]{1,15}_(sk_live|oat)_[A-Za-z0-9]{16,64}$/,
  publishable: /^[a-z][a-z0-9]{1,15}_pk_[A-Za-z0-9_]{16,64}$/,
};

function challenge(error?: string, description?: string): Record<string, string> {
  let v = 'Bearer realm="api"';
  if (error) v += `, error="${error}"`;
  if (description) v += `, error_description="${description}"`;
  return { 'WWW-Authenticate': v };
}

/**
 * A step of a route's pipeline that needs no `next` (api/app.ts runs them in order): returns nothing when
 * it finished synchronously, a promise when it had to wait; throws ApiError to refuse the request.
 */
export type Guard = (ctx: AppContext) => void | Promise<void>;

/** The `ctx.state.auth` of resolved keys: one object (and scope `Set`) per cached key object instead of one per request; nothing writes to it. */
const authStates = new WeakMap<ApiKeyInfo, NonNullable<AppContext['state']['auth']>>();

/**
 * Resolves the credential of `route.auth` kind and puts it on `ctx.state.auth` (spec "Authentication";
 * scopes are checked later, by `authorizeGuard`), noting the key's use for its batched `lastUsedAt`
 * (api/keyUsage.ts). Synchronous when the key is in the in-process cache (api/keyCache.ts). Routes marked
 * `sessionToken` also take a widget session token (api/widgetSession.ts) for the one session it names, while
 * `sessions` finds it still live (`liveWidgetSession`: its key, the widget and the signing secret unchanged).
 * @throws ApiError 401 unauthorized (no Authorization header) or invalid_token (malformed, unknown, revoked,
 *   expired, wrong kind); 403 publishable_key_not_allowed; 403 origin_not_allowed (a session token from
 *   another origin)
 */
export function authenticateGuard(
  route: RouteDef,
  keys: KeyCache,
  usage?: KeyUsageTracker,
  sessions?: (token: string) => Promise<WidgetSessionClaims | undefined>,
): Guard {
  const kind = route.auth ?? 'secret';
  const accept = (ctx: AppContext, found: ApiKeyInfo | undefined): void => {
    // Cached entries can outlive an expiry (a rotation's grace period): check it on every request.
    const info = found && (!found.expiresAt || found.expiresAt.getTime() > Date.now()) ? found : undefined;
    if (info && kind === 'secret' && info.kind === 'publishable') {
      throw new ApiError(403, 'publishable_key_not_allowed', `A publishable key cannot call ${route.operationId}: it serves only the public chat widget; use a secret key`);
    }
    if (!info || (kind === 'secret' ? info.kind === 'publishable' : info.kind !== 'publishable')) {
      throw new ApiError(401, 'invalid_token', 'The key is missing, malformed, unknown or revoked', {
        headers: challenge('invalid_token'),
      });
    }
    let auth = authStates.get(info);
    if (!auth) {
      auth = {
        orgId: info.orgId,
        keyId: info.id,
        kind: info.kind,
        scopes: new Set(info.scopes),
        rateLimitPoints: info.rateLimitPoints,
        rateLimitWindowSeconds: info.rateLimitWindowSeconds,
        expiresAt: info.expiresAt,
        ...((info.oauthGrantId ?? info.viaGrantId) ? { grantId: (info.oauthGrantId ?? info.viaGrantId)! } : {}),
        ...(info.kind === 'publishable' && info.agentId ? { publishable: { agentId: info.agentId, allowedOrigins: info.allowedOrigins ?? [] } } : {}),
      };
      authStates.set(info, auth);
    }
    ctx.state.auth = auth;
    usage?.touch(info.id, info.orgId);
  };
  const acceptSession = (ctx: AppContext, claims: WidgetSessionClaims | undefined): void => {
    if (!claims) throw new ApiError(401, 'invalid_token', 'The session token is malformed, forged, expired or revoked (its publishable key, the widget or the signing secret changed); start a new widget session', { headers: challenge('invalid_token') });
    if (ctx.get('origin') !== claims.ori) throw new ApiError(403, 'origin_not_allowed', 'This session token was issued to another origin');
    ctx.state.auth = {
      orgId: claims.org,
      keyId: claims.kid,
      kind: 'session',
      scopes: new Set(['chat:read', 'chat:write']),
      rateLimitPoints: null,
      rateLimitWindowSeconds: null,
      expiresAt: new Date(claims.exp * 1000),
      session: { conversationId: claims.cnv, origin: claims.ori },
    };
  };
  return (ctx) => {
    if (kind === 'none') return;
    const header = ctx.get('authorization');
    if (!header) {
      throw new ApiError(401, 'unauthorized', 'Send a key as "Authorization: Bearer <key>"', { headers: challenge() });
    }
    // The key's SHA-256 on every request (about 0.3 µs with `crypto.hash`): the process keeps no map from the header,
    // which would hold raw secret keys in memory (docs/security.md "Revocation").
    const m = /^Bearer +(\S+)\s*$/i.exec(header);
    const token = m?.[1];
    if (token && route.sessionToken && sessions && isWidgetSessionToken(token)) return sessions(token).then((claims) => acceptSession(ctx, claims));
    // A publishable key sent to a secret-key route is resolved too, so it can be told apart from garbage.
    const shapeOk = !!token && (KEY_SHAPE[kind].test(token) || (kind === 'secret' && KEY_SHAPE.publishable.test(token)));
    if (!shapeOk) return accept(ctx, undefined);
    const hash = hashKey(token!);
    const hit = keys.peek(hash);
    if (hit) return accept(ctx, hit);
    return keys.resolve(hash).then((info) => accept(ctx, info));
  };
}


/**
 * Re-checks the credential of a request still being answered (an open Server-Sent Events stream;
 * docs/security.md "Revocation"): a key through the key cache, which every API process evicts when the key
 * is revoked or expires (api/keyCache.ts), a widget session token through `sessions` (its signature and
 * everything it was derived from, api/widgetSession.ts `liveWidgetSession`).
 * @returns whether the request's credential still authenticates
 */
export function credentialCheck(keys: KeyCache, sessions?: (token: string) => Promise<WidgetSessionClaims | undefined>): (ctx: AppContext) => Promise<boolean> {
  return async (ctx) => {
    const token = /^Bearer +(\S+)\s*$/i.exec(ctx.get('authorization'))?.[1];
    if (!token) return false;
    if (isWidgetSessionToken(token)) return !!sessions && !!(await sessions(token));
    const info = await keys.resolve(hashKey(token));
    return !!info && (!info.expiresAt || info.expiresAt.getTime() > Date.now());
  };
}

/**
 * Requires one of `anyOf` inside a handler, for operations whose needed scope depends on the request
 * (route `scopesAnyOf`). @throws ApiError 403 insufficient_scope
 */
export function requireScope(ctx: AppContext, ...anyOf: string[]): void {
  if (anyOf.some((s) => ctx.state.auth?.scopes.has(s))) return;
  throw new ApiError(403, 'insufficient_scope', `This request needs ${anyOf.length > 1 ? 'one of the scopes' : 'the scope'} ${anyOf.join(', ')}`, {
    headers: { 'WWW-Authenticate': `Bearer realm="api", error="insufficient_scope", scope="${anyOf.join(' ')}"` },
    extra: { requiredScopes: anyOf, missingScopes: anyOf },
  });
}

/**
 * Reserved endpoints and scope checks (spec "Scope rules"); runs after rate limiting so refused calls still count.
 * @throws ApiError 403 reserved_endpoint or insufficient_scope
 */
export function authorizeGuard(route: RouteDef): Guard {
  return (ctx: AppContext) => {
    if (route.reserved) {
      throw new ApiError(403, 'reserved_endpoint', `${route.operationId} is reserved and not available to API callers`);
    }
    const auth = ctx.state.auth;
    if (auth && (route.auth ?? 'secret') === 'secret') {
      // The common case, every scope held, without building the list of missing ones.
      if (holdsAll(auth.scopes, route.scopes) && (!route.scopesAnyOf || route.scopesAnyOf.some((s) => auth.scopes.has(s)))) return;
      const missing = route.scopes.filter((s) => !auth.scopes.has(s));
      if (!missing.length && route.scopesAnyOf && !route.scopesAnyOf.some((s) => auth.scopes.has(s))) {
        throw new ApiError(403, 'insufficient_scope', `This operation needs one of the scopes ${route.scopesAnyOf.join(', ')}`, {
          headers: { 'WWW-Authenticate': `Bearer realm="api", error="insufficient_scope", scope="${route.scopesAnyOf.join(' ')}"` },
          extra: { requiredScopes: route.scopesAnyOf, missingScopes: route.scopesAnyOf },
        });
      }
      if (missing.length) {
        throw new ApiError(403, 'insufficient_scope', `This operation needs the scope(s) ${missing.join(', ')}`, {
          headers: { 'WWW-Authenticate': `Bearer realm="api", error="insufficient_scope", scope="${route.scopes.join(' ')}"` },
          extra: { requiredScopes: route.scopes, missingScopes: missing },
        });
      }
    }
  };
}

function holdsAll(held: ReadonlySet<string>, needed: readonly string[]): boolean {
  for (let i = 0; i < needed.length; i++) if (!held.has(needed[i])) return false;
  return true;
}
