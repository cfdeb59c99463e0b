/**
 * The OAuth 2.0 authorization server at the origin root (spec "Authentication" 4; docs/team-and-oauth.md
 * "Connect an app with OAuth"), on `@node-oauth/oauth2-server` (the maintained successor of oauth2-server; framework-neutral,
 * its storage is our model below):
 * - `GET /oauth/authorize` (RFC 6749 §4.1.1): signs the member in, then shows the consent page listing the
 *   requested scopes in plain words; the member may grant a subset, never beyond their role
 *   (domain/team.ts). `POST /oauth/authorize` issues the code (§4.1.2), `state` round-trips.
 * - `POST /oauth/token` (§4.1.3, §6): authorization code with PKCE (RFC 7636; S256 only, required for
 *   public clients), refresh tokens rotated on every use with reuse detection (RFC 9700 §4.14.2).
 * - `POST /oauth/revoke` (RFC 7009), `GET /.well-known/oauth-authorization-server` (RFC 8414).
 * Client authentication at the token and revocation endpoints is throttled per client + address, client
 * and address, counted before the secret is compared (RFC 6749 §2.3.1, §10.10; domain/throttle.ts).
 * Access tokens `<brand>_oat_…` are `api_keys` rows of kind `oauth` (db/repositories/oauth.ts), resolved by
 * the one authentication path of `/api/v1` with the same scope matrix and rate limits as secret keys.
 */
import OAuth2Server, { OAuthError, Request as OAuthRequest, Response as OAuthResponse } from '@node-oauth/oauth2-server';
import type { AppContext, AppDeps } from '../context';
import {
  createGrant,
  findClient,
  findCode,
  findRefreshToken,
  revokeGrantFamily,
  revokeTokenOfClient,
  rotateRefreshToken,
  saveCode,
  saveTokens,
  useCode,
  type OAuthClientRecord,
} from '../../db/repositories/oauth';
import { hashKey } from '../../db/repositories/apiKeys';
import { randomBase62 } from '../../db/ids';
import { ACCESS_TOKEN_TTL_SECONDS, CODE_TTL_SECONDS, describeScope, grantableScopes, REFRESH_TOKEN_TTL_SECONDS } from '../../domain/oauth';
import { approvableScopes } from '../../domain/team';
import { NON_RESERVED_SCOPES } from '../../domain/scopes';
import type { Member } from '../../db/repositories/team';
import { basicCredentials, checkCsrf, esc, field, fields, hidden, page, readForm, sameSecret } from './forms';
import { currentSession } from './session';
import { clientAuthKeys, type ThrottleKey } from '../../domain/throttle';
import { reserveAttempt, settleSuccess } from '../../db/repositories/throttles';
import { publicOrigin } from '../publicOrigin';
import { getOrganization } from '../../db/repositories/organizations';

/** Paths of the endpoints (origin root). */
export const OAUTH_PATHS = {
  authorize: '/oauth/authorize',
  token: '/oauth/token',
  revoke: '/oauth/revoke',
  metadata: '/.well-known/oauth-authorization-server',
} as const;

/** The library's view of a client, carrying ours. */
type LibClient = OAuth2Server.Client & { record: OAuthClientRecord };
/** The library's view of the resource owner: the member and, once approved, the grant. */
type LibUser = { id: string; orgId: string; grantId?: string; clientName?: string };

function libClient(c: OAuthClientRecord): LibClient {
  return { id: c.id, redirectUris: c.redirectUris, grants: ['authorization_code', 'refresh_token'], record: c };
}

/** True when `secret` is the client's (constant time on the hashes). */
function secretMatches(c: OAuthClientRecord, secret: string | null | undefined): boolean {
  return !!secret && !!c.secretHash && sameSecret(hashKey(secret), c.secretHash);
}

/**
 * The model: storage for the library. `strict` authenticates clients (token endpoint): a confidential
 * client must present its secret, even with PKCE (spec "Authentication" 4: confidential client); a public
 * client must not have one.
 */
