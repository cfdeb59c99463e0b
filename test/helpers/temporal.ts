/**
 * Temporal fixtures for workflow tests (DESIGN.md "Tests that stay fast"): one embedded dev server per
 * run (time skipping on, in memory), the service's workflow code bundled once per run, and a worker on
 * a unique base task queue per test, polling every queue of that base as the service's worker does. Everything runs the real @temporalio/client and @temporalio/worker.
 */
import crypto from 'node:crypto';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { InternalConnectionOptionsSymbol } from '@temporalio/client/lib/connection';
import { bundleWorkflowCode, NativeConnection, Worker, type WorkerOptions } from '@temporalio/worker';
import { startDevServer, type DevServer } from '../../devserver';
import { installTemporalRuntime, serviceQueues, shareResourceController, WORKFLOW_BUNDLER_OPTIONS } from '../../worker';
import { collectHistories } from './histories';

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
  const window = { closed: false };
  openWindows.add(window);
  try {
    return await fn();
  } finally {
    await closeWindow(window);
  }
}

/**
 * `withTimeSkipping` windows not closed yet. A test that fails or times out inside one leaves it open (its
 * `fn` still runs); the cleanup after the test closes it, so the next window's unlock finds time locked.
 */
const openWindows = new Set<{ closed: boolean }>();

/** Locks time skipping again for `window`, once (its own `finally` and the cleanup after a test may both ask). */
async function closeWindow(window: { closed: boolean }): Promise<void> {
  if (window.closed) return;
  window.closed = true;
  openWindows.delete(window);
  const { connection } = await testTemporal();
  await connection.testService!.lockTimeSkipping({});
}

/** `skipTime` sleeps the server has not ended: time skipping stays unlocked until each one ends. */
const pendingSkips = new Set<Promise<unknown>>();

/** Moves the server's clock forward by `ms` milliseconds (firing due timers), then locks again. */
export async function skipTime(ms: number): Promise<void> {
  const { connection } = await testTemporal();
  const sleep = connection.testService!.unlockTimeSkippingWithSleep({ duration: { seconds: Math.floor(ms / 1000) as never, nanos: (ms % 1000) * 1e6 } });
  pendingSkips.add(sleep);
  try {
    await sleep;
  } finally {
    pendingSkips.delete(sleep);
  }
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
    ...WORKFLOW_BUNDLER_OPTIONS,
    logger: { trace() {}, debug() {}, info() {}, warn() {}, error() {}, log() {} } as never,
  });
  return bundlePromise;
}

/** A task queue name unique to one test. */
export function uniqueTaskQueue(label: string): string {
  return `${label}-${crypto.randomBytes(4).toString('hex')}`;
}

/**
 * Creates one Worker per queue of the base `taskQueue` (worker.ts `serviceQueues`: each with the
 * service's slot options, the bulk queues' tuners sharing one resource controller as worker.ts shares it, then
 * `extra`) and runs them.
 * @returns the Workers (the main queue's first) and a stop function that shuts them down and waits
 */
async function runServiceWorkers(
  connection: NativeConnection,
  taskQueue: string,
  activities: WorkerOptions['activities'],
  extra: Partial<WorkerOptions>,
): Promise<{ workers: Worker[]; stop(): Promise<void> }> {
  const workflowBundle = await serviceWorkflowBundle();
  const workers: Worker[] = [];
  const queues = serviceQueues(taskQueue);
  const options = shareResourceController(queues);
  for (const [i, q] of queues.entries()) workers.push(await Worker.create({ ...options[i], connection, taskQueue: q.taskQueue, workflowBundle, activities, ...extra }));
  const running = workers.map((w) => w.run());
  return {
    workers,
    stop: async () => {
      for (const w of workers) if (w.getState() === 'RUNNING') w.shutdown();
      await Promise.all(running.map((r) => r.catch(() => undefined)));
    },
  };
}

