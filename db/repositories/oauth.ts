/**
 * The OAuth 2.0 authorization server's storage (spec "Authentication" 4; RFC 6749, RFC 7009, RFC 7636;
 * docs/team-and-oauth.md "Connect an app with OAuth"): clients, grants (one member's approval: the family of every code
 * and token it yields), authorization codes, refresh tokens, and access tokens, which are `api_keys` rows
 * of kind `oauth` so the one authentication path resolves them. Every secret is stored only as a SHA-256
 * hash (each carries at least 192 random bits). Functions resolving a credential to its organization
 * (`findClient`, `findCode`, `findRefreshToken`, `findAccessToken`) take no organization id.
 */
import type { Db } from '../index';
import { newId, randomBase62 } from '../ids';
import { keysetPage, type Page } from '../pagination';
import { fromColumns } from '../rows';
import { hashKey } from './apiKeys';

/** A registered client (never its secret). */
export interface OAuthClient {
  id: string;
  orgId: string;
  name: string;
  /** Confidential clients authenticate with their secret at the token and revocation endpoints; public ones must use PKCE. */
  confidential: boolean;
  redirectUris: string[];
  scopes: string[];
  createdAt: Date;
}

/** A client with its secret hash, for authentication. */
export interface OAuthClientRecord extends OAuthClient {
  secretHash: string | null;
}

/** One member's approval of a client for some scopes. */
export interface OAuthGrant {
  id: string;
  orgId: string;
  clientId: string;
  memberId: string;
  scopes: string[];
  createdAt: Date;
  revokedAt: Date | null;
}

/** A stored authorization code with its grant. */
export interface OAuthCode {
  orgId: string;
  grant: OAuthGrant;
  redirectUri: string;
  codeChallenge: string | null;
  codeChallengeMethod: string | null;
  expiresAt: Date;
  usedAt: Date | null;
}

/** A stored refresh token with its grant. */
export interface OAuthRefreshToken {
  orgId: string;
  grant: OAuthGrant;
  scopes: string[];
  expiresAt: Date;
  /** Set when it was exchanged (rotation): presenting it again is reuse. */
  rotatedAt: Date | null;
}

const toClient = (r: Record<string, any>): OAuthClientRecord => ({
  ...fromColumns(r, ['id', 'orgId', 'name', 'confidential', 'redirectUris', 'scopes', 'createdAt']),
  secretHash: r.secret_hash ?? null,
});
const toGrant = (r: Record<string, any>): OAuthGrant => ({
  ...fromColumns(r, ['id', 'orgId', 'clientId', 'memberId', 'scopes', 'createdAt']),
  revokedAt: r.revoked_at ?? null,
});

/** A client without its secret hash. */
export function publicClient(c: OAuthClientRecord): OAuthClient {
  const { secretHash: _s, ...rest } = c;
  return rest;
}

/**
 * Registers a client. A confidential client gets a secret `<brand>_ocs_…` (returned once, stored hashed).
 * @param c.viaGrantId the OAuth grant whose access token registers it (null: an owner's key): deleting
 *   that app deletes this client too
 * @returns the client and its secret (null for a public client)
 */
export async function createClient(
  db: Db,
  orgId: string,
  c: { brand: string; name: string; confidential: boolean; redirectUris: string[]; scopes: string[]; viaGrantId?: string | null },
): Promise<{ client: OAuthClient; secret: string | null }> {
  const secret = c.confidential ? `${c.brand}_ocs_${randomBase62(24)}` : null;
  const [row] = await db('oauth_clients')
    .insert({
      id: newId('oac'),
      org_id: orgId,
      name: c.name,
      confidential: c.confidential,
      secret_hash: secret ? hashKey(secret) : null,
      redirect_uris: c.redirectUris,
      scopes: c.scopes,
      via_grant_id: c.viaGrantId ?? null,
    })
    .returning('*');
  return { client: publicClient(toClient(row)), secret };
}

/** One page of the organization's clients (deleted ones left out), oldest first. @throws InvalidCursorError */
export function listClients(db: Db, orgId: string, page: { limit: number; cursor?: string }): Promise<Page<OAuthClient>> {
  return keysetPage(db('oauth_clients').where({ org_id: orgId }).whereNull('deleted_at').select('*'), { ...page, column: 'seq', map: (r) => publicClient(toClient(r)) });
}

