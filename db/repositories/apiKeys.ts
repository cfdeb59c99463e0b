/**
 * Credentials (spec "Authentication" 1 and 3): secret keys `<brand>_sk_live_<random>` and publishable
 * keys `<brand>_pk_live_<random>`, stored only as a SHA-256 hash. The random part is 24 bytes (192 bits),
 * so a fast hash is safe: there is nothing to brute-force. Every function takes the organization id
 * except `findKeyByHash`, whose whole purpose is to resolve the organization from the key.
 */
import crypto from 'node:crypto';
import type { Db } from '../index';
import { newId, randomBase62 } from '../ids';
import { keysetPage, type Page } from '../pagination';
import { fromColumns, fromNullableColumns } from '../rows';

/** A credential as listed (never the secret). */
export interface ApiKeyInfo {
  id: string;
  orgId: string;
  kind: 'secret' | 'publishable' | 'oauth';
  name: string;
  displayPrefix: string;
  scopes: string[];
  rateLimitPoints: number | null;
  rateLimitWindowSeconds: number | null;
  createdAt: Date;
  revokedAt: Date | null;
  /** The key stops authenticating at this instant (null: never); a rotation sets it to the end of the grace period. */
  expiresAt: Date | null;
  /** Last request it authenticated, to within the batching interval of api/keyUsage.ts (null: never used). */
  lastUsedAt: Date | null;
  /** Publishable keys: the agent the key is pinned to (null for other kinds). */
  agentId: string | null;
  /** Publishable keys: the browser origins it serves, normalized (domain/keys.ts); null for other kinds. */
  allowedOrigins: string[] | null;
  /** The key a rotation replaced with this one (null otherwise). */
  rotatedFrom: string | null;
  /** OAuth access tokens: the grant that issued it (null for other kinds). */
  oauthGrantId: string | null;
  /**
   * Secret and publishable keys: the OAuth grant whose access token minted this key, directly or through
   * keys it minted (null: minted by an owner's key, the CLI or the bootstrap). Deleting the app stops it.
   */
  viaGrantId: string | null;
}

/** Kinds of credential the API manages: `secret` at /api-keys, `publishable` at /publishable-keys. */
export type ManagedKeyKind = 'secret' | 'publishable';

/**
 * SHA-256 hex of a whole key (UTF-8). Every authenticated request hashes its key: the one-shot
 * `crypto.hash` (Node ≥ 20.12) costs half of a Hash object's create/update/digest; older Node uses the latter.
 */
export const hashKey: (key: string) => string =
  typeof crypto.hash === 'function' ? (key) => crypto.hash('sha256', key, 'hex') : (key) => crypto.createHash('sha256').update(key, 'utf8').digest('hex');

function toInfo(r: Record<string, any>): ApiKeyInfo {
  return {
    ...fromColumns(r, ['id', 'orgId', 'kind', 'name', 'displayPrefix', 'scopes', 'rateLimitPoints', 'rateLimitWindowSeconds', 'createdAt', 'revokedAt']),
    ...fromNullableColumns(r, ['expiresAt', 'lastUsedAt', 'agentId', 'allowedOrigins', 'rotatedFrom', 'oauthGrantId', 'viaGrantId']),
  };
}

/** Length of the display prefix: `<brand>_sk_live_` or `<brand>_pk_live_` plus 4 random characters. */
function displayPrefix(key: string, brand: string): string {
  return key.slice(0, brand.length + 13);
}

/** What each kind of key is called: id prefix (`key_…`, `pk_…`) and the kind part of the key (`<brand>_sk_live_…`). */
const KEY_FORMS = { secret: { idPrefix: 'key', infix: 'sk' }, publishable: { idPrefix: 'pk', infix: 'pk' } } as const;

/**
 * Mints a key of `kind` and stores its row: hash and display prefix only, never the key.
 * @param columns the kind's own columns (`scopes`, limits, agent, origins …)
 * @returns the key (shown once) and its stored info
 */
async function insertKey(
  db: Db,
  orgId: string,
  kind: keyof typeof KEY_FORMS,
  brand: string,
  name: string | undefined,
  columns: Record<string, unknown>,
): Promise<{ key: string; info: ApiKeyInfo }> {
  const form = KEY_FORMS[kind];
  const key = `${brand}_${form.infix}_live_${randomBase62(24)}`;
  const [row] = await db('api_keys')
    .insert({ id: newId(form.idPrefix), org_id: orgId, kind, name: name ?? '', display_prefix: displayPrefix(key, brand), key_hash: hashKey(key), ...columns })
    .returning('*');
  return { key, info: toInfo(row) };
}

/**
 * Mints a secret key for an organization. The key is returned once and never stored.
 * @param opts.brand key prefix brand, e.g. `acp` → `acp_sk_live_…`
 * @param opts.rateLimitPoints requests per window for this key (null: deployment default)
 */
