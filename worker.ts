/**
 * The Temporal worker (DESIGN.md): runs every workflow in workflows/ and every activity from
 * activities/, polling every task queue of the service (temporal.config.ts `TASK_QUEUES`). `npm run start:worker` in production (TEMPORAL_ADDRESS
 * required); `npm start` embeds it beside the API and the embedded dev server.
 */
import { execFileSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { bundleWorkflowCode, DefaultLogger, NativeConnection, ResourceBasedController, Runtime, Worker, type LogLevel, type TunerHolder, type WorkerOptions } from '@temporalio/worker';
import type { Logger } from 'pino';
import { envChoice, envNumber, loadConfig, type AppConfig } from './config';
import type { Db } from './db';
import { createActivities } from './activities';
import { announceReady, createLogger, exitOnSignal, isClusterChild, loadServiceSecrets, openDatabase, processCount, processIndex, runEntryPoint, runPrimary } from './runtime';
import { BULK_WORKFLOW_TASK_SLOTS, bulkActivitiesPerSecond, bulkResourceTargets, WEBHOOK_MIN_ACTIVITY_SLOTS, grpcCompression, bulkWorkerSlots, webhookActivitiesPerSecond, TASK_QUEUE, taskQueueName, webhookWorkerSlots, workerQueueSelection, type QueueName } from './temporal.config';
import { activeTracing, startMetricsListener, startTracing, temporalSdkMetricsOptions } from './telemetry';
import { Client, Connection } from '@temporalio/client';
import { startWebhookDispatcher } from './events/dispatcher';
import { startHousekeeping } from './services/housekeeping';
import { startWorkflowStartSweep } from './services/workflowStarts';
import { startWalletSettleSweep } from './services/billing/settle';
import { resumeSandboxCallbacks } from './providers/carrier/sandbox';
import { checkProviderCredentials } from './providers/credentials';
import { ensureBillingCalendar } from './activities/billing';

/**
 * Installs the Temporal SDK runtime once per process with a quiet logger (the SDK otherwise prints the
 * workflow bundler's output at INFO). `TEMPORAL_SDK_LOG_LEVEL` overrides (default WARN). With
 * `TEMPORAL_SDK_METRICS_PORT` the SDK's own Prometheus exporter serves its worker metrics (telemetry.ts).
 */
export function installTemporalRuntime(): void {
  const telemetryOptions = temporalSdkMetricsOptions();
  try {
    Runtime.install({ logger: new DefaultLogger((process.env.TEMPORAL_SDK_LOG_LEVEL as LogLevel) || 'WARN'), ...(telemetryOptions ? { telemetryOptions } : {}) });
  } catch {
    // already installed in this process
  }
}

/** Default of WORKER_SHUTDOWN_GRACE_MS: how long a stopping worker lets running activities finish, ms. */
export const DEFAULT_SHUTDOWN_GRACE_MS = 10_000;

/**
 * How a worker stops (docs/operations.md "Shutdown"): it stops polling at once, lets running activities finish for
 * WORKER_SHUTDOWN_GRACE_MS (Temporal's `shutdownGraceTime`), then cancels them (an activity sees it through its
 * cancellation signal or its next heartbeat; the server retries the attempt elsewhere), and gives up waiting 3 s
 * later (`shutdownForceTime`), so a stop always ends.
 * @throws Error when WORKER_SHUTDOWN_GRACE_MS is not a non-negative number
 */
export function workerShutdownOptions(env: NodeJS.ProcessEnv = process.env): Pick<WorkerOptions, 'shutdownGraceTime' | 'shutdownForceTime'> {
  const graceMs = envNumber('WORKER_SHUTDOWN_GRACE_MS', DEFAULT_SHUTDOWN_GRACE_MS, env);
  return { shutdownGraceTime: graceMs, shutdownForceTime: graceMs + 3_000 };
}

/** A running worker (one SDK Worker per task queue) and how to stop it. */
export interface RunningWorker {
  /** The Worker of each queue, in the order of {@link serviceQueues}. */
  workers: Worker[];
  /** Resolves when every Worker has stopped. */
  done: Promise<void>;
  stop(): Promise<void>;
}

/**
 * The slots of a bulk queue's Worker that follow the machine's load: workflow task slots fixed, activity (and local
 * activity) slots handed out by the SDK's resource-based slot supplier with the CPU and memory targets
 * ({@link bulkResourceTargets}), between `minimumSlots` and `maximumSlots`.
 */
export interface BulkTuner {
  tunerOptions: { targetCpuUsage: number; targetMemoryUsage: number };
  /** Workflow task slots (the SDK's fixed-size slot supplier). */
  workflowTaskSlots: number;
  activityTaskSlotOptions: { minimumSlots: number; maximumSlots: number };
  localActivityTaskSlotOptions: { minimumSlots: number; maximumSlots: number };
}

/** One task queue a worker of the service polls, with the SDK options of its own worker budget. */
export interface ServiceQueue {
  queue: QueueName;
  taskQueue: string;
  options: Partial<Pick<WorkerOptions, 'maxConcurrentActivityTaskExecutions' | 'maxConcurrentWorkflowTaskExecutions' | 'maxActivitiesPerSecond' | 'maxEagerActivityReservationsPerWorkflowTask'>> & {
    /** Slots that follow the machine's load (in place of the fixed slot counts), see {@link bulkSlots}. */
    tuner?: BulkTuner;
  };
}

/**
 * The slots of a bulk queue's Worker: with targets ({@link bulkResourceTargets}), activity slots from the SDK's
 * resource-based slot supplier (a slot beyond the minimum only while the machine's CPU and memory use are under the
 * targets, at most one new slot per 50 ms), capped at the fixed count (`maximumSlots`), with `minActivitySlots`
 * always handed out (`minimumSlots`), so a flood progresses on a busy machine; without targets, the fixed counts.
 * Workflow task slots stay fixed (BULK_WORKFLOW_TASK_SLOTS) either way: the SDK core balances its sticky and normal
 * pollers against the free slots a fixed-size supplier reports, or else the workflow cache's size (sdk-core
 * `wft_poller.rs`, `make_wft_poller`); a resource-based supplier reports none, so under load the balancer counts on
 * the cache's hundreds while the supplier hands out its minimum of 2, and sticky polls hold both while new
 * workflows' first tasks wait on the normal queue.
 * @param activitySlots the cap of activity (and local activity) slots
 * @param minActivitySlots activity slots handed out whatever the machine's load (at most `activitySlots`)
 */
export function bulkSlots(activitySlots: number, targets: ReturnType<typeof bulkResourceTargets>, minActivitySlots = 1): ServiceQueue['options'] {
  if (!targets) return { maxConcurrentActivityTaskExecutions: activitySlots, maxConcurrentWorkflowTaskExecutions: BULK_WORKFLOW_TASK_SLOTS };
  return {
    tuner: {
      tunerOptions: targets,
      workflowTaskSlots: BULK_WORKFLOW_TASK_SLOTS,
      activityTaskSlotOptions: { minimumSlots: Math.min(minActivitySlots, activitySlots), maximumSlots: activitySlots },
      localActivityTaskSlotOptions: { minimumSlots: 1, maximumSlots: activitySlots },
    },
  };
}

/**
 * The SDK Worker options of `queues`: each {@link BulkTuner} becomes the SDK's per-type tuner (`TunerHolder`), and
 * every resource-based supplier with the same targets shares one resource controller (`ResourceBasedController`):
 * the SDK's way to hold several Workers of one process to one resource target, with one sampler.
 */
export function shareResourceController(queues: ServiceQueue[]): Array<Omit<ServiceQueue['options'], 'tuner'> & { tuner?: TunerHolder }> {
  const controllers = new Map<string, ResourceBasedController>();
  return queues.map(({ options }) => {
    if (!options.tuner) return options as Omit<ServiceQueue['options'], 'tuner'>;
    const { tunerOptions, workflowTaskSlots, activityTaskSlotOptions, localActivityTaskSlotOptions } = options.tuner;
    const key = JSON.stringify(tunerOptions);
    if (!controllers.has(key)) controllers.set(key, ResourceBasedController.create(tunerOptions));
    const controller = controllers.get(key)!;
    return {
      ...options,
      tuner: {
        workflowTaskSlotSupplier: { type: 'fixed-size', numSlots: workflowTaskSlots },
        activityTaskSlotSupplier: { type: 'resource-based', controller, ...activityTaskSlotOptions },
        localActivityTaskSlotSupplier: { type: 'resource-based', controller, ...localActivityTaskSlotOptions },
        // No Nexus services are registered: the Worker never polls for Nexus tasks.
        nexusTaskSlotSupplier: { type: 'fixed-size', numSlots: 1 },
      },
    };
  });
}

/**
 * The task queues of the service a worker process polls for the base task queue `base`
 * (temporal.config.ts `TASK_QUEUES`, those WORKER_QUEUES names, default all): the main queue with the SDK's
 * default slots; the webhooks queue with at most WEBHOOK_WORKER_SLOTS activity slots and the bulk queue with at most
 * BULK_WORKER_SLOTS, each with at most BULK_WORKFLOW_TASK_SLOTS workflow task slots, handed out while the machine has
 * CPU and memory to spare (BULK_TARGET_CPU, BULK_TARGET_MEMORY: {@link bulkSlots}), and a rate of activities
 * (WEBHOOK_ACTIVITIES_PER_SECOND, BULK_ACTIVITIES_PER_SECOND: the SDK's `maxActivitiesPerSecond`), so bulk work never
 * takes a slot of interactive work and takes a bounded share of the process, the dev server and Postgres. Eager
 * activity execution is off on those queues: an eager activity comes back with the workflow task's completion, not
 * from a poll, so the worker's rate limit never sees it (SDK `WorkerOptions.maxEagerActivityReservationsPerWorkflowTask`:
 * 0 disables it); bulk work can afford the extra poll.
 * @throws Error when WEBHOOK_WORKER_SLOTS, BULK_WORKER_SLOTS, a rate, a target or WORKER_QUEUES is malformed
 */
export function serviceQueues(base: string, env: NodeJS.ProcessEnv = process.env): ServiceQueue[] {
  const targets = bulkResourceTargets(env);
  const options: Record<QueueName, ServiceQueue['options']> = {
    main: {},
    webhooks: { ...bulkSlots(webhookWorkerSlots(env), targets, WEBHOOK_MIN_ACTIVITY_SLOTS), maxActivitiesPerSecond: webhookActivitiesPerSecond(env), maxEagerActivityReservationsPerWorkflowTask: 0 },
    bulk: { ...bulkSlots(bulkWorkerSlots(env), targets), maxActivitiesPerSecond: bulkActivitiesPerSecond(env), maxEagerActivityReservationsPerWorkflowTask: 0 },
  };
  return workerQueueSelection(env).map((queue) => ({ queue, taskQueue: taskQueueName(base, queue), options: options[queue] }));
}

/**
 * Connects to Temporal at `address` and starts polling every queue of the base `taskQueue` (one SDK
 * Worker per queue, see {@link serviceQueues}), sharing one connection and one workflow bundle. With
 * tracing on (telemetry.ts `startTracing`) activities and workflows get spans continuing the trace of
 * whoever started the workflow.
 * @param opts.workflowBundle a pre-built bundle (tests build it once per run); default: bundle workflows/index.ts.
 *   With tracing on, a pre-built bundle must include `activeTracing().workflowInterceptorModules`
 */
export async function startWorker(opts: {
  address: string;
  namespace: string;
  taskQueue?: string;
  db: Db;
  config: AppConfig;
  logger: Logger;
  workflowBundle?: WorkerOptions['workflowBundle'];
}): Promise<RunningWorker> {
  installTemporalRuntime();
  // Bad carrier credentials stop the worker here, with one line (docs/going-live.md).
  await checkProviderCredentials();
  const queues = serviceQueues(opts.taskQueue ?? TASK_QUEUE);
  const tracing = activeTracing();
  // Bundled once for every queue's Worker (with the tracing interceptors when tracing is on).
  const workflowBundle =
    opts.workflowBundle ??
    (await bundleWorkflowCode({
      workflowsPath: path.join(__dirname, 'workflows', 'index.ts'),
      ...WORKFLOW_BUNDLER_OPTIONS,
      workflowInterceptorModules: tracing?.workflowInterceptorModules,
      logger: Runtime.instance().logger,
    }));
  const connection = await NativeConnection.connect({ address: opts.address, grpcCompression: grpcCompression(opts.address) });
  const activities = createActivities({ db: opts.db, config: opts.config, logger: opts.logger });
  // A prebuilt bundle (npm run build:workflows) carries the OpenTelemetry workflow interceptor; untraced, its span sink goes nowhere.
  const traced = tracing?.workerOptions({ prebuiltBundle: true }) ?? (opts.workflowBundle && 'codePath' in opts.workflowBundle ? { sinks: { exporter: { export: { fn: () => undefined } } } as never } : {});
  const workers: Worker[] = [];
  const queueOptions = shareResourceController(queues);
  try {
    for (const [i, q] of queues.entries()) {
      workers.push(
        await Worker.create({
          ...traced,
          ...queueOptions[i],
          ...workerShutdownOptions(),
          connection,
          namespace: opts.namespace,
          taskQueue: q.taskQueue,
          activities,
          workflowBundle,
        }),
      );
    }
  } catch (err) {
    await connection.close();
    throw err;
  }
  // One queue's Worker failing stops the others, so the process never runs with a queue unpolled.
  const runs = workers.map((w) =>
    w.run().catch((err: unknown) => {
      for (const other of workers) if (other.getState() === 'RUNNING') other.shutdown();
      throw err;
    }),
  );
  const done = Promise.allSettled(runs).then(async (results) => {
    await connection.close();
    const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failed) throw failed.reason;
  });
  return {
    workers,
    done,
    stop: async () => {
      for (const w of workers) if (w.getState() === 'RUNNING') w.shutdown();
      await done.catch(() => undefined);
    },
  };
}