/**
 * Deletes a client and everything minted through it, in one transaction: the clients its tokens
 * registered (and theirs, recursively), every grant of those clients with its access tokens, and every
 * secret or publishable key those grants' tokens minted (`via_grant_id`, set through chains of keys).
 * @param check called with the client, locked, before anything is written (the caller's scope check); may throw
 * @returns the client, or undefined when the organization has no such (undeleted) client
 */
export async function deleteClient(db: Db, orgId: string, clientId: string, check?: (c: OAuthClient) => void): Promise<OAuthClient | undefined> {
  return db.transaction(async (trx) => {
    const t = trx as unknown as Db;
    const current = await t('oauth_clients').where({ org_id: orgId, id: clientId }).whereNull('deleted_at').forUpdate().first();
    if (!current) return undefined;
    check?.(publicClient(toClient(current)));
    const { rows } = await t.raw(
      `WITH RECURSIVE family(id) AS (
         SELECT ?::text
         UNION
         SELECT c.id FROM oauth_clients c JOIN oauth_grants g ON g.id = c.via_grant_id AND g.org_id = c.org_id
           JOIN family f ON f.id = g.client_id
          WHERE c.org_id = ? AND c.deleted_at IS NULL)
       SELECT id FROM family`,
      [clientId, orgId],
    );
    const family = (rows as Array<{ id: string }>).map((r) => r.id);
    await t('oauth_clients').where({ org_id: orgId }).whereIn('id', family).whereNull('deleted_at').update({ deleted_at: t.fn.now() });
    // Every grant, revoked ones too: a key minted through a grant revoked earlier still came from the app.
    const grants = t('oauth_grants').where({ org_id: orgId }).whereIn('client_id', family).select('id');
    await t('api_keys').where({ org_id: orgId }).whereIn('via_grant_id', grants).whereNull('revoked_at').update({ revoked_at: t.fn.now() });
    await revokeGrantsWhere(t, orgId, (q) => q.whereIn('client_id', family));
    return publicClient(toClient(current));
  });
}

/** A live (undeleted) client by id, with its secret hash: the token endpoint's client authentication. */
export async function findClient(db: Db, clientId: string): Promise<OAuthClientRecord | undefined> {
  const row = await db('oauth_clients').where({ id: clientId }).whereNull('deleted_at').first();
  return row ? toClient(row) : undefined;
}

/** Creates the grant of one approval. */
export async function createGrant(db: Db, orgId: string, g: { clientId: string; memberId: string; scopes: string[] }): Promise<OAuthGrant> {
  const [row] = await db('oauth_grants').insert({ id: newId('ogr'), org_id: orgId, client_id: g.clientId, member_id: g.memberId, scopes: g.scopes }).returning('*');
  return toGrant(row);
}

/** One page of the organization's live grants, oldest first (optionally one member's). @throws InvalidCursorError */
export function listGrants(db: Db, orgId: string, page: { limit: number; cursor?: string }, memberId?: string): Promise<Page<OAuthGrant>> {
  const q = db('oauth_grants').where({ org_id: orgId, ...(memberId ? { member_id: memberId } : {}) }).whereNull('revoked_at').select('*');
  return keysetPage(q, { ...page, column: 'seq', map: toGrant });
}

/** One live grant of the organization, or undefined (also another organization's, or a revoked one). */
export async function getGrant(db: Db, orgId: string, grantId: string): Promise<OAuthGrant | undefined> {
  const row = await db('oauth_grants').where({ org_id: orgId, id: grantId }).whereNull('revoked_at').first();
  return row ? toGrant(row) : undefined;
}

/**
 * Revokes the matching live grants, every access token they issued and every key those tokens minted
 * (`via_grant_id`); the change feed evicts them from every process.
 */
async function revokeGrantsWhere(t: Db, orgId: string, where: Record<string, string> | ((q: ReturnType<Db>) => unknown)): Promise<OAuthGrant[]> {
  const q = t('oauth_grants').where({ org_id: orgId });
  if (typeof where === 'function') where(q);
  else q.where(where);
  const rows = await q.whereNull('revoked_at').update({ revoked_at: t.fn.now() }).returning('*');
  if (rows.length) {
    const ids = rows.map((r: { id: string }) => r.id);
    await t('api_keys')
      .where({ org_id: orgId })
      .where((k) => k.whereIn('oauth_grant_id', ids).orWhereIn('via_grant_id', ids))
      .whereNull('revoked_at')
      .update({ revoked_at: t.fn.now() });
  }
  return rows.map(toGrant);
}

