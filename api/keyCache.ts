/**
 * In-process cache of resolved credentials, so a request costs no key lookup in the common case.
 * Revocation is pushed to every API process at once through Postgres LISTEN/NOTIFY (channel
 * `api_key_revoked`, payload = key hash); the TTL bounds staleness if a notification is ever missed.
 */
import pg from 'pg';
import type { Db } from '../db';
import { findKeyByHash, type ApiKeyInfo } from '../db/repositories/apiKeys';

/** Cache of key hash → active key. */
export class KeyCache {
  private readonly entries = new Map<string, { info: ApiKeyInfo; expiresAt: number }>();
  private listener?: pg.Client;
  private closed = false;

  /** @param ttlSeconds how long a resolved key is trusted without a lookup (0 disables the cache) */
  constructor(private readonly db: Db, private readonly ttlSeconds: number) {}

  /** Starts listening for revocations (idempotent). Failure to listen only shortens nothing: the TTL still applies. */
  async start(databaseUrl: string): Promise<void> {
    if (this.listener || this.ttlSeconds === 0) return;
    const client = new pg.Client({ connectionString: databaseUrl });
    client.on('error', () => undefined);
    client.on('notification', (msg) => {
      if (msg.channel === 'api_key_revoked' && msg.payload) this.entries.delete(msg.payload);
    });
    await client.connect();
    await client.query('LISTEN api_key_revoked');
    this.listener = client;
  }

  /** Resolves an active key by hash, from cache or Postgres. */
  async resolve(keyHash: string): Promise<ApiKeyInfo | undefined> {
    const now = Date.now();
    const hit = this.entries.get(keyHash);
    if (hit && hit.expiresAt > now) return hit.info;
    const info = await findKeyByHash(this.db, keyHash);
    if (info && this.ttlSeconds > 0 && !this.closed) {
      if (this.entries.size > 10_000) this.entries.clear();
      this.entries.set(keyHash, { info, expiresAt: now + this.ttlSeconds * 1000 });
    } else {
      this.entries.delete(keyHash);
    }
    return info;
  }

  /** Stops listening and forgets everything. */
  async close(): Promise<void> {
    this.closed = true;
    this.entries.clear();
    const l = this.listener;
    this.listener = undefined;
    if (l) await l.end().catch(() => undefined);
  }
}
