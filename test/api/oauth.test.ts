/**
 * The OAuth 2.0 authorization server (spec "Authentication" 4; docs/team-and-oauth.md "Connect an app with OAuth") driven
 * by a real OAuth client library, `oauth4webapi`, as the app: metadata discovery (RFC 8414), sign-in and
 * the consent page submitted as a browser would (CSRF token included), the code exchange with PKCE (RFC
 * 7636), `/api/v1` calls with the `<brand>_oat_…` token on the secret keys' scope matrix, refresh-token
 * rotation and reuse detection, revocation (RFC 7009), and the refusals. Real HTTP, real Postgres.
 */
import { expect } from 'chai';
import type * as OAuth from 'oauth4webapi' with { 'resolution-mode': 'import' };
import { useTestApi } from '../helpers/api';
import { startApi } from '../../api/server';
import { createLogger } from '../../runtime';
import { Browser, checkboxes, hiddenFields } from '../helpers/browser';
import { SandboxMailer } from '../../providers/mailer/sandbox';
import { createMember } from '../../db/repositories/team';
import { hashPassword } from '../../services/team/passwords';
import type { Role } from '../../domain/team';

const PASSWORD = 'correct horse battery staple';
const REDIRECT = 'http://127.0.0.1:9/callback';

import { startHousekeeping } from '../../services/housekeeping';
import { Agent, fetch as undiciFetch } from 'undici';
import { CLIENT_AUTH_POLICIES } from '../../domain/throttle';