function model(deps: AppDeps, strict: boolean): OAuth2Server.AuthorizationCodeModel & OAuth2Server.RefreshTokenModel {
  const { db, config } = deps;
  const brand = config.keyBrandPrefix;
  return {
    async getClient(clientId: string, clientSecret: string | null) {
      if (!/^oac_[A-Za-z0-9]{10,40}$/.test(clientId)) return false;
      const c = await findClient(db, clientId);
      if (!c) return false;
      if (strict && (c.confidential ? !secretMatches(c, clientSecret) : !!clientSecret)) return false;
      return libClient(c);
    },
    async generateAccessToken() {
      return `${brand}_oat_${randomBase62(24)}`;
    },
    async generateRefreshToken() {
      return `${brand}_ort_${randomBase62(32)}`;
    },
    async generateAuthorizationCode() {
      return randomBase62(24);
    },
    async validateScope(_user, _client, scope) {
      return scope && scope.length ? scope : false;
    },
    async saveAuthorizationCode(code, client, user) {
      const u = user as LibUser;
      const grant = await createGrant(db, u.orgId, { clientId: client.id, memberId: u.id, scopes: code.scope ?? [] });
      await saveCode(db, u.orgId, {
        code: code.authorizationCode,
        grantId: grant.id,
        redirectUri: code.redirectUri,
        codeChallenge: code.codeChallenge,
        codeChallengeMethod: code.codeChallengeMethod,
        expiresAt: code.expiresAt,
      });
      return { ...code, client, user: { ...u, grantId: grant.id } };
    },
    async getAuthorizationCode(code) {
      const c = await findCode(db, code);
      if (!c) return false;
      if (c.usedAt) {
        // A replayed code (RFC 6749 §4.1.2): whoever holds it may be an attacker; the tokens it yielded stop.
        await useCode(db, c.orgId, code);
        return false;
      }
      if (c.grant.revokedAt) return false;
      const user: LibUser = { id: c.grant.memberId, orgId: c.orgId, grantId: c.grant.id };
      return {
        authorizationCode: code,
        expiresAt: c.expiresAt,
        redirectUri: c.redirectUri,
        scope: c.grant.scopes,
        client: { id: c.grant.clientId, grants: [] },
        user,
        ...(c.codeChallenge ? { codeChallenge: c.codeChallenge, codeChallengeMethod: c.codeChallengeMethod ?? 'S256' } : {}),
      };
    },
    async revokeAuthorizationCode(code) {
      return useCode(db, (code.user as LibUser).orgId, code.authorizationCode);
    },
    async saveToken(token, client, user) {
      const u = user as LibUser;
      const scopes = token.scope ?? [];
      await saveTokens(db, u.orgId, {
        grantId: u.grantId!,
        name: (client as LibClient).record?.name ?? 'OAuth app',
        brand,
        accessToken: token.accessToken,
        accessTokenExpiresAt: token.accessTokenExpiresAt!,
        refreshToken: token.refreshToken,
        refreshTokenExpiresAt: token.refreshTokenExpiresAt,
        scopes,
      });
      return { ...token, scope: scopes, client, user };
    },
    async getRefreshToken(refreshToken) {
      const t = await findRefreshToken(db, refreshToken);
      if (!t || t.grant.revokedAt) return false;
      if (t.rotatedAt) {
        // Reuse of a rotated refresh token (RFC 9700 §4.14.2): revoke the whole family.
        await revokeGrantFamily(db, t.orgId, t.grant.id);
        return false;
      }
      const user: LibUser = { id: t.grant.memberId, orgId: t.orgId, grantId: t.grant.id };
      return { refreshToken, refreshTokenExpiresAt: t.expiresAt, scope: t.scopes, client: { id: t.grant.clientId, grants: [] }, user };
    },
    async revokeToken(token) {
      const u = token.user as LibUser;
      if (await rotateRefreshToken(db, u.orgId, token.refreshToken)) return true;
      // Lost a race with another exchange of the same token: that is reuse too.
      await revokeGrantFamily(db, u.orgId, u.grantId!);
      return false;
    },
    async getAccessToken() {
      // Not used: /api/v1 resolves access tokens itself (api/middleware/auth.ts).
      return false;
    },
  };
}

/** The authorization server's request handlers. */
export interface AuthorizationServer {
  showAuthorize(ctx: AppContext): Promise<void>;
  submitAuthorize(ctx: AppContext): Promise<void>;
  token(ctx: AppContext): Promise<void>;
  revoke(ctx: AppContext): Promise<void>;
  metadata(ctx: AppContext): void;
}

/**
 * The issuer identifier (RFC 8414 §2): the origin of PUBLIC_BASE_URL, or the request's own origin when the
 * configured port is 0 (an ephemeral port: tests and benchmarks).
 */
function issuerOf(ctx: AppContext, deps: AppDeps): string {
  return new URL(publicOrigin(ctx, deps.config.publicBaseUrl)).origin;
}

