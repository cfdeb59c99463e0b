/**
 * Credentials (spec "Authentication"): secret keys `<brand>_sk_live_<random>`, stored only as a
 * SHA-256 hash. The random part is 24 bytes (192 bits), so a fast hash is safe: there is nothing to
 * brute-force. Every function takes the organization id except `findKeyByHash`, whose whole purpose
 * is to resolve the organization from the key.
 */
import crypto from 'node:crypto';
import type { Db } from '../index';
import { newId, randomBase62 } from '../ids';

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
}

/** SHA-256 hex of a whole key. */
export function hashKey(key: string): string {
  return crypto.createHash('sha256').update(key, 'utf8').digest('hex');
}

function toInfo(r: Record<string, any>): ApiKeyInfo {
  return {
    id: r.id,
    orgId: r.org_id,
    kind: r.kind,
    name: r.name,
    displayPrefix: r.display_prefix,
    scopes: r.scopes,
    rateLimitPoints: r.rate_limit_points,
    rateLimitWindowSeconds: r.rate_limit_window_seconds,
    createdAt: r.created_at,
    revokedAt: r.revoked_at,
  };
}

/**
 * Mints a secret key for an organization. The key is returned once and never stored.
 * @param opts.brand key prefix brand, e.g. `acp` → `acp_sk_live_…`
 * @param opts.rateLimitPoints requests per window for this key (null: deployment default)
 */
export async function createSecretKey(
  db: Db,
  orgId: string,
  opts: { brand: string; scopes: string[]; name?: string; rateLimitPoints?: number; rateLimitWindowSeconds?: number },
): Promise<{ key: string; info: ApiKeyInfo }> {
  const key = `${opts.brand}_sk_live_${randomBase62(24)}`;
  const [row] = await db('api_keys')
    .insert({
      id: newId('key'),
      org_id: orgId,
      kind: 'secret',
      name: opts.name ?? '',
      display_prefix: key.slice(0, opts.brand.length + 13),
      key_hash: hashKey(key),
      scopes: opts.scopes,
      rate_limit_points: opts.rateLimitPoints ?? null,
      rate_limit_window_seconds: opts.rateLimitWindowSeconds ?? null,
    })
    .returning('*');
  return { key, info: toInfo(row) };
}

/** Keys of one organization, newest first, revoked ones included. */
export async function listKeys(db: Db, orgId: string): Promise<ApiKeyInfo[]> {
  const rows = await db('api_keys').where({ org_id: orgId }).orderBy('created_at', 'desc');
  return rows.map(toInfo);
}

/**
 * Revokes a key of the organization.
 * @returns the revoked key, or undefined when no key of that organization has that id
 */
export async function revokeKey(db: Db, orgId: string, keyId: string): Promise<ApiKeyInfo | undefined> {
  const [row] = await db('api_keys')
    .where({ org_id: orgId, id: keyId })
    .update({ revoked_at: db.raw('coalesce(revoked_at, now())') })
    .returning('*');
  return row ? toInfo(row) : undefined;
}

/** Resolves an active (not revoked) key by the hash of the presented key. */
export async function findKeyByHash(db: Db, keyHash: string): Promise<ApiKeyInfo | undefined> {
  const row = await db('api_keys').where({ key_hash: keyHash }).whereNull('revoked_at').first();
  return row ? toInfo(row) : undefined;
}

/** Finds which organization owns a key id (operator CLI `keys revoke <id>`). */
export async function findKeyOwner(db: Db, keyId: string): Promise<string | undefined> {
  const row = await db('api_keys').where({ id: keyId }).first('org_id');
  return row?.org_id;
}