/**
 * Starts a worker for the service's workflows on every queue of the base `taskQueue` with the given activities.
 * @returns the main queue's Worker, every queue's Workers, and a stop function that shuts them down and waits
 */
export async function startTestWorker(
  taskQueue: string,
  activities: WorkerOptions['activities'],
  extra: Partial<WorkerOptions> = {},
): Promise<{ worker: Worker; workers: Worker[]; stop(): Promise<void> }> {
  const { native } = await testTemporal();
  const running = await runServiceWorkers(native, taskQueue, activities, extra);
  return { worker: running.workers[0], ...running };
}

/**
 * Starts a worker for the service's workflows (every queue of the base `taskQueue`) against the server at `address` on its own connection
 * (restart tests stop and start their own durable dev server, so they cannot use the run's one).
 * @returns a stop function that shuts the worker down and closes its connection
 */
export async function startWorkerAt(
  address: string,
  taskQueue: string,
  activities: WorkerOptions['activities'],
): Promise<{ stop(): Promise<void> }> {
  const native = await NativeConnection.connect({ address });
  const running = await runServiceWorkers(native, taskQueue, activities, {});
  return {
    async stop() {
      await running.stop();
      await native.close();
    },
  };
}

// ---------------------------------------------------------------------------------------------
// Nothing a test leaves on the shared dev server outlives it (DESIGN.md "Tests that stay fast").
// Time skipping is one switch for the whole server: the clock jumps only while no workflow or
// activity task is outstanding anywhere (devserver/README.md "Time skipping"). A workflow left behind
// by a failed test, whose worker is gone, keeps a task outstanding forever (at once, or when its next
// timer or retry fires) and so holds every later test's time skipping. The root hooks (test/hooks.ts)
// therefore terminate such workflows and delete such schedules, and close the time-skipping windows
// a failed test left open: after a failed test what it started, after each top-level suite everything.
// ---------------------------------------------------------------------------------------------

/** A workflow (by id, so every run of it) or a schedule on the run's dev server. */
interface Leftover {
  namespace: string;
  kind: 'workflow' | 'schedule';
  id: string;
}

const leftoverKey = (l: Leftover) => `${l.namespace}\u0000${l.kind}\u0000${l.id}`;

/**
 * The running workflows and the schedules of every namespace of the run's dev server, by key.
 * @returns undefined when the run has not started its dev server (nothing to clean)
 */
async function runningOnTestServer(): Promise<Map<string, Leftover> | undefined> {
  if (!serverPromise) return undefined;
  const c = await testTemporal().catch(() => undefined);
  if (!c) return undefined;
  const svc = c.connection.workflowService;
  const found = new Map<string, Leftover>();
  const add = (l: Leftover) => found.set(leftoverKey(l), l);
  const namespaces: string[] = [];
  let token: Uint8Array | undefined;
  do {
    const r: Awaited<ReturnType<typeof svc.listNamespaces>> = await svc.listNamespaces({ pageSize: 100, nextPageToken: token });
    for (const n of r.namespaces ?? []) if (n.namespaceInfo?.name) namespaces.push(n.namespaceInfo.name);
    token = r.nextPageToken?.length ? r.nextPageToken : undefined;
  } while (token);
  for (const namespace of namespaces) {
    token = undefined;
    do {
      const r: Awaited<ReturnType<typeof svc.listWorkflowExecutions>> = await svc.listWorkflowExecutions({ namespace, query: 'ExecutionStatus="Running"', pageSize: 1000, nextPageToken: token });
      for (const e of r.executions ?? []) if (e.execution?.workflowId) add({ namespace, kind: 'workflow', id: e.execution.workflowId });
      token = r.nextPageToken?.length ? r.nextPageToken : undefined;
    } while (token);
    do {
      const r: Awaited<ReturnType<typeof svc.listSchedules>> = await svc.listSchedules({ namespace, maximumPageSize: 1000, nextPageToken: token });
      for (const sch of r.schedules ?? []) if (sch.scheduleId) add({ namespace, kind: 'schedule', id: sch.scheduleId });
      token = r.nextPageToken?.length ? r.nextPageToken : undefined;
    } while (token);
  }
  return found;
}

