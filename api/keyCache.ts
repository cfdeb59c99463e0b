/**
 * In-process cache of resolved credentials, so most requests cost no key lookup. Revocation (any
 * update or delete of `api_keys`) reaches every API process at once through the change feed; the TTL
 * only bounds staleness should a notification be lost.
 */
import type { Db } from '../db';
import { ReadCache, type ChangeFeed } from '../db/changeFeed';
import { findKeyByHash, keyHashById, type ApiKeyInfo } from '../db/repositories/apiKeys';

/** Cache of key hash → active key. */
export class KeyCache {
  private readonly cache: ReadCache<ApiKeyInfo>;

  /** @param ttlSeconds how long a resolved key is trusted without a lookup (0 disables the cache) */
  constructor(private readonly db: Db, feed: ChangeFeed, ttlSeconds: number) {
    this.cache = new ReadCache<ApiKeyInfo>(feed, 'api_keys', ttlSeconds);
  }

  /** The cached active key of this hash, or undefined when it must be looked up with {@link resolve}. */
  peek(keyHash: string): ApiKeyInfo | undefined {
    return this.cache.peek(keyHash);
  }

  /** Resolves an active (not revoked) key by hash, from cache or Postgres. */
  resolve(keyHash: string): Promise<ApiKeyInfo | undefined> {
    return this.cache.get(keyHash, () => findKeyByHash(this.db, keyHash));
  }

  /** Key id → hash: immutable, so kept without invalidation (bounded). */
  private readonly hashes = new Map<string, string>();

  /**
   * Resolves an active key by id (a widget session token names its publishable key by id) through the
   * same cache and its invalidation as {@link resolve}: a revoked key is undefined in every API process on
   * its next check.
   */
  async resolveById(keyId: string): Promise<ApiKeyInfo | undefined> {
    let hash = this.hashes.get(keyId);
    if (!hash) {
      hash = await keyHashById(this.db, keyId);
      if (!hash) return undefined;
      if (this.hashes.size >= 10_000) this.hashes.clear();
      this.hashes.set(keyId, hash);
    }
    const info = this.peek(hash) ?? (await this.resolve(hash));
    return info && (!info.expiresAt || info.expiresAt.getTime() > Date.now()) ? info : undefined;
  }
}
