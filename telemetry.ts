/**
 * Where an operator reads the service's telemetry (docs/operations.md "Observability"): the Prometheus
 * listener of each process kind (`METRICS_PORT`) and the Temporal SDK's own exporter (`TEMPORAL_SDK_METRICS_PORT`).
 * The instruments themselves live in metrics.ts, the leaf every layer records into.
 */
import cluster from 'node:cluster';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import { AggregatorRegistry } from 'prom-client';
import { collectProcessMetrics, metricsRegistry } from './metrics';

/** A running metrics listener. */
export interface MetricsListener {
  /** `http://host:port/metrics`; undefined in a cluster child (its primary answers for it). */
  url?: string;
  close(): Promise<void>;
}

/**
 * Serves `GET /metrics` on `host:port` (0 = a free port) when `port` is set: this process's registry, or, in
 * the primary of several processes (`API_PROCESSES`, `WORKER_PROCESSES`), every child's registry summed by
 * prom-client's AggregatorRegistry over the cluster IPC channel. A cluster child binds nothing: it answers
 * its primary's requests. Without `port` nothing runs and nothing is collected.
 * @param role `primary` for the primary of several processes (it runs no requests itself)
 * @throws when the port cannot be bound
 */
export async function startMetricsListener(opts: { port?: number; host: string; logger: Logger; role?: 'primary' }): Promise<MetricsListener> {
  const none: MetricsListener = { close: async () => undefined };
  if (opts.port === undefined) return none;
  collectProcessMetrics();
  if (cluster.isWorker) {
    // Constructing it installs the child's answer to the primary's GET_METRICS requests (default registry).
    new AggregatorRegistry();
    return none;
  }
  const aggregator = opts.role === 'primary' ? new AggregatorRegistry() : undefined;
  const server = http.createServer((req, res) => {
    if ((req.method !== 'GET' && req.method !== 'HEAD') || req.url?.split('?')[0] !== '/metrics') {
      res.writeHead(404, { 'Content-Type': 'text/plain' }).end('not found: GET /metrics\n');
      return;
    }
    (aggregator ? aggregator.clusterMetrics() : metricsRegistry.metrics()).then(
      (text) => res.writeHead(200, { 'Content-Type': metricsRegistry.contentType }).end(req.method === 'HEAD' ? undefined : text),
      (err: Error) => {
        opts.logger.warn({ err }, 'metrics: collecting failed');
        res.writeHead(500, { 'Content-Type': 'text/plain' }).end(`${err.message}\n`);
      },
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port, opts.host, () => resolve());
  });
  const url = `http://${opts.host}:${(server.address() as AddressInfo).port}/metrics`;
  opts.logger.info({ url }, 'metrics listening');
  return {
    url,
    close: () => {
      server.closeAllConnections();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/**
 * Options of the Temporal SDK runtime's own Prometheus exporter (worker, activity and workflow task
 * metrics: `temporal_*`), from `TEMPORAL_SDK_METRICS_PORT` on `HOST`; a cluster child adds its
 * `ACP_PROCESS_INDEX`, since each process's exporter binds its own port. undefined when unset.
 */
export function temporalSdkMetricsOptions(env: NodeJS.ProcessEnv = process.env): { metrics: { prometheus: { bindAddress: string; useSecondsForDurations: boolean; countersTotalSuffix: boolean; unitSuffix: boolean } } } | undefined {
  const raw = env.TEMPORAL_SDK_METRICS_PORT;
  if (!raw) return undefined;
  const port = Number(raw) + Number(env.ACP_PROCESS_INDEX || 0);
  if (!Number.isInteger(port) || port <= 0 || port > 65535) throw new Error(`TEMPORAL_SDK_METRICS_PORT must be a port number, got "${raw}"`);
  return { metrics: { prometheus: { bindAddress: `${env.HOST || '127.0.0.1'}:${port}`, useSecondsForDurations: true, countersTotalSuffix: true, unitSuffix: true } } };
}

/** Whether the standard OTEL_* variables ask for traces: an OTLP endpoint or `OTEL_TRACES_EXPORTER` = otlp/console, unless disabled. */
export function tracingEnabled(env: NodeJS.ProcessEnv = process.env): boolean {
  if (env.OTEL_SDK_DISABLED === 'true') return false;
  const exporters = (env.OTEL_TRACES_EXPORTER ?? '').split(',').map((s) => s.trim()).filter(Boolean);
  if (exporters.includes('none')) return false;
  if (exporters.length) return exporters.some((e) => e === 'otlp' || e === 'console');
  return !!(env.OTEL_EXPORTER_OTLP_ENDPOINT || env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT);
}

/**
 * A URL as a span may record it: without its query (signed links carry tokens) and with long digit runs (phone
 * numbers in provider paths) masked, unless `OTEL_RECORD_CONTENT=true`.
 */
export function scrubUrl(url: string, env: NodeJS.ProcessEnv = process.env): string {
  if (env.OTEL_RECORD_CONTENT === 'true') return url;
  const q = url.indexOf('?');
  return (q < 0 ? url : url.slice(0, q)).replace(/(%2B|\+)?\d{7,}/gi, '{redacted}');
}

/** Span attributes that hold a URL or a part of one (OpenTelemetry HTTP semantic conventions, old and stable). */
const URL_ATTRIBUTES = ['http.url', 'http.target', 'url.full', 'url.path', 'url.query'] as const;

/**
 * A span processor that scrubs the URL attributes ({@link scrubUrl}; `url.query` emptied) of each span as it
 * starts. It sees recorded (sampled) spans only, so a request that is not sampled costs no scrubbing (the
 * instrumentations' start hooks ran for every request). First in the list: the exporters' processors see the result.
 */
function urlScrubbingProcessor(env: NodeJS.ProcessEnv): import('@opentelemetry/sdk-trace-base').SpanProcessor {
  return {
    onStart: (span) => {
      const attrs = span.attributes;
      for (const key of URL_ATTRIBUTES) {
        const v = attrs[key];
        if (typeof v === 'string' && v) span.setAttribute(key, key === 'url.query' ? '' : scrubUrl(v, env));
      }
    },
    onEnd: () => undefined,
    forceFlush: async () => undefined,
    shutdown: async () => undefined,
  };
}

/**
 * The batch span processor's queue and batch sizes (OpenTelemetry SDK configuration, `OTEL_BSP_*`): the standard
 * variables win; without them a larger queue and batch than the SDK's 2048 / 512, so a busy process (thousands of
 * spans a second when every request is sampled) exports a quarter as often and drops nothing between exports.
 */
export function batchSpanOptions(env: NodeJS.ProcessEnv = process.env): { maxQueueSize?: number; maxExportBatchSize?: number } {
  if (env.OTEL_BSP_MAX_QUEUE_SIZE || env.OTEL_BSP_MAX_EXPORT_BATCH_SIZE) return {};
  return { maxQueueSize: 8192, maxExportBatchSize: 2048 };
}

/** Running tracing: what the Temporal worker and clients are wired with. */
export interface Tracing {
  /** Interceptors of a Temporal Client: its start/signal/query calls carry the caller's trace to the workflow. */
  clientInterceptors: import('@temporalio/client').ClientInterceptors;
  /**
   * Worker options adding activity spans and workflow spans (the workflow interceptor module and its exporter sink).
   * @param opts.prebuiltBundle the worker gets a `workflowBundle` (built with {@link Tracing.workflowInterceptorModules})
   */
  workerOptions(opts?: { prebuiltBundle?: boolean }): Pick<import('@temporalio/worker').WorkerOptions, 'interceptors' | 'sinks'>;
  /** The workflow interceptor module a pre-built workflow bundle must include (`bundleWorkflowCode`'s `workflowInterceptorModules`). */
  workflowInterceptorModules: string[];
  /** Exports spans still held. */
  flush(): Promise<void>;
  /** Flushes and stops the SDK, and forgets it (the OpenTelemetry API falls back to its no-op). */
  shutdown(): Promise<void>;
}

let tracing: Tracing | undefined;

/** The tracing {@link startTracing} started in this process, if any. */
export function activeTracing(): Tracing | undefined {
  return tracing;
}

/**
 * Starts the OpenTelemetry SDK for Node when {@link tracingEnabled} (else does nothing and loads nothing, so
 * tracing off costs no more than the `@opentelemetry/api` no-op): the OTLP trace exporter of
 * `OTEL_EXPORTER_OTLP_PROTOCOL` (`http/protobuf`, the default, or `http/json`) to `OTEL_EXPORTER_OTLP_ENDPOINT`,
 * resource from `OTEL_SERVICE_NAME` / `OTEL_RESOURCE_ATTRIBUTES`, W3C trace context, and spans of outgoing HTTP
 * (node:http, undici/fetch; the API's server spans are api/middleware/tracing.ts's) and of SQL (pg, only inside a traced request or activity); the sampler of
 * `OTEL_TRACES_SAMPLER` / `OTEL_TRACES_SAMPLER_ARG` (default `parentbased_always_on`; `parentbased_traceidratio` keeps
 * a share of new traces, docs/operations.md "Observability"). Call it
 * at the top of an entry point, before the server and the database are opened. Idempotent.
 * @param defaultServiceName service.name when OTEL_SERVICE_NAME is unset
 */
export function startTracing(defaultServiceName: string, env: NodeJS.ProcessEnv = process.env): Tracing | undefined {
  if (tracing || !tracingEnabled(env)) return tracing;
  /* eslint-disable @typescript-eslint/no-require-imports -- loaded only when tracing is on */
  const { NodeSDK } = require('@opentelemetry/sdk-node') as typeof import('@opentelemetry/sdk-node');
  const { BatchSpanProcessor, ConsoleSpanExporter } = require('@opentelemetry/sdk-trace-base') as typeof import('@opentelemetry/sdk-trace-base');
  const { Resource, envDetectorSync } = require('@opentelemetry/resources') as typeof import('@opentelemetry/resources');
  const { HttpInstrumentation } = require('@opentelemetry/instrumentation-http') as typeof import('@opentelemetry/instrumentation-http');
  const { UndiciInstrumentation } = require('@opentelemetry/instrumentation-undici') as typeof import('@opentelemetry/instrumentation-undici');
  const { PgInstrumentation } = require('@opentelemetry/instrumentation-pg') as typeof import('@opentelemetry/instrumentation-pg');
  const temporalOtel = require('@temporalio/interceptors-opentelemetry') as typeof import('@temporalio/interceptors-opentelemetry');
  const { context, propagation, trace } = require('@opentelemetry/api') as typeof import('@opentelemetry/api');
  /* eslint-enable @typescript-eslint/no-require-imports */

  const protocol = env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL || env.OTEL_EXPORTER_OTLP_PROTOCOL || 'http/protobuf';
  const exporters = (env.OTEL_TRACES_EXPORTER || 'otlp').split(',').map((s) => s.trim());
  const batch = batchSpanOptions(env);
  const processors = exporters.map((name) => {
    if (name === 'console') return new BatchSpanProcessor(new ConsoleSpanExporter(), batch);
    if (protocol === 'http/json') {
      const { OTLPTraceExporter } = require('@opentelemetry/exporter-trace-otlp-http') as typeof import('@opentelemetry/exporter-trace-otlp-http'); // eslint-disable-line @typescript-eslint/no-require-imports
      return new BatchSpanProcessor(new OTLPTraceExporter(), batch);
    }
    if (protocol !== 'http/protobuf') throw new Error(`OTEL_EXPORTER_OTLP_PROTOCOL=${protocol} is not supported; use "http/protobuf" or "http/json"`);
    const { OTLPTraceExporter } = require('@opentelemetry/exporter-trace-otlp-proto') as typeof import('@opentelemetry/exporter-trace-otlp-proto'); // eslint-disable-line @typescript-eslint/no-require-imports
    return new BatchSpanProcessor(new OTLPTraceExporter(), batch);
  });
  const resource = new Resource({ 'service.name': env.OTEL_SERVICE_NAME || defaultServiceName }).merge(envDetectorSync.detect());
  const instrumentations = [
      // URLs are scrubbed by urlScrubbingProcessor, on sampled spans only. The API's server spans are its own
      // (api/middleware/tracing.ts): this instrumentation's incoming side cost more per request than the span.
      new HttpInstrumentation({
        disableIncomingRequestInstrumentation: true,
        // Outgoing node:http spans only inside a trace (no root span per background poll).
        requireParentforOutgoingSpans: true,
      }),
      new UndiciInstrumentation({ requireParentforSpans: true }),
      new PgInstrumentation({ requireParentSpan: true, enhancedDatabaseReporting: false }),
  ];
  const scrubbing = env.OTEL_RECORD_CONTENT === 'true' ? [] : [urlScrubbingProcessor(env)];
  const sdk = new NodeSDK({ resource, autoDetectResources: false, spanProcessors: [...scrubbing, ...processors], instrumentations });
  sdk.start();
  // Modules loaded before the SDK started are patched on their next require (require-in-the-middle).
  for (const m of ['http', 'https', 'pg']) require(m); // eslint-disable-line @typescript-eslint/no-require-imports

  const workflowInterceptorModules = [require.resolve('@temporalio/interceptors-opentelemetry/lib/workflow-interceptors')];
  const spanProcessor = {
    forceFlush: () => Promise.all(processors.map((p) => p.forceFlush())).then(() => undefined),
    onStart: () => undefined,
    onEnd: (span: import('@opentelemetry/sdk-trace-base').ReadableSpan) => processors.forEach((p) => p.onEnd(span)),
    shutdown: () => Promise.all(processors.map((p) => p.shutdown())).then(() => undefined),
  };
  tracing = {
    clientInterceptors: { workflow: [new temporalOtel.OpenTelemetryWorkflowClientInterceptor()] },
    workerOptions: (opts = {}) => ({
      interceptors: {
        ...(opts.prebuiltBundle ? {} : { workflowModules: workflowInterceptorModules }),
        activity: [(ctx) => ({ inbound: new temporalOtel.OpenTelemetryActivityInboundInterceptor(ctx), outbound: new temporalOtel.OpenTelemetryActivityOutboundInterceptor(ctx) })],
      },
      sinks: { exporter: temporalOtel.makeWorkflowExporter(spanProcessor, resource) } as never,
    }),
    workflowInterceptorModules,
    flush: () => spanProcessor.forceFlush(),
    shutdown: async () => {
      tracing = undefined;
      await sdk.shutdown();
      for (const i of instrumentations) i.disable();
      trace.disable();
      context.disable();
      propagation.disable();
    },
  };
  return tracing;
}
