/**
 * Ties a request's server span (started by the OpenTelemetry HTTP instrumentation when tracing is on;
 * docs/operations.md "Observability") to the route table: names it `METHOD /api/v1/<route>`, records the
 * operationId and the organization, and answers `traceparent` so a caller can find the trace. An incoming
 * `traceparent` is continued by the instrumentation itself. Without tracing there is no recording span and
 * this is a pass-through.
 */
import { context, propagation, trace } from '@opentelemetry/api';
import type { AppContext } from '../context';

export function traceContext(basePath: string) {
  return async (ctx: AppContext, next: () => Promise<unknown>) => {
    const span = trace.getSpan(context.active());
    if (!span?.isRecording()) return next();
    const carrier: Record<string, string> = {};
    propagation.inject(context.active(), carrier);
    if (carrier.traceparent) ctx.set('traceparent', carrier.traceparent);
    try {
      await next();
    } finally {
      const route = ctx.state.route;
      if (route) {
        span.updateName(`${ctx.method} ${basePath}${route.path}`);
        span.setAttribute('http.route', `${basePath}${route.path}`);
        span.setAttribute('acp.operation_id', route.operationId);
      }
      if (ctx.state.auth?.orgId) span.setAttribute('acp.org_id', ctx.state.auth.orgId);
      if (ctx.state.requestId) span.setAttribute('acp.request_id', String(ctx.state.requestId));
    }
  };
}
