/**
 * Workflows start after the commit (DESIGN.md "Durable processes"; docs/operations.md "Workflows start after the
 * commit"): the one way a workflow whose input a transaction writes is started. The transactional-outbox pattern,
 * as the webhook dispatcher (events/dispatcher.ts) uses it for deliveries:
 *
 * 1. inside the transaction, {@link WorkflowStarts.record} writes the start (type, id, arguments, organization,
 *    resource, options) as a `workflow_starts` row, so it exists exactly when the data commits — a rolled-back
 *    transaction owes no start;
 * 2. after the commit, {@link WorkflowStarts.afterCommit} starts it at once from the same request (no added
 *    latency) through temporal.config.ts `startWorkflow`, and deletes the row in the transaction that locked it;
 * 3. the sweep ({@link startWorkflowStartSweep}, beside the worker in `npm start` and `start:worker`) starts what a
 *    crash between 1 and 2, or an unreachable Temporal, left behind, retrying with backoff.
 *
 * Rows are locked FOR UPDATE SKIP LOCKED, so one starter at a time holds a row and several processes may sweep.
 * Starting is idempotent by the deterministic workflow id: WorkflowExecutionAlreadyStarted counts as started.
 * So a workflow never runs before its input is visible, and a committed start is never lost; the one case that
 * can start a workflow twice (a crash after the start, before its row's delete committed, with the first run
 * already closed) is the at-least-once every activity is written for (DESIGN.md: activities are idempotent).
 */
import { startPeriodicSweep, type PeriodicSweep } from './periodicSweep';
import type { Knex } from 'knex';
import type { Logger } from 'pino';
import { WorkflowExecutionAlreadyStartedError, type Client } from '@temporalio/client';
import { envNumber } from '../config';
import type { Db } from '../db';
import { deferWorkflowStart, deleteWorkflowStarts, lockDueWorkflowStarts, lockWorkflowStart, recordWorkflowStart, type WorkflowStartRow } from '../db/repositories/workflowStarts';
import { startWorkflow, type StartWorkflowOptions, type WorkflowName } from '../temporal.config';

/** Temporal client and the task queue the worker polls (temporal.config.ts `startWorkflow`'s target). */
export interface StartTarget {
  client: Client;
  taskQueue: string;
}

/** Delay before the next try of a start that failed `attempts` times, ms: 1 s doubling, at most a minute. */
export function startRetryDelayMs(attempts: number): number {
  return Math.min(60_000, 1000 * 2 ** Math.max(0, attempts - 1));
}

/**
 * Starts one owed row: temporal.config.ts `startWorkflow` with the recorded type, id, arguments and options.
 * @returns once Temporal accepted it (a workflow already started under the id counts)
 * @throws any other error of the client
 */
async function startRow(target: StartTarget, row: WorkflowStartRow): Promise<void> {
  try {
    await startWorkflow(target, row.workflowType as WorkflowName, {
      workflowId: row.workflowId,
      args: row.args as never,
      orgId: row.orgId,
      resourceId: row.resourceId,
      memo: row.options.memo,
      workflowIdConflictPolicy: row.options.workflowIdConflictPolicy,
    });
  } catch (err) {
    if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
  }
}

/** One line for a failed start's `last_error`. */
function errorLine(err: unknown): string {
  return err instanceof Error ? `${err.name}: ${err.message}`.split('\n')[0] : String(err);
}

/**
 * Starts one row inside `trx`, which locked it: deleted when Temporal accepted it, deferred (with backoff) when not.
 * @returns whether it started
 */
async function startLocked(trx: Knex.Transaction, target: StartTarget, row: WorkflowStartRow, log?: Logger): Promise<boolean> {
  try {
    await startRow(target, row);
    await deleteWorkflowStarts(trx, [row]);
    return true;
  } catch (err) {
    const attempts = row.attempts + 1;
    await deferWorkflowStart(trx, row, errorLine(err), startRetryDelayMs(attempts));
    log?.warn({ err, workflowId: row.workflowId, attempts }, 'workflow not started yet; the start sweep retries it');
    return false;
  }
}

/**
 * The starts one unit of work owes: {@link record} them inside its transaction, then call {@link afterCommit}
 * once it has committed. Calling `afterCommit` after a rollback is harmless (no row committed, nothing starts).
 */
export class WorkflowStarts {
  private readonly owed: { orgId: string; id: number }[] = [];