describe('OAuth 2.0 authorization server (oauth4webapi as the client)', () => {
  const mailer = new SandboxMailer();
  const t = useTestApi('oauth', {}, { providers: { mailer } });
  let oauth: typeof OAuth;
  let as: OAuth.AuthorizationServer;
  let origin: string;
  let orgA: { orgId: string; key: string };
  let orgB: { orgId: string; key: string };
  let insecure: { [k: symbol]: boolean };
  const emails: Record<string, string> = {};

  async function member(orgId: string, role: Role, label: string): Promise<{ id: string; email: string }> {
    const email = `${label}-${Math.random().toString(36).slice(2, 8)}@a.example`;
    const m = await createMember(t.db, orgId, { email, role, passwordHash: await hashPassword(PASSWORD) });
    emails[label] = email;
    return { id: m.id, email };
  }

  /**
   * The status of `GET /api/v1/agents` with `token`, polled until it is 401 (at most 1 s): revocation
   * reaches the in-process key cache through the change feed's notification, a few milliseconds later.
   */
  async function statusOnceRevoked(token: string): Promise<number> {
    const deadline = Date.now() + 1000;
    for (;;) {
      const status = (await t.call('GET', '/agents', { key: token })).status;
      if (status === 401 || Date.now() > deadline) return status;
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  async function registerClient(key: string, body: Record<string, unknown>) {
    const res = await t.call('POST', '/oauth-clients', { key, json: { name: 'Acme Sync', redirectUris: [REDIRECT], scopes: ['agents:read', 'agents:write', 'team:read'], ...body } });
    expect(res.status, res.text).to.equal(201);
    return res.body.data as { id: string; clientSecret: string | null; confidential: boolean };
  }

  /** The authorization URL an app builds (RFC 6749 §4.1.1), with PKCE S256 unless `verifier` is null. */
  async function authorizationUrl(clientId: string, opts: { scope?: string; verifier?: string | null; state?: string; redirectUri?: string } = {}) {
    const url = new URL(as.authorization_endpoint!);
    url.searchParams.set('response_type', 'code');
    url.searchParams.set('client_id', clientId);
    url.searchParams.set('redirect_uri', opts.redirectUri ?? REDIRECT);
    url.searchParams.set('scope', opts.scope ?? 'agents:read agents:write team:read');
    url.searchParams.set('state', opts.state ?? 'st-123');
    if (opts.verifier !== null) {
      url.searchParams.set('code_challenge', await oauth.calculatePKCECodeChallenge(opts.verifier ?? ''));
      url.searchParams.set('code_challenge_method', 'S256');
    }
    return url.toString();
  }

  /**
   * Signs `browser` in (when needed) through /login, opens the consent page, ticks `granted` and submits
   * the real form. @returns the redirect back to the app
   */
  async function consent(browser: Browser, url: string, email: string, granted: string[] | 'as shown', decision = 'allow') {
    let res = await browser.get(url);
    if (res.status === 303 && res.location!.startsWith('/login')) {
      const login = await browser.signIn(email, PASSWORD, new URL(res.location!, origin).searchParams.get('next')!);
      expect(login.status, login.html).to.equal(303);
      res = await browser.get(login.location!);
    }
    expect(res.status, res.html).to.equal(200);
    const boxes = checkboxes(res.html);
    const ticked = granted === 'as shown' ? boxes.filter((b) => b.checked).map((b) => b.value) : granted;
    const posted = await browser.post('/oauth/authorize', { ...hiddenFields(res.html), granted: ticked, decision });
    expect(posted.status, posted.html).to.equal(303);
    return { location: new URL(posted.location!), page: res.html };
  }

  /**
   * The whole authorization code flow with PKCE: consent as shown by `email` (default the developer) in
   * `browser` (default a new one), then the token request. @returns the token response
   */
  async function grantedTokens(client: { id: string; clientSecret: string | null }, opts: { email?: string; scope?: string; browser?: Browser } = {}) {
    const verifier = oauth.generateRandomCodeVerifier();
    const { location } = await consent(opts.browser ?? new Browser(origin), await authorizationUrl(client.id, { verifier, scope: opts.scope }), opts.email ?? emails.dev, 'as shown');
    return oauth.processAuthorizationCodeResponse(as, { client_id: client.id }, await exchange(client, location, verifier));
  }

  /** The token request of `oauth4webapi` for a callback (validates state and the response). */
  async function exchange(client: { id: string; clientSecret: string | null }, callback: URL, verifier: string | typeof OAuth.nopkce, redirectUri = REDIRECT) {
    const c: OAuth.Client = { client_id: client.id };
    const params = oauth.validateAuthResponse(as, c, callback, 'st-123');
    const auth = client.clientSecret ? oauth.ClientSecretBasic(client.clientSecret) : oauth.None();
    return oauth.authorizationCodeGrantRequest(as, c, auth, params, redirectUri, verifier, insecure);
  }

  before(async () => {
    oauth = await import('oauth4webapi');
    insecure = { [oauth.allowInsecureRequests]: true };
    origin = new URL(t.api.baseUrl).origin;
    const issuer = new URL(origin);
    as = await oauth.processDiscoveryResponse(issuer, await oauth.discoveryRequest(issuer, { algorithm: 'oauth2', ...insecure }));
    // Every test here drives organization A's owner key in quick succession, past the default burst limit
    // (docs/api-notes.md "Rate limits"), so that key has a higher one.
    orgA = await t.org('OAuth A', undefined, { rateLimitPoints: 100_000 });
    orgB = await t.org('OAuth B');
    await member(orgA.orgId, 'developer', 'dev');
    await member(orgA.orgId, 'viewer', 'viewer');
    await member(orgB.orgId, 'owner', 'ownerB');
  });

  it('publishes RFC 8414 metadata: the origin-root endpoints, S256 only, the code and refresh grants', () => {
    expect(as.issuer).to.equal(origin);
    expect(as.authorization_endpoint).to.equal(`${origin}/oauth/authorize`);
    expect(as.token_endpoint).to.equal(`${origin}/oauth/token`);
    expect(as.revocation_endpoint).to.equal(`${origin}/oauth/revoke`);
    expect(as.code_challenge_methods_supported).to.deep.equal(['S256']);
    expect(as.grant_types_supported).to.deep.equal(['authorization_code', 'refresh_token']);
    expect(as.scopes_supported).to.include('agents:read').and.not.include('analytics:write');
  });

  it('runs the whole flow: consent to a subset, code + PKCE, scoped /api/v1 calls, rotation, reuse detection', async () => {
    const client = await registerClient(orgA.key, {});
    expect(client.clientSecret).to.match(/^acp_ocs_/);
    const browser = new Browser(origin);
    const verifier = oauth.generateRandomCodeVerifier();
    const url = await authorizationUrl(client.id, { verifier });
    // Not signed in: the consent page sends the member to /login first.
    const first = await browser.get(url);
    expect(first.status).to.equal(303);
    expect(first.location).to.match(/^\/login\?next=/);

    const { location, page } = await consent(browser, url, emails.dev, ['agents:read', 'team:read']);
    expect(page).to.include('See your agents').and.include('Create, change and delete your agents').and.include('See team members and invitations');
    expect(location.origin + location.pathname).to.equal(REDIRECT);
    expect(location.searchParams.get('state')).to.equal('st-123');

    const tokens = await oauth.processAuthorizationCodeResponse(as, { client_id: client.id }, await exchange(client, location, verifier));
    expect(tokens.access_token).to.match(/^acp_oat_[A-Za-z0-9]{30,40}$/);
    expect(tokens.refresh_token).to.match(/^acp_ort_/);
    expect(tokens.token_type).to.equal('bearer');
    expect(tokens.expires_in).to.be.within(3590, 3600);
    expect(tokens.scope).to.equal('agents:read team:read');
    const stored = await t.db('api_keys').where({ kind: 'oauth', org_id: orgA.orgId });
    expect(stored.map((r) => r.key_hash)).to.not.include(tokens.access_token);

    // The token rides the secret keys' scope matrix.
    const list = await t.call('GET', '/agents', { key: tokens.access_token });
    expect(list.status, list.text).to.equal(200);
    expect(list.headers.get('ratelimit-policy')).to.match(/q=\d+/);
    const write = await t.call('POST', '/agents', { key: tokens.access_token, json: { name: 'Nope' } });
    expect(write.status).to.equal(403);
    expect(write.body.code).to.equal('insufficient_scope');
    expect(write.body.missingScopes).to.deep.equal(['agents:write']);

    // Refresh rotates: a new pair, and the old refresh token is refused afterwards.
    const refreshed = await oauth.processRefreshTokenResponse(as, { client_id: client.id }, await oauth.refreshTokenGrantRequest(as, { client_id: client.id }, oauth.ClientSecretBasic(client.clientSecret!), tokens.refresh_token!, insecure));
    expect(refreshed.refresh_token).to.not.equal(tokens.refresh_token);
    expect((await t.call('GET', '/agents', { key: refreshed.access_token })).status).to.equal(200);
    const reused = await oauth.refreshTokenGrantRequest(as, { client_id: client.id }, oauth.ClientSecretBasic(client.clientSecret!), tokens.refresh_token!, insecure);
    expect(reused.status).to.equal(400);
    expect((await errorOf(reused))).to.equal('invalid_grant');
    // Reuse revokes the whole family: the tokens of the rotation stop too.
    expect(await statusOnceRevoked(refreshed.access_token)).to.equal(401);
    const again = await oauth.refreshTokenGrantRequest(as, { client_id: client.id }, oauth.ClientSecretBasic(client.clientSecret!), refreshed.refresh_token!, insecure);
    expect((await errorOf(again))).to.equal('invalid_grant');
  });

  it('revokes an access token (RFC 7009): refused by /api/v1 at once; revoking a refresh token ends the grant', async () => {
    const client = await registerClient(orgA.key, {});
    const tokens = await grantedTokens(client);
    expect((await t.call('GET', '/agents', { key: tokens.access_token })).status).to.equal(200);
    const auth = oauth.ClientSecretBasic(client.clientSecret!);
    await oauth.processRevocationResponse(await oauth.revocationRequest(as, { client_id: client.id }, auth, tokens.access_token, insecure));
    expect(await statusOnceRevoked(tokens.access_token)).to.equal(401);
    expect((await t.call('GET', '/agents', { key: tokens.access_token })).body.code).to.equal('invalid_token');
    // The refresh token still works until it is revoked; then the grant is gone.
    const refreshed = await oauth.processRefreshTokenResponse(as, { client_id: client.id }, await oauth.refreshTokenGrantRequest(as, { client_id: client.id }, auth, tokens.refresh_token!, insecure));
    await oauth.processRevocationResponse(await oauth.revocationRequest(as, { client_id: client.id }, auth, refreshed.refresh_token!, insecure));
    expect(await statusOnceRevoked(refreshed.access_token)).to.equal(401);
    // A wrong client secret is refused (401 invalid_client); an unknown token answers 200.
    const wrong = await oauth.revocationRequest(as, { client_id: client.id }, oauth.ClientSecretBasic('acp_ocs_wrong'), refreshed.access_token, insecure);
    expect(wrong.status).to.equal(401);
    expect((await oauth.revocationRequest(as, { client_id: client.id }, auth, 'no-such-token', insecure)).status).to.equal(200);
  });

  it('purges tokens, codes and sessions a day after they expired, and only those (housekeeping)', async () => {
    const client = await registerClient(orgA.key, {});
    const tokens = await grantedTokens(client);
    const grantId = (await t.db('api_keys').where({ kind: 'oauth', org_id: orgA.orgId }).whereNotNull('oauth_grant_id').orderBy('seq', 'desc').first('oauth_grant_id')).oauth_grant_id;
    const count = async () => ({
      access: Number((await t.db('api_keys').where({ oauth_grant_id: grantId }).count({ n: '*' }).first())!.n),
      refresh: Number((await t.db('oauth_refresh_tokens').where({ grant_id: grantId }).count({ n: '*' }).first())!.n),
      codes: Number((await t.db('oauth_codes').where({ grant_id: grantId }).count({ n: '*' }).first())!.n),
    });
    expect(await count()).to.deep.equal({ access: 1, refresh: 1, codes: 1 });
    const housekeeping = startHousekeeping({ db: t.db, logger: createLogger('silent'), rollupIntervalMs: 0, purgeIntervalMs: 0 });
    try {
      // Expired an hour ago: kept (within the day of grace), and the access token is refused for its expiry.
      const hourAgo = new Date(Date.now() - 3_600_000);
      await t.db('api_keys').where({ oauth_grant_id: grantId }).update({ expires_at: hourAgo });
      await housekeeping.purgeExpired();
      expect(await count()).to.deep.equal({ access: 1, refresh: 1, codes: 1 });
      expect(await statusOnceRevoked(tokens.access_token)).to.equal(401);
      // Expired two days ago: gone; the live refresh token of the same grant stays.
      const twoDaysAgo = new Date(Date.now() - 2 * 86_400_000);
      await t.db('api_keys').where({ oauth_grant_id: grantId }).update({ expires_at: twoDaysAgo });
      await t.db('oauth_codes').where({ grant_id: grantId }).update({ expires_at: twoDaysAgo });
      expect(await housekeeping.purgeExpired()).to.be.at.least(2);
      expect(await count()).to.deep.equal({ access: 0, refresh: 1, codes: 0 });
      const refreshed = await oauth.processRefreshTokenResponse(as, { client_id: client.id }, await oauth.refreshTokenGrantRequest(as, { client_id: client.id }, oauth.ClientSecretBasic(client.clientSecret!), tokens.refresh_token!, insecure));
      expect((await t.call('GET', '/agents', { key: refreshed.access_token })).status).to.equal(200);
    } finally {
      await housekeeping.stop();
    }
  });

  it('refuses a wrong PKCE verifier and a replayed code (whose tokens then stop)', async () => {
    const client = await registerClient(orgA.key, {});
    const browser = new Browser(origin);
    const verifier = oauth.generateRandomCodeVerifier();
    const first = await consent(browser, await authorizationUrl(client.id, { verifier }), emails.dev, 'as shown');
    const wrong = await exchange(client, first.location, oauth.generateRandomCodeVerifier());
    expect(wrong.status).to.equal(400);
    expect((await errorOf(wrong))).to.equal('invalid_grant');
    // The failed attempt consumed the code.
    expect((await errorOf(await exchange(client, first.location, verifier)))).to.equal('invalid_grant');

    const second = await consent(browser, await authorizationUrl(client.id, { verifier }), emails.dev, 'as shown');
    const tokens = await oauth.processAuthorizationCodeResponse(as, { client_id: client.id }, await exchange(client, second.location, verifier));
    expect((await t.call('GET', '/agents', { key: tokens.access_token })).status).to.equal(200);
    const replay = await exchange(client, second.location, verifier);
    expect(replay.status).to.equal(400);
    expect((await errorOf(replay))).to.equal('invalid_grant');
    expect(await statusOnceRevoked(tokens.access_token)).to.equal(401);
  });

  it('matches redirect URIs exactly: a foreign one gets an error page, never a redirect; a mismatch at the token endpoint is refused', async () => {
    const client = await registerClient(orgA.key, {});
    const browser = new Browser(origin);
    await browser.signIn(emails.dev, PASSWORD);
    for (const other of [`${REDIRECT}/x`, 'http://127.0.0.1:9/callback?x=1', 'https://evil.example/callback']) {
      const res = await browser.get(await authorizationUrl(client.id, { verifier: 'v'.repeat(43), redirectUri: other }));
      expect(res.status, other).to.equal(400);
      expect(res.location).to.equal(null);
      expect(res.html).to.include('redirect_uri does not match');
    }
    const verifier = oauth.generateRandomCodeVerifier();
    const { location } = await consent(browser, await authorizationUrl(client.id, { verifier }), emails.dev, 'as shown');
    const res = await exchange(client, location, verifier, 'http://127.0.0.1:9/other');
    expect(res.status).to.equal(400);
    expect((await errorOf(res))).to.equal('invalid_request');
  });

  it('requires PKCE of public clients, which then need no secret', async () => {
    const client = await registerClient(orgA.key, { confidential: false });
    expect(client.clientSecret).to.equal(null);
    const browser = new Browser(origin);
    await browser.signIn(emails.dev, PASSWORD);
    const noPkce = await browser.get(await authorizationUrl(client.id, { verifier: null }));
    expect(noPkce.status).to.equal(303);
    const err = new URL(noPkce.location!);
    expect(err.searchParams.get('error')).to.equal('invalid_request');
    expect(err.searchParams.get('state')).to.equal('st-123');
    const tokens = await grantedTokens(client, { browser });
    expect((await t.call('GET', '/agents', { key: tokens.access_token })).status).to.equal(200);
  });

  it('lets a confidential client skip PKCE (optional, as the spec says) but never its secret', async () => {
    const client = await registerClient(orgA.key, {});
    const browser = new Browser(origin);
    const { location } = await consent(browser, await authorizationUrl(client.id, { verifier: null }), emails.dev, 'as shown');
    const params = oauth.validateAuthResponse(as, { client_id: client.id }, location, 'st-123');
    const noSecret = await oauth.authorizationCodeGrantRequest(as, { client_id: client.id }, oauth.None(), params, REDIRECT, oauth.nopkce, insecure);
    expect(noSecret.status).to.be.oneOf([400, 401]);
    expect((await errorOf(noSecret))).to.be.oneOf(['invalid_client', 'invalid_request']);
    const again = await consent(browser, await authorizationUrl(client.id, { verifier: null }), emails.dev, 'as shown');
    const tokens = await oauth.processAuthorizationCodeResponse(as, { client_id: client.id }, await exchange(client, again.location, oauth.nopkce));
    expect(tokens.access_token).to.match(/^acp_oat_/);
  });

  it("answers 404 for another organization's data and refuses its members on the consent page", async () => {
    const agentB = (await t.call('POST', '/agents', { key: orgB.key, json: { name: 'B agent' } })).body.data.id;
    const client = await registerClient(orgA.key, {});
    const tokens = await grantedTokens(client);
    const res = await t.call('GET', `/agents/${agentB}`, { key: tokens.access_token });
    expect(res.status).to.equal(404);
    const outsider = new Browser(origin);
    const signedIn = await outsider.signIn(emails.ownerB, PASSWORD);
    expect(signedIn.status, signedIn.html).to.equal(303);
    const page = await outsider.get(await authorizationUrl(client.id, { verifier: oauth.generateRandomCodeVerifier() }));
    expect(page.status, page.location ?? '').to.equal(403);
    expect(page.location).to.equal(null);
  });

  it('never lets a viewer grant write scopes, even by a forged form', async () => {
    const client = await registerClient(orgA.key, {});
    const browser = new Browser(origin);
    const verifier = oauth.generateRandomCodeVerifier();
    const url = await authorizationUrl(client.id, { verifier });
    await browser.signIn(emails.viewer, PASSWORD);
    const shown = await browser.get(url);
    expect(checkboxes(shown.html)).to.deep.include({ value: 'agents:write', checked: false, disabled: true });
    expect(shown.html).to.include('your role cannot grant this');
    const { location } = await consent(browser, url, emails.viewer, ['agents:read', 'agents:write']);
    const tokens = await oauth.processAuthorizationCodeResponse(as, { client_id: client.id }, await exchange(client, location, verifier));
    expect(tokens.scope).to.equal('agents:read');
    const forgedOnly = await consent(browser, url, emails.viewer, ['agents:write']);
    expect(forgedOnly.location.searchParams.get('error')).to.equal('access_denied');
  });

  it('sends access_denied with the state when the member denies', async () => {
    const client = await registerClient(orgA.key, {});
    const { location } = await consent(new Browser(origin), await authorizationUrl(client.id, { verifier: 'x'.repeat(43) }), emails.dev, 'as shown', 'deny');
    expect(location.searchParams.get('error')).to.equal('access_denied');
    expect(location.searchParams.get('state')).to.equal('st-123');
  });

  it("stops a member's tokens at once when their grant is revoked or they are removed", async () => {
    const client = await registerClient(orgA.key, {});
    const gone = await member(orgA.orgId, 'developer', 'leaver');
    const issue = async (email: string) => {
      return grantedTokens(client, { email });
    };
    const tokens = await issue(emails.dev);
    expect((await t.call('GET', '/agents', { key: tokens.access_token })).status).to.equal(200);
    const grants = await t.call('GET', '/team/grants', { key: orgA.key });
    const mine = grants.body.data.items.filter((g: { clientId: string }) => g.clientId === client.id);
    expect(mine).to.have.length(1);
    expect(mine[0].scopes).to.deep.equal(['agents:read', 'agents:write', 'team:read']);
    expect((await t.call('DELETE', `/team/grants/${mine[0].id}`, { key: orgA.key })).status).to.equal(200);
    expect(await statusOnceRevoked(tokens.access_token)).to.equal(401);

    // A second API process holds the leaver's token in its key cache; the removal reaches it too.
    const second = await startApi({ db: t.db, databaseUrl: t.databaseUrl, config: t.config, logger: createLogger('silent') });
    try {
      const leaverTokens = await issue(gone.email);
      const viaSecond = () => fetch(`${second.baseUrl}/agents`, { headers: { authorization: `Bearer ${leaverTokens.access_token}` } }).then((r) => r.status);
      expect(await viaSecond()).to.equal(200);
      expect((await t.call('DELETE', `/team/members/${gone.id}`, { key: orgA.key })).status).to.equal(200);
      expect(await statusOnceRevoked(leaverTokens.access_token)).to.equal(401);
      const deadline = Date.now() + 1000;
      while ((await viaSecond()) !== 401 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
      expect(await viaSecond()).to.equal(401);
      const refresh = await oauth.refreshTokenGrantRequest(as, { client_id: client.id }, oauth.ClientSecretBasic(client.clientSecret!), leaverTokens.refresh_token!, insecure);
      expect(await errorOf(refresh)).to.equal('invalid_grant');
    } finally {
      await second.close();
    }
  });

  it('acts on the Team with the role of the member who approved the token', async () => {
    const client = await registerClient(orgA.key, { scopes: ['team:read', 'team:write'] });
    const admin = await member(orgA.orgId, 'admin', 'admin');
    const owner = await member(orgA.orgId, 'owner', 'owner');
    const tokens = await grantedTokens(client, { email: admin.email, scope: 'team:read team:write' });
    expect(tokens.scope).to.equal('team:read team:write');
    const demoteOwner = await t.call('PATCH', `/team/members/${owner.id}`, { key: tokens.access_token, json: { role: 'viewer' } });
    expect(demoteOwner.status).to.equal(403);
    expect(demoteOwner.body.code).to.equal('role_not_allowed');
    const viewer = await member(orgA.orgId, 'viewer', 'promoted');
    expect((await t.call('PATCH', `/team/members/${viewer.id}`, { key: tokens.access_token, json: { role: 'developer' } })).body.data.role).to.equal('developer');
    // A developer cannot approve team:write at all.
    const devPage = await consentPageFor(client.id, emails.dev, 'team:read team:write');
    expect(checkboxes(devPage)).to.deep.equal([
      { value: 'team:read', checked: true, disabled: false },
      { value: 'team:write', checked: false, disabled: true },
    ]);
  });

  async function consentPageFor(clientId: string, email: string, scope: string): Promise<string> {
    const b = new Browser(origin);
    await b.signIn(email, PASSWORD);
    return (await b.get(await authorizationUrl(clientId, { verifier: 'v'.repeat(43), scope }))).html;
  }

  it('registers, lists and deletes clients with keys:write; deleting one stops its tokens', async () => {
    const client = await registerClient(orgA.key, {});
    const list = await t.call('GET', '/oauth-clients', { key: orgA.key });
    expect(list.body.data.items.map((c: { id: string }) => c.id)).to.include(client.id);
    expect(list.text).to.not.include(client.clientSecret!);
    expect((await t.call('GET', '/oauth-clients', { key: orgB.key })).body.data.items.map((c: { id: string }) => c.id)).to.not.include(client.id);
    const bad = await t.call('POST', '/oauth-clients', { key: orgA.key, json: { name: 'x', redirectUris: ['http://evil.example/cb', 'https://ok.example/cb#frag'], scopes: ['agents:read', 'analytics:write'] } });
    expect(bad.status).to.equal(400);
    expect(bad.body.errors.map((e: { field: string }) => e.field)).to.deep.equal(['redirectUris.0', 'redirectUris.1', 'scopes.1']);
    const narrow = (await t.org('narrow', ['agents:read'])).key;
    expect((await t.call('GET', '/oauth-clients', { key: narrow })).body.code).to.equal('insufficient_scope');

    const tokens = await grantedTokens(client);
    expect((await t.call('DELETE', `/oauth-clients/${client.id}`, { key: orgB.key })).status).to.equal(404);
    expect((await t.call('DELETE', `/oauth-clients/${client.id}`, { key: orgA.key })).status).to.equal(200);
    expect(await statusOnceRevoked(tokens.access_token)).to.equal(401);
  });

  it('throttles client secret guessing at the token and revocation endpoints per client: a parallel burst evaluates at most the limit', async () => {
    const client = await registerClient(orgA.key, {});
    const attacker = new Agent({ localAddress: '127.0.0.7' });
    const tokenRequest = (secret: string, dispatcher?: Agent) =>
      undiciFetch(as.token_endpoint!, {
        method: 'POST',
        headers: { authorization: `Basic ${Buffer.from(`${client.id}:${secret}`).toString('base64')}`, 'content-type': 'application/x-www-form-urlencoded' },
        body: 'grant_type=refresh_token&refresh_token=acp_ort_unknown',
        dispatcher,
      });
    const answers = await Promise.all(Array.from({ length: 60 }, (_, i) => tokenRequest(`acp_ocs_guess${i}`, attacker)));
    const count = (status: number) => answers.filter((r) => r.status === status).length;
    const { free } = CLIENT_AUTH_POLICIES.clientAddress;
    expect({ evaluated: count(401), refused: count(429) }, '60 parallel wrong secrets').to.deep.equal({ evaluated: free, refused: 60 - free });
    const refusal = answers.find((r) => r.status === 429)!;
    expect(Number(refusal.headers.get('retry-after'))).to.be.within(1, CLIENT_AUTH_POLICIES.clientAddress.baseSeconds);
    expect(((await refusal.json()) as { error: string }).error).to.equal('rate_limited');
    // Revocation authenticates the client the same way and shares the throttle.
    const revoke = await undiciFetch(as.revocation_endpoint!, {
      method: 'POST',
      headers: { authorization: `Basic ${Buffer.from(`${client.id}:acp_ocs_guess`).toString('base64')}`, 'content-type': 'application/x-www-form-urlencoded' },
      body: 'token=x',
      dispatcher: attacker,
    });
    expect(revoke.status).to.equal(429);
    // The app itself, from its own address, is not locked out: its right secret reaches the grant check.
    const own = await tokenRequest(client.clientSecret!);
    expect(own.status).to.equal(400);
    expect(((await own.json()) as { error: string }).error).to.equal('invalid_grant');
  });

  describe('scope-matrix probe: no escalation by delegation', () => {
    /** A secret key of organization A minted by its all-scopes key. */
    async function keyOfA(scopes: string[]): Promise<{ id: string; secret: string }> {
      const res = await t.call('POST', '/api-keys', { key: orgA.key, json: { name: 'probe', scopes } });
      expect(res.status, res.text).to.equal(201);
      return res.body.data;
    }

    it('refuses a narrow keys:write caller every credential operation beyond its scopes', async () => {
      const narrow = await keyOfA(['keys:write', 'agents:read']);
      const broad = await keyOfA(['agents:read', 'sms:read']);
      const broadClient = await registerClient(orgA.key, { scopes: ['agents:read', 'agents:write'] });
      const probes: Array<[string, string, unknown?]> = [
        ['POST', '/oauth-clients', { name: 'Escalate', redirectUris: [REDIRECT], scopes: ['agents:read', 'agents:write'] }],
        ['POST', '/api-keys', { name: 'Escalate', scopes: ['agents:read', 'sms:read'] }],
        ['POST', `/api-keys/${broad.id}/rotate`, {}],
        ['DELETE', `/api-keys/${broad.id}`],
        ['DELETE', `/oauth-clients/${broadClient.id}`],
      ];
      const refused: string[] = [];
      for (const [method, path, json] of probes) {
        const res = await t.call(method, path, { key: narrow.secret, json });
        if (res.status === 403 && res.body.code === 'insufficient_scope') refused.push(`${method} ${path}`);
      }
      expect(refused, 'every probe beyond the caller\'s scopes is refused').to.have.length(probes.length);
      expect((await t.call('GET', '/agents', { key: broad.secret })).status).to.equal(200);
      const listed = (await t.call('GET', '/oauth-clients?limit=200', { key: orgA.key })).body.data.items.map((c: { id: string; name: string }) => c.id);
      expect(listed).to.include(broadClient.id);
      // Within its scopes the same caller is served.
      const ok = await t.call('POST', '/oauth-clients', { key: narrow.secret, json: { name: 'Narrow', redirectUris: [REDIRECT], scopes: ['agents:read'] } });
      expect(ok.status, ok.text).to.equal(201);
    });

    it("keeps owners and owner invitations to owners, also through a key an admin's app minted", async () => {
      const client = await registerClient(orgA.key, { scopes: ['team:read', 'team:write', 'keys:write'] });
      const admin = await member(orgA.orgId, 'admin', 'admin2');
      const owner = await member(orgA.orgId, 'owner', 'owner2');
      const tokens = await grantedTokens(client, { email: admin.email, scope: 'team:read team:write keys:write' });
      const invite = async (role: string) => (await t.call('POST', '/team/invitations', { key: orgA.key, json: { email: `${role}-${Math.random().toString(36).slice(2, 8)}@a.example`, role } })).body.data.id as string;
      const ownerInvite = await invite('owner');
      const viewerInvite = await invite('viewer');
      const minted = await t.call('POST', '/api-keys', { key: tokens.access_token, json: { name: 'minted by app', scopes: ['team:read', 'team:write'] } });
      expect(minted.status, minted.text).to.equal(201);
      for (const key of [tokens.access_token, minted.body.data.secret]) {
        const revokeOwnerInvite = await t.call('DELETE', `/team/invitations/${ownerInvite}`, { key });
        expect(revokeOwnerInvite.status, revokeOwnerInvite.text).to.equal(403);
        expect(revokeOwnerInvite.body.code).to.equal('role_not_allowed');
        expect((await t.call('PATCH', `/team/members/${owner.id}`, { key, json: { role: 'viewer' } })).status).to.equal(403);
        expect((await t.call('POST', '/team/invitations', { key, json: { email: 'new-owner@a.example', role: 'owner' } })).status).to.equal(403);
      }
      expect((await t.call('DELETE', `/team/invitations/${viewerInvite}`, { key: tokens.access_token })).status).to.equal(200);
      // An invitation sent through the admin's app names the admin as the inviter.
      expect((await t.call('POST', '/team/invitations', { key: tokens.access_token, json: { email: 'named-inviter@a.example', role: 'viewer' } })).status).to.equal(201);
      expect(mailer.sent.at(-1)!.text).to.match(new RegExp(`^${admin.email.replace(/[.]/g, '\\.')} invited you to join `));
      expect((await t.call('DELETE', `/team/invitations/${ownerInvite}`, { key: orgA.key })).status).to.equal(200);
    });

    it("stops every credential minted through an app's token when the app is deleted", async () => {
      const app = await registerClient(orgA.key, { scopes: ['keys:write', 'agents:read', 'agents:write', 'pubkeys:write'] });
      const admin = await member(orgA.orgId, 'admin', 'admin3');
      const tokens = await grantedTokens(app, { email: admin.email, scope: 'keys:write agents:read agents:write pubkeys:write' });
      const oat = tokens.access_token;
      const secret = (await t.call('POST', '/api-keys', { key: oat, json: { name: 'via app', scopes: ['keys:write', 'agents:read'] } })).body.data;
      // A key minted by that key, and the rotation of it by an owner's key, come from the app too.
      const second = (await t.call('POST', '/api-keys', { key: secret.secret, json: { name: 'via app 2', scopes: ['agents:read'] } })).body.data;
      const rotated = (await t.call('POST', `/api-keys/${second.id}/rotate`, { key: orgA.key, json: { gracePeriodSeconds: 0 } })).body.data.key;
      const agent = (await t.call('POST', '/agents', { key: oat, json: { name: 'Widget agent' } })).body.data;
      const pub = await t.call('POST', '/publishable-keys', { key: oat, json: { name: 'via app', agentId: agent.id, allowedOrigins: ['https://shop.example'] } });
      expect(pub.status, pub.text).to.equal(201);
      const child = await t.call('POST', '/oauth-clients', { key: oat, json: { name: 'Child app', redirectUris: [REDIRECT], scopes: ['agents:read'] } });
      expect(child.status, child.text).to.equal(201);
      const unrelated = await keyOfA(['agents:read']);
      for (const k of [secret.secret, rotated.secret]) expect((await t.call('GET', '/agents', { key: k })).status).to.equal(200);

      expect((await t.call('DELETE', `/oauth-clients/${app.id}`, { key: orgA.key })).status).to.equal(200);
      const after: Record<string, number> = {};
      for (const [name, k] of Object.entries({ oat, secret: secret.secret, rotated: rotated.secret })) after[name] = await statusOnceRevoked(k);
      expect(after).to.deep.equal({ oat: 401, secret: 401, rotated: 401 });
      const pubRow = await t.db('api_keys').where({ org_id: orgA.orgId, id: pub.body.data.id }).first();
      expect(pubRow.revoked_at, 'the publishable key minted through the app').to.not.equal(null);
      const clients = (await t.call('GET', '/oauth-clients?limit=200', { key: orgA.key })).body.data.items.map((c: { id: string }) => c.id);
      expect(clients, 'the client registered through the app').to.not.include(child.body.data.id);
      expect((await t.call('GET', '/agents', { key: unrelated.secret })).status).to.equal(200);
    });
  });
});

/** The `error` code of an OAuth error response (RFC 6749 §5.2). */
async function errorOf(res: Response): Promise<string> {
  return ((await res.json()) as { error: string }).error;
}
