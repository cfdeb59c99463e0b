/**
 * `lastUsedAt` of keys without a write per request (docs/api-notes.md "Credentials and tenancy"):
 * each authenticated request only notes its key in an in-process map; the map is written in one
 * statement every `flushIntervalMs` (db/repositories/apiKeys.ts `recordKeyUses`). A key's
 * `lastUsedAt` therefore lags by at most the interval (5 s by default), and by the last interval's
 * requests should the process die.
 */
import type { Logger } from 'pino';
import { isServerShutdown, type Db } from '../db';
import { recordKeyUses } from '../db/repositories/apiKeys';

/** Batches key uses in memory and flushes them periodically. */
export class KeyUsageTracker {
  /** Key id → its organization and the time of its last use (ms since the epoch). */
  private pending = new Map<string, { orgId: string; at: number }>();
  private readonly timer: NodeJS.Timeout;
  private flushing: Promise<void> = Promise.resolve();

  /** @param flushIntervalMs milliseconds between two writes of the batch */
  constructor(private readonly db: Db, private readonly logger: Logger, flushIntervalMs: number) {
    this.timer = setInterval(() => void this.flush(), flushIntervalMs);
    this.timer.unref();
  }

  /** Notes that a key authenticated a request now (no I/O). */
  touch(keyId: string, orgId: string): void {
    // Every authenticated request: update the noted use in place instead of allocating a Date and an entry.
    const noted = this.pending.get(keyId);
    if (noted) noted.at = Date.now();
    else this.pending.set(keyId, { orgId, at: Date.now() });
  }

  /** Writes every noted use now (also called on close); a failed write is logged and its uses dropped. */
  flush(): Promise<void> {
    this.flushing = this.flushing.then(async () => {
      if (!this.pending.size) return;
      const batch = this.pending;
      this.pending = new Map();
      try {
        await recordKeyUses(this.db, [...batch].map(([keyId, u]) => ({ keyId, orgId: u.orgId, at: new Date(u.at) })));
      } catch (err) {
        if (isServerShutdown(err)) this.logger.info('Postgres is shutting down: the key uses noted since the last write are not recorded');
        else this.logger.warn({ err }, 'could not record key uses');
      }
    });
    return this.flushing;
  }

  /** Stops the timer and writes what is pending. */
  async close(): Promise<void> {
    clearInterval(this.timer);
    await this.flush();
  }
}
