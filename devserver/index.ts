/**
 * Embedded Temporal-compatible dev server (DESIGN.md "The embedded Temporal dev server").
 * Production always uses a real Temporal cluster; this serves `npm start` and the tests.
 */
import * as grpc from '@grpc/grpc-js';
import { Clock } from './clock';
import { Engine, LogFn } from './engine';
import { HttpApiHandler, httpApiHandler } from './http/gateway';
import { serveHttpApi } from './http/server';
import { buildImplementation, NO_COMMIT_WAIT, operatorServiceHandlers, testServiceHandlers, workflowServiceHandlers } from './service';
import { PgStore } from './store';
import { schedulerOf } from './schedules';
import { serveDevServerMetrics } from './metrics';
import { addSearchAttributes } from './searchAttributes';
import { HISTORY_PACK_DELAY_MS } from './engine/packedHistory';
import { RETENTION_SWEEP_MS } from './engine/retention';

export type { LogFn } from './engine';

/** Options for {@link startDevServer}. */
export interface DevServerOptions {
  /** TCP port; 0 or omitted picks a free port. */
  port?: number;
  /** Bind host, default 127.0.0.1. */
  host?: string;
  /** Postgres URL; state lives in schema `temporal_dev`. Omitted = in-memory, no durability. */
  databaseUrl?: string;
  /** Extra namespace to create besides `default`. */
  namespace?: string;
  /** Enables TestService time skipping (the clock jumps to the next timer when nothing runs). */
  timeSkipping?: boolean;
  /**
   * Whether time skipping starts locked (default false). The `<bin> <port>` test-server mode
   * starts locked, as @temporalio/testing unlocks it around `result()` and `sleep()`.
   */
  timeSkippingInitiallyLocked?: boolean;
  /** Log sink; default prints warnings and errors to stderr. */
  log?: LogFn;
  /** Port of Temporal's HTTP API (devserver/README.md "HTTP API"); 0 = a free port; omitted = no HTTP listener. */
  httpPort?: number;
  /** Port of the dev server's Prometheus `/metrics` (devserver/metrics.ts); 0 = a free port; omitted = none. */
  metricsPort?: number;
  /**
   * Wall-clock ms after a run closes before its history is held packed, off the V8 heap (engine/packedHistory.ts;
   * devserver/README.md "Memory"); default {@link HISTORY_PACK_DELAY_MS}.
   */
  historyPackDelayMs?: number;
  /**
   * Wall-clock ms between looks for closed runs past their namespace's retention, which are then deleted
   * (engine/retention.ts; devserver/README.md "Retention"); default {@link RETENTION_SWEEP_MS}. Not under time skipping.
   */
  retentionSweepMs?: number;
  /**
   * Custom search attributes registered in every namespace created at start, name → IndexedValueType
   * (as `temporal server start-dev --search-attribute KEY=Type`).
   */
  searchAttributes?: Record<string, number>;
}

/** A running dev server. */
export interface DevServer {
  /** `host:port`, for Connection.connect / NativeConnection.connect. */
  address: string;
  port: number;
  /** Temporal's HTTP API as a request handler (devserver/http/), for mounting beside the Web UI. */
  httpApi: HttpApiHandler;
  /** `http://host:port` of the HTTP API listener when `httpPort` was given. */
  httpUrl?: string;
  /** `http://host:port/metrics` when `metricsPort` was given. */
  metricsUrl?: string;
  /** Stops accepting calls, flushes pending writes to Postgres and closes the pool. */
  stop(): Promise<void>;
}

const defaultLog: LogFn = (level, msg, fields) => {
  if (level === 'warn' || level === 'error') process.stderr.write(`[devserver] ${level}: ${msg} ${fields ? JSON.stringify(fields) : ''}\n`);
};

/**
 * Starts the dev server: loads persisted state (when `databaseUrl` is given), re-arms timers and
 * tasks, and serves WorkflowService + TestService over gRPC.
 * Errors: rejects if the port cannot be bound or Postgres is unreachable.
 */