/**
 * Bundler options of the workflow code: source paths relative to the project (`workflows/campaign.ts`,
 * `node_modules/@temporalio/workflow/…`) instead of the SDK's default `[absolute-resource-path]`, so
 * the call stacks the workflows answer (the `__stack_trace` query the Web UI's Call Stack tab runs)
 * do not show the machine's directories. Pass to `bundleWorkflowCode` too.
 */
export const WORKFLOW_BUNDLER_OPTIONS = {
  webpackConfigHook: <C extends { output?: object }>(config: C): C => ({
    ...config,
    output: {
      ...config.output,
      devtoolModuleFilenameTemplate: (info: { absoluteResourcePath: string }) => path.relative(__dirname, info.absoluteResourcePath).split(path.sep).join('/'),
    },
  }),
};

/** The OpenTelemetry workflow interceptor module, which the prebuilt bundle always includes (telemetry.ts). */
export const WORKFLOW_INTERCEPTOR_MODULES = [require.resolve('@temporalio/interceptors-opentelemetry/lib/workflow-interceptors')];

/** Where `npm run build:workflows` writes the prebuilt workflow bundle, and `start:worker` reads it (`WORKFLOW_BUNDLE_PATH` overrides). */
export const DEFAULT_WORKFLOW_BUNDLE_PATH = path.join(__dirname, 'dist', 'workflow-bundle.js');

