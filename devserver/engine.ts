/**
 * The dev server's history engine: workflow executions, workflow/activity task dispatch, timers,
 * timeouts, retries, children and cross-workflow signals/cancels. Events are built the way the
 * real Temporal server builds them (temporal.api.history.v1), so the official SDK can replay them.
 *
 * All state is in memory (one `Execution` per run); `Persistence` writes it through to Postgres.
 * Every time goes through the virtual `Clock` so time skipping applies everywhere.
 */
import crypto from 'node:crypto';
import { status as Code } from '@grpc/grpc-js';
import { Clock } from './clock';
import { encodeHistoryEvent, fromMs, toMs } from './proto';
import { Poller, TaskList } from './queues';
import {
  ATTR_FIELD,
  ActivityState,
  EventType as ET,
  Execution,
  HistoryEvent,
  NamespaceState,
  ParentRef,
  RetryPolicyPlain,
  RetryState,
  ServiceError,
  Status,
  TimeoutType,
} from './types';

/** Log function shape shared with startDevServer. */
export type LogFn = (level: 'debug' | 'info' | 'warn' | 'error', msg: string, fields?: Record<string, unknown>) => void;

const DEFAULT_WORKFLOW_TASK_TIMEOUT_MS = 10_000;
const DEFAULT_STICKY_SCHEDULE_TO_START_MS = 5_000;
const POLL_TIMEOUT_MS = 60_000;
const HISTORY_LONG_POLL_MS = 20_000;
const QUERY_TIMEOUT_MS = 30_000;
const SUGGEST_CAN_EVENTS = 4 * 1024;
const SUGGEST_CAN_BYTES = 4 * 1024 * 1024;
const TQ_NORMAL = 1;
const TQ_STICKY = 2;

type WfEntry = { kind: 'wt'; exec: Execution; seq: number } | { kind: 'query'; exec: Execution; queryId: string };
type ActEntry = { exec: Execution; scheduledEventId: number; attempt: number };

interface PendingQuery {
  id: string;
  exec: Execution;
  query: Record<string, any>;
  dispatched: 'no' | 'legacy' | 'attached';
  resolve: (r: { answer?: unknown; error?: string; failure?: unknown }) => void;
}

/** Persistence hook: the engine only marks things dirty; the store decides when to write. */
export interface PersistenceSink {
  markDirty(exec: Execution): void;
  markNamespaceDirty(ns: NamespaceState): void;
}

const execKey = (ns: string, wf: string, run: string) => `${ns}\u0000${wf}\u0000${run}`;
const wfKey = (ns: string, wf: string) => `${ns}\u0000${wf}`;

/** Task token payloads (JSON in the token bytes). */
type Token =
  | { k: 'w'; n: string; w: string; r: string; q: number }
  | { k: 'a'; n: string; w: string; r: string; s: number; a: number }
  | { k: 'q'; id: string };

function encodeToken(t: Token): Buffer {
  return Buffer.from(JSON.stringify(t));
}
function decodeToken(b: Uint8Array | undefined): Token {
  try {
    return JSON.parse(Buffer.from(b ?? []).toString('utf8')) as Token;
  } catch {
    throw new ServiceError(Code.INVALID_ARGUMENT, 'malformed task token');
  }
}

/** Maps a proto RetryPolicy (with server defaults applied) to ms-based form. */
export function normalizeRetryPolicy(rp: any | undefined | null): RetryPolicyPlain {
  const initial = toMs(rp?.initialInterval) || 1000;
  return {
    initialIntervalMs: initial,
    backoffCoefficient: rp?.backoffCoefficient || 2,
    maximumIntervalMs: toMs(rp?.maximumInterval) || initial * 100,
    maximumAttempts: rp?.maximumAttempts || 0,
    nonRetryableErrorTypes: rp?.nonRetryableErrorTypes ?? [],
  };
}
function retryPolicyProto(rp: RetryPolicyPlain): Record<string, unknown> {
  return {
    initialInterval: fromMs(rp.initialIntervalMs),
    backoffCoefficient: rp.backoffCoefficient,
    maximumInterval: fromMs(rp.maximumIntervalMs),
    maximumAttempts: rp.maximumAttempts,
    nonRetryableErrorTypes: rp.nonRetryableErrorTypes,
  };
}

/**
 * Decides whether a failed attempt is retried. Returns the backoff in ms, or the RetryState that
 * ends retrying. Follows the real server: maximum attempts, non-retryable flag/types, and the
 * schedule-to-close / execution deadline bound.
 */
export function retryDecision(
  rp: RetryPolicyPlain | null,
  attempt: number,
  failure: any,
  now: number,
  deadline: number | null,
): { backoffMs: number } | { retryState: number } {
  if (!rp) return { retryState: RetryState.RetryPolicyNotSet };
  const app = failure?.applicationFailureInfo;
  if (app?.nonRetryable) return { retryState: RetryState.NonRetryableFailure };
  if (app?.type && rp.nonRetryableErrorTypes.includes(app.type)) return { retryState: RetryState.NonRetryableFailure };
  const tt = failure?.timeoutFailureInfo?.timeoutType;
  if (tt === TimeoutType.ScheduleToStart || tt === TimeoutType.ScheduleToClose) return { retryState: RetryState.Timeout };
  if (rp.maximumAttempts > 0 && attempt >= rp.maximumAttempts) return { retryState: RetryState.MaximumAttemptsReached };
  let backoff = rp.initialIntervalMs * Math.pow(rp.backoffCoefficient, attempt - 1);
  if (rp.maximumIntervalMs > 0) backoff = Math.min(backoff, rp.maximumIntervalMs);
  const explicit = toMs(app?.nextRetryDelay);
  if (explicit !== undefined && explicit > 0) backoff = explicit;
  if (deadline !== null && now + backoff >= deadline) return { retryState: RetryState.Timeout };
  return { backoffMs: Math.round(backoff) };
}

/** Options for the engine (subset of startDevServer's). */
export interface EngineOptions {
  clock: Clock;
  log: LogFn;
  timeSkipping: boolean;
}

/** The history engine. Public methods are called by the gRPC service layer. */
export class Engine {
  readonly clock: Clock;
  readonly namespaces = new Map<string, NamespaceState>();
  readonly executions = new Map<string, Execution>();
  private readonly current = new Map<string, Execution>();
  private readonly wfLists = new Map<string, TaskList<WfEntry>>();
  private readonly actLists = new Map<string, TaskList<ActEntry>>();
  private readonly queries = new Map<string, PendingQuery>();
  private readonly later: Array<() => void> = [];
  private laterScheduled = false;
  private seq = 0;
  sink: PersistenceSink | null = null;
  private readonly log: LogFn;
  /** Time skipping: locked while > 0 (LockTimeSkipping increments, UnlockTimeSkipping decrements). */
  timeSkippingLocks = 0;
  readonly timeSkipping: boolean;
  private idleCheckScheduled = false;
  private stopped = false;

  constructor(opts: EngineOptions) {
    this.clock = opts.clock;
    this.log = opts.log;
    this.timeSkipping = opts.timeSkipping;
  }

  // ------------------------------------------------------------------ namespaces

  /** Creates a namespace if it does not exist (returns it either way). */
  ensureNamespace(name: string, description = ''): NamespaceState {
    let ns = this.namespaces.get(name);
    if (!ns) {
      ns = { name, id: crypto.randomUUID(), description, ownerEmail: '', retentionMs: 86_400_000, data: {} };
      this.namespaces.set(name, ns);
      this.sink?.markNamespaceDirty(ns);
    }
    return ns;
  }

  /** Returns the namespace or throws NOT_FOUND (like the real frontend). */
  namespace(name: string | undefined): NamespaceState {
    const ns = this.namespaces.get(name || 'default');
    if (!ns) throw new ServiceError(Code.NOT_FOUND, `Namespace ${name} is not found.`);
    return ns;
  }

  // ------------------------------------------------------------------ lookup