/** Revokes one grant and its tokens at once. @returns it, or undefined when the organization has no such live grant */
export async function revokeGrant(db: Db, orgId: string, grantId: string): Promise<OAuthGrant | undefined> {
  return db.transaction(async (trx) => (await revokeGrantsWhere(trx as unknown as Db, orgId, { id: grantId }))[0]);
}

/** Stores an authorization code (hashed) of a grant. */
export async function saveCode(
  db: Db,
  orgId: string,
  c: { code: string; grantId: string; redirectUri: string; codeChallenge?: string; codeChallengeMethod?: string; expiresAt: Date },
): Promise<void> {
  await db('oauth_codes').insert({
    code_hash: hashKey(c.code),
    org_id: orgId,
    grant_id: c.grantId,
    redirect_uri: c.redirectUri,
    code_challenge: c.codeChallenge ?? null,
    code_challenge_method: c.codeChallenge ? (c.codeChallengeMethod ?? 'S256') : null,
    expires_at: c.expiresAt,
  });
}

/** A code with its grant, used or not (the caller detects replay). */
export async function findCode(db: Db, code: string): Promise<OAuthCode | undefined> {
  const row = await db('oauth_codes as c').join('oauth_grants as g', 'g.id', 'c.grant_id').where('c.code_hash', hashKey(code)).first('c.*', 'g.client_id', 'g.member_id', 'g.scopes', 'g.created_at', 'g.revoked_at', 'g.id as grant_id');
  if (!row) return undefined;
  return {
    orgId: row.org_id,
    grant: toGrant({ ...row, id: row.grant_id }),
    redirectUri: row.redirect_uri,
    codeChallenge: row.code_challenge,
    codeChallengeMethod: row.code_challenge_method,
    expiresAt: row.expires_at,
    usedAt: row.used_at,
  };
}

/**
 * Marks a code used, once. A second use is a replay (RFC 6749 §4.1.2: the server should revoke the
 * tokens issued from that code): the grant and its tokens are revoked.
 * @returns true when this call used it
 */
export async function useCode(db: Db, orgId: string, code: string): Promise<boolean> {
  return db.transaction(async (trx) => {
    const t = trx as unknown as Db;
    const hash = hashKey(code);
    const [row] = await t('oauth_codes').where({ org_id: orgId, code_hash: hash }).whereNull('used_at').update({ used_at: t.fn.now() }).returning('grant_id');
    if (row) return true;
    const used = await t('oauth_codes').where({ org_id: orgId, code_hash: hash }).first('grant_id');
    if (used) await revokeGrantsWhere(t, orgId, { id: used.grant_id });
    return false;
  });
}

/**
 * Stores the tokens of one issuance: the access token as an `api_keys` row of kind `oauth` (display
 * prefix, hash, scopes, expiry, grant) and the refresh token, hashed.
 * @returns the access token's key id
 */
export async function saveTokens(
  db: Db,
  orgId: string,
  t: { grantId: string; name: string; brand: string; accessToken: string; accessTokenExpiresAt: Date; refreshToken?: string; refreshTokenExpiresAt?: Date; scopes: string[] },
): Promise<string> {
  const id = newId('oat');
  await db('api_keys').insert({
    id,
    org_id: orgId,
    kind: 'oauth',
    name: t.name,
    display_prefix: t.accessToken.slice(0, t.brand.length + 9),
    key_hash: hashKey(t.accessToken),
    scopes: t.scopes,
    expires_at: t.accessTokenExpiresAt,
    oauth_grant_id: t.grantId,
  });
  if (t.refreshToken) {
    await db('oauth_refresh_tokens').insert({ token_hash: hashKey(t.refreshToken), org_id: orgId, grant_id: t.grantId, scopes: t.scopes, expires_at: t.refreshTokenExpiresAt });
  }
  return id;
}