/**
 * The workflow bundle `npm run build:workflows` built, for `start:worker` (docs/operations.md "Workflow bundle"):
 * `WORKFLOW_BUNDLE_PATH`, else dist/workflow-bundle.js when it exists.
 * @returns the bundle's path and the first 12 hex digits of its SHA-256, or undefined when none was built
 *   (the worker then bundles workflows/index.ts at start, as `npm start` does)
 * @throws Error when `WORKFLOW_BUNDLE_PATH` names a file that does not exist
 */
export function prebuiltWorkflowBundle(): { codePath: string; sha256: string } | undefined {
  const explicit = process.env.WORKFLOW_BUNDLE_PATH;
  const codePath = explicit ? path.resolve(explicit) : DEFAULT_WORKFLOW_BUNDLE_PATH;
  if (!fs.existsSync(codePath)) {
    if (explicit) throw new Error(`WORKFLOW_BUNDLE_PATH=${explicit}: no such file (build it with npm run build:workflows)`);
    return undefined;
  }
  return { codePath, sha256: crypto.createHash('sha256').update(fs.readFileSync(codePath)).digest('hex').slice(0, 12) };
}

/**
 * Lowers this process's CPU scheduling priority to `WORKER_NICE` (0–19, POSIX nice; default 0, unchanged), so a
 * worker of bulk queues yields the cores to the API and the interactive worker on the same machine (docs/operations.md
 * "Fair sharing"). On Linux each thread has a nice value of its own (setpriority(2), "Bugs"): every thread that
 * exists (V8's and libuv's) is lowered, and threads started later (the SDK's) inherit the main thread's. Containers
 * on one host are weighed by their CPU shares instead (docker-compose.yml).
 * @returns the nice value applied
 * @throws Error when WORKER_NICE is not a whole number from 0 to 19
 */
