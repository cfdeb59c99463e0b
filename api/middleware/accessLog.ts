/**
 * One structured (pino) line per request: method, path, status, duration (ms), organization and key id.
 * Never the Authorization header, query secrets or bodies.
 */
import type { Logger } from 'pino';
import type { AppContext } from '../context';
import { httpRequestDuration, statusClass } from '../../metrics';

/** Logs after the response is decided (errors included, since the problem middleware sits inside). */
export function accessLog(logger: Logger) {
  // The line's fields are fixed above and never hold a credential, so it is written by a child without
  // the root's redaction: its wildcard paths (`*.key`, `*.secret`) walk every field of every line and
  // cost more CPU than the rest of the line (docs/benchmarks.md).
  const lines = logger.child({}, { redact: [] });
  return async (ctx: AppContext, next: () => Promise<unknown>) => {
    // performance.now(): a monotonic double (ms), where hrtime.bigint() allocated three BigInts a request.
    const start = performance.now();
    try {
      await next();
    } finally {
      const ms = performance.now() - start;
      const seconds = ms / 1e3;
      httpRequestDuration.observe({ operation_id: ctx.state.route?.operationId ?? 'unmatched', http_request_method: ctx.method, status_class: statusClass(ctx.status) }, seconds);
      const level = ctx.status >= 500 ? 'error' : 'info';
      // The root logger with the request id as a field: no child logger per request.
      if (lines.isLevelEnabled(level)) lines[level](
        {
          requestId: ctx.state.requestId,
          method: ctx.method,
          path: ctx.path,
          status: ctx.status,
          durationMs: Math.round(ms * 100) / 100,
          orgId: ctx.state.auth?.orgId,
          keyId: ctx.state.auth?.keyId,
          operationId: ctx.state.route?.operationId,
        },
        'request',
      );
    }
  };
}
