/**
 * In-process cache of resolved credentials, so most requests cost no key lookup. Revocation (any
 * update or delete of `api_keys`) reaches every API process at once through the change feed; the TTL
 * only bounds staleness should a notification be lost.
 */
import type { Db } from '../db';
import { ReadCache, type ChangeFeed } from '../db/changeFeed';
import { findKeyByHash, type ApiKeyInfo } from '../db/repositories/apiKeys';

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
}