export function applyWorkerNice(env: NodeJS.ProcessEnv = process.env): number {
  const nice = envNumber('WORKER_NICE', 0, env);
  if (!Number.isInteger(nice) || nice > 19) throw new Error(`WORKER_NICE must be a whole number from 0 to 19, got "${env.WORKER_NICE}"`);
  if (nice === 0) return 0;
  const threads = process.platform === 'linux' ? fs.readdirSync('/proc/self/task').map(Number) : [0];
  for (const tid of threads) {
    try {
      os.setPriority(tid, Math.max(nice, os.getPriority(tid)));
    } catch {
      // A thread that ended meanwhile.
    }
  }
  return nice;
}

/** Linux scheduling policies `WORKER_SCHED_POLICY` accepts (sched(7)): `other` is the default time-sharing one. */
const SCHED_POLICIES = ['other', 'batch', 'idle'] as const;
export type WorkerSchedPolicy = (typeof SCHED_POLICIES)[number];

/**
 * Puts every thread of this process under the Linux scheduling policy `WORKER_SCHED_POLICY` (sched(7): `other`, the
 * default, leaves it; `batch` is SCHED_BATCH; `idle` is SCHED_IDLE, below even nice 19), with util-linux's
 * `chrt --all-tasks`; threads started later (the SDK's) inherit it. Under SCHED_IDLE a core that runs only this
 * process counts as idle when the kernel places a waking thread, so the API's and the interactive worker's threads
 * take it at once instead of queueing behind another busy core (docs/operations.md "Fair sharing").
 * @returns the policy applied
 * @throws Error when the value is not one of `other`, `batch`, `idle`, or when a policy other than `other` cannot be
 *   applied (not Linux, or `chrt` missing or refused): the setting was asked for, so the worker does not start without it
 */
