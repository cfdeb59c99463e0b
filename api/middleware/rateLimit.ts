/**
 * Per-key rate limiting with rate-limiter-flexible on Postgres (counters shared by every API process;
 * DESIGN.md "Rate limits"). Two policies per key (docs/api-notes.md "Rate limits"): `default`, the key's points
 * per window, and `burst`, at most `burstFactor` times the key's average rate within any `burstSeconds` window
 * (600 per 60 s → 20 per second), as Stripe's per-second and GitHub's secondary limits bound how fast a tenant
 * spends its budget. Every response of an authenticated call carries the IETF RateLimit header fields
 * (draft-ietf-httpapi-ratelimit-headers-10 §§ 3–4: a List of policies) for each policy that applies:
 * `RateLimit-Policy: "default";q=600;w=60, "burst";q=20;w=1` and `RateLimit: "default";r=<remaining>;t=<s>, "burst";r=…;t=…`;
 * a refusal is 429 `rate_limited` naming the policy that refused, with `Retry-After` (RFC 9110 § 10.2.3) in
 * seconds until that policy's window frees a point.
 */
import pg from 'pg';
import { RateLimiterPostgres, RateLimiterRes } from 'rate-limiter-flexible';
import { ApiError } from '../../domain/errors';
import { namedSession } from '../../db';
import { rateLimitRejections } from '../../metrics';
import type { AppContext } from '../context';
import type { AppConfig } from '../../config';
import type { Guard } from './auth';
import { setHeader } from '../http';

/** Points this process reserves per Postgres round trip: 1 (exact) below 1,000 per window, else 1 % of the limit, at most 100. */
export function leaseSize(points: number): number {
  return points < 1000 ? 1 : Math.min(100, Math.floor(points / 100));
}

/** Smallest burst limit in points: a key whose whole window budget is this small may spend it at once. */
export const MIN_BURST_POINTS = 10;

/**
 * The burst policy of a key allowed `points` per `windowSeconds`: ⌈factor × points × burstSeconds ÷ windowSeconds⌉
 * points per `burstSeconds`, at least MIN_BURST_POINTS; undefined when it could never bind (not below the window's
 * points, a burst window not shorter than the key's window, or factor or seconds 0: off).
 */
export function burstPolicy(points: number, windowSeconds: number, burst: { factor: number; seconds: number }): { points: number; seconds: number } | undefined {
  if (!(burst.factor > 0 && burst.seconds > 0) || burst.seconds >= windowSeconds) return undefined;
  const burstPoints = Math.max(MIN_BURST_POINTS, Math.ceil((burst.factor * points * burst.seconds) / windowSeconds - 1e-9));
  return burstPoints < points ? { points: burstPoints, seconds: burst.seconds } : undefined;
}

/** The service's rate-limit defaults (docs/configuration.md: `RATE_LIMIT_POINTS`, `RATE_LIMIT_WINDOW_SECONDS`, `RATE_LIMIT_BURST_FACTOR`, `RATE_LIMIT_BURST_SECONDS`). */
export interface RateLimitDefaults {
  points: number;
  windowSeconds: number;
  burstFactor?: number;
  burstSeconds?: number;
}

/** The service's defaults as the configuration holds them (config.ts loadConfig). */
export function rateLimitDefaults(config: Pick<AppConfig, 'rateLimitPoints' | 'rateLimitWindowSeconds' | 'rateLimitBurstFactor' | 'rateLimitBurstSeconds'>): RateLimitDefaults {
  return { points: config.rateLimitPoints, windowSeconds: config.rateLimitWindowSeconds, burstFactor: config.rateLimitBurstFactor, burstSeconds: config.rateLimitBurstSeconds };
}

/**
 * A key's policies (docs/api-notes.md "Wire conventions", the `RateLimit-Policy` field): its window — its own
 * `rateLimitPoints` per `rateLimitWindowSeconds` where the key sets them, else the service's — and the burst policy
 * that follows from it ({@link burstPolicy}; undefined when none binds). What the limiter enforces and `GET /meta` states.
 */