export async function createSecretKey(
  db: Db,
  orgId: string,
  opts: {
    brand: string;
    scopes: string[];
    name?: string;
    rateLimitPoints?: number | null;
    rateLimitWindowSeconds?: number | null;
    /** When the key stops authenticating (default: never). */
    expiresAt?: Date | null;
    rotatedFrom?: string | null;
    /** The OAuth grant whose token minted it (see {@link ApiKeyInfo.viaGrantId}). */
    viaGrantId?: string | null;
  },
): Promise<{ key: string; info: ApiKeyInfo }> {
  return insertKey(db, orgId, 'secret', opts.brand, opts.name, {
    scopes: opts.scopes,
    rate_limit_points: opts.rateLimitPoints ?? null,
    rate_limit_window_seconds: opts.rateLimitWindowSeconds ?? null,
    expires_at: opts.expiresAt ?? null,
    rotated_from: opts.rotatedFrom ?? null,
    via_grant_id: opts.viaGrantId ?? null,
  });
}

/**
 * Mints a publishable key `<brand>_pk_live_…` pinned to one agent (spec "Authentication" 3). It holds no
 * scope: it authenticates only routes whose auth kind is `publishable` (api/middleware/auth.ts). The
 * caller checks that the agent belongs to the organization; the foreign key only guarantees it exists.
 * @param opts.allowedOrigins normalized origins (domain/keys.ts `parseAllowedOrigins`)
 */
export async function createPublishableKey(
  db: Db,
  orgId: string,
  opts: { brand: string; agentId: string; allowedOrigins: string[]; name?: string; viaGrantId?: string | null },
): Promise<{ key: string; info: ApiKeyInfo }> {
  return insertKey(db, orgId, 'publishable', opts.brand, opts.name, {
    scopes: [],
    agent_id: opts.agentId,
    allowed_origins: opts.allowedOrigins,
    via_grant_id: opts.viaGrantId ?? null,
  });
}

/** Rows of one organization and kind that still authenticate: not revoked, not expired. */
function activeKeys(db: Db, orgId: string, kind: ManagedKeyKind) {
  return db('api_keys')
    .where({ org_id: orgId, kind })
    .whereNull('revoked_at')
    .where((q) => q.whereNull('expires_at').orWhere('expires_at', '>', db.fn.now()));
}

/**
 * One page of the organization's keys of one kind that still authenticate (a rotated key in its grace
 * period included, with its `expiresAt`), oldest first.
 * @throws InvalidCursorError for a cursor this list did not issue
 */
export async function listActiveKeys(
  db: Db,
  orgId: string,
  kind: ManagedKeyKind,
  page: { limit: number; cursor?: string },
): Promise<Page<ApiKeyInfo>> {
  return keysetPage(activeKeys(db, orgId, kind).select('*'), { ...page, column: 'seq', direction: 'asc', map: toInfo });
}

/** One key of the organization and kind that still authenticates, or undefined (also for another organization's). */
export async function getActiveKey(db: Db, orgId: string, kind: ManagedKeyKind, keyId: string): Promise<ApiKeyInfo | undefined> {
  const row = await activeKeys(db, orgId, kind).where({ id: keyId }).first();
  return row ? toInfo(row) : undefined;
}

/**
 * Rotates a secret key: mints a new key with the same name, scopes, rate limit and expiry, and makes the
 * old one stop at `now + graceSeconds` (or at its own expiry when sooner), in one transaction. The old
 * row is locked so two concurrent rotations cannot both extend it.
 * @param opts.graceSeconds seconds the old key keeps working (0: it stops at once)
 * @param opts.check called with the old key before anything is written (the caller's scope check); may throw
 * @param opts.viaGrantId the OAuth grant whose token asks (the new key then comes from that app); when
 *   null the new key keeps the old one's origin, so a rotation never frees a key from its app
 * @returns the new key (shown once) and the old key as it is now, or undefined when no active secret key
 *   of that organization has that id
 */
export async function rotateSecretKey(
  db: Db,
  orgId: string,
  keyId: string,
  opts: { brand: string; graceSeconds: number; check?: (old: ApiKeyInfo) => void; viaGrantId?: string | null },
): Promise<{ key: string; info: ApiKeyInfo; previous: ApiKeyInfo } | undefined> {
  return db.transaction(async (trx) => {
    const row = await activeKeys(trx as unknown as Db, orgId, 'secret').where({ id: keyId }).forUpdate().first();
    if (!row) return undefined;
    const old = toInfo(row);
    opts.check?.(old);
    const created = await createSecretKey(trx as unknown as Db, orgId, {
      brand: opts.brand,
      scopes: old.scopes,
      name: old.name,
      rateLimitPoints: old.rateLimitPoints,
      rateLimitWindowSeconds: old.rateLimitWindowSeconds,
      expiresAt: old.expiresAt,
      rotatedFrom: old.id,
      viaGrantId: opts.viaGrantId ?? old.viaGrantId,
    });
    const [prev] = await trx('api_keys')
      .where({ org_id: orgId, id: keyId })
      .update({
        expires_at: trx.raw(`least(coalesce(expires_at, 'infinity'::timestamptz), now() + make_interval(secs => ?))`, [opts.graceSeconds]),
      })
      .returning('*');
    return { key: created.key, info: created.info, previous: toInfo(prev) };
  });
}

