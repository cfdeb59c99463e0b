/**
 * The dev server's history engine: workflow executions, workflow/activity task dispatch, timers,
 * timeouts, retries, children and cross-workflow signals/cancels. Events are built the way the
 * real Temporal server builds them (temporal.api.history.v1), so the official SDK can replay them.
 *
 * All state is in memory (one `Execution` per run); `PersistenceSink` writes it through to
 * Postgres. Every time goes through the virtual `Clock` so time skipping applies everywhere.
 *
 * One class split by concern into layers, each a module that extends the one before it and calls
 * the layers below it (the three calls that go upwards are abstract methods):
 * core → history → timeSkipping → queries → workflowTasks → activities → timers → executions →
 * signals → children → commands → updates → reset → Engine (reload and stop).
 */
import { Execution, Status } from '../types';
import { Resets } from './reset';
import { execKey, wfKey } from './state';
import { lastHistoryEvent } from './packedHistory';
import { retentionDeletedRuns } from '../metrics';
import { DEFAULT_RETENTION_MS } from './retention';

export type { EngineOptions, LogFn, PersistenceSink, StartExtra } from './state';
export { normalizeRetryPolicy, retryDecision } from './retry';

/** The history engine. Public methods are called by the gRPC service layer. */
export class Engine extends Resets {
  /** Re-arms timers and re-queues tasks after loading state from Postgres. */
  restore(exec: Execution): void {
    this.executions.set(execKey(exec.namespace, exec.workflowId, exec.runId), exec);
    const cur = this.current.get(wfKey(exec.namespace, exec.workflowId));
    if (!cur || cur.seq < exec.seq) this.current.set(wfKey(exec.namespace, exec.workflowId), exec);
    this.seq = Math.max(this.seq, exec.seq, lastHistoryEvent(exec)?.taskId ?? 0);
    if (exec.status !== Status.Running) return void this.retention.add(exec);
    exec.sticky = null;
    this.armExecution(exec);
    for (const t of Object.keys(exec.timers)) this.armUserTimer(exec, t);
    for (const a of Object.values(exec.activities)) {
      this.armActivity(exec, a);
      if (a.state === 'scheduled') this.actList(exec.namespace, a.taskQueue).add({ exec, scheduledEventId: a.scheduledEventId, attempt: a.attempt });
    }
    const wt = exec.wt;
    if (wt.state === 'started') {
      // The worker that held it is gone: time the task out now, as the real server would later.
      this.workflowTaskTimedOut(exec, wt.seq);
    } else if (wt.state === 'scheduled') {
      if (wt.sticky) {
        this.stickyTimeout(exec, wt.seq);
      } else if (wt.backoffUntil !== undefined) {
        const seq = wt.seq;
        this.setTimer(exec, 'wt', wt.backoffUntil, () => {
          if (exec.wt.seq !== seq || exec.wt.state !== 'scheduled') return;
          exec.wt.backoffUntil = undefined;
          this.enqueueWorkflowTask(exec);
        });
      } else {
        this.enqueueWorkflowTask(exec);
      }
    } else if (exec.buffer.length) {
      this.flushBuffer(exec);
      this.scheduleWorkflowTask(exec);
    }
  }

  /**
   * Deletes the closed runs whose namespace's retention has passed since they closed, as the real server's retention
   * timer does (engine/retention.ts): from the run lookup, visibility, the workflow's current run when it still is,
   * and through the sink from Postgres. Not under time skipping: there the clock jumps by days within a test, and the
   * real time-skipping test server keeps every run.
   * @returns how many runs it deleted
   */
  deleteExpiredRuns(): number {
    if (this.stopped || this.timeSkipping) return 0;
    const expired = this.retention.takeExpired(this.clock.now(), (ns) => this.namespaces.get(ns)?.retentionMs ?? DEFAULT_RETENTION_MS);
    let deleted = 0;
    for (const exec of expired) {
      const key = execKey(exec.namespace, exec.workflowId, exec.runId);
      if (exec.status === Status.Running || this.executions.get(key) !== exec) continue;
      this.executions.delete(key);
      const wf = wfKey(exec.namespace, exec.workflowId);
      if (this.current.get(wf) === exec) this.current.delete(wf);
      this.clearAllTimers(exec);
      this.sink?.markDeleted(exec);
      deleted++;
    }
    if (deleted) {
      retentionDeletedRuns.inc(deleted);
      this.log('debug', 'runs past their retention deleted', { runs: deleted, waiting: this.retention.size });
    }
    return deleted;
  }

  /** True once `stop()` was called. */
  isStopped(): boolean {
    return this.stopped;
  }

  /** Logs a warning through the server's log function (for modules outside the engine). */
  logWarn(msg: string, fields?: Record<string, unknown>): void {
    this.log('warn', msg, fields);
  }

  /** Logs an error through the server's log function (for modules outside the engine). */
  logError(msg: string, fields?: Record<string, unknown>): void {
    this.log('error', msg, fields);
  }

  /** Stops timers and wakes waiting long-polls. */
  stop(): void {
    this.stopped = true;
    this.clock.stop();
    for (const e of this.executions.values()) {
      for (const t of e.rt.timers.values()) t.cancel();
      for (const w of e.rt.waiters) w();
    }
    for (const q of this.queries.values()) q.resolve({ error: 'server stopping' });
  }
}
