/**
 * The delivery dispatcher (docs/api-notes.md "Webhooks and audit logs"): drains the transactional outbox written by `emitEvent` and by
 * manual retries, starting one `webhook-delivery/{deliveryId}` workflow per row.
 *
 * Why it cannot lose a delivery: the outbox row commits with the event; it is deleted only in the
 * transaction that locked it and only after Temporal accepted the start. A crash anywhere before that
 * leaves the row, and the next sweep starts the workflow again. Starting twice is harmless: the id is
 * deterministic (WorkflowExecutionAlreadyStarted while it runs), and a workflow for a run that is
 * already finished does nothing (the activity checks the delivery's run and status).
 *
 * Admission (docs/operations.md "Fair sharing"): a row is started only while its endpoint and organization have
 * fewer started deliveries waiting for their first attempt than their limits of attempts in flight
 * (WEBHOOK_MAX_IN_FLIGHT_PER_ENDPOINT, WEBHOOK_MAX_IN_FLIGHT_PER_ORG); the rest wait as rows, which cost Postgres
 * nothing until a sweep admits them, where thousands of started workflows each held a timer and a deferral loop
 * on Temporal. A row waits, it is never dropped, so every guarantee above holds.
 *
 * Several dispatchers may run (one per worker process): rows are locked FOR UPDATE SKIP LOCKED.
 * It wakes on Postgres NOTIFY `webhook_outbox` (sent at commit by emitEvent) and sweeps every
 * `intervalMs` anyway, so a lost notification only adds latency.
 */
import pg from 'pg';
import type { Logger } from 'pino';
import { WorkflowExecutionAlreadyStartedError, type Client } from '@temporalio/client';
import { isServerShutdown, namedSession, type Db } from '../db';
import { deleteOutboxRows, lockOutboxBatch, OUTBOX_CHANNEL, type OutboxAdmission, type OutboxRow } from '../db/repositories/events';
import { startWorkflow, TASK_QUEUE, workflowIds, type WorkflowArgs } from '../temporal.config';
import { loadWebhookSettings } from '../domain/webhooks/settings';

/** Input of one webhook delivery workflow (workflows/webhookDelivery.ts), by its registered signature. */
type WebhookDeliveryInput = WorkflowArgs<'webhookDelivery'>[0];

/**
 * Starts the work of one outbox row. Answers `started` (or `duplicate`: already running for this run)
 * to consume the row, or `busy` to keep it for a later sweep (an earlier run of the same delivery is
 * still closing). Throwing also keeps the row.
 */
export type DeliveryStarter = (job: WebhookDeliveryInput) => Promise<'started' | 'duplicate' | 'busy'>;

/** The production starter: a Temporal workflow per run, memo `{ run }` to tell runs apart. */
export function temporalDeliveryStarter(client: Client, taskQueue: string = TASK_QUEUE): DeliveryStarter {
  return async (job) => {
    const workflowId = workflowIds.webhookDelivery(job.deliveryId);
    try {
      await startWorkflow({ client, taskQueue }, 'webhookDelivery', { workflowId, args: [job], orgId: job.orgId, resourceId: job.deliveryId, memo: { orgId: job.orgId, run: job.run } });
      return 'started';
    } catch (err) {
      if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
      const desc = await client.workflow.getHandle(workflowId).describe();
      return (desc.memo as { run?: number } | undefined)?.run === job.run ? 'duplicate' : 'busy';
    }
  };
}

/** A running dispatcher. */
export interface WebhookDispatcher {
  /** Drains the outbox now. @returns how many rows were consumed */
  sweep(): Promise<number>;
  /** Stops listening and sweeping; waits for a sweep in progress. */
  stop(): Promise<void>;
}

/** Options of {@link startWebhookDispatcher}. */
export interface DispatcherOptions {
  db: Db;
  logger: Logger;
  /** Temporal client; required unless `starter` is given. */
  client?: Client;
  taskQueue?: string;
  /** Replaces the Temporal starter (tests and benchmarks run deliveries in-process). */
  starter?: DeliveryStarter;
  /** URL of `db`, for LISTEN; without it the dispatcher only polls. */
  databaseUrl?: string;
  /** Poll interval, ms (default WEBHOOK_DISPATCH_INTERVAL_MS, 1000). 0 disables the timer (tests call sweep()). */
  intervalMs?: number;
  /** Rows locked per transaction (default 200). */
  batchSize?: number;
  /** Starts in flight at once (default 32). */
  concurrency?: number;
  /** Retry schedule put in each workflow input (default WEBHOOK_RETRY_SCHEDULE). */
  retryScheduleMs?: number[];
  /**
   * Admission limits (default: the webhook settings' limits of attempts in flight, and {@link ADMISSION_LEASE_MS});
   * `false` starts every row at once (tests of the places of attempts themselves).
   */
  admission?: OutboxAdmission | false;
}

