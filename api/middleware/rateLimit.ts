/**
 * Per-key rate limiting with rate-limiter-flexible on Postgres (counters shared by every API process;
 * DESIGN.md "Rate limits"). Every response of an authenticated call carries the IETF RateLimit header
 * fields (draft-ietf-httpapi-ratelimit-headers): `RateLimit-Policy: "default";q=<limit>;w=<window s>` and
 * `RateLimit: "default";r=<remaining>;t=<seconds to reset>`; a refusal is 429 `rate_limited` with `Retry-After`.
 */
import pg from 'pg';
import { RateLimiterPostgres, RateLimiterRes } from 'rate-limiter-flexible';
import { ApiError } from '../errors';
import type { AppContext } from '../context';

/** Limiter instances keyed by (points, window), so per-key overrides share counters correctly. */
export class RateLimits {
  private readonly limiters = new Map<string, RateLimiterPostgres>();
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

  /** Middleware consuming one point per authenticated request. */
  middleware() {
    return async (ctx: AppContext, next: () => Promise<unknown>) => {
      const auth = ctx.state.auth;
      if (!auth) return next();
      const points = auth.rateLimitPoints ?? this.defaults.points;
      const windowSeconds = auth.rateLimitWindowSeconds ?? this.defaults.windowSeconds;
      ctx.set('RateLimit-Policy', `"default";q=${points};w=${windowSeconds}`);
      let res: RateLimiterRes;
      try {
        res = await this.limiter(points, windowSeconds).consume(auth.keyId, 1);
      } catch (rej) {
        if (rej instanceof RateLimiterRes) {
          const retry = Math.max(1, Math.ceil(rej.msBeforeNext / 1000));
          ctx.set('RateLimit', `"default";r=0;t=${retry}`);
          throw new ApiError(429, 'rate_limited', `Rate limit of ${points} requests per ${windowSeconds} s exceeded; retry after ${retry} s`, {
            headers: { 'Retry-After': String(retry) },
          });
        }
        throw rej;
      }
      ctx.set('RateLimit', `"default";r=${res.remainingPoints};t=${Math.max(0, Math.ceil(res.msBeforeNext / 1000))}`);
      return next();
    };
  }

  /** Closes the counter pool. */
  async close(): Promise<void> {
    await this.pool.end().catch(() => undefined);
  }
}