/**
 * Records when keys were last used: one statement for a whole batch (api/keyUsage.ts), each row
 * matched by organization and id, never moving `last_used_at` backwards.
 * @param uses key id, its organization and the instant of its latest request
 */
export async function recordKeyUses(db: Db, uses: Array<{ keyId: string; orgId: string; at: Date }>): Promise<void> {
  if (!uses.length) return;
  const values = uses.map(() => '(?, ?, ?::timestamptz)').join(', ');
  const bindings = uses.flatMap((u) => [u.keyId, u.orgId, u.at.toISOString()]);
  await db.raw(
    `UPDATE api_keys k SET last_used_at = greatest(coalesce(k.last_used_at, '-infinity'::timestamptz), v.at)
       FROM (VALUES ${values}) AS v(id, org_id, at)
      WHERE k.id = v.id AND k.org_id = v.org_id`,
    bindings,
  );
}

/** Keys of one organization, newest first, revoked ones included. */
export async function listKeys(db: Db, orgId: string): Promise<ApiKeyInfo[]> {
  const rows = await db('api_keys').where({ org_id: orgId }).orderBy('created_at', 'desc');
  return rows.map(toInfo);
}

/**
 * Revokes a key of the organization (idempotent: a revoked key keeps its first `revokedAt`).
 * @param kind only a key of this kind (the API revokes secret and publishable keys on separate paths)
 * @param check called with the key, locked, before it is revoked (the caller's scope check); may throw
 * @returns the revoked key, or undefined when no key of that organization has that id
 */
export async function revokeKey(db: Db, orgId: string, keyId: string, kind?: ManagedKeyKind, check?: (k: ApiKeyInfo) => void): Promise<ApiKeyInfo | undefined> {
  const where = { org_id: orgId, id: keyId, ...(kind ? { kind } : {}) };
  const revoke = async (t: Db) => {
    const [row] = await t('api_keys').where(where).update({ revoked_at: t.raw('coalesce(revoked_at, now())') }).returning('*');
    return row ? toInfo(row) : undefined;
  };
  if (!check) return revoke(db);
  return db.transaction(async (trx) => {
    const t = trx as unknown as Db;
    const row = await t('api_keys').where(where).forUpdate().first();
    if (!row) return undefined;
    check(toInfo(row));
    return revoke(t);
  });
}

/**
 * Resolves an active key (not revoked, not expired) by the hash of the presented key. A cached result can
 * outlive its expiry, so callers check `expiresAt` again (api/middleware/auth.ts).
 */
export async function findKeyByHash(db: Db, keyHash: string): Promise<ApiKeyInfo | undefined> {
  const row = await db('api_keys')
    .where({ key_hash: keyHash })
    .whereNull('revoked_at')
    .where((q) => q.whereNull('expires_at').orWhere('expires_at', '>', db.fn.now()))
    .first();
  return row ? toInfo(row) : undefined;
}

/** Finds which organization owns a key id (operator CLI `keys revoke <id>`). */
export async function findKeyOwner(db: Db, keyId: string): Promise<string | undefined> {
  const row = await db('api_keys').where({ id: keyId }).first('org_id');
  return row?.org_id;
}

/**
 * True when some live publishable key (any organization) lists `origin` (normalized), or lists
 * `http://localhost:*` and `origin` is a localhost origin. Answers CORS preflights, which carry no key
 * (docs/api-notes.md "Widget"); the request that follows is checked against its own key or session token.
 */
export async function originAllowedByAnyKey(db: Db, origin: string): Promise<boolean> {
  const localhost = /^http:\/\/localhost(:\d+)?$/.test(origin);
  const row = await db('api_keys')
    .where({ kind: 'publishable' })
    .whereNull('revoked_at')
    .andWhere((q) => q.whereNull('expires_at').orWhere('expires_at', '>', db.fn.now()))
    .andWhere((q) => {
      q.whereRaw('? = ANY(allowed_origins)', [origin]);
      if (localhost) q.orWhereRaw("'http://localhost:*' = ANY(allowed_origins)");
    })
    .first('id');
  return !!row;
}

/**
 * The hash of a key by its id, revoked or not (a key's hash never changes): how a widget session token,
 * which names its publishable key by id, finds the key's state through the key cache (api/keyCache.ts).
 * @returns the hash, or undefined when no key has that id
 */
export async function keyHashById(db: Db, keyId: string): Promise<string | undefined> {
  const row = await db('api_keys').where({ id: keyId }).first('key_hash');
  return row?.key_hash;
}
