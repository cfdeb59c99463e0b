/**
 * A request's server span (docs/operations.md "Observability"), when tracing is on: started here, first in the
 * Koa stack, rather than by the OpenTelemetry HTTP instrumentation (whose incoming side is off: its per-request
 * attribute building and emitter binding cost more than the span itself, sampled or not; docs/benchmarks.md).
 * It continues an incoming W3C `traceparent`, is named after the route table (`METHOD /api/v1/<route>`), records
 * the operationId, the organization and the request id with the stable HTTP semantic conventions' method, path,
 * route and status, answers `traceparent` so a caller can find the trace, runs the rest of the request inside
 * its context, and ends when the response is done (a streamed body included). Without tracing (no propagator
 * registered) this is a pass-through.
 */
import { context, propagation, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import type { AppContext } from '../context';

const tracer = trace.getTracer('agent-control-plane');

export function traceContext(basePath: string) {
  // Untraced requests pass through synchronously: an async frame here cost every request a promise.
  return (ctx: AppContext, next: () => Promise<unknown>): Promise<unknown> =>
    // The no-op propagator of the API without the SDK has no fields; scrapes are not traces worth keeping.
    propagation.fields().length === 0 || ctx.path === '/metrics' ? next() : traced(ctx, next);
  async function traced(ctx: AppContext, next: () => Promise<unknown>): Promise<unknown> {
    const parent = propagation.extract(ROOT_CONTEXT, ctx.req.headers);
    // url.path is scrubbed of phone numbers by telemetry.ts's span processor, on sampled spans only.
    const span = tracer.startSpan(ctx.method, { kind: SpanKind.SERVER, attributes: { 'http.request.method': ctx.method, 'url.path': ctx.path } }, parent);
    const recording = span.isRecording();
    if (recording) {
      // The W3C traceparent (https://www.w3.org/TR/trace-context/#traceparent-header) of the server span.
      const { traceId, spanId } = span.spanContext();
      ctx.set('traceparent', `00-${traceId}-${spanId}-01`);
    }
    const finish = (err?: unknown) => {
      if (!recording) return;
      const route = ctx.state.route;
      if (route) {
        span.updateName(`${ctx.method} ${basePath}${route.path}`);
        span.setAttribute('http.route', `${basePath}${route.path}`);
        span.setAttribute('acp.operation_id', route.operationId);
      }
      if (ctx.state.auth?.orgId) span.setAttribute('acp.org_id', ctx.state.auth.orgId);
      if (ctx.state.requestId) span.setAttribute('acp.request_id', String(ctx.state.requestId));
      const status = err ? 500 : ctx.status;
      span.setAttribute('http.response.status_code', status);
      if (status >= 500) span.setStatus({ code: SpanStatusCode.ERROR, ...(err ? { message: (err as Error)?.name ?? 'error' } : {}) });
    };
    return context.with(trace.setSpan(parent, span), async () => {
      try {
        await next();
      } catch (err) {
        finish(err);
        span.end();
        throw err;
      }
      finish();
      // The response is written after the middleware returns (and a streamed body lasts longer): end with it.
      if (ctx.res.writableFinished || ctx.res.destroyed) span.end();
      else ctx.res.once('close', () => span.end());
    });
  }
}