export function keyPolicies(
  key: { rateLimitPoints: number | null; rateLimitWindowSeconds: number | null },
  defaults: RateLimitDefaults,
): { points: number; windowSeconds: number; burst?: { points: number; seconds: number } } {
  const points = key.rateLimitPoints ?? defaults.points;
  const windowSeconds = key.rateLimitWindowSeconds ?? defaults.windowSeconds;
  return { points, windowSeconds, burst: burstPolicy(points, windowSeconds, { factor: defaults.burstFactor ?? 0, seconds: defaults.burstSeconds ?? 0 }) };
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
   * @param defaults requests per window and window length in seconds when a key has no override; `burstFactor`
   *   and `burstSeconds` shape every key's burst policy (`burstPolicy`; omitted: no burst limit)
   */
  constructor(
    databaseUrl: string,
    private readonly defaults: RateLimitDefaults,
  ) {
    this.pool = new pg.Pool({ ...namedSession(databaseUrl, 'agent-control-plane-rate-limits'), max: 10 });
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
   * Guard (api/middleware/auth.ts `Guard`) consuming one point of each of the key's policies per authenticated
   * request and setting the RateLimit-Policy and RateLimit headers; synchronous while local leases last (both
   * counters are taken at once, so an exactly counted key costs two concurrent upserts). Widget requests
   * (publishable key or widget session token) also take one point from the client IP's budget of `ipPoints`
   * per window (docs/api-notes.md "Widget").
   * @throws ApiError 429 rate_limited with Retry-After, naming the policy (`default` or `burst`) that refused
   */
  guard(ipPoints?: number): Guard {
    // A key's policies, headers and lease ids, worked out once per resolved key's `ctx.state.auth` (one object
    // per cached key, api/middleware/auth.ts) instead of several strings a request; a session's state is per request.
    type Budget = {
      points: number;
      windowSeconds: number;
      policy: string;
      lease: string;
      burst?: { points: number; seconds: number; lease: string };
    };
    const budgets = new WeakMap<object, Budget>();
    const budgetOf = (auth: NonNullable<AppContext['state']['auth']>): Budget => {
      let b = budgets.get(auth);
      if (b) return b;
      const { points, windowSeconds, burst } = keyPolicies(auth, this.defaults);
      b = {
        points,
        windowSeconds,
        policy: `"default";q=${points};w=${windowSeconds}` + (burst ? `, "burst";q=${burst.points};w=${burst.seconds}` : ''),
        lease: `${auth.keyId}/${points}/${windowSeconds}`,
        burst: burst && { ...burst, lease: `${auth.keyId}/${burst.points}/${burst.seconds}` },
      };
      if (auth.kind !== 'session') budgets.set(auth, b);
      return b;
    };
    const seconds = (ms: number): number => Math.max(0, Math.ceil(ms / 1000));
    const apply = (ctx: AppContext, b: Budget, win: Take, burst: Take | undefined): void => {
      const refused = !win.ok ? 'default' : burst && !burst.ok ? 'burst' : undefined;
      if (refused) {
        rateLimitRejections.inc({ limit: refused === 'default' ? 'key' : 'burst' });
        const byWindow = refused === 'default';
        const reset = Math.max(1, seconds((byWindow ? win : burst!).msBeforeNext));
        ctx.set('RateLimit', `"${refused}";r=0;t=${reset}`);
        const detail = byWindow
          ? `Rate limit of ${b.points} requests per ${b.windowSeconds} s exceeded; retry after ${reset} s`
          : `Burst limit of ${b.burst!.points} requests per ${b.burst!.seconds} s exceeded; retry after ${reset} s`;
        throw new ApiError(429, 'rate_limited', detail, { headers: { 'Retry-After': String(reset) } });
      }
      const own = `"default";r=${win.remaining};t=${seconds(win.msBeforeNext)}`;
      setHeader(ctx, 'RateLimit', burst ? `${own}, "burst";r=${burst.remaining};t=${seconds(burst.msBeforeNext)}` : own);
    };
    const byKey = (ctx: AppContext): void | Promise<void> => {
      const auth = ctx.state.auth!;
      const b = budgetOf(auth);
      setHeader(ctx, 'RateLimit-Policy', b.policy);
      const win = this.takeLocal(b.lease);
      const burst = b.burst && this.takeLocal(b.burst.lease);
      if (win && (!b.burst || burst)) return apply(ctx, b, win, burst);
      return Promise.all([
        win ?? this.take(auth.keyId, b.points, b.windowSeconds),
        b.burst && (burst ?? this.take(auth.keyId, b.burst.points, b.burst.seconds)),
      ]).then(([w, s]) => apply(ctx, b, w, s));
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
