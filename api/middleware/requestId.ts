/** Request id middleware: accepts a sane incoming `X-Request-Id`, else mints one; echoes it on every response. */
import crypto from 'node:crypto';
import type { Logger } from 'pino';
import type { AppContext, AppState } from '../context';
import { setHeader } from '../http';

const SANE = /^[A-Za-z0-9._:-]{1,128}$/;

/**
 * The request's `ctx.state`: the request id, and a child logger made on first use (most requests only
 * write the access line). A class rather than a getter defined on a plain object per request, which cost
 * a `defineProperty` and left `ctx.state` a slow dictionary object for every later access.
 */
class RequestState implements Pick<AppState, 'requestId' | 'log' | 'auditStored'> {
  readonly #logger: Logger;
  #child?: Logger;
  /** See AppState.auditStored (declared here so every request's state keeps one shape). */
  auditStored?: number = undefined;

  constructor(
    logger: Logger,
    public requestId: string,
  ) {
    this.#logger = logger;
  }

  /** A child logger with the request id (pino). */
  get log(): Logger {
    return (this.#child ??= this.#logger.child({ requestId: this.requestId }));
  }

  set log(v: Logger) {
    this.#child = v;
  }
}

/** Random bytes for {@link mintId}, refilled from the CSPRNG 256 ids at a time. */
const pool = Buffer.alloc(16 * 256);
let used = pool.length;

/** `req_` + 32 lowercase hex digits: 128 random bits (one hex encoding per request instead of a UUID cut in five). */
function mintId(): string {
  if (used === pool.length) {
    crypto.randomFillSync(pool);
    used = 0;
  }
  used += 16;
  return `req_${pool.toString('hex', used - 16, used)}`;
}

/**
 * Sets `ctx.state` to the request's state (`requestId`, the lazily made child logger `log`) and the
 * `X-Request-Id` response header. Must run first: it replaces Koa's empty `ctx.state`.
 */
export function requestId(logger: Logger) {
  return (ctx: AppContext, next: () => Promise<unknown>): Promise<unknown> => {
    const incoming = ctx.get('x-request-id');
    const id = incoming && SANE.test(incoming) ? incoming : mintId();
    ctx.state = new RequestState(logger, id) as unknown as AppState;
    setHeader(ctx, 'X-Request-Id', id);
    return next();
  };
}