/** Terminates the workflows and deletes the schedules given (one already gone is fine). */
async function removeLeftovers(leftovers: Iterable<Leftover>, reason: string): Promise<void> {
  const { connection } = await testTemporal();
  const svc = connection.workflowService;
  for (const l of leftovers) {
    const done =
      l.kind === 'workflow'
        ? svc.terminateWorkflowExecution({ namespace: l.namespace, workflowExecution: { workflowId: l.id }, reason, identity: 'test cleanup' })
        : svc.deleteSchedule({ namespace: l.namespace, scheduleId: l.id, identity: 'test cleanup' });
    await done.catch(() => undefined);
  }
}

/**
 * Locks time skipping again for the `withTimeSkipping` windows still open. Done before leftovers are
 * removed: with a window open, the clock would run on to their next timers once nothing holds it.
 */
async function closeOpenWindows(): Promise<void> {
  for (const window of [...openWindows]) await closeWindow(window).catch(() => undefined);
}

/**
 * Waits (bounded) for the `skipTime` sleeps still pending: each ends once nothing holds the clock, and
 * locks time skipping again as it ends.
 */
async function awaitPendingSkips(): Promise<void> {
  if (!pendingSkips.size) return;
  const ended = Promise.allSettled([...pendingSkips]).then(() => true);
  const inTime = await Promise.race([ended, new Promise<false>((r) => setTimeout(() => r(false), 10_000).unref())]);
  if (!inTime) console.warn('    (a skipTime of a failed test still sleeps on the dev server: time skipping stays unlocked until it ends)');
}

/** What ran on the run's dev server when the current test began (undefined: the server had not started). */
let atTestStart: Map<string, Leftover> | undefined;

/** Root `beforeEach` hook: notes the workflows and schedules present before the test (see {@link cleanUpAfterTest}). */
export async function noteTemporalBeforeTest(): Promise<void> {
  atTestStart = await runningOnTestServer();
}

/**
 * Root `afterEach` hook: locks time skipping again where the test left it unlocked and, when the test
 * failed (a timeout included), terminates the workflows and deletes the schedules it started that still run.
 * A passing test's workflows may serve the next tests of its suite; {@link cleanUpAfterSuite} ends them.
 */
export async function cleanUpAfterTest(failed: boolean): Promise<void> {
  await closeOpenWindows();
  if (failed) {
    const now = await runningOnTestServer();
    if (now) await removeLeftovers([...now].filter(([k]) => !atTestStart?.has(k)).map(([, l]) => l), 'left running by a failed test');
  }
  await awaitPendingSkips();
}

/**
 * `afterAll` hook of every top-level suite (added by the root hooks, after the suite's own): terminates
 * every workflow still running and deletes every schedule on the run's dev server (a suite's workers
 * are stopped by then), and locks time skipping again where the suite left it unlocked.
 */
export async function cleanUpAfterSuite(): Promise<void> {
  await closeOpenWindows();
  const now = await runningOnTestServer();
  if (now?.size) await removeLeftovers(now.values(), 'left running when its test suite ended');
  await awaitPendingSkips();
}

/** Stops the run's dev server and connections (root hook). */
export async function stopTestTemporal(): Promise<void> {
  if (connections) {
    const c = await connections.catch(() => undefined);
    // `npm run histories:record`: the run's workflow histories become the replay suite's fixtures.
    if (c) await collectHistories(c.connection);
    await c?.connection.close().catch(() => undefined);
    await c?.native.close().catch(() => undefined);
  }
  if (serverPromise) await (await serverPromise.catch(() => undefined))?.stop();
  connections = undefined;
  serverPromise = undefined;
}