/** A refresh token with its grant, rotated or not (the caller detects reuse). */
export async function findRefreshToken(db: Db, token: string): Promise<OAuthRefreshToken | undefined> {
  const row = await db('oauth_refresh_tokens as r')
    .join('oauth_grants as g', 'g.id', 'r.grant_id')
    .where('r.token_hash', hashKey(token))
    .first('r.org_id', 'r.scopes as token_scopes', 'r.expires_at', 'r.rotated_at', 'g.*');
  if (!row) return undefined;
  return { orgId: row.org_id, grant: toGrant(row), scopes: row.token_scopes, expiresAt: row.expires_at, rotatedAt: row.rotated_at };
}

/**
 * Marks a refresh token exchanged (rotation). @returns true when this call did it; false when it was
 * already exchanged (the caller treats that as reuse)
 */
export async function rotateRefreshToken(db: Db, orgId: string, token: string): Promise<boolean> {
  const n = await db('oauth_refresh_tokens').where({ org_id: orgId, token_hash: hashKey(token) }).whereNull('rotated_at').update({ rotated_at: db.fn.now() });
  return n > 0;
}

/**
 * Reuse of a rotated refresh token (OAuth 2.0 Security BCP, RFC 9700 §4.14.2): the whole grant — every
 * access and refresh token of the family — is revoked.
 */
export async function revokeGrantFamily(db: Db, orgId: string, grantId: string): Promise<void> {
  await db.transaction(async (trx) => {
    await revokeGrantsWhere(trx as unknown as Db, orgId, { id: grantId });
  });
}

/**
 * RFC 7009 revocation of one token presented by `clientId`: an access token (its `api_keys` row), or a
 * refresh token (its whole grant, access tokens included, RFC 7009 §2.1). A token of another client or
 * an unknown token changes nothing.
 */
export async function revokeTokenOfClient(db: Db, clientId: string, token: string): Promise<void> {
  const hash = hashKey(token);
  await db.transaction(async (trx) => {
    const t = trx as unknown as Db;
    const access = await t('api_keys as k').join('oauth_grants as g', 'g.id', 'k.oauth_grant_id').where({ 'k.key_hash': hash, 'k.kind': 'oauth', 'g.client_id': clientId }).first('k.id', 'k.org_id');
    if (access) {
      await t('api_keys').where({ org_id: access.org_id, id: access.id }).update({ revoked_at: t.raw('coalesce(revoked_at, now())') });
      return;
    }
    const refresh = await t('oauth_refresh_tokens as r').join('oauth_grants as g', 'g.id', 'r.grant_id').where({ 'r.token_hash': hash, 'g.client_id': clientId }).first('r.org_id', 'r.grant_id');
    if (refresh) await revokeGrantsWhere(t, refresh.org_id, { id: refresh.grant_id });
  });
}

const PURGE_SQL = `WITH codes AS (DELETE FROM oauth_codes WHERE expires_at < now() - make_interval(secs => ?) RETURNING 1),
     refresh AS (DELETE FROM oauth_refresh_tokens WHERE expires_at < now() - make_interval(secs => ?) RETURNING 1),
     access AS (DELETE FROM api_keys WHERE kind = 'oauth' AND expires_at < now() - make_interval(secs => ?) RETURNING 1),
     sessions AS (DELETE FROM web_sessions WHERE expires_at < now() - make_interval(secs => ?) RETURNING 1)
     SELECT (SELECT count(*) FROM codes)::int AS codes, (SELECT count(*) FROM refresh)::int AS refresh_tokens,
            (SELECT count(*) FROM access)::int AS access_tokens, (SELECT count(*) FROM sessions)::int AS sessions`;

/**
 * Deletes what can no longer be used: authorization codes, refresh tokens, OAuth access tokens (`api_keys` of
 * kind `oauth`) and sign-in sessions that expired more than `graceSeconds` ago, in one statement. Deliberately
 * across organizations, like the webhook outbox: housekeeping serves every tenant (services/housekeeping.ts).
 * An expired credential is refused whether its row exists or not, so nothing a client can do changes.
 * @returns how many rows of each kind it deleted
 */
export async function purgeExpiredOAuthRows(db: Db, graceSeconds: number): Promise<{ codes: number; refreshTokens: number; accessTokens: number; sessions: number }> {
  const r = (await db.raw(PURGE_SQL, [graceSeconds, graceSeconds, graceSeconds, graceSeconds])).rows[0];
  return { codes: r.codes, refreshTokens: r.refresh_tokens, accessTokens: r.access_tokens, sessions: r.sessions };
}