/** Builds the handlers over the app's dependencies. */
export function createAuthorizationServer(deps: AppDeps): AuthorizationServer {
  /**
   * Counts one client authentication against its throttle keys before the secret is compared; when a key
   * is closed, answers 429 with `Retry-After` (seconds) and an RFC 6749 §5.2-shaped body (`error`
   * `rate_limited`, as the API's 429 code) and returns false.
   */
  const admitClientAuthentication = async (ctx: AppContext, keys: ThrottleKey[]): Promise<boolean> => {
    const reserved = await reserveAttempt(deps.db, keys);
    if (reserved.ok) return true;
    ctx.status = 429;
    ctx.set('Retry-After', String(reserved.retryAfterSeconds));
    ctx.set('Cache-Control', 'no-store');
    ctx.body = { error: 'rate_limited', error_description: `Too many client authentication attempts; retry after ${reserved.retryAfterSeconds} s` };
    return false;
  };

  const options = {
    authorizationCodeLifetime: CODE_TTL_SECONDS,
    accessTokenLifetime: ACCESS_TOKEN_TTL_SECONDS,
    refreshTokenLifetime: REFRESH_TOKEN_TTL_SECONDS,
    allowEmptyState: true,
    alwaysIssueNewRefreshToken: true,
    // Public clients refresh with their client_id alone; confidential ones are held to their secret by the model.
    requireClientAuthentication: { refresh_token: false },
  };
  const authorizeServer = new OAuth2Server({ ...options, model: model(deps, false) });
  const tokenServer = new OAuth2Server({ ...options, model: model(deps, true) });

  /** The authorization request's parameters from the query (GET) or the consent form (POST). */
  const paramsOf = (src: Record<string, unknown>) => ({
    responseType: field(src, 'response_type'),
    clientId: field(src, 'client_id'),
    redirectUri: field(src, 'redirect_uri'),
    scope: field(src, 'scope'),
    state: field(src, 'state'),
    codeChallenge: field(src, 'code_challenge'),
    codeChallengeMethod: field(src, 'code_challenge_method'),
  });
  type Params = ReturnType<typeof paramsOf>;

  /** An error page for a request whose redirect URI cannot be trusted (RFC 6749 §4.1.2.1: never redirect then). */
  const badRequest = (ctx: AppContext, message: string, status = 400) => page(ctx, status, 'This app cannot be authorized', `<p>${esc(message)}</p>`);

  /** An error sent back to the app (RFC 6749 §4.1.2.1), `state` included. */
  const redirectError = (ctx: AppContext, redirectUri: string, state: string, error: string, description: string) => {
    const u = new URL(redirectUri);
    u.searchParams.set('error', error);
    u.searchParams.set('error_description', description);
    if (state) u.searchParams.set('state', state);
    ctx.status = 303;
    ctx.redirect(u.toString());
  };

  /**
   * Checks the client and redirect URI (exact match, RFC 6749 §3.1.2.3), then the rest. Answers (page or
   * redirect) and returns undefined when the request is refused.
   */
  const validate = async (ctx: AppContext, p: Params): Promise<{ client: OAuthClientRecord; redirectUri: string; requested: string[] } | undefined> => {
    const client = /^oac_[A-Za-z0-9]{10,40}$/.test(p.clientId) ? await findClient(deps.db, p.clientId) : undefined;
    if (!client) return void badRequest(ctx, 'Unknown client_id: the app is not registered (or was deleted).');
    if (!p.redirectUri && client.redirectUris.length !== 1) return void badRequest(ctx, 'redirect_uri is required: the app registered several.');
    const redirectUri = p.redirectUri || client.redirectUris[0];
    if (!client.redirectUris.includes(redirectUri)) return void badRequest(ctx, 'redirect_uri does not match any redirect URI the app registered (they must match exactly).');
    if (p.responseType !== 'code') return void redirectError(ctx, redirectUri, p.state, 'unsupported_response_type', 'response_type must be "code"');
    if (p.codeChallenge || p.codeChallengeMethod) {
      if (p.codeChallengeMethod !== 'S256') return void redirectError(ctx, redirectUri, p.state, 'invalid_request', 'code_challenge_method must be S256');
      if (!/^[A-Za-z0-9_-]{43}$/.test(p.codeChallenge)) return void redirectError(ctx, redirectUri, p.state, 'invalid_request', 'code_challenge must be a base64url SHA-256 (43 characters)');
    } else if (!client.confidential) {
      return void redirectError(ctx, redirectUri, p.state, 'invalid_request', 'PKCE is required for public clients: send code_challenge with code_challenge_method=S256');
    }
    const asked = p.scope ? [...new Set(p.scope.split(' ').filter(Boolean))] : client.scopes;
    const unknown = asked.filter((s) => !client.scopes.includes(s));
    if (unknown.length) return void redirectError(ctx, redirectUri, p.state, 'invalid_scope', `the app may not ask for: ${unknown.join(' ')}`);
    return { client, redirectUri, requested: asked };
  };

  /** Refuses a member of another organization than the client's (the app's data would be theirs). */
  const sameOrg = (ctx: AppContext, client: OAuthClientRecord, member: Member): boolean => {
    if (client.orgId === member.orgId) return true;
    badRequest(ctx, 'This app belongs to another organization than the one you are signed in to.', 403);
    return false;
  };

  return {
    async showAuthorize(ctx) {
      const p = paramsOf(ctx.query);
      const ok = await validate(ctx, p);
      if (!ok) return;
      const current = await currentSession(ctx, deps);
      if (!current) {
        ctx.status = 303;
        ctx.redirect(`/login?next=${encodeURIComponent(ctx.url)}`);
        return;
      }
      if (!sameOrg(ctx, ok.client, current.member)) return;
      const allowed = approvableScopes(current.member.role);
      const rows = ok.requested
        .map((s) => {
          const can = allowed.has(s as never);
          return `<label><input type="checkbox" name="granted" value="${esc(s)}"${can ? ' checked' : ' disabled'}> <span>${esc(describeScope(s))} <code>${esc(s)}</code>${can ? '' : ' <span class="muted">— your role cannot grant this</span>'}</span></label>`;
        })
        .join('\n');
      const keep = Object.entries({ ...p, redirectUri: ok.redirectUri })
        .map(([k, v]) => hidden(k.replace(/[A-Z]/g, (m) => `_${m.toLowerCase()}`), v))
        .join('');
      const organization = (await getOrganization(deps.db, ok.client.orgId))?.name ?? 'your organization';
      page(
        ctx,
        200,
        `Authorize ${ok.client.name}`,
        `<p><strong>${esc(ok.client.name)}</strong>, an app registered by <strong>${esc(organization)}</strong>, asks to act for <strong>${esc(organization)}</strong>. You are signed in as ${esc(current.member.email)} (${esc(current.member.role)}). Untick what you do not want to grant.</p>
<form method="post" action="${OAUTH_PATHS.authorize}">${hidden('csrf', current.session.csrfToken)}${keep}
<fieldset class="scopes"><legend>${esc(ok.client.name)} will be able to:</legend>
${rows}
</fieldset>
<div class="actions"><button type="submit" name="decision" value="allow" class="primary">Allow</button><button type="submit" name="decision" value="deny" class="secondary">Deny</button></div></form>
<p class="muted">After you answer, your browser returns to ${esc(ok.redirectUri)}. You can revoke this approval later (<code>DELETE /team/grants/{id}</code>).</p>`,
        { organization },
      );
    },

    async submitAuthorize(ctx) {
      const form = await readForm(ctx);
      const current = await currentSession(ctx, deps);
      if (!current) return badRequest(ctx, 'Your session has ended: sign in and start again from the app.', 401);
      checkCsrf(form, current.session.csrfToken);
      const p = paramsOf(form);
      const ok = await validate(ctx, p);
      if (!ok) return;
      if (!sameOrg(ctx, ok.client, current.member)) return;
      if (field(form, 'decision') !== 'allow') return redirectError(ctx, ok.redirectUri, p.state, 'access_denied', 'the member denied access');
      const ticked = fields(form, 'granted').filter((s) => ok.requested.includes(s));
      const granted = grantableScopes(ticked, ok.client.scopes, approvableScopes(current.member.role));
      if (!granted.length) return redirectError(ctx, ok.redirectUri, p.state, 'access_denied', 'no scope was granted');
      const request = new OAuthRequest({
        method: 'POST',
        headers: {},
        query: {},
        body: {
          response_type: 'code',
          client_id: ok.client.id,
          redirect_uri: ok.redirectUri,
          scope: granted.join(' '),
          ...(p.state ? { state: p.state } : {}),
          ...(p.codeChallenge ? { code_challenge: p.codeChallenge, code_challenge_method: 'S256' } : {}),
        },
      });
      const response = new OAuthResponse();
      const user: LibUser = { id: current.member.id, orgId: current.member.orgId };
      try {
        await authorizeServer.authorize(request, response, { authenticateHandler: { handle: async () => user } });
      } catch (err) {
        if (!(err instanceof OAuthError)) throw err;
      }
      ctx.status = 303;
      ctx.redirect(String(response.get('location')));
    },

    async token(ctx) {
      const headers = { ...(ctx.headers as Record<string, string>) };
      const basic = basicCredentials(ctx.get('authorization'));
      // The library reads Basic credentials verbatim; RFC 6749 §2.3.1 form-encodes them first (oauth4webapi does).
      if (basic) headers.authorization = `Basic ${Buffer.from(`${basic.clientId}:${basic.secret}`).toString('base64')}`;
      const form = ctx.is('application/x-www-form-urlencoded') ? await readForm(ctx) : {};
      const throttle = clientAuthKeys(basic?.clientId ?? field(form, 'client_id'), ctx.ip, hashKey);
      if (!(await admitClientAuthentication(ctx, throttle))) return;
      const request = new OAuthRequest({ method: ctx.method, headers, query: {}, body: form });
      const response = new OAuthResponse();
      try {
        await tokenServer.token(request, response);
      } catch (err) {
        if (!(err instanceof OAuthError)) throw err;
        if ((err as OAuthError).code >= 500) ctx.state.log.error({ err }, 'token endpoint failed');
      }
      const body = { ...(response.body as Record<string, unknown>) };
      // Any outcome but invalid_client means the client authenticated (a bad code is not a guessed secret).
      if (body.error !== 'invalid_client') await settleSuccess(deps.db, throttle);
      // RFC 6749 §5.1: `scope` is a space-delimited string (the library hands back its array).
      if (Array.isArray(body.scope)) body.scope = body.scope.join(' ');
      for (const [k, v] of Object.entries(response.headers ?? {})) ctx.set(k, String(v));
      ctx.set('Cache-Control', 'no-store');
      ctx.set('Pragma', 'no-cache');
      ctx.status = response.status ?? 200;
      ctx.body = body;
    },

    async revoke(ctx) {
      const form = await readForm(ctx);
      // Client authentication as at the token endpoint (RFC 7009 §2.1): Basic or the body, or client_id alone for a public client.
      const basic = basicCredentials(ctx.get('authorization'));
      const clientId = basic?.clientId ?? field(form, 'client_id');
      const secret = basic?.secret ?? (field(form, 'client_secret') || undefined);
      const throttle = clientAuthKeys(clientId, ctx.ip, hashKey);
      if (!(await admitClientAuthentication(ctx, throttle))) return;
      const client = /^oac_[A-Za-z0-9]{10,40}$/.test(clientId) ? await findClient(deps.db, clientId) : undefined;
      const authenticated = client && (client.confidential ? secretMatches(client, secret) : !secret);
      ctx.set('Cache-Control', 'no-store');
      if (authenticated) await settleSuccess(deps.db, throttle);
      if (!client || !authenticated) {
        ctx.status = 401;
        if (basic) ctx.set('WWW-Authenticate', 'Basic realm="oauth"');
        ctx.body = { error: 'invalid_client', error_description: 'client authentication failed' };
        return;
      }
      const token = field(form, 'token');
      if (!token) {
        ctx.status = 400;
        ctx.body = { error: 'invalid_request', error_description: 'token is required' };
        return;
      }
      // RFC 7009 §2.2: 200 whether or not the token was valid; a token of another client is left alone.
      if (token.length <= 200) await revokeTokenOfClient(deps.db, client.id, token);
      ctx.status = 200;
      ctx.body = '';
    },

    metadata(ctx) {
      const issuer = issuerOf(ctx, deps);
      ctx.set('Cache-Control', 'public, max-age=300');
      ctx.body = {
        issuer,
        authorization_endpoint: `${issuer}${OAUTH_PATHS.authorize}`,
        token_endpoint: `${issuer}${OAUTH_PATHS.token}`,
        revocation_endpoint: `${issuer}${OAUTH_PATHS.revoke}`,
        response_types_supported: ['code'],
        response_modes_supported: ['query'],
        grant_types_supported: ['authorization_code', 'refresh_token'],
        code_challenge_methods_supported: ['S256'],
        token_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post', 'none'],
        revocation_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post', 'none'],
        scopes_supported: NON_RESERVED_SCOPES,
        service_documentation: `${issuer}/docs`,
      };
    },
  };
}