  /** Finds a run (or the current run when runId is empty); throws NOT_FOUND. */
  getExecution(ns: string, workflowId: string, runId?: string | null): Execution {
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

  // ------------------------------------------------------------------ events

  private dirty(exec: Execution): void {
    this.sink?.markDirty(exec);
    this.scheduleIdleCheck();
  }

  /**
   * Appends an event, or holds it (provisional negative id) while a workflow task is started.
   * Returns the (possibly provisional) event id.
   */
  private emit(exec: Execution, eventType: number, attrs: Record<string, unknown>, opts: { direct?: boolean } = {}): number {
    const ev: HistoryEvent = {
      eventId: 0,
      eventTime: fromMs(this.clock.now()),
      eventType,
      taskId: ++this.seq,
      [ATTR_FIELD[eventType]]: attrs,
    };
    if (!opts.direct && exec.wt.state === 'started') {
      ev.eventId = -(exec.buffer.length + 1);
      exec.buffer.push(ev);
      this.dirty(exec);
      return ev.eventId;
    }
    ev.eventId = exec.nextEventId++;
    exec.history.push(ev);
    this.onAppended(exec, ev);
    return ev.eventId;
  }

  private onAppended(exec: Execution, ev: HistoryEvent): void {
    exec.historySizeBytes = (exec.historySizeBytes ?? 0) + encodeHistoryEvent(ev).length;
    if (ev.eventType === ET.ChildWorkflowExecutionStarted) {
      const a = ev.childWorkflowExecutionStartedEventAttributes;
      const c = exec.children[a.initiatedEventId];
      if (c) c.startedEventId = ev.eventId;
    }
    this.dirty(exec);
    this.wakeWaiters(exec);
  }

  /** Writes held events after a workflow task completed/failed, remapping provisional ids. */
  private flushBuffer(exec: Execution): boolean {
    if (!exec.buffer.length) return false;
    const held = exec.buffer;
    exec.buffer = [];
    const map = new Map<number, number>();
    for (const ev of held) {
      const id = exec.nextEventId++;
      map.set(ev.eventId, id);
      ev.eventId = id;
      const attrs = ev[ATTR_FIELD[ev.eventType]];
      if (attrs && typeof attrs.startedEventId === 'number' && attrs.startedEventId < 0) {
        attrs.startedEventId = map.get(attrs.startedEventId) ?? 0;
      }
      exec.history.push(ev);
      this.onAppended(exec, ev);
    }
    return true;
  }

  // ------------------------------------------------------------------ timers

  private setTimer(exec: Execution, key: string, at: number, fn: () => void): void {
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

  private clearTimer(exec: Execution, key: string): void {
    exec.rt.timers.get(key)?.cancel();
    exec.rt.timers.delete(key);
  }

  private clearAllTimers(exec: Execution): void {
    for (const t of exec.rt.timers.values()) t.cancel();
    exec.rt.timers.clear();
  }

  /** Defers cross-execution work until the current operation finished. */
  private defer(fn: () => void): void {
    this.later.push(fn);
    if (!this.laterScheduled) {
      this.laterScheduled = true;
      setImmediate(() => this.runLater());
    }
  }

  private runLater(): void {
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

  // ------------------------------------------------------------------ task lists

  private wfList(ns: string, name: string): TaskList<WfEntry> {
    const k = wfKey(ns, name);
    let l = this.wfLists.get(k);
    if (!l) {
      l = new TaskList<WfEntry>((e) => this.wfEntryValid(e, name));
      this.wfLists.set(k, l);
    }
    return l;
  }

  private actList(ns: string, name: string): TaskList<ActEntry> {
    const k = wfKey(ns, name);
    let l = this.actLists.get(k);
    if (!l) {
      l = new TaskList<ActEntry>((e) => this.actEntryValid(e));
      this.actLists.set(k, l);
    }
    return l;
  }

  private wfEntryValid(e: WfEntry, queue: string): boolean {
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

  private actEntryValid(e: ActEntry): boolean {
    const a = e.exec.activities[e.scheduledEventId];
    return e.exec.status === Status.Running && !!a && a.state === 'scheduled' && a.attempt === e.attempt;
  }

  // ------------------------------------------------------------------ workflow tasks

  /** Schedules a workflow task if none is pending (new events since the last one). */
  private scheduleWorkflowTask(exec: Execution): void {
    if (exec.status !== Status.Running || exec.wt.state !== 'none') return;
    if (exec.firstTaskAt !== null) return; // start delay / retry backoff still running
    const wt = exec.wt;
    wt.state = 'scheduled';
    wt.seq++;
    wt.attempt = 1;
    wt.transient = false;
    wt.backoffUntil = undefined;
    wt.sticky = !!exec.sticky;
    wt.queue = exec.sticky ? exec.sticky.queue : exec.taskQueue;
    wt.scheduledTime = this.clock.now();
    wt.scheduledEventId = this.emit(exec, ET.WorkflowTaskScheduled, {
      taskQueue: this.wtQueueProto(exec),
      startToCloseTimeout: fromMs(exec.workflowTaskTimeoutMs),
      attempt: 1,
    });
    this.enqueueWorkflowTask(exec);
  }

  private wtQueueProto(exec: Execution): Record<string, unknown> {
    return exec.wt.sticky
      ? { name: exec.wt.queue, kind: TQ_STICKY, normalName: exec.taskQueue }
      : { name: exec.taskQueue, kind: TQ_NORMAL };
  }

  private enqueueWorkflowTask(exec: Execution): void {
    const wt = exec.wt;
    if (wt.sticky && exec.sticky) {
      const at = wt.scheduledTime + exec.sticky.scheduleToStartMs;
      this.setTimer(exec, 'wt', at, () => this.stickyTimeout(exec, wt.seq));
    }
    this.wfList(exec.namespace, wt.queue).add({ kind: 'wt', exec, seq: wt.seq });
    this.dirty(exec);
  }

  /** Sticky schedule-to-start timeout: fall back to the normal queue (full history). */
  private stickyTimeout(exec: Execution, seq: number): void {
    const wt = exec.wt;
    if (exec.status !== Status.Running || wt.state !== 'scheduled' || wt.seq !== seq || !wt.sticky) return;
    exec.sticky = null;
    if (!wt.transient) {
      this.emit(exec, ET.WorkflowTaskTimedOut, {
        scheduledEventId: wt.scheduledEventId,
        startedEventId: 0,
        timeoutType: TimeoutType.ScheduleToStart,
      });
    }
    wt.state = 'none';
    this.scheduleWorkflowTask(exec);
  }

  /** Retries a failed/timed-out workflow task: attempt+1, transient, normal queue, backoff. */
  private retryWorkflowTask(exec: Execution, attempt: number): void {
    const wt = exec.wt;
    exec.sticky = null;
    wt.state = 'scheduled';
    wt.seq++;
    wt.attempt = attempt;
    wt.transient = true;
    wt.sticky = false;
    wt.queue = exec.taskQueue;
    wt.scheduledTime = this.clock.now();
    // Immediate retry for the second attempt, then exponential backoff capped at 10 minutes.
    const backoff = attempt <= 2 ? 0 : Math.min(600_000, 1000 * Math.pow(2, attempt - 3));
    if (backoff > 0) {
      wt.backoffUntil = wt.scheduledTime + backoff;
      const seq = wt.seq;
      this.setTimer(exec, 'wt', wt.backoffUntil, () => {
        if (exec.wt.seq !== seq || exec.wt.state !== 'scheduled') return;
        exec.wt.backoffUntil = undefined;
        exec.wt.scheduledTime = this.clock.now();
        this.enqueueWorkflowTask(exec);
      });
      this.dirty(exec);
    } else {
      wt.backoffUntil = undefined;
      this.enqueueWorkflowTask(exec);
    }
  }

  /**
   * PollWorkflowTaskQueue: returns a task response, or `{}` when the poll times out / is cancelled.
   * `onCancel` registers a callback for the caller going away (the poll must then be dropped).
   */
  pollWorkflowTask(
    ns: string,
    queue: string,
    identity: string,
    onCancel: (fn: () => void) => void,
    isCancelled: () => boolean,
  ): Promise<Record<string, unknown>> {
    this.namespace(ns);
    return this.takeOrWait(this.wfList(ns, queue), onCancel, isCancelled, (entry) => this.startWorkflowTask(entry, identity));
  }

  /** Starts the next queued task at once, or waits for one as a long-poll (waitForTask). */
  private takeOrWait<E>(
    list: TaskList<E>,
    onCancel: (fn: () => void) => void,
    isCancelled: () => boolean,
    start: (e: E) => Record<string, unknown>,
  ): Promise<Record<string, unknown>> {
    const e = list.take();
    if (e) return Promise.resolve(start(e));
    return this.waitForTask(list, onCancel, isCancelled, start);
  }

  private waitForTask<E>(
    list: TaskList<E>,
    onCancel: (fn: () => void) => void,
    isCancelled: () => boolean,
    start: (e: E) => Record<string, unknown>,
  ): Promise<Record<string, unknown>> {
    return new Promise((resolve) => {
      let done = false;
      const finish = (v: Record<string, unknown>) => {
        done = true;
        clearTimeout(timer);
        resolve(v);
      };
      const timer = setTimeout(() => !done && finish({}), POLL_TIMEOUT_MS);
      const poller: Poller<E> = {
        alive: () => !done && !isCancelled() && !this.stopped,
        deliver: (entry) => {
          if (done || isCancelled()) return false;
          finish(start(entry));
          return true;
        },
      };
      list.pollers.push(poller);
      onCancel(() => !done && finish({}));
    });
  }

  private startWorkflowTask(e: WfEntry, identity: string): Record<string, unknown> {
    if (e.kind === 'query') return this.legacyQueryTask(e.exec, e.queryId);
    const exec = e.exec;
    const wt = exec.wt;
    if (wt.sticky) this.clearTimer(exec, 'wt');
    wt.state = 'started';
    wt.startedTime = this.clock.now();
    wt.identity = identity;
    wt.requestId = crypto.randomUUID();
    let transientEvents: HistoryEvent[] = [];
    if (wt.transient) {
      wt.scheduledEventId = exec.nextEventId;
      wt.startedEventId = exec.nextEventId + 1;
      transientEvents = this.transientEvents(exec);
    } else {
      wt.startedEventId = this.emit(
        exec,
        ET.WorkflowTaskStarted,
        { scheduledEventId: wt.scheduledEventId, identity, requestId: wt.requestId, ...this.historyLimits(exec) },
        { direct: true },
      );
    }
    const seq = wt.seq;
    this.setTimer(exec, 'wt', wt.startedTime + exec.workflowTaskTimeoutMs, () => this.workflowTaskTimedOut(exec, seq));
    const fromId = wt.sticky ? exec.lastCompletedStartedEventId + 1 : 1;
    const events = exec.history.slice(fromId - 1).concat(transientEvents);
    const resp: Record<string, unknown> = {
      taskToken: encodeToken({ k: 'w', n: exec.namespace, w: exec.workflowId, r: exec.runId, q: seq }),
      workflowExecution: { workflowId: exec.workflowId, runId: exec.runId },
      workflowType: { name: exec.workflowType },
      previousStartedEventId: exec.lastCompletedStartedEventId,
      startedEventId: wt.startedEventId,
      attempt: wt.attempt,
      history: { events },
      workflowExecutionTaskQueue: { name: exec.taskQueue, kind: TQ_NORMAL },
      scheduledTime: fromMs(wt.scheduledTime),
      startedTime: fromMs(wt.startedTime),
    };
    const attached: Record<string, unknown> = {};
    for (const q of this.queries.values()) {
      if (q.exec === exec && q.dispatched === 'no') {
        q.dispatched = 'attached';
        attached[q.id] = q.query;
      }
    }
    if (Object.keys(attached).length) resp.queries = attached;
    this.dirty(exec);
    return resp;
  }

  /**
   * History size and the continue-as-new suggestion for WorkflowTaskStarted, with the real
   * server's default limits (4 Ki events, 4 MiB).
   */
  private historyLimits(exec: Execution): Record<string, unknown> {
    const reasons: number[] = [];
    const size = exec.historySizeBytes ?? 0;
    if (size >= SUGGEST_CAN_BYTES) reasons.push(1);
    if (exec.nextEventId >= SUGGEST_CAN_EVENTS) reasons.push(2);
    return { historySizeBytes: size, suggestContinueAsNew: reasons.length > 0, suggestContinueAsNewReasons: reasons };
  }

  private transientEvents(exec: Execution): HistoryEvent[] {
    const wt = exec.wt;
    return [
      {
        eventId: wt.scheduledEventId,
        eventTime: fromMs(wt.scheduledTime),
        eventType: ET.WorkflowTaskScheduled,
        taskId: ++this.seq,
        workflowTaskScheduledEventAttributes: {
          taskQueue: this.wtQueueProto(exec),
          startToCloseTimeout: fromMs(exec.workflowTaskTimeoutMs),
          attempt: wt.attempt,
        },
      },
      {
        eventId: wt.startedEventId,
        eventTime: fromMs(wt.startedTime),
        eventType: ET.WorkflowTaskStarted,
        taskId: ++this.seq,
        workflowTaskStartedEventAttributes: {
          scheduledEventId: wt.scheduledEventId,
          identity: wt.identity ?? '',
          requestId: wt.requestId ?? '',
          ...this.historyLimits(exec),
        },
      },
    ];
  }

  private workflowTaskForToken(token: Token): Execution {
    if (token.k !== 'w') throw new ServiceError(Code.INVALID_ARGUMENT, 'not a workflow task token');
    const exec = this.executions.get(execKey(token.n, token.w, token.r));
    if (!exec || exec.status !== Status.Running || exec.wt.state !== 'started' || exec.wt.seq !== token.q) {
      throw new ServiceError(Code.NOT_FOUND, 'Workflow task not found.');
    }
    return exec;
  }

  private workflowTaskTimedOut(exec: Execution, seq: number): void {
    const wt = exec.wt;
    if (exec.status !== Status.Running || wt.state !== 'started' || wt.seq !== seq) return;
    if (!wt.transient) {
      this.emit(
        exec,
        ET.WorkflowTaskTimedOut,
        { scheduledEventId: wt.scheduledEventId, startedEventId: wt.startedEventId, timeoutType: TimeoutType.StartToClose },
        { direct: true },
      );
    }
    this.releaseAttachedQueries(exec);
    wt.state = 'none';
    this.flushBuffer(exec);
    this.retryWorkflowTask(exec, wt.attempt + 1);
  }

  private releaseAttachedQueries(exec: Execution): void {
    for (const q of this.queries.values()) if (q.exec === exec && q.dispatched === 'attached') q.dispatched = 'no';
  }

  /** RespondWorkflowTaskFailed: WorkflowTaskFailed event on attempt 1 only, then retry. */
  failWorkflowTask(req: any): void {
    const exec = this.workflowTaskForToken(decodeToken(req.taskToken));
    const wt = exec.wt;
    this.clearTimer(exec, 'wt');
    if (!wt.transient) {
      this.emit(
        exec,
        ET.WorkflowTaskFailed,
        {
          scheduledEventId: wt.scheduledEventId,
          startedEventId: wt.startedEventId,
          cause: req.cause ?? 0,
          failure: req.failure,
          identity: req.identity ?? '',
          binaryChecksum: req.binaryChecksum ?? '',
        },
        { direct: true },
      );
    }
    this.releaseAttachedQueries(exec);
    wt.state = 'none';
    this.flushBuffer(exec);
    this.retryWorkflowTask(exec, wt.attempt + 1);
  }

  /**
   * RespondWorkflowTaskCompleted: writes WorkflowTaskCompleted, one event group per command, then
   * the events held during the task; schedules the next task when new events arrived.
   */
  completeWorkflowTask(req: any): Record<string, unknown> {
    const exec = this.workflowTaskForToken(decodeToken(req.taskToken));
    const wt = exec.wt;
    const commands: any[] = req.commands ?? [];
    validateCommands(commands);
    const closes = commands.some((c) => CLOSE_COMMANDS.has(c.commandType));
    // A close command while new events are waiting is rejected, like the real server
    // (UNHANDLED_COMMAND): the worker must see the new events first.
    if (closes && exec.buffer.length > 0) {
      this.answerAttachedQueries(exec, req.queryResults);
      this.clearTimer(exec, 'wt');
      if (wt.transient) this.writeTransient(exec);
      this.emit(
        exec,
        ET.WorkflowTaskFailed,
        {
          scheduledEventId: wt.scheduledEventId,
          startedEventId: wt.startedEventId,
          cause: 1,
          identity: req.identity ?? '',
        },
        { direct: true },
      );
      wt.state = 'none';
      this.flushBuffer(exec);
      this.scheduleWorkflowTask(exec);
      return {};
    }
    this.clearTimer(exec, 'wt');
    if (wt.transient) this.writeTransient(exec);
    wt.state = 'none';
    const held = exec.buffer;
    exec.buffer = [];
    const completedId = this.emit(exec, ET.WorkflowTaskCompleted, {
      scheduledEventId: wt.scheduledEventId,
      startedEventId: wt.startedEventId,
      identity: req.identity ?? '',
      binaryChecksum: req.binaryChecksum ?? '',
      sdkMetadata: req.sdkMetadata,
      meteringMetadata: req.meteringMetadata,
      workerVersion: req.workerVersionStamp,
    });
    exec.lastCompletedStartedEventId = wt.startedEventId;
    if (req.stickyAttributes?.workerTaskQueue?.name) {
      exec.sticky = {
        queue: req.stickyAttributes.workerTaskQueue.name,
        scheduleToStartMs: toMs(req.stickyAttributes.scheduleToStartTimeout) || DEFAULT_STICKY_SCHEDULE_TO_START_MS,
      };
    } else {
      exec.sticky = null;
    }
    let newTask = false;
    const eager: number[] = [];
    this.eagerActivities = eager;
    try {
      for (const cmd of commands) {
        if (exec.status !== Status.Running) break;
        newTask = this.applyCommand(exec, cmd, completedId) || newTask;
      }
    } catch (err) {
      // Nothing will be returned: activities held for eager dispatch go to their queue.
      for (const id of eager) this.actList(exec.namespace, exec.taskQueue).add({ exec, scheduledEventId: id, attempt: 1 });
      throw err;
    } finally {
      this.eagerActivities = null;
    }
    exec.buffer = held;
    if (exec.status === Status.Running) {
      if (this.flushBuffer(exec)) newTask = true;
    } else {
      exec.buffer = [];
    }
    this.answerAttachedQueries(exec, req.queryResults);
    if (exec.status === Status.Running && (newTask || req.forceCreateNewWorkflowTask)) this.scheduleWorkflowTask(exec);
    // Eager activity dispatch, as the real server does it: activities whose command asked for it
    // (the worker reserved a slot for each) and that run on the workflow's own task queue are
    // started now and returned in this response instead of going through the matching queue.
    const activityTasks: Record<string, unknown>[] = [];
    for (const id of eager) {
      const act = exec.activities[id];
      if (exec.status !== Status.Running || !act || act.state !== 'scheduled') continue;
      activityTasks.push(this.startActivityTask({ exec, scheduledEventId: id, attempt: act.attempt }, req.identity ?? ''));
    }
    const resp: Record<string, unknown> = activityTasks.length ? { activityTasks } : {};
    // Like the real server, hand a task created by this completion straight back to a sticky
    // worker that asked for it, instead of a round trip through its sticky queue.
    if (req.returnNewWorkflowTask && exec.sticky && exec.wt.state === 'scheduled' && exec.wt.sticky && exec.wt.backoffUntil === undefined) {
      resp.workflowTask = this.startWorkflowTask({ kind: 'wt', exec, seq: exec.wt.seq }, req.identity ?? '');
      return resp;
    }
    this.dispatchWaitingQueries(exec);
    this.dirty(exec);
    return resp;
  }

  /** Activities scheduled eagerly by the workflow task being completed (null outside a completion). */
  private eagerActivities: number[] | null = null;

  private writeTransient(exec: Execution): void {
    const wt = exec.wt;
    const evs = this.transientEvents(exec);
    for (const ev of evs) {
      ev.eventId = exec.nextEventId++;
      exec.history.push(ev);
      this.onAppended(exec, ev);
    }
    wt.scheduledEventId = evs[0].eventId;
    wt.startedEventId = evs[1].eventId;
    wt.transient = false;
  }

  /** Applies one command; returns true when it produced an event needing a new workflow task. */
  private applyCommand(exec: Execution, cmd: any, completedId: number): boolean {
    const ns = exec.namespace;
    switch (cmd.commandType) {
      case 1: {
        const a = cmd.scheduleActivityTaskCommandAttributes ?? {};
        this.scheduleActivity(exec, a, completedId);
        return false;
      }
      case 2: {
        const sched = Number(cmd.requestCancelActivityTaskCommandAttributes?.scheduledEventId ?? 0);
        const act = exec.activities[sched];
        if (!act) return false;
        const reqId = this.emit(exec, ET.ActivityTaskCancelRequested, {
          scheduledEventId: sched,
          workflowTaskCompletedEventId: completedId,
        });
        if (act.state !== 'started') {
          this.emit(exec, ET.ActivityTaskCanceled, {
            scheduledEventId: sched,
            latestCancelRequestedEventId: reqId,
            startedEventId: 0,
          });
          this.removeActivity(exec, act);
          return true;
        }
        act.cancelRequested = true;
        act.cancelRequestedEventId = reqId;
        return false;
      }
      case 3: {
        const a = cmd.startTimerCommandAttributes ?? {};
        const ms = toMs(a.startToFireTimeout) ?? 0;
        const id = this.emit(exec, ET.TimerStarted, {
          timerId: a.timerId,
          startToFireTimeout: a.startToFireTimeout ?? fromMs(0),
          workflowTaskCompletedEventId: completedId,
        });
        exec.timers[a.timerId] = { timerId: a.timerId, startedEventId: id, fireAt: this.clock.now() + ms };
        this.armUserTimer(exec, a.timerId);
        return false;
      }
      case 4:
        this.emit(exec, ET.WorkflowExecutionCompleted, {
          result: cmd.completeWorkflowExecutionCommandAttributes?.result,
          workflowTaskCompletedEventId: completedId,
        });
        this.close(exec, Status.Completed, { result: cmd.completeWorkflowExecutionCommandAttributes?.result });
        return false;
      case 5: {
        const failure = cmd.failWorkflowExecutionCommandAttributes?.failure;
        this.failWorkflow(exec, failure, completedId);
        return false;
      }
      case 6: {
        const timerId = cmd.cancelTimerCommandAttributes?.timerId;
        const t = exec.timers[timerId];
        if (!t) return false;
        this.emit(exec, ET.TimerCanceled, {
          timerId,
          startedEventId: t.startedEventId,
          workflowTaskCompletedEventId: completedId,
        });
        delete exec.timers[timerId];
        this.clearTimer(exec, `timer:${timerId}`);
        return false;
      }
      case 7:
        this.emit(exec, ET.WorkflowExecutionCanceled, {
          workflowTaskCompletedEventId: completedId,
          details: cmd.cancelWorkflowExecutionCommandAttributes?.details,
        });
        this.close(exec, Status.Canceled, { details: cmd.cancelWorkflowExecutionCommandAttributes?.details });
        return false;
      case 8: {
        const a = cmd.requestCancelExternalWorkflowExecutionCommandAttributes ?? {};
        const targetNs = a.namespace || ns;
        const initiated = this.emit(exec, ET.RequestCancelExternalWorkflowExecutionInitiated, {
          workflowTaskCompletedEventId: completedId,
          namespace: targetNs,
          workflowExecution: { workflowId: a.workflowId, runId: a.runId },
          control: a.control,
          childWorkflowOnly: a.childWorkflowOnly,
          reason: a.reason,
        });
        this.defer(() => this.deliverExternalCancel(exec, initiated, targetNs, a));
        return false;
      }
      case 9: {
        const a = cmd.recordMarkerCommandAttributes ?? {};
        this.emit(exec, ET.MarkerRecorded, {
          markerName: a.markerName,
          details: a.details,
          workflowTaskCompletedEventId: completedId,
          header: a.header,
          failure: a.failure,
        });
        return false;
      }
      case 10:
        this.continueAsNew(exec, cmd.continueAsNewWorkflowExecutionCommandAttributes ?? {}, completedId);
        return false;
      case 11: {
        const a = cmd.startChildWorkflowExecutionCommandAttributes ?? {};
        const targetNs = a.namespace || ns;
        const attrs = {
          namespace: targetNs,
          workflowId: a.workflowId,
          workflowType: a.workflowType,
          taskQueue: a.taskQueue?.name ? a.taskQueue : { name: exec.taskQueue, kind: TQ_NORMAL },
          input: a.input,
          workflowExecutionTimeout: a.workflowExecutionTimeout,
          workflowRunTimeout: a.workflowRunTimeout,
          workflowTaskTimeout: a.workflowTaskTimeout ?? fromMs(DEFAULT_WORKFLOW_TASK_TIMEOUT_MS),
          parentClosePolicy: a.parentClosePolicy || 1,
          control: a.control,
          workflowTaskCompletedEventId: completedId,
          workflowIdReusePolicy: a.workflowIdReusePolicy,
          retryPolicy: a.retryPolicy,
          cronSchedule: a.cronSchedule,
          header: a.header,
          memo: a.memo,
          searchAttributes: a.searchAttributes,
        };
        const initiated = this.emit(exec, ET.StartChildWorkflowExecutionInitiated, attrs);
        exec.children[initiated] = {
          initiatedEventId: initiated,
          namespace: targetNs,
          workflowId: a.workflowId,
          workflowType: a.workflowType?.name ?? '',
          parentClosePolicy: attrs.parentClosePolicy,
        };
        this.defer(() => this.startChild(exec, initiated, attrs));
        return false;
      }
      case 12: {
        const a = cmd.signalExternalWorkflowExecutionCommandAttributes ?? {};
        const targetNs = a.namespace || ns;
        const initiated = this.emit(exec, ET.SignalExternalWorkflowExecutionInitiated, {
          workflowTaskCompletedEventId: completedId,
          namespace: targetNs,
          workflowExecution: a.execution,
          signalName: a.signalName,
          input: a.input,
          control: a.control,
          childWorkflowOnly: a.childWorkflowOnly,
          header: a.header,
        });
        this.defer(() => this.deliverExternalSignal(exec, initiated, targetNs, a));
        return false;
      }
      case 13: {
        const sa = cmd.upsertWorkflowSearchAttributesCommandAttributes?.searchAttributes ?? {};
        this.emit(exec, ET.UpsertWorkflowSearchAttributes, {
          workflowTaskCompletedEventId: completedId,
          searchAttributes: sa,
        });
        mergePayloadMap(exec.searchAttributes, sa.indexedFields);
        return false;
      }
      case 16: {
        const memo = cmd.modifyWorkflowPropertiesCommandAttributes?.upsertedMemo ?? {};
        this.emit(exec, ET.WorkflowPropertiesModified, { workflowTaskCompletedEventId: completedId, upsertedMemo: memo });
        mergePayloadMap(exec.memo, memo.fields);
        return false;
      }
      default:
        throw new ServiceError(
          Code.UNIMPLEMENTED,
          `command type ${cmd.commandType} is not implemented by the dev server (updates, Nexus and protocol messages are not supported)`,
        );
    }
  }

  // ------------------------------------------------------------------ activities

  private scheduleActivity(exec: Execution, a: any, completedId: number): void {
    const runTimeoutMs = exec.runDeadline !== null ? exec.runDeadline - exec.startTime : 0;
    let s2c = toMs(a.scheduleToCloseTimeout) ?? 0;
    let s2s = toMs(a.scheduleToStartTimeout) ?? 0;
    let stc = toMs(a.startToCloseTimeout) ?? 0;
    let hb = toMs(a.heartbeatTimeout) ?? 0;
    // Defaults as the real server fills them (validateActivityScheduleAttributes).
    if (runTimeoutMs > 0 && (s2c === 0 || s2c > runTimeoutMs)) s2c = runTimeoutMs;
    if (s2c > 0) {
      if (s2s === 0 || s2s > s2c) s2s = s2c;
      if (stc === 0 || stc > s2c) stc = s2c;
    } else if (stc > 0) {
      // schedule-to-close and schedule-to-start stay unlimited (0)
    } else {
      throw new ServiceError(Code.INVALID_ARGUMENT, 'BadScheduleToCloseTimeout: A valid StartToClose or ScheduleToCloseTimeout is not set on command.');
    }
    if (hb > stc && stc > 0) hb = stc;
    const rp = normalizeRetryPolicy(a.retryPolicy);
    const taskQueue = a.taskQueue?.name || exec.taskQueue;
    const id = this.emit(exec, ET.ActivityTaskScheduled, {
      activityId: a.activityId,
      activityType: a.activityType,
      taskQueue: { name: taskQueue, kind: TQ_NORMAL },
      header: a.header,
      input: a.input,
      scheduleToCloseTimeout: fromMs(s2c),
      scheduleToStartTimeout: fromMs(s2s),
      startToCloseTimeout: fromMs(stc),
      heartbeatTimeout: fromMs(hb),
      workflowTaskCompletedEventId: completedId,
      retryPolicy: retryPolicyProto(rp),
      useWorkflowBuildId: a.useWorkflowBuildId,
      priority: a.priority,
    });
    const now = this.clock.now();
    const act: ActivityState = {
      scheduledEventId: id,
      activityId: a.activityId,
      activityType: a.activityType?.name ?? '',
      taskQueue,
      input: a.input,
      header: a.header,
      scheduleToCloseMs: s2c,
      scheduleToStartMs: s2s,
      startToCloseMs: stc,
      heartbeatMs: hb,
      retryPolicy: rp,
      attempt: 1,
      state: 'scheduled',
      scheduledTime: now,
      attemptScheduledTime: now,
      cancelRequested: false,
    };
    exec.activities[id] = act;
    this.armActivity(exec, act);
    if (a.requestEagerExecution && taskQueue === exec.taskQueue && this.eagerActivities) {
      this.eagerActivities.push(id);
      return;
    }
    this.actList(exec.namespace, taskQueue).add({ exec, scheduledEventId: id, attempt: 1 });
  }

  /** (Re)arms an activity's timers from its state (also used after reload). */
  private armActivity(exec: Execution, act: ActivityState): void {
    const k = `act:${act.scheduledEventId}`;
    this.clearTimer(exec, `${k}:s2s`);
    this.clearTimer(exec, `${k}:stc`);
    this.clearTimer(exec, `${k}:hb`);
    this.clearTimer(exec, `${k}:backoff`);
    const attempt = act.attempt;
    if (act.scheduleToCloseMs > 0 && !exec.rt.timers.has(`${k}:s2c`)) {
      this.setTimer(exec, `${k}:s2c`, act.scheduledTime + act.scheduleToCloseMs, () =>
        this.activityTimedOut(exec, act.scheduledEventId, TimeoutType.ScheduleToClose, -1),
      );
    }
    if (act.state === 'scheduled' && act.scheduleToStartMs > 0 && act.scheduleToStartMs !== act.scheduleToCloseMs) {
      this.setTimer(exec, `${k}:s2s`, act.attemptScheduledTime + act.scheduleToStartMs, () =>
        this.activityTimedOut(exec, act.scheduledEventId, TimeoutType.ScheduleToStart, attempt),
      );
    }
    if (act.state === 'started') {
      if (act.startToCloseMs > 0) {
        this.setTimer(exec, `${k}:stc`, act.startedTime! + act.startToCloseMs, () =>
          this.activityTimedOut(exec, act.scheduledEventId, TimeoutType.StartToClose, attempt),
        );
      }
      this.armHeartbeat(exec, act);
    }
    if (act.state === 'backoff') {
      this.setTimer(exec, `${k}:backoff`, act.attemptScheduledTime, () => {
        const cur = exec.activities[act.scheduledEventId];
        if (cur !== act || act.state !== 'backoff' || act.attempt !== attempt) return;
        act.state = 'scheduled';
        this.armActivity(exec, act);
        this.actList(exec.namespace, act.taskQueue).add({ exec, scheduledEventId: act.scheduledEventId, attempt });
        this.dirty(exec);
      });
    }
  }

  private armHeartbeat(exec: Execution, act: ActivityState): void {
    if (act.heartbeatMs <= 0 || act.state !== 'started') return;
    const attempt = act.attempt;
    const from = act.lastHeartbeatTime ?? act.startedTime!;
    this.setTimer(exec, `act:${act.scheduledEventId}:hb`, from + act.heartbeatMs, () =>
      this.activityTimedOut(exec, act.scheduledEventId, TimeoutType.Heartbeat, attempt),
    );
  }

  private removeActivity(exec: Execution, act: ActivityState): void {
    delete exec.activities[act.scheduledEventId];
    for (const s of ['s2c', 's2s', 'stc', 'hb', 'backoff']) this.clearTimer(exec, `act:${act.scheduledEventId}:${s}`);
  }

  /** PollActivityTaskQueue: returns a task or `{}` (no task). */
  pollActivityTask(
    ns: string,
    queue: string,
    identity: string,
    onCancel: (fn: () => void) => void,
    isCancelled: () => boolean,
  ): Promise<Record<string, unknown>> {
    this.namespace(ns);
    return this.takeOrWait(this.actList(ns, queue), onCancel, isCancelled, (entry) => this.startActivityTask(entry, identity));
  }

  private startActivityTask(e: ActEntry, identity: string): Record<string, unknown> {
    const exec = e.exec;
    const act = exec.activities[e.scheduledEventId];
    act.state = 'started';
    act.startedTime = this.clock.now();
    act.lastHeartbeatTime = undefined;
    act.identity = identity;
    act.requestId = crypto.randomUUID();
    this.armActivity(exec, act);
    this.dirty(exec);
    return {
      taskToken: encodeToken({ k: 'a', n: exec.namespace, w: exec.workflowId, r: exec.runId, s: act.scheduledEventId, a: act.attempt }),
      workflowNamespace: exec.namespace,
      workflowType: { name: exec.workflowType },
      workflowExecution: { workflowId: exec.workflowId, runId: exec.runId },
      activityType: { name: act.activityType },
      activityId: act.activityId,
      header: act.header,
      input: act.input,
      heartbeatDetails: act.heartbeatDetails,
      scheduledTime: fromMs(act.scheduledTime),
      currentAttemptScheduledTime: fromMs(act.attemptScheduledTime),
      startedTime: fromMs(act.startedTime),
      attempt: act.attempt,
      scheduleToCloseTimeout: fromMs(act.scheduleToCloseMs),
      startToCloseTimeout: fromMs(act.startToCloseMs),
      heartbeatTimeout: fromMs(act.heartbeatMs),
      retryPolicy: retryPolicyProto(act.retryPolicy),
    };
  }

  /** Resolves an activity from a task token, or from (workflowId, runId, activityId). */
  private findActivity(req: any, byId: boolean): { exec: Execution; act: ActivityState } {
    if (byId) {
      const exec = this.getExecution(req.namespace || 'default', req.workflowId, req.runId);
      const act = Object.values(exec.activities).find((a) => a.activityId === req.activityId);
      if (!act || exec.status !== Status.Running) throw new ServiceError(Code.NOT_FOUND, 'activity not found');
      if (act.state !== 'started') {
        // Completion by id of a not-yet-started attempt: treat it as started now.
        act.state = 'started';
        act.startedTime = this.clock.now();
        act.identity = req.identity;
        act.requestId = crypto.randomUUID();
      }
      return { exec, act };
    }
    const t = decodeToken(req.taskToken);
    if (t.k !== 'a') throw new ServiceError(Code.INVALID_ARGUMENT, 'not an activity task token');
    const exec = this.executions.get(execKey(t.n, t.w, t.r));
    const act = exec?.activities[t.s];
    if (!exec || !act || exec.status !== Status.Running || act.attempt !== t.a || act.state !== 'started') {
      throw new ServiceError(Code.NOT_FOUND, 'invalid activityID or activity already timed out or invoking workflow is completed');
    }
    return { exec, act };
  }

  private emitActivityStarted(exec: Execution, act: ActivityState): number {
    return this.emit(exec, ET.ActivityTaskStarted, {
      scheduledEventId: act.scheduledEventId,
      identity: act.identity ?? '',
      requestId: act.requestId ?? '',
      attempt: act.attempt,
      lastFailure: act.lastFailure,
    });
  }

  /** RecordActivityTaskHeartbeat(ById): stores details, resets the heartbeat timeout. */
  heartbeatActivity(req: any, byId: boolean): Record<string, unknown> {
    const { exec, act } = this.findActivity(req, byId);
    act.heartbeatDetails = req.details;
    act.lastHeartbeatTime = this.clock.now();
    this.armHeartbeat(exec, act);
    this.dirty(exec);
    return { cancelRequested: act.cancelRequested };
  }

  /** RespondActivityTaskCompleted(ById). */
  completeActivity(req: any, byId: boolean): void {
    const { exec, act } = this.findActivity(req, byId);
    const started = this.emitActivityStarted(exec, act);
    this.emit(exec, ET.ActivityTaskCompleted, {
      result: req.result,
      scheduledEventId: act.scheduledEventId,
      startedEventId: started,
      identity: req.identity ?? '',
    });
    this.removeActivity(exec, act);
    this.scheduleWorkflowTask(exec);
  }

  /** RespondActivityTaskFailed(ById): retried server-side per RetryPolicy without events. */
  failActivity(req: any, byId: boolean): void {
    const { exec, act } = this.findActivity(req, byId);
    let failure = req.failure;
    if (req.lastHeartbeatDetails) act.heartbeatDetails = req.lastHeartbeatDetails;
    this.attemptFailed(exec, act, failure);
  }

  private attemptFailed(exec: Execution, act: ActivityState, failure: any, timedOut = false): void {
    const now = this.clock.now();
    const deadline = act.scheduleToCloseMs > 0 ? act.scheduledTime + act.scheduleToCloseMs : null;
    const d = act.cancelRequested
      ? { retryState: RetryState.CancelRequested }
      : retryDecision(act.retryPolicy, act.attempt, failure, now, deadline);
    if ('backoffMs' in d) {
      act.lastFailure = failure;
      act.attempt++;
      act.state = 'backoff';
      act.startedTime = undefined;
      act.attemptScheduledTime = now + d.backoffMs;
      this.armActivity(exec, act);
      this.dirty(exec);
      return;
    }
    const started = this.emitActivityStarted(exec, act);
    if (timedOut) {
      this.emit(exec, ET.ActivityTaskTimedOut, {
        failure,
        scheduledEventId: act.scheduledEventId,
        startedEventId: started,
        retryState: d.retryState,
      });
    } else {
      this.emit(exec, ET.ActivityTaskFailed, {
        failure,
        scheduledEventId: act.scheduledEventId,
        startedEventId: started,
        identity: act.identity ?? '',
        retryState: d.retryState,
      });
    }
    this.removeActivity(exec, act);
    this.scheduleWorkflowTask(exec);
  }

  private activityTimedOut(exec: Execution, scheduledEventId: number, type: number, attempt: number): void {
    const act = exec.activities[scheduledEventId];
    if (!act || exec.status !== Status.Running) return;
    if (attempt !== -1 && act.attempt !== attempt) return;
    const names: Record<number, string> = { 1: 'StartToClose', 2: 'ScheduleToStart', 3: 'ScheduleToClose', 4: 'Heartbeat' };
    const failure: Record<string, unknown> = {
      message: `activity ${names[type]} timeout`,
      source: 'Server',
      timeoutFailureInfo: { timeoutType: type, lastHeartbeatDetails: act.heartbeatDetails },
    };
    if (type === TimeoutType.ScheduleToClose || type === TimeoutType.ScheduleToStart) {
      if (act.lastFailure) failure.cause = act.lastFailure;
      const startedId = act.state === 'started' ? this.emitActivityStarted(exec, act) : 0;
      this.emit(exec, ET.ActivityTaskTimedOut, {
        failure,
        scheduledEventId: act.scheduledEventId,
        startedEventId: startedId,
        retryState: RetryState.Timeout,
      });
      this.removeActivity(exec, act);
      this.scheduleWorkflowTask(exec);
      return;
    }
    if (act.state !== 'started') return;
    this.attemptFailed(exec, act, failure, true);
  }

  /** RespondActivityTaskCanceled(ById). */
  cancelActivity(req: any, byId: boolean): void {
    const { exec, act } = this.findActivity(req, byId);
    const started = this.emitActivityStarted(exec, act);
    this.emit(exec, ET.ActivityTaskCanceled, {
      details: req.details,
      latestCancelRequestedEventId: act.cancelRequestedEventId ?? 0,
      scheduledEventId: act.scheduledEventId,
      startedEventId: started,
      identity: req.identity ?? '',
    });
    this.removeActivity(exec, act);
    this.scheduleWorkflowTask(exec);
  }

  // ------------------------------------------------------------------ user timers

  private armUserTimer(exec: Execution, timerId: string): void {
    const t = exec.timers[timerId];
    if (!t) return;
    this.setTimer(exec, `timer:${timerId}`, t.fireAt, () => {
      if (exec.timers[timerId] !== t || exec.status !== Status.Running) return;
      delete exec.timers[timerId];
      this.emit(exec, ET.TimerFired, { timerId, startedEventId: t.startedEventId });
      this.scheduleWorkflowTask(exec);
    });
  }

  // ------------------------------------------------------------------ start / close

  /**
   * StartWorkflowExecution (also used for children, retries and continue-as-new).
   * Applies id reuse and conflict policies; returns `{ exec, started }`.
   */
  startWorkflow(req: any, extra: StartExtra = {}): { exec: Execution; started: boolean } {
    const ns = req.namespace || 'default';
    this.namespace(ns);
    if (!req.workflowId) throw new ServiceError(Code.INVALID_ARGUMENT, 'WorkflowId is not set on request.');
    if (!req.workflowType?.name) throw new ServiceError(Code.INVALID_ARGUMENT, 'WorkflowType is not set on request.');
    if (!req.taskQueue?.name) throw new ServiceError(Code.INVALID_ARGUMENT, 'TaskQueue is not set on request.');
    if (req.cronSchedule) throw new ServiceError(Code.UNIMPLEMENTED, 'cron schedules are not implemented by the dev server');
    const prev = this.current.get(wfKey(ns, req.workflowId));
    if (prev && !extra.continuedFrom) {
      if (prev.status === Status.Running) {
        if (req.requestId && prev.startRequestId === req.requestId) return { exec: prev, started: true };
        const conflict = req.workflowIdConflictPolicy || 0;
        if (conflict === 2) return { exec: prev, started: false };
        if (conflict === 3 || req.workflowIdReusePolicy === 4) {
          this.terminate(prev, 'TerminateExisting', undefined, req.identity);
        } else {
          throw alreadyStarted(prev, req.workflowId);
        }
      } else {
        const reuse = req.workflowIdReusePolicy || 1;
        if (reuse === 3) throw alreadyStarted(prev, req.workflowId);
        if (reuse === 2 && (prev.status === Status.Completed || prev.status === Status.ContinuedAsNew)) {
          throw alreadyStarted(prev, req.workflowId);
        }
      }
    }
    const now = this.clock.now();
    const runId = crypto.randomUUID();
    const runTimeoutMs = toMs(req.workflowRunTimeout) ?? 0;
    const execTimeoutMs = toMs(req.workflowExecutionTimeout) ?? 0;
    const wtTimeoutMs = Math.min(toMs(req.workflowTaskTimeout) || DEFAULT_WORKFLOW_TASK_TIMEOUT_MS, 120_000);
    const executionDeadline = extra.executionDeadline ?? (execTimeoutMs > 0 ? now + execTimeoutMs : null);
    const delayMs = extra.backoffMs ?? toMs(req.workflowStartDelay) ?? 0;
    let runDeadline = runTimeoutMs > 0 ? now + delayMs + runTimeoutMs : null;
    if (executionDeadline !== null && (runDeadline === null || runDeadline > executionDeadline)) runDeadline = executionDeadline;
    const exec: Execution = {
      namespace: ns,
      workflowId: req.workflowId,
      runId,
      firstRunId: extra.firstRunId ?? runId,
      seq: ++this.seq,
      workflowType: req.workflowType.name,
      taskQueue: req.taskQueue.name,
      status: Status.Running,
      startTime: now,
      executionTime: now + delayMs,
      closeTime: null,
      startAttrs: {},
      workflowTaskTimeoutMs: wtTimeoutMs,
      runDeadline,
      executionDeadline,
      memo: { ...(req.memo?.fields ?? {}) },
      searchAttributes: { ...(req.searchAttributes?.indexedFields ?? {}) },
      nextEventId: 1,
      persistedEvents: 0,
      wt: { state: 'none', seq: 0, attempt: 1, transient: false, queue: '', sticky: false, scheduledEventId: 0, startedEventId: 0, scheduledTime: 0, startedTime: 0 },
      lastCompletedStartedEventId: 0,
      sticky: null,
      buffer: [],
      activities: {},
      timers: {},
      children: {},
      parent: extra.parent ?? null,
      cancelRequested: false,
      startRequestId: req.requestId || crypto.randomUUID(),
      signalRequestIds: [],
      firstTaskAt: delayMs > 0 ? now + delayMs : null,
      history: [],
      rt: { timers: new Map(), waiters: new Set() },
    };
    exec.startAttrs = {
      workflowType: req.workflowType,
      parentWorkflowNamespace: extra.parent?.namespace,
      parentWorkflowExecution: extra.parent ? { workflowId: extra.parent.workflowId, runId: extra.parent.runId } : undefined,
      parentInitiatedEventId: extra.parent?.initiatedEventId,
      taskQueue: { name: req.taskQueue.name, kind: TQ_NORMAL },
      input: req.input,
      workflowExecutionTimeout: fromMs(execTimeoutMs),
      workflowRunTimeout: fromMs(runTimeoutMs),
      workflowTaskTimeout: fromMs(wtTimeoutMs),
      continuedExecutionRunId: extra.continuedFrom,
      initiator: extra.initiator,
      continuedFailure: extra.continuedFailure ?? req.continuedFailure,
      lastCompletionResult: extra.lastCompletionResult ?? req.lastCompletionResult,
      originalExecutionRunId: runId,
      identity: req.identity,
      firstExecutionRunId: exec.firstRunId,
      retryPolicy: req.retryPolicy ? retryPolicyProto(normalizeRetryPolicy(req.retryPolicy)) : undefined,
      attempt: extra.attempt ?? 1,
      workflowExecutionExpirationTime: executionDeadline !== null ? fromMs(executionDeadline) : undefined,
      cronSchedule: req.cronSchedule,
      firstWorkflowTaskBackoff: delayMs > 0 ? fromMs(delayMs) : undefined,
      memo: req.memo,
      searchAttributes: req.searchAttributes,
      header: req.header,
      workflowId: req.workflowId,
      rootWorkflowExecution: extra.root ?? { workflowId: req.workflowId, runId },
      priority: req.priority,
    };
    this.executions.set(execKey(ns, exec.workflowId, runId), exec);
    this.current.set(wfKey(ns, exec.workflowId), exec);
    this.emit(exec, ET.WorkflowExecutionStarted, exec.startAttrs);
    if (extra.signal) {
      this.emit(exec, ET.WorkflowExecutionSignaled, extra.signal);
    }
    this.armExecution(exec);
    this.scheduleWorkflowTask(exec);
    this.dirty(exec);
    return { exec, started: true };
  }

  /** Arms run/execution deadline and delayed-first-task timers (also after reload). */
  private armExecution(exec: Execution): void {
    if (exec.status !== Status.Running) return;
    if (exec.runDeadline !== null) {
      this.setTimer(exec, 'run', exec.runDeadline, () => this.workflowTimedOut(exec));
    }
    if (exec.firstTaskAt !== null) {
      this.setTimer(exec, 'first', exec.firstTaskAt, () => {
        exec.firstTaskAt = null;
        this.scheduleWorkflowTask(exec);
      });
    }
  }

  private workflowTimedOut(exec: Execution): void {
    if (exec.status !== Status.Running) return;
    const rp = exec.startAttrs.retryPolicy ? normalizeRetryPolicy(exec.startAttrs.retryPolicy) : null;
    const now = this.clock.now();
    const timedOutFailure = { message: 'workflow timed out', timeoutFailureInfo: { timeoutType: TimeoutType.StartToClose } };
    const d =
      rp && (exec.executionDeadline === null || now < exec.executionDeadline)
        ? retryDecision(rp, exec.startAttrs.attempt ?? 1, timedOutFailure, now, exec.executionDeadline)
        : { retryState: RetryState.Timeout };
    this.discardWorkflowTask(exec);
    if ('backoffMs' in d) {
      const next = this.retryRun(exec, d.backoffMs, timedOutFailure);
      this.emit(exec, ET.WorkflowExecutionTimedOut, { retryState: RetryState.InProgress, newExecutionRunId: next });
      this.close(exec, Status.TimedOut, { continued: true });
      return;
    }
    this.emit(exec, ET.WorkflowExecutionTimedOut, { retryState: d.retryState });
    this.close(exec, Status.TimedOut, {});
  }

  /** Drops an in-flight workflow task (terminate/timeout): held events are written first. */
  private discardWorkflowTask(exec: Execution): void {
    if (exec.wt.state === 'started') {
      exec.wt.state = 'none';
      this.flushBuffer(exec);
    }
    exec.wt.state = 'none';
    this.clearTimer(exec, 'wt');
  }

  private failWorkflow(exec: Execution, failure: any, completedId: number): void {
    const rp = exec.startAttrs.retryPolicy ? normalizeRetryPolicy(exec.startAttrs.retryPolicy) : null;
    const d = retryDecision(rp, exec.startAttrs.attempt ?? 1, failure, this.clock.now(), exec.executionDeadline);
    if ('backoffMs' in d) {
      const next = this.retryRun(exec, d.backoffMs, failure);
      this.emit(exec, ET.WorkflowExecutionFailed, {
        failure,
        retryState: RetryState.InProgress,
        workflowTaskCompletedEventId: completedId,
        newExecutionRunId: next,
      });
      this.close(exec, Status.Failed, { continued: true });
      return;
    }
    this.emit(exec, ET.WorkflowExecutionFailed, { failure, retryState: d.retryState, workflowTaskCompletedEventId: completedId });
    this.close(exec, Status.Failed, { failure, retryState: d.retryState });
  }

  private retryRun(exec: Execution, backoffMs: number, failure: any): string {
    const s = exec.startAttrs;
    const { exec: next } = this.startWorkflow(
      {
        namespace: exec.namespace,
        workflowId: exec.workflowId,
        workflowType: s.workflowType,
        taskQueue: s.taskQueue,
        input: s.input,
        workflowRunTimeout: s.workflowRunTimeout,
        workflowTaskTimeout: s.workflowTaskTimeout,
        retryPolicy: s.retryPolicy,
        memo: { fields: exec.memo },
        searchAttributes: { indexedFields: exec.searchAttributes },
        header: s.header,
        identity: s.identity,
      },
      {
        continuedFrom: exec.runId,
        firstRunId: exec.firstRunId,
        initiator: 2,
        attempt: (s.attempt ?? 1) + 1,
        backoffMs,
        continuedFailure: failure,
        executionDeadline: exec.executionDeadline,
        parent: exec.parent ?? undefined,
        root: s.rootWorkflowExecution,
      },
    );
    exec.newRunId = next.runId;
    return next.runId;
  }

  private continueAsNew(exec: Execution, a: any, completedId: number): void {
    const s = exec.startAttrs;
    const { exec: next } = this.startWorkflow(
      {
        namespace: exec.namespace,
        workflowId: exec.workflowId,
        workflowType: a.workflowType?.name ? a.workflowType : s.workflowType,
        taskQueue: a.taskQueue?.name ? a.taskQueue : s.taskQueue,
        input: a.input,
        workflowRunTimeout: a.workflowRunTimeout ?? s.workflowRunTimeout,
        workflowTaskTimeout: a.workflowTaskTimeout ?? s.workflowTaskTimeout,
        retryPolicy: a.retryPolicy ?? s.retryPolicy,
        memo: a.memo ?? { fields: exec.memo },
        searchAttributes: a.searchAttributes ?? { indexedFields: exec.searchAttributes },
        header: a.header,
        identity: s.identity,
      },
      {
        continuedFrom: exec.runId,
        firstRunId: exec.firstRunId,
        initiator: a.initiator || 1,
        backoffMs: toMs(a.backoffStartInterval) ?? 0,
        lastCompletionResult: a.lastCompletionResult,
        continuedFailure: a.failure,
        executionDeadline: exec.executionDeadline,
        parent: exec.parent ?? undefined,
        root: s.rootWorkflowExecution,
      },
    );
    exec.newRunId = next.runId;
    this.emit(exec, ET.WorkflowExecutionContinuedAsNew, {
      newExecutionRunId: next.runId,
      workflowType: next.startAttrs.workflowType,
      taskQueue: next.startAttrs.taskQueue,
      input: a.input,
      workflowRunTimeout: next.startAttrs.workflowRunTimeout,
      workflowTaskTimeout: next.startAttrs.workflowTaskTimeout,
      workflowTaskCompletedEventId: completedId,
      backoffStartInterval: a.backoffStartInterval,
      initiator: a.initiator || 1,
      failure: a.failure,
      lastCompletionResult: a.lastCompletionResult,
      header: a.header,
      memo: a.memo,
      searchAttributes: a.searchAttributes,
    });
    this.close(exec, Status.ContinuedAsNew, { continued: true });
  }

  /**
   * Closes a run: cancels its timers and tasks, applies parent close policies to children, and
   * reports the result to the parent (unless the run continued as a new run).
   */
  private close(exec: Execution, status: number, outcome: CloseOutcome): void {
    exec.status = status;
    exec.closeTime = this.clock.now();
    exec.wt.state = 'none';
    exec.sticky = null;
    this.clearAllTimers(exec);
    exec.activities = {};
    exec.timers = {};
    const children = Object.values(exec.children);
    exec.children = {};
    if (children.length) this.defer(() => this.applyParentClosePolicy(exec, children));
    if (exec.parent && !outcome.continued) {
      const parent = exec.parent;
      this.defer(() => this.reportToParent(exec, parent, status, outcome));
    }
    this.dirty(exec);
    this.wakeWaiters(exec);
    this.dispatchWaitingQueries(exec);
  }

  private wakeWaiters(exec: Execution): void {
    if (!exec.rt.waiters.size) return;
    const ws = [...exec.rt.waiters];
    exec.rt.waiters.clear();
    for (const w of ws) w();
  }

  private applyParentClosePolicy(exec: Execution, children: Execution['children'][string][]): void {
    for (const c of children) {
      // The current run must belong to the child's run chain (retries / continue-as-new).
      const child = this.current.get(wfKey(c.namespace, c.workflowId));
      const startedRun = c.runId ? this.executions.get(execKey(c.namespace, c.workflowId, c.runId)) : undefined;
      if (!child || child.status !== Status.Running) continue;
      if (startedRun && startedRun.firstRunId !== child.firstRunId) continue;
      if (c.parentClosePolicy === 1) this.terminate(child, 'by parent close policy', undefined, 'devserver');
      else if (c.parentClosePolicy === 3) this.requestCancel(child, 'by parent close policy', 'devserver', { workflowId: exec.workflowId, runId: exec.runId });
    }
  }

  private reportToParent(child: Execution, p: ParentRef, status: number, outcome: CloseOutcome): void {
    const parent = this.executions.get(execKey(p.namespace, p.workflowId, p.runId));
    if (!parent || parent.status !== Status.Running) return;
    const c = parent.children[p.initiatedEventId];
    if (!c) return;
    const base = {
      namespace: child.namespace,
      workflowExecution: { workflowId: child.workflowId, runId: child.runId },
      workflowType: { name: child.workflowType },
      initiatedEventId: p.initiatedEventId,
      startedEventId: c.startedEventId ?? 0,
    };
    switch (status) {
      case Status.Completed:
        this.emit(parent, ET.ChildWorkflowExecutionCompleted, { ...base, result: outcome.result });
        break;
      case Status.Failed:
        this.emit(parent, ET.ChildWorkflowExecutionFailed, { ...base, failure: outcome.failure, retryState: outcome.retryState });
        break;
      case Status.Canceled:
        this.emit(parent, ET.ChildWorkflowExecutionCanceled, { ...base, details: outcome.details });
        break;
      case Status.Terminated:
        this.emit(parent, ET.ChildWorkflowExecutionTerminated, base);
        break;
      case Status.TimedOut:
        this.emit(parent, ET.ChildWorkflowExecutionTimedOut, { ...base, retryState: RetryState.Timeout });
        break;
      default:
        return;
    }
    delete parent.children[p.initiatedEventId];
    this.scheduleWorkflowTask(parent);
  }

  private startChild(parent: Execution, initiatedId: number, attrs: any): void {
    if (parent.status !== Status.Running || !parent.children[initiatedId]) return;
    try {
      const { exec } = this.startWorkflow(
        {
          namespace: attrs.namespace,
          workflowId: attrs.workflowId,
          workflowType: attrs.workflowType,
          taskQueue: attrs.taskQueue,
          input: attrs.input,
          workflowExecutionTimeout: attrs.workflowExecutionTimeout,
          workflowRunTimeout: attrs.workflowRunTimeout,
          workflowTaskTimeout: attrs.workflowTaskTimeout,
          workflowIdReusePolicy: attrs.workflowIdReusePolicy,
          retryPolicy: attrs.retryPolicy,
          cronSchedule: attrs.cronSchedule,
          header: attrs.header,
          memo: attrs.memo,
          searchAttributes: attrs.searchAttributes,
          identity: 'devserver',
        },
        {
          parent: { namespace: parent.namespace, workflowId: parent.workflowId, runId: parent.runId, initiatedEventId: initiatedId },
          root: parent.startAttrs.rootWorkflowExecution,
        },
      );
      parent.children[initiatedId].runId = exec.runId;
      this.emit(parent, ET.ChildWorkflowExecutionStarted, {
        namespace: attrs.namespace,
        initiatedEventId: initiatedId,
        workflowExecution: { workflowId: exec.workflowId, runId: exec.runId },
        workflowType: attrs.workflowType,
        header: attrs.header,
      });
    } catch (err) {
      const cause = err instanceof ServiceError && err.code === Code.ALREADY_EXISTS ? 1 : 2;
      this.emit(parent, ET.StartChildWorkflowExecutionFailed, {
        namespace: attrs.namespace,
        workflowId: attrs.workflowId,
        workflowType: attrs.workflowType,
        cause,
        control: attrs.control,
        initiatedEventId: initiatedId,
        workflowTaskCompletedEventId: attrs.workflowTaskCompletedEventId,
      });
      delete parent.children[initiatedId];
    }
    this.scheduleWorkflowTask(parent);
  }

  private deliverExternalSignal(exec: Execution, initiatedId: number, ns: string, a: any): void {
    if (exec.status !== Status.Running) return;
    const target = this.tryGet(ns, a.execution?.workflowId, a.execution?.runId);
    if (!target || target.status !== Status.Running) {
      this.emit(exec, ET.SignalExternalWorkflowExecutionFailed, {
        cause: 1,
        workflowTaskCompletedEventId: 0,
        namespace: ns,
        workflowExecution: a.execution,
        initiatedEventId: initiatedId,
        control: a.control,
      });
    } else {
      this.signal(target, {
        signalName: a.signalName,
        input: a.input,
        identity: 'devserver',
        header: a.header,
        externalWorkflowExecution: { workflowId: exec.workflowId, runId: exec.runId },
      });
      this.emit(exec, ET.ExternalWorkflowExecutionSignaled, {
        initiatedEventId: initiatedId,
        namespace: ns,
        workflowExecution: { workflowId: target.workflowId, runId: target.runId },
        control: a.control,
      });
    }
    this.scheduleWorkflowTask(exec);
  }

  private deliverExternalCancel(exec: Execution, initiatedId: number, ns: string, a: any): void {
    if (exec.status !== Status.Running) return;
    const target = this.tryGet(ns, a.workflowId, a.runId);
    if (!target || target.status !== Status.Running) {
      this.emit(exec, ET.RequestCancelExternalWorkflowExecutionFailed, {
        cause: 1,
        workflowTaskCompletedEventId: 0,
        namespace: ns,
        workflowExecution: { workflowId: a.workflowId, runId: a.runId },
        initiatedEventId: initiatedId,
        control: a.control,
      });
    } else {
      this.requestCancel(target, a.reason ?? '', 'devserver', { workflowId: exec.workflowId, runId: exec.runId }, initiatedId);
      this.emit(exec, ET.ExternalWorkflowExecutionCancelRequested, {
        initiatedEventId: initiatedId,
        namespace: ns,
        workflowExecution: { workflowId: target.workflowId, runId: target.runId },
      });
    }
    this.scheduleWorkflowTask(exec);
  }

  private tryGet(ns: string, workflowId: string, runId?: string): Execution | undefined {
    if (!workflowId) return undefined;
    return runId ? this.executions.get(execKey(ns, workflowId, runId)) : this.current.get(wfKey(ns, workflowId));
  }

  // ------------------------------------------------------------------ external requests

  /** SignalWorkflowExecution (deduplicated by requestId). */
  signal(exec: Execution, s: { signalName: string; input?: unknown; identity?: string; header?: unknown; requestId?: string; externalWorkflowExecution?: unknown }): void {
    if (exec.status !== Status.Running) throw new ServiceError(Code.NOT_FOUND, 'workflow execution already completed');
    if (s.requestId) {
      if (exec.signalRequestIds.includes(s.requestId)) return;
      exec.signalRequestIds.push(s.requestId);
      if (exec.signalRequestIds.length > 100) exec.signalRequestIds.shift();
    }
    this.emit(exec, ET.WorkflowExecutionSignaled, {
      signalName: s.signalName,
      input: s.input,
      identity: s.identity ?? '',
      header: s.header,
      externalWorkflowExecution: s.externalWorkflowExecution,
      requestId: s.requestId,
    });
    this.scheduleWorkflowTask(exec);
  }

  /** SignalWithStartWorkflowExecution: signal the running run or start one with the signal. */
  signalWithStart(req: any): { exec: Execution; started: boolean } {
    const ns = req.namespace || 'default';
    const cur = this.current.get(wfKey(ns, req.workflowId));
    if (cur && cur.status === Status.Running && req.workflowIdConflictPolicy !== 3) {
      this.signal(cur, { signalName: req.signalName, input: req.signalInput, identity: req.identity, header: req.header, requestId: req.requestId });
      return { exec: cur, started: false };
    }
    return this.startWorkflow({ ...req, workflowIdConflictPolicy: req.workflowIdConflictPolicy === 3 ? 3 : 1 }, {
      signal: { signalName: req.signalName, input: req.signalInput, identity: req.identity ?? '', header: req.header },
    });
  }

  /** RequestCancelWorkflowExecution: WorkflowExecutionCancelRequested + workflow task. */
  requestCancel(exec: Execution, reason: string, identity: string, external?: { workflowId: string; runId: string }, initiatedId?: number): void {
    if (exec.status !== Status.Running) throw new ServiceError(Code.NOT_FOUND, 'workflow execution already completed');
    if (exec.cancelRequested) return;
    exec.cancelRequested = true;
    this.emit(exec, ET.WorkflowExecutionCancelRequested, {
      cause: reason,
      identity,
      externalWorkflowExecution: external,
      externalInitiatedEventId: initiatedId,
    });
    this.scheduleWorkflowTask(exec);
  }

  /** TerminateWorkflowExecution. */
  terminate(exec: Execution, reason: string, details: unknown, identity: string): void {
    if (exec.status !== Status.Running) throw new ServiceError(Code.NOT_FOUND, 'workflow execution already completed');
    this.discardWorkflowTask(exec);
    this.emit(exec, ET.WorkflowExecutionTerminated, { reason, details, identity });
    this.close(exec, Status.Terminated, {});
  }

  // ------------------------------------------------------------------ queries

  /**
   * QueryWorkflow: dispatched as a query task when no workflow task is in flight, attached to the
   * next workflow task when one is scheduled, or held until the in-flight task completes.
   */
  query(exec: Execution, query: Record<string, any>): Promise<{ answer?: unknown; error?: string; failure?: unknown }> {
    return new Promise((resolve, reject) => {
      const id = crypto.randomUUID();
      const timer = setTimeout(() => {
        this.queries.delete(id);
        reject(new ServiceError(Code.DEADLINE_EXCEEDED, 'query timed out: no worker answered'));
      }, QUERY_TIMEOUT_MS);
      const q: PendingQuery = {
        id,
        exec,
        query,
        dispatched: 'no',
        resolve: (r) => {
          clearTimeout(timer);
          this.queries.delete(id);
          resolve(r);
        },
      };
      this.queries.set(id, q);
      this.dispatchWaitingQueries(exec);
    });
  }

  private dispatchWaitingQueries(exec: Execution): void {
    if (exec.wt.state !== 'none' && exec.status === Status.Running) return; // attached to / waits for the task
    for (const q of this.queries.values()) {
      if (q.exec !== exec || q.dispatched !== 'no') continue;
      q.dispatched = 'legacy';
      const queue = exec.sticky && exec.status === Status.Running ? exec.sticky.queue : exec.taskQueue;
      this.wfList(exec.namespace, queue).add({ kind: 'query', exec, queryId: q.id });
    }
  }

  private legacyQueryTask(exec: Execution, queryId: string): Record<string, unknown> {
    const q = this.queries.get(queryId)!;
    const sticky = !!exec.sticky && exec.status === Status.Running;
    const events = sticky ? exec.history.slice(exec.lastCompletedStartedEventId) : exec.history.slice();
    return {
      taskToken: encodeToken({ k: 'q', id: queryId }),
      workflowExecution: { workflowId: exec.workflowId, runId: exec.runId },
      workflowType: { name: exec.workflowType },
      previousStartedEventId: exec.lastCompletedStartedEventId,
      startedEventId: exec.lastCompletedStartedEventId,
      attempt: 1,
      history: { events },
      query: q.query,
      workflowExecutionTaskQueue: { name: exec.taskQueue, kind: TQ_NORMAL },
      scheduledTime: fromMs(this.clock.now()),
      startedTime: fromMs(this.clock.now()),
    };
  }

  /** RespondQueryTaskCompleted (legacy query tasks). */
  respondQuery(req: any): void {
    const t = decodeToken(req.taskToken);
    if (t.k !== 'q') throw new ServiceError(Code.INVALID_ARGUMENT, 'not a query task token');
    const q = this.queries.get(t.id);
    if (!q) throw new ServiceError(Code.NOT_FOUND, 'query not found (timed out?)');
    if (req.completedType === 1) q.resolve({ answer: req.queryResult });
    else q.resolve({ error: req.errorMessage || req.failure?.message || 'query failed', failure: req.failure });
  }

  private answerAttachedQueries(exec: Execution, results: Record<string, any> | undefined): void {
    for (const q of [...this.queries.values()]) {
      if (q.exec !== exec || q.dispatched !== 'attached') continue;
      const r = results?.[q.id];
      if (!r) {
        q.dispatched = 'no';
        continue;
      }
      if (r.resultType === 1) q.resolve({ answer: r.answer });
      else q.resolve({ error: r.errorMessage || r.failure?.message || 'query failed', failure: r.failure });
    }
  }

  // ------------------------------------------------------------------ workers

  /** ShutdownWorker / ResetStickyTaskQueue: stickiness cleared, sticky tasks move to the normal queue. */
  clearSticky(ns: string, stickyQueue: string | undefined, exec?: Execution): void {
    const targets = exec ? [exec] : [...this.executions.values()].filter((e) => e.namespace === ns && e.sticky?.queue === stickyQueue);
    for (const e of targets) {
      if (!e.sticky) continue;
      if (e.wt.state === 'scheduled' && e.wt.sticky) this.stickyTimeout(e, e.wt.seq);
      else e.sticky = null;
      this.dirty(e);
    }
  }

  // ------------------------------------------------------------------ history

  /**
   * Waits until the execution has an event with id >= `fromEventId` (or is closed), or the
   * long-poll window passes. `onCancel` drops the wait when the caller goes away.
   */
  waitForEvents(exec: Execution, fromEventId: number, closeOnly: boolean, onCancel: (fn: () => void) => void): Promise<void> {
    const ready = () => (closeOnly ? exec.status !== Status.Running : exec.nextEventId > fromEventId || exec.status !== Status.Running);
    if (ready()) return Promise.resolve();
    return new Promise((resolve) => {
      let done = false;
      const finish = () => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        exec.rt.waiters.delete(check);
        resolve();
      };
      const check = () => {
        if (ready()) finish();
        else exec.rt.waiters.add(check);
      };
      const timer = setTimeout(finish, HISTORY_LONG_POLL_MS);
      exec.rt.waiters.add(check);
      onCancel(finish);
    });
  }

  // ------------------------------------------------------------------ time skipping

  /** True when no workflow or activity task is queued or running anywhere (time may jump). */
  isIdle(): boolean {
    for (const e of this.executions.values()) {
      if (e.status !== Status.Running) continue;
      if (e.wt.state === 'started' || (e.wt.state === 'scheduled' && e.wt.backoffUntil === undefined)) return false;
      for (const a of Object.values(e.activities)) if (a.state !== 'backoff') return false;
    }
    for (const q of this.queries.values()) if (q.dispatched !== 'no') return false;
    return true;
  }

  /** Schedules a check that skips time when time skipping is unlocked and nothing is runnable. */
  scheduleIdleCheck(): void {
    if (!this.timeSkipping || this.timeSkippingLocks > 0 || this.idleCheckScheduled || this.stopped) return;
    this.idleCheckScheduled = true;
    setImmediate(() => {
      this.idleCheckScheduled = false;
      this.maybeSkip();
    });
  }

  private maybeSkip(): void {
    if (this.stopped || this.timeSkippingLocks > 0 || !this.isIdle()) return;
    const next = this.clock.nextAt();
    if (next === undefined) return;
    if (next > this.clock.now()) {
      this.log('debug', 'time skipping', { toMs: next });
      this.clock.skipToNext();
      this.runLater();
    }
    this.scheduleIdleCheck();
  }

  // ------------------------------------------------------------------ lifecycle

  /** Re-arms timers and re-queues tasks after loading state from Postgres. */
  restore(exec: Execution): void {
    this.executions.set(execKey(exec.namespace, exec.workflowId, exec.runId), exec);
    const cur = this.current.get(wfKey(exec.namespace, exec.workflowId));
    if (!cur || cur.seq < exec.seq) this.current.set(wfKey(exec.namespace, exec.workflowId), exec);
    this.seq = Math.max(this.seq, exec.seq, ...exec.history.slice(-1).map((e) => e.taskId ?? 0));
    if (exec.status !== Status.Running) return;
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

const CLOSE_COMMANDS = new Set([4, 5, 7, 10]);
const SUPPORTED_COMMANDS = new Set([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 16]);

/** Rejects a completion before anything is written when a command cannot be applied. */
function validateCommands(commands: any[]): void {
  for (const c of commands) {
    if (!SUPPORTED_COMMANDS.has(c.commandType)) {
      throw new ServiceError(
        Code.UNIMPLEMENTED,
        `command type ${c.commandType} is not implemented by the dev server (updates, Nexus and protocol messages are not supported)`,
      );
    }
    if (c.commandType === 11 && c.startChildWorkflowExecutionCommandAttributes?.cronSchedule) {
      throw new ServiceError(Code.UNIMPLEMENTED, 'cron schedules are not implemented by the dev server');
    }
    if (c.commandType === 1) {
      const a = c.scheduleActivityTaskCommandAttributes ?? {};
      if (!a.activityId || !a.activityType?.name) throw new ServiceError(Code.INVALID_ARGUMENT, 'ActivityId or ActivityType is not set on command.');
      if (!toMs(a.scheduleToCloseTimeout) && !toMs(a.startToCloseTimeout)) {
        throw new ServiceError(Code.INVALID_ARGUMENT, 'A valid StartToClose or ScheduleToCloseTimeout is not set on command.');
      }
    }
  }
}

interface CloseOutcome {
  result?: unknown;
  failure?: unknown;
  details?: unknown;
  retryState?: number;
  continued?: boolean;
}

/** Extra inputs for internal starts (children, retries, continue-as-new, signal-with-start). */
export interface StartExtra {
  parent?: ParentRef;
  root?: unknown;
  continuedFrom?: string;
  firstRunId?: string;
  initiator?: number;
  attempt?: number;
  backoffMs?: number;
  continuedFailure?: unknown;
  lastCompletionResult?: unknown;
  executionDeadline?: number | null;
  signal?: Record<string, unknown>;
}

function alreadyStarted(prev: Execution, workflowId: string): ServiceError {
  return new ServiceError(Code.ALREADY_EXISTS, `Workflow execution is already running. WorkflowId: ${workflowId}, RunId: ${prev.runId}.`, {
    typeName: 'temporal.api.errordetails.v1.WorkflowExecutionAlreadyStartedFailure',
    value: { startRequestId: prev.startRequestId, runId: prev.runId },
  });
}

/** Merges upserted payloads; an empty / null / [] payload removes the key (as the real server). */
function mergePayloadMap(target: Record<string, unknown>, fields: Record<string, any> | undefined): void {
  for (const [k, p] of Object.entries(fields ?? {})) {
    const data = p?.data ? Buffer.from(p.data).toString('utf8') : '';
    if (!data || data === 'null' || data === '[]') delete target[k];
    else target[k] = p;
  }
}
