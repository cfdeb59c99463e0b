/**
 * A generic OAuth 2.0 client for integration providers (RFC 6749 §4.1 authorization-code grant with PKCE S256,
 * RFC 7636; §6 refresh), on `oauth4webapi`. A provider is data — its endpoints, the client id and secret, the scopes,
 * extra authorization parameters — so every OAuth integration (Google Calendar here) uses the same code.
 *
 * Tokens come back as {@link OAuthTokens}; the connection stores them sealed (services/integrations/connections.ts).
 * Errors are IntegrationProviderError: `invalid_grant` (RFC 6749 §5.2: the code or the refresh token is invalid,
 * expired or revoked — the connection then needs a new consent), `credentials_rejected` (`invalid_client`, the
 * deployment's client id or secret), `unavailable` (a 5xx, a timeout, an answer off the RFC).
 */
import type * as OAuth from 'oauth4webapi' with { 'resolution-mode': 'import' };
import { IntegrationProviderError } from './index';

/** One provider's OAuth endpoints and this deployment's client at it. */
export interface OAuthProviderConfig {
  /** Human name in error messages, e.g. `Google`. */
  name: string;
  /** Authorization endpoint (RFC 6749 §3.1). */
  authorizationEndpoint: string;
  /** Token endpoint (RFC 6749 §3.2). */
  tokenEndpoint: string;
  clientId: string;
  clientSecret: string;
  scopes: string[];
  /** How the client authenticates at the token endpoint (RFC 6749 §2.3.1): `post` (default) or `basic`. */
  clientAuth?: 'post' | 'basic';
  /** Extra authorization request parameters, e.g. Google's `access_type=offline` and `prompt=consent` for a refresh token. */
  authorizationParams?: Record<string, string>;
  /**
   * Providers whose token endpoint answers errors off RFC 6749 §5.2 (no `error` member): the body's `status` values
   * that mean the grant is invalid, expired or revoked (HubSpot: `BAD_REFRESH_TOKEN`, …), read as `invalid_grant`.
   */
  grantRefusals?: readonly string[];
  /** As {@link grantRefusals}, the `status` values that mean the client id or secret is wrong (`credentials_rejected`). */
  clientRefusals?: readonly string[];
  /** Cap on one token request, ms (default 10 000). */
  timeoutMs?: number;
}

/** Tokens of a grant. */
export interface OAuthTokens {
  accessToken: string;
  /** Absent when the provider issued none (or kept the old one on refresh). */
  refreshToken: string | null;
  /** When the access token expires, ms since the epoch; null when the provider did not say. */
  expiresAtMs: number | null;
  /** Scopes granted (RFC 6749 §5.1 `scope`), else the ones requested. */
  scopes: string[];
}

/** Refresh this long before the access token expires, ms (60 s: a request started just before expiry still passes). */
export const REFRESH_MARGIN_MS = 60_000;

/** Whether tokens expiring at `expiresAtMs` should be refreshed at `nowMs` ({@link REFRESH_MARGIN_MS} ahead). */
export function needsRefresh(expiresAtMs: number | null, nowMs: number): boolean {
  return expiresAtMs !== null && expiresAtMs - REFRESH_MARGIN_MS <= nowMs;
}

let lib: Promise<typeof OAuth> | undefined;
const oauth = (): Promise<typeof OAuth> => (lib ??= import('oauth4webapi'));

function server(p: OAuthProviderConfig): OAuth.AuthorizationServer {
  return { issuer: new URL(p.tokenEndpoint).origin, authorization_endpoint: p.authorizationEndpoint, token_endpoint: p.tokenEndpoint };
}

async function requestOptions(p: OAuthProviderConfig): Promise<OAuth.TokenEndpointRequestOptions> {
  const o = await oauth();
  // Plain http only for a loopback token endpoint (development and the tests' stub); providers' own are https.
  const insecure = new URL(p.tokenEndpoint).protocol === 'http:';
  return { signal: AbortSignal.timeout(p.timeoutMs ?? 10_000), ...(insecure ? { [o.allowInsecureRequests]: true } : {}) };
}

async function clientAuth(p: OAuthProviderConfig): Promise<OAuth.ClientAuth> {
  const o = await oauth();
  return p.clientAuth === 'basic' ? o.ClientSecretBasic(p.clientSecret) : o.ClientSecretPost(p.clientSecret);
}

function tokensOf(p: OAuthProviderConfig, t: OAuth.TokenEndpointResponse, nowMs: number): OAuthTokens {
  return {
    accessToken: t.access_token,
    refreshToken: t.refresh_token ?? null,
    expiresAtMs: typeof t.expires_in === 'number' ? nowMs + t.expires_in * 1000 : null,
    scopes: typeof t.scope === 'string' && t.scope ? t.scope.split(' ') : p.scopes,
  };
}

/** A token endpoint's non-RFC error body (`{status, message}`, as HubSpot answers), if it is one. */
async function providerStatus(res: Response): Promise<{ status: string; message: string | null } | null> {
  if (res.status < 400 || res.bodyUsed) return null;
  try {
    const body = (await res.clone().json()) as { status?: unknown; message?: unknown };
    return typeof body?.status === 'string' && body.status ? { status: body.status, message: typeof body.message === 'string' ? body.message.slice(0, 200) : null } : null;
  } catch {
    return null;
  }
}

