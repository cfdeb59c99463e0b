/**
 * Shared state of the history engine and the plumbing every concern uses: namespaces, run lookup,
 * the dirty mark for persistence, per-execution timers on the virtual clock, deferred
 * cross-execution work, and the workflow/activity task lists with their long-polls
 * (devserver/README.md "How it maps to the real server": history service and matching service).
 */
import crypto from 'node:crypto';
import { status as Code } from '@grpc/grpc-js';
import { Clock } from '../clock';
import { mergePriority, Poller, TaskList } from '../queues';
import { Execution, NamespaceState, ServiceError, Status } from '../types';
import { ActEntry, EngineOptions, execKey, LogFn, PendingQuery, PersistenceSink, POLL_TIMEOUT_MS, TaskPoll, WfEntry, wfKey } from './state';
import { HISTORY_PACK_DELAY_MS } from './packedHistory';
import { DEFAULT_RETENTION_MS, RetentionQueue } from './retention';

/** NOT_FOUND with temporal.api.errordetails.v1.NamespaceNotFoundFailure (the real server's message). */
export function namespaceNotFound(name: string): ServiceError {
  return new ServiceError(Code.NOT_FOUND, `Namespace ${name} is not found.`, {
    typeName: 'temporal.api.errordetails.v1.NamespaceNotFoundFailure',
    value: { namespace: name },
  });
}

/** Base layer of the engine (see `index.ts` for how the layers compose). */
export abstract class EngineCore {
  readonly clock: Clock;
  readonly namespaces = new Map<string, NamespaceState>();
  readonly executions = new Map<string, Execution>();
  protected readonly current = new Map<string, Execution>();
  protected readonly wfLists = new Map<string, TaskList<WfEntry>>();
  protected readonly actLists = new Map<string, TaskList<ActEntry>>();
  protected readonly queries = new Map<string, PendingQuery>();
  protected readonly later: Array<() => void> = [];
  protected laterScheduled = false;
  protected seq = 0;
  sink: PersistenceSink | null = null;
  /** Outstanding long-polls by worker instance key (ShutdownWorker completes them). */
  protected readonly workerPolls = new Map<string, Set<() => void>>();
  /** Worker instance keys that called ShutdownWorker (runtime only). */
  protected readonly shutDownWorkers = new Set<string>();
  protected readonly log: LogFn;
  /** Time skipping: locked while > 0 (LockTimeSkipping increments, UnlockTimeSkipping decrements). */
  timeSkippingLocks = 0;
  /**
   * TestService sleeps in progress (Sleep, SleepUntil, UnlockTimeSkippingWithSleep): while one
   * waits, a started activity does not keep time from skipping (engine/timeSkipping.ts).
   */
  testSleeps = 0;
  readonly timeSkipping: boolean;
  /** Wall-clock ms after a run closes before its history is packed (engine/packedHistory.ts). */
  protected readonly historyPackDelayMs: number;
  /** Closed runs waiting for their namespace's retention to pass (engine/retention.ts). */
  protected readonly retention = new RetentionQueue();
  protected idleCheckScheduled = false;
  protected stopped = false;

  constructor(opts: EngineOptions) {
    this.clock = opts.clock;
    this.log = opts.log;
    this.timeSkipping = opts.timeSkipping;
    // setTimeout's longest delay is 2^31 - 1 ms: a longer one would fire at once.
    this.historyPackDelayMs = Math.min(opts.historyPackDelayMs ?? HISTORY_PACK_DELAY_MS, 2 ** 31 - 1);
  }

  /** Implemented by the time-skipping layer; every state change asks for an idle check. */
  abstract scheduleIdleCheck(): void;

  /** Creates a namespace if it does not exist (returns it either way). */
  ensureNamespace(name: string, description = ''): NamespaceState {
    let ns = this.namespaces.get(name);
    if (!ns) {
      ns = { name, id: crypto.randomUUID(), description, ownerEmail: '', retentionMs: DEFAULT_RETENTION_MS, data: {} };
      this.namespaces.set(name, ns);
      this.sink?.markNamespaceDirty(ns);
    }
    return ns;
  }

