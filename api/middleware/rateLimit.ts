/**
 * Per-key rate limiting with rate-limiter-flexible on Postgres (counters shared by every API process;
 * DESIGN.md "Rate limits"). Every response of an authenticated call carries the IETF RateLimit header
 * fields (draft-ietf-httpapi-ratelimit-headers): `RateLimit-Policy: "default";q=<limit>;w=<window s>` and
 * `RateLimit: "default";r=<remaining>;t=<seconds to reset>`; a refusal is 429 `rate_limited` with `Retry-After`.
 */
import pg from 'pg';
import { RateLimiterPostgres, RateLimiterRes } from 'rate-limiter-flexible';
import { ApiError } from '../../domain/errors';
import { rateLimitRejections } from '../../metrics';
import type { AppContext } from '../context';
import type { Guard } from './auth';
import { setHeader } from '../http';

/** Points this process reserves per Postgres round trip: 1 (exact) below 1,000 per window, else 1 % of the limit, at most 100. */
export function leaseSize(points: number): number {
  return points < 1000 ? 1 : Math.min(100, Math.floor(points / 100));
}

/** Outcome of taking one point. */
interface Take {
  ok: boolean;
  remaining: number;
  msBeforeNext: number;
}

/**
 * Limiter instances keyed by (points, window), so per-key overrides share counters correctly.
 * High limits are served from small leases: a process consumes `leaseSize(points)` points in one
 * Postgres upsert and hands them out locally, so a limit can be reached up to (lease − 1) points early
 * per process, never exceeded. Limits under 1,000 per window are counted exactly, one upsert a request.
 */
export class RateLimits {
  private readonly limiters = new Map<string, RateLimiterPostgres>();
  private readonly leases = new Map<string, { available: number; remainingAfter: number; resetAt: number }>();
  private readonly pending = new Map<string, Promise<void>>();
  private readonly pool: pg.Pool;

  /**
   * @param databaseUrl Postgres holding the `rate_limits` table (created by the migrations)
   * @param defaults requests per window and window length in seconds when a key has no override
   */
  constructor(databaseUrl: string, private readonly defaults: { points: number; windowSeconds: number }) {
    this.pool = new pg.Pool({ connectionString: databaseUrl, max: 10 });
    this.pool.on('error', () => undefined);
  }

  private limiter(points: number, windowSeconds: number): RateLimiterPostgres {
    const id = `${points}/${windowSeconds}`;
    let l = this.limiters.get(id);
    if (!l) {
      l = new RateLimiterPostgres({
        storeClient: this.pool,
        storeType: 'pool',
        tableName: 'rate_limits',
        tableCreated: true,
        clearExpiredByTimeout: false,
        keyPrefix: `rl${id}`,
        points,
        duration: windowSeconds,
      });
      this.limiters.set(id, l);
    }
    return l;
  }

  /** One point from the open local lease of `id`, without waiting; undefined when none is open or a refill is in flight. */
  private takeLocal(id: string): Take | undefined {
    const now = Date.now();
    const lease = this.leases.get(id);
    if (lease && lease.available > 0 && lease.resetAt > now && !this.pending.has(id)) {
      lease.available -= 1;
      return { ok: true, remaining: lease.remainingAfter + lease.available, msBeforeNext: lease.resetAt - now };
    }
    return undefined;
  }

  /** Takes one point of `keyId`'s budget, from a local lease when one is open. */
  async take(keyId: string, points: number, windowSeconds: number): Promise<Take> {
    const id = `${keyId}/${points}/${windowSeconds}`;
    for (;;) {
      const now = Date.now();
      const lease = this.leases.get(id);
      if (lease && lease.available > 0 && lease.resetAt > now) {
        lease.available -= 1;
        return { ok: true, remaining: lease.remainingAfter + lease.available, msBeforeNext: lease.resetAt - now };
      }
      const inflight = this.pending.get(id);
      if (!inflight) break;
      await inflight;
    }
    const size = leaseSize(points);
    let res: RateLimiterRes;
    let ok = true;
    let done!: () => void;
    if (size > 1) this.pending.set(id, new Promise<void>((r) => (done = r)));
    try {
      res = await this.limiter(points, windowSeconds).consume(keyId, size);
    } catch (rej) {
      if (!(rej instanceof RateLimiterRes)) throw rej;
      res = rej;
      ok = false;
    } finally {
      if (size > 1) {
        this.pending.delete(id);
        done();
      }
    }
    // On refusal the counter still moved by `size`; the part that fit under the limit is ours.
    const granted = ok ? size : Math.max(0, size - (res.consumedPoints - points));
    const msBeforeNext = Math.max(0, res.msBeforeNext);
    if (granted === 0) return { ok: false, remaining: 0, msBeforeNext };
    if (this.leases.size > 10_000) this.leases.clear();
    if (size > 1) this.leases.set(id, { available: granted - 1, remainingAfter: res.remainingPoints, resetAt: Date.now() + msBeforeNext });
    return { ok: true, remaining: res.remainingPoints + granted - 1, msBeforeNext };
  }