async function refusal(p: OAuthProviderConfig, err: unknown): Promise<never> {
  const o = await oauth();
  if (err instanceof o.ResponseBodyError) {
    const detail = `${p.name} answered ${err.status} ${err.error}${err.error_description ? `: ${err.error_description}` : ''}`;
    if (err.error === 'invalid_grant') throw new IntegrationProviderError('invalid_grant', detail);
    if (err.error === 'invalid_client' || err.error === 'unauthorized_client') throw new IntegrationProviderError('credentials_rejected', detail);
    throw new IntegrationProviderError(err.status >= 500 ? 'unavailable' : 'refused', detail);
  }
  if (err instanceof o.OperationProcessingError && err.code === o.RESPONSE_IS_NOT_CONFORM && err.cause instanceof Response) {
    const refused = await providerStatus(err.cause);
    if (refused) {
      const detail = `${p.name} answered ${err.cause.status} ${refused.status}${refused.message ? `: ${refused.message}` : ''}`;
      if (p.grantRefusals?.includes(refused.status)) throw new IntegrationProviderError('invalid_grant', detail);
      if (p.clientRefusals?.includes(refused.status)) throw new IntegrationProviderError('credentials_rejected', detail);
      throw new IntegrationProviderError(err.cause.status >= 500 ? 'unavailable' : 'refused', detail);
    }
  }
  const e = err as Error;
  if (e?.name === 'TimeoutError' || e?.name === 'AbortError') throw new IntegrationProviderError('timeout', `${p.name}'s token endpoint did not answer in time`);
  throw new IntegrationProviderError('unavailable', `${p.name}'s token endpoint failed: ${e?.message ?? String(err)}`);
}

/**
 * The authorization URL (RFC 6749 §4.1.1) with `state` and, when given, the S256 `code_challenge` (RFC 7636 §4.3).
 * Only the provider's authorization endpoint, client id, scopes and extra parameters are read (the sandbox adapter
 * builds its own URL with it too).
 */
export function oauthAuthorizationUrl(p: Pick<OAuthProviderConfig, 'authorizationEndpoint' | 'clientId' | 'scopes' | 'authorizationParams'>, req: { redirectUri: string; state: string; codeChallenge: string | null }): string {
  const u = new URL(p.authorizationEndpoint);
  u.searchParams.set('response_type', 'code');
  u.searchParams.set('client_id', p.clientId);
  u.searchParams.set('redirect_uri', req.redirectUri);
  u.searchParams.set('scope', p.scopes.join(' '));
  u.searchParams.set('state', req.state);
  if (req.codeChallenge) {
    u.searchParams.set('code_challenge', req.codeChallenge);
    u.searchParams.set('code_challenge_method', 'S256');
  }
  for (const [k, v] of Object.entries(p.authorizationParams ?? {})) u.searchParams.set(k, v);
  return u.toString();
}

/**
 * Exchanges an authorization code with the PKCE verifier (RFC 6749 §4.1.3, RFC 7636 §4.5). The state was checked by
 * the caller (it is single use, services/integrations/connections.ts).
 * @throws IntegrationProviderError `invalid_grant`, `credentials_rejected`, `unavailable`, `timeout`
 */
export async function exchangeAuthorizationCode(p: OAuthProviderConfig, req: { code: string; redirectUri: string; codeVerifier: string | null }, nowMs = Date.now()): Promise<OAuthTokens> {
  const o = await oauth();
  const as = server(p);
  const client: OAuth.Client = { client_id: p.clientId };
  try {
    const params = o.validateAuthResponse(as, client, new URLSearchParams({ code: req.code }), o.skipStateCheck);
    const res = await o.authorizationCodeGrantRequest(as, client, await clientAuth(p), params, req.redirectUri, req.codeVerifier ?? o.nopkce, await requestOptions(p));
    return tokensOf(p, await o.processAuthorizationCodeResponse(as, client, res), nowMs);
  } catch (err) {
    return refusal(p, err);
  }
}

/**
 * Refreshes an access token (RFC 6749 §6); the refresh token is kept when the provider issues no new one.
 * @throws IntegrationProviderError `invalid_grant` when the grant was revoked or expired, else as {@link exchangeAuthorizationCode}
 */
export async function refreshAccessToken(p: OAuthProviderConfig, refreshToken: string, nowMs = Date.now()): Promise<OAuthTokens> {
  const o = await oauth();
  const as = server(p);
  const client: OAuth.Client = { client_id: p.clientId };
  try {
    const res = await o.refreshTokenGrantRequest(as, client, await clientAuth(p), refreshToken, await requestOptions(p));
    const t = tokensOf(p, await o.processRefreshTokenResponse(as, client, res), nowMs);
    return { ...t, refreshToken: t.refreshToken ?? refreshToken };
  } catch (err) {
    return refusal(p, err);
  }
}
