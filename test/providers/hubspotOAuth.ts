/**
 * HubSpot's OAuth side for the loopback HubSpot (test/providers/hubspotStub.ts), following HubSpot's documented OAuth
 * flow ("OAuth quickstart", "OAuth tokens" v1): the install page `GET /oauth/authorize` (client_id, redirect_uri,
 * scope separated by spaces, state; here also the PKCE S256 challenge, RFC 7636 §4.3) answers a redirect with a
 * single-use `code`; the token endpoint `POST /oauth/v1/token` takes an `application/x-www-form-urlencoded` body with
 * `grant_type` (`authorization_code` with `code`, `redirect_uri` and `code_verifier`, or `refresh_token` with
 * `refresh_token`), `client_id` and `client_secret`, and answers `{access_token, refresh_token, expires_in,
 * token_type: "bearer"}`. Errors use HubSpot's body `{status, message, correlationId}`: `BAD_AUTH_CODE`,
 * `BAD_REFRESH_TOKEN`, `BAD_CLIENT_ID`, `BAD_REDIRECT_URI`, `BAD_GRANT_TYPE`, with status 400.
 */
import crypto from 'node:crypto';
import type { StubAnswer, StubRequest } from './stubServer';

/** HubSpot's token-endpoint error body. */
function hubspotOAuthError(status: string, message: string): StubAnswer {
  return { status: 400, body: { status, message, correlationId: crypto.randomUUID() } };
}

/** The OAuth app, grants and tokens of the loopback HubSpot. */
export class HubSpotOAuth {
  /** Seconds an access token lives (HubSpot: 1800). */
  expiresIn = 1800;
  /** Every token request, as its form fields. */
  readonly tokenRequests: Record<string, string>[] = [];
  private readonly codes = new Map<string, { challenge: string; redirectUri: string }>();
  private readonly refresh = new Set<string>();
  /** Live OAuth access tokens and when each expires, ms. */
  private readonly access = new Map<string, number>();

  constructor(
    readonly clientId: string,
    readonly clientSecret: string,
    readonly scopes: readonly string[],
    private readonly problem: (where: string, what: string) => void,
  ) {}

  /** Whether `token` is a live OAuth access token. */
  accepts(token: string): boolean {
    const until = this.access.get(token);
    return until !== undefined && until > Date.now();
  }

  /** The app was uninstalled (or the user's access removed): refresh tokens and access tokens stop working. */
  revokeGrants(): void {
    this.refresh.clear();
    this.access.clear();
  }

  /**
   * The install page: checks the authorization request and answers the redirect with a code and the state, as a
   * person choosing an account and clicking "Connect app" would.
   */
  consent(authorizationUrl: string): string {
    const u = new URL(authorizationUrl);
    const p = u.searchParams;
    if (u.pathname !== '/oauth/authorize') this.problem('authorize', `path ${u.pathname}`);
    if (p.get('client_id') !== this.clientId) this.problem('authorize', `client_id ${p.get('client_id')}`);
    const asked = (p.get('scope') ?? '').split(' ').filter(Boolean);
    for (const s of this.scopes) if (!asked.includes(s)) this.problem('authorize', `scope ${s} is not asked`);
    if (p.get('code_challenge_method') !== 'S256' || !p.get('code_challenge')) this.problem('authorize', 'no PKCE S256 challenge');
    for (const k of ['redirect_uri', 'state']) if (!p.get(k)) this.problem('authorize', `${k} is missing`);
    const code = crypto.randomUUID();
    this.codes.set(code, { challenge: p.get('code_challenge') ?? '', redirectUri: p.get('redirect_uri') ?? '' });
    const back = new URL(p.get('redirect_uri') ?? 'http://invalid/');
    back.searchParams.set('code', code);
    back.searchParams.set('state', p.get('state') ?? '');
    return back.toString();
  }

  private tokens(): StubAnswer {
    const accessToken = `CN${crypto.randomBytes(24).toString('base64url')}`;
    const refreshToken = crypto.randomUUID();
    this.access.set(accessToken, Date.now() + this.expiresIn * 1000);
    this.refresh.add(refreshToken);
    return { status: 200, body: { access_token: accessToken, refresh_token: refreshToken, expires_in: this.expiresIn, token_type: 'bearer' } };
  }

  /** `POST /oauth/v1/token`. */
  token(req: StubRequest): StubAnswer {
    const where = 'POST /oauth/v1/token';
    if (!/^application\/x-www-form-urlencoded/.test(String(req.headers['content-type']))) this.problem(where, `content-type ${req.headers['content-type']}`);
    if (req.headers.authorization) this.problem(where, 'HubSpot takes the client id and secret in the form body, not an Authorization header');
    const f = Object.fromEntries(new URLSearchParams(req.raw));
    this.tokenRequests.push(f);
    const allowed: Record<string, string[]> = {
      authorization_code: ['grant_type', 'client_id', 'client_secret', 'redirect_uri', 'code', 'code_verifier'],
      refresh_token: ['grant_type', 'client_id', 'client_secret', 'refresh_token', 'redirect_uri'],
    };
    if (!allowed[f.grant_type]) return hubspotOAuthError('BAD_GRANT_TYPE', `grant_type ${f.grant_type} is not supported`);
    for (const k of Object.keys(f)) if (!allowed[f.grant_type].includes(k)) this.problem(where, `unknown field ${k}`);
    if (f.client_id !== this.clientId) return hubspotOAuthError('BAD_CLIENT_ID', 'missing or invalid client id');
    if (f.client_secret !== this.clientSecret) return hubspotOAuthError('BAD_CLIENT_SECRET', 'missing or invalid client secret');
    if (f.grant_type === 'authorization_code') {
      const c = this.codes.get(f.code ?? '');
      this.codes.delete(f.code ?? '');
      if (!c) return hubspotOAuthError('BAD_AUTH_CODE', 'missing or unknown auth code');
      if (f.redirect_uri !== c.redirectUri) return hubspotOAuthError('BAD_REDIRECT_URI', 'redirect_uri does not match');
      if (crypto.createHash('sha256').update(f.code_verifier ?? '').digest('base64url') !== c.challenge) return hubspotOAuthError('BAD_AUTH_CODE', 'code_verifier does not match the challenge');
      return this.tokens();
    }
    if (!this.refresh.has(f.refresh_token ?? '')) return hubspotOAuthError('BAD_REFRESH_TOKEN', 'missing or unknown refresh token');
    this.refresh.delete(f.refresh_token!);
    return this.tokens();
  }
}