export function applyWorkerSchedPolicy(env: NodeJS.ProcessEnv = process.env): WorkerSchedPolicy {
  const policy = envChoice('WORKER_SCHED_POLICY', SCHED_POLICIES, 'other', env);
  if (policy === 'other') return policy;
  if (process.platform !== 'linux') throw new Error(`WORKER_SCHED_POLICY=${policy} needs Linux (sched(7)); unset it on ${process.platform}`);
  try {
    // chrt's priority argument is 0 for every non-real-time policy.
    execFileSync('chrt', [`--${policy}`, '--all-tasks', '--pid', '0', String(process.pid)], { stdio: ['ignore', 'ignore', 'pipe'] });
  } catch (err) {
    const detail = (err as { stderr?: Buffer }).stderr?.toString().trim() || (err as Error).message;
    throw new Error(`WORKER_SCHED_POLICY=${policy}: chrt (util-linux) could not apply it: ${detail}`);
  }
  return policy;
}

/**
 * `npm run start:worker`: `WORKER_PROCESSES` worker processes (default 1; docs/operations.md "Scaling out"), each
 * polling every task queue (or those `WORKER_QUEUES` names) and, where it polls the webhooks queue, running the webhook
 * outbox dispatcher (rows are locked, so several may).
 * The primary opens the database once (migrations) and hands its URL to the children; with one process
 * the primary works itself. Sandbox carrier callbacks owed from before a restart are resumed by one
 * process only (index 0), so each is delivered once.
 */