  /**
   * Returns the namespace or throws NOT_FOUND with the `NamespaceNotFoundFailure` detail, as the
   * real frontend does (go.temporal.io/api serviceerror.NewNamespaceNotFound), so clients raise
   * their namespace-not-found error rather than a workflow- or schedule-not-found one.
   */
  namespace(name: string | undefined): NamespaceState {
    const ns = this.namespaces.get(name || 'default');
    if (!ns) throw namespaceNotFound(name || 'default');
    return ns;
  }

  /** The namespace with this id (task tokens of the real server's format name it by id); NOT_FOUND otherwise. */
  namespaceById(id: string): NamespaceState {
    for (const ns of this.namespaces.values()) if (ns.id === id) return ns;
    throw namespaceNotFound(id);
  }

  /** Finds a run (or the current run when runId is empty); throws NOT_FOUND. */
  getExecution(ns: string, workflowId: string | null | undefined, runId?: string | null): Execution {
    this.namespace(ns);
    const e = runId ? this.executions.get(execKey(ns, workflowId, runId)) : this.current.get(wfKey(ns, workflowId));
    if (!e) {
      throw new ServiceError(
        Code.NOT_FOUND,
        `workflow execution not found for workflow ID "${workflowId}" and run ID "${runId ?? ''}"`,
        {
          typeName: 'temporal.api.errordetails.v1.NotFoundFailure',
          value: { currentCluster: 'active', activeCluster: 'active' },
        },
      );
    }
    return e;
  }

  /** Current run of a workflow id, if any. */
  currentRun(ns: string, workflowId: string): Execution | undefined {
    return this.current.get(wfKey(ns, workflowId));
  }

  /** All executions (for visibility and persistence reload). */
  allExecutions(): IterableIterator<Execution> {
    return this.executions.values();
  }

  protected tryGet(ns: string, workflowId: string | null | undefined, runId?: string | null): Execution | undefined {
    if (!workflowId) return undefined;
    return runId ? this.executions.get(execKey(ns, workflowId, runId)) : this.current.get(wfKey(ns, workflowId));
  }

  protected dirty(exec: Execution): void {
    this.sink?.markDirty(exec);
    this.scheduleIdleCheck();
  }

  protected setTimer(exec: Execution, key: string, at: number, fn: () => void): void {
    exec.rt.timers.get(key)?.cancel();
    exec.rt.timers.set(
      key,
      this.clock.schedule(at, () => {
        exec.rt.timers.delete(key);
        if (this.stopped) return;
        try {
          fn();
        } catch (err) {
          this.log('error', 'timer handler failed', { key, err: String((err as Error).stack ?? err) });
        }
        this.runLater();
      }),
    );
  }

  protected clearTimer(exec: Execution, key: string): void {
    exec.rt.timers.get(key)?.cancel();
    exec.rt.timers.delete(key);
  }

  protected clearAllTimers(exec: Execution): void {
    for (const t of exec.rt.timers.values()) t.cancel();
    exec.rt.timers.clear();
  }

  /** Defers cross-execution work until the current operation finished. */
  protected defer(fn: () => void): void {
    this.later.push(fn);
    if (!this.laterScheduled) {
      this.laterScheduled = true;
      setImmediate(() => this.runLater());
    }
  }

  protected runLater(): void {
    this.laterScheduled = false;
    while (this.later.length) {
      const fn = this.later.shift()!;
      try {
        fn();
      } catch (err) {
        this.log('error', 'deferred action failed', { err: String((err as Error).stack ?? err) });
      }
    }
  }

  private pollsOfWorker(key: string): Set<() => void> {
    let s = this.workerPolls.get(key);
    if (!s) {
      s = new Set();
      this.workerPolls.set(key, s);
    }
    return s;
  }

  /**
   * ShutdownWorker with a worker instance key: its outstanding polls complete at once with an
   * empty response and later polls of it get none (DescribeNamespace advertises
   * `workerPollCompleteOnShutdown`, the real server's behaviour since 1.29).
   */
  completeWorkerPolls(workerInstanceKey: string): void {
    this.shutDownWorkers.add(workerInstanceKey);
    const polls = this.workerPolls.get(workerInstanceKey);
    this.workerPolls.delete(workerInstanceKey);
    for (const cancel of polls ?? []) cancel();
  }

