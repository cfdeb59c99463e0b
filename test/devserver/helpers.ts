/**
 * Shared fixtures for the dev server tests: the workflow bundle (built once per run), unique task
 * queues, and a helper that runs a real SDK worker against a dev server while a callback runs.
 */
import { temporal } from '@temporalio/proto';
import path from 'node:path';
import crypto from 'node:crypto';
import { Client, Connection } from '@temporalio/client';
import { bundleWorkflowCode, DefaultLogger, NativeConnection, Runtime, Worker, WorkerOptions } from '@temporalio/worker';
import * as activities from './workflows/activities';
import { startDevServer, type DevServer, type DevServerOptions } from '../../devserver';

let bundlePromise: Promise<{ code: string }> | undefined;

// Install the SDK runtime quietly before any connection creates the default (INFO-logging) one.
try {
  Runtime.install({ logger: new DefaultLogger('ERROR') });
} catch {
  // already installed by another suite in this process
}

/** The test workflows bundled once per mocha run. */
export function workflowBundle(): Promise<{ code: string }> {
  bundlePromise ??= bundleWorkflowCode({
    workflowsPath: path.join(__dirname, 'workflows', 'index.ts'),
    logger: { trace() {}, debug() {}, info() {}, warn() {}, error() {}, log() {} } as never,
  });
  return bundlePromise;
}

/** A task queue name unique to one test. */
export function uniqueQueue(label: string): string {
  return `${label}-${crypto.randomBytes(4).toString('hex')}`;
}

/** What {@link useDevServer} gives a suite: the server, a client and native connection to it, and its WorkflowService. */
export interface DevServerSuite {
  server: DevServer;
  conn: Awaited<ReturnType<typeof connect>>;
  svc: Client['workflowService'];
}

/**
 * A dev server and a connection to it for the enclosing mocha suite, started in `before` and closed in `after`.
 * @param options the server's options (default none: in memory, no time skipping)
 * @returns the suite's handles, set once `before` ran (read them inside hooks and tests)
 */
export function useDevServer(options: DevServerOptions = {}): DevServerSuite {
  const suite = {} as DevServerSuite;
  before(async () => {
    suite.server = await startDevServer(options);
    suite.conn = await connect(suite.server.address);
    suite.svc = suite.conn.client.workflowService;
  });
  after(async () => {
    await suite.conn?.close();
    await suite.server?.stop();
  });
  return suite;
}

/** Client + native connection for a dev server address. */
export async function connect(address: string): Promise<{ client: Client; connection: Connection; native: NativeConnection; close(): Promise<void> }> {
  const connection = await Connection.connect({ address });
  const native = await NativeConnection.connect({ address });
  const client = new Client({ connection });
  return {
    client,
    connection,
    native,
    async close() {
      await connection.close();
      await native.close();
    },
  };
}

/** Runs `fn` while a worker polls `taskQueue`; the worker is shut down afterwards. */
export async function withWorker<T>(
  native: NativeConnection,
  taskQueue: string,
  fn: (worker: Worker) => Promise<T>,
  extra: Partial<WorkerOptions> = {},
): Promise<T> {
  const worker = await Worker.create({
    connection: native,
    taskQueue,
    workflowBundle: await workflowBundle(),
    activities,
    ...extra,
  });
  return worker.runUntil(fn(worker));
}

/**
 * Starts a workflow of type `raw` on `taskQueue` through the raw gRPC service (no SDK client options in between),
 * with a unique workflow id and request id; `extra` adds or overrides request fields.
 * @returns the workflow id and the run id the server answered
 */
export async function startRawWorkflow(
  svc: Client['workflowService'],
  taskQueue: string,
  extra: Partial<temporal.api.workflowservice.v1.IStartWorkflowExecutionRequest> = {},
  namespace = 'default',
): Promise<{ workflowId: string; runId: string }> {
  const workflowId = uniqueQueue('raw');
  const r = await svc.startWorkflowExecution({ namespace, workflowId, workflowType: { name: 'raw' }, taskQueue: { name: taskQueue }, requestId: uniqueQueue('req'), ...extra });
  return { workflowId, runId: r.runId! };
}