async function main(): Promise<void> {
  applyWorkerNice();
  const schedPolicy = applyWorkerSchedPolicy();
  const config = loadConfig();
  if (!config.temporalAddress) throw new Error('start:worker needs TEMPORAL_ADDRESS (npm start runs an embedded dev server instead)');
  const tracing = isClusterChild() || processCount('WORKER_PROCESSES', 1) === 1 ? startTracing('agent-control-plane-worker') : undefined;
  loadServiceSecrets(config);
  const logger = createLogger(config.logLevel);
  const processes = isClusterChild() ? 1 : processCount('WORKER_PROCESSES', 1);
  const database = await openDatabase(config, logger, { applicationName: 'agent-control-plane-worker' });
  if (processes > 1) {
    const { pids } = await runPrimary(processes, database, logger);
    await startMetricsListener({ port: config.metricsPort, host: config.host, logger, role: 'primary' });
    logger.info({ address: config.temporalAddress, taskQueues: serviceQueues(TASK_QUEUE).map((q) => q.taskQueue), bulkSlots: bulkResourceTargets() ?? 'fixed', schedPolicy, processes, pids }, 'worker running');
    return;
  }
  const metrics = await startMetricsListener({ port: config.metricsPort, host: config.host, logger });
  // Production workers run the bundle built once at build time; without one, the code is bundled now.
  const bundle = prebuiltWorkflowBundle();
  logger.info(bundle ? { workflowBundle: path.relative(process.cwd(), bundle.codePath), sha256: bundle.sha256 } : { workflowBundle: 'bundled at start (npm run build:workflows prebuilds it)' }, 'workflow code');
  const running = await startWorker({ address: config.temporalAddress, namespace: config.temporalNamespace, db: database.db, config, logger, ...(bundle ? { workflowBundle: { codePath: bundle.codePath } } : {}) });
  // The webhook outbox dispatcher runs beside the worker of the webhooks queue, so the deliveries it starts cost
  // the bulk process, not the interactive one; several may run it (rows are locked).
  const connection = await Connection.connect({ address: config.temporalAddress });
  const client = new Client({ connection, namespace: config.temporalNamespace, interceptors: tracing?.clientInterceptors });
  const dispatcher = workerQueueSelection().includes('webhooks') ? await startWebhookDispatcher({ db: database.db, logger, client, taskQueue: TASK_QUEUE, databaseUrl: database.url }) : undefined;
  // Workflow starts a crash or an unreachable Temporal left owed (services/workflowStarts.ts); rows are locked, so several may sweep.
  const startSweep = startWorkflowStartSweep({ db: database.db, logger, temporal: { client, taskQueue: TASK_QUEUE } });
  // Usage charges recorded pending that no settle folded (services/billing/settle.ts); rows are locked, so several may sweep.
  const settleSweep = startWalletSettleSweep({ db: database.db, logger });
  // Idle conversations' analyses run as workflows on the worker (docs/api-notes.md "Conversations": idle timeouts).
  const housekeeping = startHousekeeping({ db: database.db, logger, temporal: { client, taskQueue: TASK_QUEUE } });
  // Sandbox carrier callbacks still owed from before a restart are delivered again (by one process).
  if (processIndex() === 0) await resumeSandboxCallbacks({ db: database.db, config });
  // The billing calendar (schedule `billing-month`) exists once per cluster; creating it again is a no-op (docs/api-notes.md "Billing").
  await ensureBillingCalendar({ client, taskQueue: TASK_QUEUE });
  exitOnSignal(async () => {
    database.beginClose();
    await startSweep.stop();
    await settleSweep.stop();
    await dispatcher?.stop();
    await housekeeping.stop();
    await connection.close();
    await running.stop();
    await metrics.close();
    await tracing?.shutdown();
    await database.close();
  });
  if (isClusterChild()) announceReady({ pid: process.pid });
  else logger.info({ address: config.temporalAddress, taskQueues: serviceQueues(TASK_QUEUE).map((q) => q.taskQueue), bulkSlots: bulkResourceTargets() ?? 'fixed', schedPolicy, processes: 1 }, 'worker running');
  await running.done;
}

if (require.main === module) runEntryPoint('start:worker', main);
