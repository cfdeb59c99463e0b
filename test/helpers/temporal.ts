/**
 * Temporal fixtures for workflow tests (DESIGN.md "Tests that stay fast"): one embedded dev server per
 * run (time skipping on, in memory), the service's workflow code bundled once per run, and a worker on
 * a unique task queue per test. Everything runs the real @temporalio/client and @temporalio/worker.
 */
import crypto from 'node:crypto';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { InternalConnectionOptionsSymbol } from '@temporalio/client/lib/connection';
import { bundleWorkflowCode, NativeConnection, Worker, type WorkerOptions } from '@temporalio/worker';
import { startDevServer, type DevServer } from '../../devserver';
import { installTemporalRuntime } from '../../worker';

installTemporalRuntime();

let serverPromise: Promise<DevServer> | undefined;
let bundlePromise: Promise<{ code: string }> | undefined;
let connections: Promise<{ client: Client; connection: Connection; native: NativeConnection }> | undefined;

/**
 * The run's dev server (started on first use, stopped by the root hook). Time skipping is available
 * but locked: time runs normally unless a test opens a window with `withTimeSkipping` or `skipTime`.
 */
export function testDevServer(): Promise<DevServer> {
  serverPromise ??= startDevServer({ timeSkipping: true, timeSkippingInitiallyLocked: true, log: () => undefined });
  return serverPromise;
}

/**
 * Runs `fn` with time skipping unlocked: whenever no workflow or activity task is outstanding, the
 * server's clock jumps to the next timer (as @temporalio/testing does around `result()`).
 */
export async function withTimeSkipping<T>(fn: () => Promise<T>): Promise<T> {
  const { connection } = await testTemporal();
  await connection.testService!.unlockTimeSkipping({});
  try {
    return await fn();
  } finally {
    await connection.testService!.lockTimeSkipping({});
  }
}

/** Moves the server's clock forward by `ms` milliseconds (firing due timers), then locks again. */
export async function skipTime(ms: number): Promise<void> {
  const { connection } = await testTemporal();
  await connection.testService!.unlockTimeSkippingWithSleep({ duration: { seconds: Math.floor(ms / 1000) as never, nanos: (ms % 1000) * 1e6 } });
}

/** The server's current (possibly skipped) time. */
export async function serverNow(): Promise<Date> {
  const { connection } = await testTemporal();
  const r = await connection.testService!.getCurrentTime({});
  const t = r.time!;
  return new Date(Number(t.seconds ?? 0) * 1000 + Math.floor((t.nanos ?? 0) / 1e6));
}

/** A client and a native (worker) connection to the run's dev server. */
export function testTemporal(): Promise<{ client: Client; connection: Connection; native: NativeConnection; address: string }> {
  connections ??= (async () => {
    const server = await testDevServer();
    // The SDK builds its TestService stub (time skipping) only when asked to, as @temporalio/testing does.
    const connection = await Connection.connect({ address: server.address, [InternalConnectionOptionsSymbol]: { supportsTestService: true } } as never);
    const native = await NativeConnection.connect({ address: server.address });
    return { client: new Client({ connection }), connection, native };
  })();
  return connections.then(async (c) => ({ ...c, address: (await testDevServer()).address }));
}

/** workflows/index.ts bundled once per run. */
export function serviceWorkflowBundle(): Promise<{ code: string }> {
  bundlePromise ??= bundleWorkflowCode({
    workflowsPath: path.join(__dirname, '..', '..', 'workflows', 'index.ts'),
    logger: { trace() {}, debug() {}, info() {}, warn() {}, error() {}, log() {} } as never,
  });
  return bundlePromise;
}

/** A task queue name unique to one test. */
export function uniqueTaskQueue(label: string): string {
  return `${label}-${crypto.randomBytes(4).toString('hex')}`;
}

/**
 * Starts a worker for the service's workflows on `taskQueue` with the given activities.
 * @returns the worker and a stop function that shuts it down and waits for it
 */
export async function startTestWorker(
  taskQueue: string,
  activities: WorkerOptions['activities'],
  extra: Partial<WorkerOptions> = {},
): Promise<{ worker: Worker; stop(): Promise<void> }> {
  const { native } = await testTemporal();
  const worker = await Worker.create({ connection: native, taskQueue, workflowBundle: await serviceWorkflowBundle(), activities, ...extra });
  const running = worker.run();
  return {
    worker,
    stop: async () => {
      if (worker.getState() === 'RUNNING') worker.shutdown();
      await running.catch(() => undefined);
    },
  };
}

/**
 * Starts a worker for the service's workflows against the server at `address` on its own connection
 * (restart tests stop and start their own durable dev server, so they cannot use the run's one).
 * @returns a stop function that shuts the worker down and closes its connection
 */
export async function startWorkerAt(
  address: string,
  taskQueue: string,
  activities: WorkerOptions['activities'],
): Promise<{ stop(): Promise<void> }> {
  const native = await NativeConnection.connect({ address });
  const worker = await Worker.create({ connection: native, taskQueue, workflowBundle: await serviceWorkflowBundle(), activities });
  const running = worker.run();
  return {
    async stop() {
      worker.shutdown();
      await running.catch(() => undefined);
      await native.close();
    },
  };
}

/** Stops the run's dev server and connections (root hook). */
export async function stopTestTemporal(): Promise<void> {
  if (connections) {
    const c = await connections.catch(() => undefined);
    await c?.connection.close().catch(() => undefined);
    await c?.native.close().catch(() => undefined);
  }
  if (serverPromise) await (await serverPromise.catch(() => undefined))?.stop();
  connections = undefined;
  serverPromise = undefined;
}