export async function startDevServer(opts: DevServerOptions = {}): Promise<DevServer> {
  const log = opts.log ?? defaultLog;
  const host = opts.host ?? '127.0.0.1';
  let store: PgStore | null = null;
  let loaded: Awaited<ReturnType<PgStore['load']>> | null = null;
  if (opts.databaseUrl) {
    store = new PgStore(opts.databaseUrl);
    await store.init();
    loaded = await store.load();
  }
  const clock = new Clock(loaded?.clockOffsetMs ?? 0);
  const engine = new Engine({ clock, log, timeSkipping: !!opts.timeSkipping, historyPackDelayMs: opts.historyPackDelayMs ?? HISTORY_PACK_DELAY_MS });
  engine.timeSkippingLocks = opts.timeSkippingInitiallyLocked ? 1 : 0;
  for (const ns of loaded?.namespaces ?? []) engine.namespaces.set(ns.name, ns);
  engine.sink = store;
  engine.ensureNamespace('default');
  if (opts.namespace) engine.ensureNamespace(opts.namespace);
  if (opts.searchAttributes) {
    for (const ns of [engine.namespace('default'), ...(opts.namespace ? [engine.namespace(opts.namespace)] : [])]) {
      addSearchAttributes(ns, opts.searchAttributes);
      engine.sink?.markNamespaceDirty(ns);
    }
  }
  // In close order, so each namespace's retention queue is built by appending (engine/retention.ts).
  const restored = [...(loaded?.executions ?? [])].sort((a, b) => (a.closeTime ?? 0) - (b.closeTime ?? 0));
  for (const e of restored) engine.restore(e);
  const scheduler = schedulerOf(engine);
  scheduler.sink = store;
  for (const s of loaded?.schedules ?? []) scheduler.restore(s);

  const afterEach = async (method?: string) => {
    if (!store) return;
    store.setClockOffset(clock.skippedMs);
    const p = store.commit().catch((err) => log('error', 'persisting state failed', { err: String(err) }));
    if (!method || !NO_COMMIT_WAIT.has(method)) await p;
  };
  if (store) await afterEach();
  // Retention: runs closed longer ago than their namespace keeps them are deleted, at start and then periodically.
  const deleteExpired = () => void (engine.deleteExpiredRuns() && afterEach());
  deleteExpired();
  const retentionTimer = setInterval(deleteExpired, Math.min(opts.retentionSweepMs ?? RETENTION_SWEEP_MS, 2 ** 31 - 1)).unref();
  const server = new grpc.Server({
    'grpc.max_receive_message_length': 128 * 1024 * 1024,
    'grpc.max_send_message_length': 128 * 1024 * 1024,
  });
  const logErr = (msg: string, fields: Record<string, unknown>) => log('error', msg, fields);
  const wf = buildImplementation('temporal.api.workflowservice.v1.WorkflowService', workflowServiceHandlers(engine), afterEach, logErr);
  server.addService(wf.definition, wf.implementation);
  const ts = buildImplementation('temporal.api.testservice.v1.TestService', testServiceHandlers(engine), afterEach, logErr);
  server.addService(ts.definition, ts.implementation);
  const op = buildImplementation('temporal.api.operatorservice.v1.OperatorService', operatorServiceHandlers(engine), afterEach, logErr);
  server.addService(op.definition, op.implementation);
  const httpApi = httpApiHandler([
    { name: 'temporal.api.workflowservice.v1.WorkflowService', implementation: wf.implementation },
    { name: 'temporal.api.operatorservice.v1.OperatorService', implementation: op.implementation },
  ]);
  const httpServer = opts.httpPort === undefined ? undefined : await serveHttpApi(httpApi, host, opts.httpPort);
  const metricsServer = opts.metricsPort === undefined ? undefined : await serveDevServerMetrics(host, opts.metricsPort);
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync(`${host}:${opts.port ?? 0}`, grpc.ServerCredentials.createInsecure(), (err, p) => (err ? reject(err) : resolve(p))),
  );
  log('info', 'dev server listening', { host, port, durable: !!store, timeSkipping: !!opts.timeSkipping });
  let stopped = false;
  return {
    address: `${host}:${port}`,
    port,
    httpApi,
    httpUrl: httpServer?.url,
    metricsUrl: metricsServer?.url,
    async stop() {
      if (stopped) return;
      stopped = true;
      clearInterval(retentionTimer);
      engine.stop();
      await httpServer?.close();
      await metricsServer?.close();
      await new Promise<void>((resolve) => {
        const t = setTimeout(() => {
          server.forceShutdown();
          resolve();
        }, 500);
        server.tryShutdown(() => {
          clearTimeout(t);
          resolve();
        });
      });
      if (store) {
        store.setClockOffset(clock.skippedMs);
        await store.close();
      }
    },
  };
}
