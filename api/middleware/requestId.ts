/** Request id middleware: accepts a sane incoming `X-Request-Id`, else mints one; echoes it on every response. */
import crypto from 'node:crypto';
import type { Logger } from 'pino';
import type { AppContext } from '../context';

const SANE = /^[A-Za-z0-9._:-]{1,128}$/;

/**
 * Sets `ctx.state.requestId`, a child logger `ctx.state.log` (created on first use: most requests only
 * write the access line), and the `X-Request-Id` response header.
 */
export function requestId(logger: Logger) {
  return async (ctx: AppContext, next: () => Promise<unknown>) => {
    const incoming = ctx.get('x-request-id');
    const id = incoming && SANE.test(incoming) ? incoming : `req_${crypto.randomUUID().replace(/-/g, '')}`;
    ctx.state.requestId = id;
    let child: Logger | undefined;
    Object.defineProperty(ctx.state, 'log', {
      configurable: true,
      enumerable: true,
      get: () => (child ??= logger.child({ requestId: id })),
      set: (v: Logger) => (child = v),
    });
    ctx.set('X-Request-Id', id);
    await next();
  };
}