  /**
   * @param db the database the transactions run on
   * @param target where to start them; undefined records them for the sweep only
   * @param log where a start that failed now is reported (warn; the sweep retries it)
   */
  constructor(
    private readonly db: Db,
    private readonly target: StartTarget | undefined,
    private readonly log?: Logger,
  ) {}

  /**
   * Records the start of `type` inside `trx` (temporal.config.ts `startWorkflow`'s options; `orgId` required).
   * Nothing reaches Temporal until {@link afterCommit}.
   */
  async record<K extends WorkflowName>(trx: Knex.Transaction, type: K, opts: StartWorkflowOptions<K> & { orgId: string }): Promise<void> {
    const options: WorkflowStartRow['options'] = {};
    if (opts.memo) options.memo = opts.memo;
    if (opts.workflowIdConflictPolicy) options.workflowIdConflictPolicy = opts.workflowIdConflictPolicy;
    const id = await recordWorkflowStart(trx, opts.orgId, { workflowType: type, workflowId: opts.workflowId, args: opts.args as unknown[], resourceId: opts.resourceId, options });
    this.owed.push({ orgId: opts.orgId, id });
  }

  /**
   * Starts every recorded start whose transaction committed, now. A start that fails stays owed (the sweep
   * retries it) and is logged; one a sweep holds is the sweep's. Never throws for a start.
   * @returns how many this call started
   */
  async afterCommit(): Promise<number> {
    const owed = this.owed.splice(0);
    if (!this.target || !owed.length) return 0;
    let started = 0;
    for (const { orgId, id } of owed) {
      try {
        const ok = await this.db.transaction(async (trx) => {
          const row = await lockWorkflowStart(trx, orgId, id);
          return row ? startLocked(trx, this.target!, row, this.log) : false;
        });
        if (ok) started++;
      } catch (err) {
        this.log?.warn({ err, orgId }, 'workflow start left to the start sweep');
      }
    }
    return started;
  }
}

/**
 * Runs `fn` in one transaction with a {@link WorkflowStarts} to record into, then starts what it recorded.
 * @returns what `fn` returned
 * @throws what `fn` or the commit threw (then nothing starts)
 */
export async function transactionWithStarts<T>(
  deps: { db: Db; temporal?: StartTarget; log?: Logger },
  fn: (trx: Knex.Transaction, starts: WorkflowStarts) => Promise<T>,
): Promise<T> {
  const starts = new WorkflowStarts(deps.db, deps.temporal, deps.log);
  const out = await deps.db.transaction((trx) => fn(trx, starts));
  await starts.afterCommit();
  return out;
}

/** A running start sweep: `sweep()` starts every due row now, batch by batch, and answers how many it started. */
export type WorkflowStartSweep = PeriodicSweep;

/**
 * Starts the sweep of owed starts (run it beside the worker: `npm start`, `start:worker`; several may run).
 * @param opts.intervalMs how often it looks, ms (default WORKFLOW_START_SWEEP_INTERVAL_MS, 1000; 0: only `sweep()`)
 * @param opts.minAgeMs rows younger than this are left to the request that wrote them, ms (default 2000)
 * @param opts.batchSize rows locked per transaction (default 50)
 */
export function startWorkflowStartSweep(opts: { db: Db; logger: Logger; temporal: StartTarget; intervalMs?: number; minAgeMs?: number; batchSize?: number }): WorkflowStartSweep {
  const intervalMs = opts.intervalMs ?? envNumber('WORKFLOW_START_SWEEP_INTERVAL_MS', 1000);
  const minAgeMs = opts.minAgeMs ?? 2000;
  const batchSize = opts.batchSize ?? 50;
  const log = opts.logger.child({ component: 'workflow-start-sweep' });
  const batch = (stopped: () => boolean) =>
    opts.db.transaction(async (trx) => {
      const rows = await lockDueWorkflowStarts(trx, batchSize, minAgeMs);
      let started = 0;
      for (const row of rows) {
        if (stopped()) break;
        if (await startLocked(trx, opts.temporal, row, log)) started++;
      }
      return { started, locked: rows.length };
    });

  return startPeriodicSweep(
    async (isStopped) => {
      let total = 0;
      for (;;) {
        const { started, locked } = await batch(isStopped);
        total += started;
        if (locked < batchSize || started === 0 || isStopped()) return total;
      }
    },
    intervalMs,
    log,
    'workflow start sweep failed; retrying on the next tick',
  );
}