  /**
   * Guard (api/middleware/auth.ts `Guard`) consuming one point per authenticated request and setting the
   * RateLimit-Policy and RateLimit headers; synchronous while a local lease lasts. Widget requests
   * (publishable key or widget session token) also take one point from the client IP's budget of
   * `ipPoints` per window (docs/api-notes.md "Widget").
   * @throws ApiError 429 rate_limited with Retry-After
   */
  guard(ipPoints?: number): Guard {
    const apply = (ctx: AppContext, points: number, windowSeconds: number, res: Take): void => {
      const reset = Math.max(1, Math.ceil(res.msBeforeNext / 1000));
      if (!res.ok) {
        rateLimitRejections.inc({ limit: 'key' });
        ctx.set('RateLimit', `"default";r=0;t=${reset}`);
        throw new ApiError(429, 'rate_limited', `Rate limit of ${points} requests per ${windowSeconds} s exceeded; retry after ${reset} s`, {
          headers: { 'Retry-After': String(reset) },
        });
      }
      setHeader(ctx, 'RateLimit', `"default";r=${res.remaining};t=${Math.max(0, Math.ceil(res.msBeforeNext / 1000))}`);
    };
    // A key's budget, policy header and lease id, worked out once per resolved key's `ctx.state.auth` (one object
    // per cached key, api/middleware/auth.ts) instead of three strings a request; a session's state is per request.
    type Budget = { points: number; windowSeconds: number; policy: string; lease: string };
    const budgets = new WeakMap<object, Budget>();
    const budgetOf = (auth: NonNullable<AppContext['state']['auth']>): Budget => {
      let b = budgets.get(auth);
      if (b) return b;
      const points = auth.rateLimitPoints ?? this.defaults.points;
      const windowSeconds = auth.rateLimitWindowSeconds ?? this.defaults.windowSeconds;
      b = { points, windowSeconds, policy: `"default";q=${points};w=${windowSeconds}`, lease: `${auth.keyId}/${points}/${windowSeconds}` };
      if (auth.kind !== 'session') budgets.set(auth, b);
      return b;
    };
    const byKey = (ctx: AppContext): void | Promise<void> => {
      const auth = ctx.state.auth!;
      const { points, windowSeconds, policy, lease } = budgetOf(auth);
      setHeader(ctx, 'RateLimit-Policy', policy);
      const local = this.takeLocal(lease);
      if (local) return apply(ctx, points, windowSeconds, local);
      return this.take(auth.keyId, points, windowSeconds).then((res) => apply(ctx, points, windowSeconds, res));
    };
    return (ctx: AppContext) => {
      const auth = ctx.state.auth;
      if (!auth) return;
      if (ipPoints && (auth.kind === 'publishable' || auth.kind === 'session')) {
        return this.take(`ip:${ctx.ip}`, ipPoints, this.defaults.windowSeconds).then((byIp) => {
          if (!byIp.ok) {
            rateLimitRejections.inc({ limit: 'ip' });
            const reset = Math.max(1, Math.ceil(byIp.msBeforeNext / 1000));
            throw new ApiError(429, 'rate_limited', `Too many widget requests from this address; retry after ${reset} s`, { headers: { 'Retry-After': String(reset) } });
          }
          return byKey(ctx);
        });
      }
      return byKey(ctx);
    };
  }



  /** Closes the counter pool. */
  async close(): Promise<void> {
    await this.pool.end().catch(() => undefined);
  }
}
