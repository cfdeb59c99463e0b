/**
 * One LISTEN connection per process on channel `acp_changes` (written by the triggers of migrations
 * 20261122000050 and 20261123000300), fanned out to subscribers by table name. Used to evict in-process
 * read caches. A payload is `<table>:<entry>[,<entry>…]`, each entry `<key>[:<version>]`: one per row of
 * the statement that changed them (up to 200 a notification).
 */
import pg from 'pg';
import { namedSession } from './index';

/** `version` is present for versioned tables (sms_registrations). */
type Listener = (key: string, version?: number) => void;

/** Subscribes callbacks to row changes `(table, key)`. */
export class ChangeFeed {
  private client?: pg.Client;
  private readonly listeners = new Map<string, Set<Listener>>();
  /** Called when the connection is lost: caches must drop everything, since changes may be missed. */
  private readonly lostListeners = new Set<() => void>();
  private connected = false;

  /** True while notifications are being received; caches bypass themselves otherwise. */
  get live(): boolean {
    return this.connected;
  }

  /** Opens the LISTEN connection. @throws when Postgres cannot be reached */
  async start(databaseUrl: string): Promise<void> {
    if (this.client) return;
    const client = new pg.Client(namedSession(databaseUrl, 'agent-control-plane-change-feed'));
    client.on('error', () => this.lost());
    client.on('end', () => this.lost());
    client.on('notification', (msg) => {
      if (msg.channel !== 'acp_changes' || !msg.payload) return;
      const colon = msg.payload.indexOf(':');
      const fns = this.listeners.get(msg.payload.slice(0, colon));
      if (colon < 0 || !fns) return;
      for (const entry of msg.payload.slice(colon + 1).split(',')) {
        const [key, version] = entry.split(':');
        for (const fn of fns) fn(key, version === undefined ? undefined : Number(version));
      }
    });
    await client.connect();
    await client.query('LISTEN acp_changes');
    this.client = client;
    this.connected = true;
  }

  private lost(): void {
    if (!this.connected) return;
    this.connected = false;
    for (const fn of this.lostListeners) fn();
  }

  /** Calls `fn(key)` for every change of `table`. */
  on(table: string, fn: Listener): void {
    if (!this.listeners.has(table)) this.listeners.set(table, new Set());
    this.listeners.get(table)!.add(fn);
  }

  /** Calls `fn` when the feed stops (notifications may have been missed). */
  onLost(fn: () => void): void {
    this.lostListeners.add(fn);
  }

  /** Closes the connection. */
  async close(): Promise<void> {
    this.connected = false;
    const c = this.client;
    this.client = undefined;
    if (c) await c.end().catch(() => undefined);
  }
}

/**
 * A small TTL cache evicted by the change feed. Loads are single-flight per key, and a load that
 * overlaps an eviction is not stored (so a stale read never outlives the notification that killed it).
 * While the feed is not live, nothing is cached.
 */
export class ReadCache<V> {
  private readonly entries = new Map<string, { value: V; expiresAt: number }>();
  private readonly generations = new Map<string, number>();
  private readonly inflight = new Map<string, Promise<V | undefined>>();

  /**
   * @param feed the change feed; `table` names the rows this cache holds
   * @param ttlSeconds upper bound on staleness should a notification be lost (0 disables caching)
   * @param opts.versionOf version of a cached value, for tables whose notifications carry one
   * @param opts.maxEntries entries kept at most (cleared wholesale beyond it)
   */
  constructor(
    private readonly feed: ChangeFeed,
    table: string,
    private readonly ttlSeconds: number,
    opts: { versionOf?: (value: V) => number; maxEntries?: number } = {},
  ) {
    this.versionOf = opts.versionOf;
    this.maxEntries = opts.maxEntries ?? 10_000;
    feed.on(table, (key, version) => {
      const hit = this.entries.get(key);
      // A change this process already holds (its own write) needs no eviction.
      if (hit && version !== undefined && this.versionOf && this.versionOf(hit.value) >= version && !this.inflight.has(key)) return;
      this.evict(key);
    });
    feed.onLost(() => this.entries.clear());
  }

  private readonly versionOf?: (value: V) => number;
  private readonly maxEntries: number;

  /** Forgets one key. */
  evict(key: string): void {
    this.entries.delete(key);
    if (this.generations.size >= this.maxEntries) this.generations.clear();
    this.generations.set(key, (this.generations.get(key) ?? 0) + 1);
  }

  /** Stores a value just written by this process (read-your-writes without a round trip). */
  set(key: string, value: V): void {
    if (!this.feed.live || this.ttlSeconds === 0) return;
    if (this.entries.size >= this.maxEntries) this.entries.clear();
    this.entries.set(key, { value, expiresAt: Date.now() + this.ttlSeconds * 1000 });
  }

  /** The cached value when one is held and fresh, without waiting (hot paths stay synchronous); else undefined. */
  peek(key: string): V | undefined {
    const hit = this.entries.get(key);
    return hit && hit.expiresAt > Date.now() ? hit.value : undefined;
  }

  /** The cached value, or `load()`'s result (cached when defined). */
  async get(key: string, load: () => Promise<V | undefined>): Promise<V | undefined> {
    const hit = this.entries.get(key);
    if (hit && hit.expiresAt > Date.now()) return hit.value;
    const pending = this.inflight.get(key);
    if (pending) return pending;
    const gen = this.generations.get(key) ?? 0;
    const p = load().then(
      (value) => {
        this.inflight.delete(key);
        if (value !== undefined && (this.generations.get(key) ?? 0) === gen) this.set(key, value);
        return value;
      },
      (err) => {
        this.inflight.delete(key);
        throw err;
      },
    );
    this.inflight.set(key, p);
    return p;
  }

  /** Drops everything. */
  clear(): void {
    this.entries.clear();
  }
}