  /**
   * Backlog of one task queue's workflow (`kind` 1) or activity (2) tasks by priority key, for
   * DescribeTaskQueue `reportStats` (an unknown queue has none).
   */
  backlogByPriorityKey(ns: string, name: string, kind: 1 | 2): Map<number, number> {
    const l = (kind === 1 ? this.wfLists : this.actLists).get(wfKey(ns, name));
    return l ? l.backlogByPriorityKey() : new Map();
  }

  protected wfList(ns: string, name: string): TaskList<WfEntry> {
    const k = wfKey(ns, name);
    let l = this.wfLists.get(k);
    if (!l) {
      // Query tasks go ahead of every priority (level 0); workflow tasks carry the run's priority.
      l = new TaskList<WfEntry>(
        (e) => this.wfEntryValid(e, name),
        (e) => (e.kind === 'query' ? 0 : e.exec.startAttrs.priority),
      );
      this.wfLists.set(k, l);
    }
    return l;
  }

  protected actList(ns: string, name: string): TaskList<ActEntry> {
    const k = wfKey(ns, name);
    let l = this.actLists.get(k);
    if (!l) {
      // An activity inherits its workflow's priority field by field (common/priorities Merge).
      l = new TaskList<ActEntry>(
        (e) => this.actEntryValid(e),
        (e) => mergePriority(e.exec.startAttrs.priority, e.exec.activities[e.scheduledEventId]?.priority),
      );
      this.actLists.set(k, l);
    }
    return l;
  }

  protected wfEntryValid(e: WfEntry, queue: string): boolean {
    if (e.kind === 'query') {
      const q = this.queries.get(e.queryId);
      return !!q && q.dispatched === 'legacy';
    }
    const wt = e.exec.wt;
    return (
      e.exec.status === Status.Running &&
      wt.state === 'scheduled' &&
      wt.seq === e.seq &&
      wt.queue === queue &&
      wt.backoffUntil === undefined
    );
  }

  protected actEntryValid(e: ActEntry): boolean {
    const a = e.exec.activities[e.scheduledEventId];
    return e.exec.status === Status.Running && !!a && a.state === 'scheduled' && a.attempt === e.attempt && a.pausedAt === undefined;
  }

  /**
   * Starts the next queued task at once, or waits for one as a long-poll: an empty response after
   * POLL_TIMEOUT_MS, on cancellation or when the poll is cancelled.
   */
  protected takeOrWait<E, R extends object>(
    list: TaskList<E>,
    { onCancel, isCancelled, workerInstanceKey }: Pick<TaskPoll, 'onCancel' | 'isCancelled' | 'workerInstanceKey'>,
    start: (e: E) => R,
  ): Promise<R> {
    // An empty poll response (every field of a poll response is optional): no task this time.
    const empty = {} as R;
    // A worker that called ShutdownWorker gets no more tasks (workerPollCompleteOnShutdown).
    if (workerInstanceKey && this.shutDownWorkers.has(workerInstanceKey)) return Promise.resolve(empty);
    const e = list.take();
    if (e) return Promise.resolve(start(e));
    return new Promise((resolve) => {
      let done = false;
      const polls = workerInstanceKey ? this.pollsOfWorker(workerInstanceKey) : undefined;
      const finish = (v: R) => {
        done = true;
        clearTimeout(timer);
        polls?.delete(cancelPoll);
        resolve(v);
      };
      const cancelPoll = () => !done && finish(empty);
      polls?.add(cancelPoll);
      const timer = setTimeout(() => !done && finish(empty), POLL_TIMEOUT_MS);
      const poller: Poller<E> = {
        alive: () => !done && !isCancelled() && !this.stopped,
        deliver: (entry) => {
          if (done || isCancelled()) return false;
          finish(start(entry));
          return true;
        },
      };
      list.pollers.push(poller);
      onCancel(() => !done && finish(empty));
    });
  }
}