/** How long an admitted delivery counts against its limits without its first attempt, ms (a lost workflow frees its place). */
export const ADMISSION_LEASE_MS = 5 * 60_000;

/**
 * Starts the dispatcher (run it in the worker process, or in `npm start`'s single process).
 * @throws Error when neither `client` nor `starter` is given
 */
export async function startWebhookDispatcher(opts: DispatcherOptions): Promise<WebhookDispatcher> {
  const settings = loadWebhookSettings();
  const starter = opts.starter ?? (opts.client ? temporalDeliveryStarter(opts.client, opts.taskQueue) : undefined);
  if (!starter) throw new Error('startWebhookDispatcher needs a Temporal client or a starter');
  const schedule = opts.retryScheduleMs ?? settings.retryScheduleMs;
  const batchSize = opts.batchSize ?? 200;
  const concurrency = opts.concurrency ?? 32;
  const intervalMs = opts.intervalMs ?? settings.dispatchIntervalMs;
  const log = opts.logger.child({ component: 'webhook-dispatcher' });
  const admission =
    opts.admission === false ? undefined : (opts.admission ?? { perEndpoint: settings.maxInFlightPerEndpoint, perOrg: settings.maxInFlightPerOrg, leaseMs: ADMISSION_LEASE_MS });

  let stopped = false;
  let running: Promise<number> | null = null;
  let again = false;

  async function sweepOnce(): Promise<{ consumed: number; locked: number }> {
    return opts.db.transaction(async (trx) => {
      const rows = await lockOutboxBatch(trx, batchSize, admission);
      const done: OutboxRow[] = [];
      let next = 0;
      let failure: unknown;
      const worker = async () => {
        while (next < rows.length && !failure) {
          const row = rows[next++];
          try {
            const r = await starter!({ orgId: row.orgId, deliveryId: row.deliveryId, run: row.run, retryScheduleMs: schedule });
            if (r !== 'busy') done.push(row);
          } catch (err) {
            failure = err;
          }
        }
      };
      await Promise.all(Array.from({ length: Math.min(concurrency, rows.length) }, worker));
      await deleteOutboxRows(trx, done);
      if (failure) log.warn({ err: failure, started: done.length }, 'could not start every webhook delivery; the rest stay queued');
      return { consumed: done.length, locked: failure ? 0 : rows.length };
    });
  }

  async function drain(): Promise<number> {
    let total = 0;
    for (;;) {
      const { consumed, locked } = await sweepOnce();
      total += consumed;
      // A full batch may mean more is waiting; a batch of only `busy` rows waits for the next tick.
      if (locked < batchSize || consumed === 0 || stopped) return total;
    }
  }

  function sweep(): Promise<number> {
    if (running) {
      again = true;
      return running;
    }
    running = (async () => {
      let total = 0;
      do {
        again = false;
        try {
          total += await drain();
        } catch (err) {
          log.warn({ err }, 'webhook outbox sweep failed; retrying on the next tick');
        }
      } while (again && !stopped);
      return total;
    })().finally(() => {
      running = null;
    });
    return running;
  }

  let listener: pg.Client | undefined;
  if (opts.databaseUrl) {
    try {
      listener = new pg.Client(namedSession(opts.databaseUrl, 'agent-control-plane-webhook-outbox'));
      // A server shutting down ends the connection with 57P01, then pg reports the closed socket as a
      // second error ("Connection terminated unexpectedly"): both are the same stop.
      let serverStopping = false;
      listener.on('error', (err) => {
        if (isServerShutdown(err)) {
          serverStopping = true;
          log.info('Postgres is shutting down: the outbox listener stops');
        } else if (!serverStopping) log.warn({ err }, 'outbox listener error; polling continues');
      });
      listener.on('notification', () => {
        if (!stopped) void sweep();
      });
      await listener.connect();
      await listener.query(`LISTEN ${OUTBOX_CHANNEL}`);
    } catch (err) {
      log.warn({ err }, 'outbox LISTEN unavailable; polling only');
      await listener?.end().catch(() => undefined);
      listener = undefined;
    }
  }
  const timer = intervalMs > 0 ? setInterval(() => void sweep(), intervalMs) : undefined;
  timer?.unref();
  if (intervalMs > 0 || listener) void sweep(); // rows left over from before a restart

  return {
    sweep,
    async stop() {
      stopped = true;
      if (timer) clearInterval(timer);
      await listener?.end().catch(() => undefined);
      await running?.catch(() => undefined);
    },
  };
}
