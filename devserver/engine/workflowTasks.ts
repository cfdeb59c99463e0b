/**
 * Workflow tasks: scheduling (normal or sticky queue), polling, starting (full or partial
 * history, transient events of retried attempts), timeouts, failures and retries with backoff
 * (devserver/README.md "Sticky queues", "Workflow-task failures and timeouts").
 */
import crypto from 'node:crypto';
import { status as Code } from '@grpc/grpc-js';
import { fromMs } from '../proto';
import {
  EventAttrs,
  EventType,
  PollWorkflowTaskQueueResponse,
  SuggestContinueAsNewReason,
  TaskQueue,
  TimeoutType,
  WorkflowQuery,
  RpcRequest,
} from '../protoTypes';
import { Execution, HistoryEvent, ServiceError, Status } from '../types';
import { decodeToken, encodeToken, execKey, SHUTDOWN_GRACE_MS, STICKY_POLLER_UNAVAILABLE_MS, SUGGEST_CAN_BYTES, SUGGEST_CAN_EVENTS, TaskPoll, Token, TQ_NORMAL, TQ_STICKY, WfEntry, wfKey } from './state';
import { Queries } from './queries';

/** History size fields of WorkflowTaskStarted (temporal.api.history.v1.WorkflowTaskStartedEventAttributes). */
type HistoryLimits = Pick<
  EventAttrs<typeof EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED>,
  'historySizeBytes' | 'suggestContinueAsNew' | 'suggestContinueAsNewReasons'
>;

/** Engine layer for workflow tasks (see `index.ts`); completion with commands is in `commands.ts`. */
export abstract class WorkflowTasks extends Queries {
  /** Wall-clock ms of the last workflow-task poll per queue (`wfKey`), for sticky availability. */
  private readonly wfPolledAt = new Map<string, number>();

  /** Schedules a workflow task if none is pending (new events since the last one). */
  protected scheduleWorkflowTask(exec: Execution): void {
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
    wt.scheduledEventId = this.emit(exec, EventType.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED, {
      taskQueue: this.wtQueueProto(exec),
      startToCloseTimeout: fromMs(exec.workflowTaskTimeoutMs),
      attempt: 1,
    });
    this.enqueueWorkflowTask(exec);
  }

  protected wtQueueProto(exec: Execution): TaskQueue {
    return exec.wt.sticky
      ? { name: exec.wt.queue, kind: TQ_STICKY, normalName: exec.taskQueue }
      : { name: exec.taskQueue, kind: TQ_NORMAL };
  }

  protected enqueueWorkflowTask(exec: Execution): void {
    const wt = exec.wt;
    if (wt.sticky && exec.sticky && !this.stickyWorkerAvailable(exec.namespace, exec.sticky.queue)) {
      // StickyWorkerUnavailable: the task goes to the normal queue (full history) at once instead of
      // waiting out the sticky schedule-to-start timeout; the scheduled event keeps naming the sticky
      // queue, as the real server's history task does when matching refuses it.
      exec.sticky = null;
      wt.sticky = false;
      wt.queue = exec.taskQueue;
    }
    if (wt.sticky && exec.sticky) {
      const at = wt.scheduledTime + exec.sticky.scheduleToStartMs;
      this.setTimer(exec, 'wt', at, () => this.stickyTimeout(exec, wt.seq));
    }
    this.wfList(exec.namespace, wt.queue).add({ kind: 'wt', exec, seq: wt.seq });
    this.dirty(exec);
  }

  /**
   * Whether a sticky queue's worker is there: a poll is waiting on it now, or one arrived within
   * STICKY_POLLER_UNAVAILABLE_MS (wall clock: pollers are real processes even when time is skipped).
   * A queue ShutdownWorker named, or one nobody ever polled, is unavailable.
   */
  protected stickyWorkerAvailable(ns: string, queue: string): boolean {
    if (this.wfLists.get(wfKey(ns, queue))?.hasLivePoller()) return true;
    const at = this.wfPolledAt.get(wfKey(ns, queue));
    return at !== undefined && Date.now() - at < STICKY_POLLER_UNAVAILABLE_MS;
  }

  /** Records a workflow-task poll of a queue (a departed worker's polls do not count). */
  private notePoll(poll: TaskPoll): void {
    if (poll.workerInstanceKey && this.shutDownWorkers.has(poll.workerInstanceKey)) return;
    const now = Date.now();
    if (this.wfPolledAt.size >= 4096) {
      for (const [k, at] of this.wfPolledAt) if (now - at >= STICKY_POLLER_UNAVAILABLE_MS) this.wfPolledAt.delete(k);
    }
    this.wfPolledAt.set(wfKey(poll.ns, poll.queue), now);
  }

  /** Sticky schedule-to-start timeout: fall back to the normal queue (full history). */
  protected stickyTimeout(exec: Execution, seq: number): void {
    const wt = exec.wt;
    if (exec.status !== Status.Running || wt.state !== 'scheduled' || wt.seq !== seq || !wt.sticky) return;
    exec.sticky = null;
    if (!wt.transient) {
      this.emit(exec, EventType.EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT, {
        scheduledEventId: wt.scheduledEventId,
        startedEventId: 0,
        timeoutType: TimeoutType.TIMEOUT_TYPE_SCHEDULE_TO_START,
      });
    }
    wt.state = 'none';
    this.scheduleWorkflowTask(exec);
  }

  /** Retries a failed/timed-out workflow task: attempt+1, transient, normal queue, backoff. */
  protected retryWorkflowTask(exec: Execution, attempt: number): void {
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
  pollWorkflowTask(poll: TaskPoll): Promise<PollWorkflowTaskQueueResponse> {
    this.namespace(poll.ns);
    this.notePoll(poll);
    return this.takeOrWait(this.wfList(poll.ns, poll.queue), poll, (entry) => {
      const resp = this.startWorkflowTask(entry, poll.identity);
      if (entry.kind === 'wt') entry.exec.wt.workerKey = poll.workerInstanceKey;
      return resp;
    });
  }

  /**
   * ShutdownWorker of a worker instance: its polls complete empty (core.ts), and workflow tasks it
   * started and has not answered time out (START_TO_CLOSE) at most SHUTDOWN_GRACE_MS later instead
   * of after the full task timeout, so a task handed over just before the shutdown always ends the
   * same way: answered by the departing worker within the grace, or timed out and retried on the
   * normal queue.
   */
  shutdownWorker(workerInstanceKey: string): void {
    this.completeWorkerPolls(workerInstanceKey);
    const at = this.clock.now() + SHUTDOWN_GRACE_MS;
    for (const exec of this.executions.values()) {
      const wt = exec.wt;
      if (exec.status !== Status.Running || wt.state !== 'started' || wt.workerKey !== workerInstanceKey) continue;
      if (wt.startedTime + exec.workflowTaskTimeoutMs <= at) continue;
      const seq = wt.seq;
      this.setTimer(exec, 'wt', at, () => this.workflowTaskTimedOut(exec, seq));
    }
  }

  /**
   * Eager workflow start (StartWorkflowExecutionRequest.request_eager_execution): the run's first
   * workflow task, when it is scheduled on the normal queue, is started for the caller and
   * returned with the start response instead of waiting for a poll; undefined otherwise (start
   * delay, an existing run), and the task stays on its queue.
   */
  startEagerWorkflowTask(exec: Execution, identity: string): PollWorkflowTaskQueueResponse | undefined {
    if (exec.status !== Status.Running || exec.wt.state !== 'scheduled' || exec.wt.sticky || exec.wt.backoffUntil !== undefined) return undefined;
    return this.startWorkflowTask({ kind: 'wt', exec, seq: exec.wt.seq }, identity);
  }

  protected startWorkflowTask(e: WfEntry, identity: string): PollWorkflowTaskQueueResponse {
    if (e.kind === 'query') return this.legacyQueryTask(e.exec, e.queryId);
    const exec = e.exec;
    const wt = exec.wt;
    if (wt.sticky) this.clearTimer(exec, 'wt');
    wt.state = 'started';
    wt.startedTime = this.clock.now();
    wt.identity = identity;
    wt.workerKey = undefined;
    wt.requestId = crypto.randomUUID();
    let transientEvents: HistoryEvent[] = [];
    if (wt.transient) {
      wt.scheduledEventId = exec.nextEventId;
      wt.startedEventId = exec.nextEventId + 1;
      transientEvents = this.transientEvents(exec);
    } else {
      wt.startedEventId = this.emit(
        exec,
        EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED,
        { scheduledEventId: wt.scheduledEventId, identity, requestId: wt.requestId, ...this.historyLimits(exec) },
        { direct: true },
      );
    }
    const seq = wt.seq;
    this.setTimer(exec, 'wt', wt.startedTime + exec.workflowTaskTimeoutMs, () => this.workflowTaskTimedOut(exec, seq));
    const fromId = wt.sticky ? exec.lastCompletedStartedEventId + 1 : 1;
    const events = exec.history.slice(fromId - 1).concat(transientEvents);
    const resp: PollWorkflowTaskQueueResponse = {
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
    const attached: Record<string, WorkflowQuery> = {};
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
  protected historyLimits(exec: Execution): HistoryLimits {
    const reasons: SuggestContinueAsNewReason[] = [];
    const size = exec.historySizeBytes ?? 0;
    if (size >= SUGGEST_CAN_BYTES) reasons.push(SuggestContinueAsNewReason.SUGGEST_CONTINUE_AS_NEW_REASON_HISTORY_SIZE_TOO_LARGE);
    if (exec.nextEventId >= SUGGEST_CAN_EVENTS) reasons.push(SuggestContinueAsNewReason.SUGGEST_CONTINUE_AS_NEW_REASON_TOO_MANY_HISTORY_EVENTS);
    return { historySizeBytes: size, suggestContinueAsNew: reasons.length > 0, suggestContinueAsNewReasons: reasons };
  }

  protected transientEvents(exec: Execution): HistoryEvent[] {
    const wt = exec.wt;
    return [
      {
        eventId: wt.scheduledEventId,
        eventTime: fromMs(wt.scheduledTime),
        eventType: EventType.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED,
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
        eventType: EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED,
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

  protected writeTransient(exec: Execution): void {
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

  protected workflowTaskForToken(token: Token): Execution {
    if (token.k !== 'w') throw new ServiceError(Code.INVALID_ARGUMENT, 'not a workflow task token');
    const ns = token.nid ? this.namespaceById(token.nid).name : token.n;
    const exec = this.executions.get(execKey(ns, token.w, token.r));
    if (!exec || exec.status !== Status.Running || exec.wt.state !== 'started' || exec.wt.seq !== token.q) {
      throw new ServiceError(Code.NOT_FOUND, 'Workflow task not found.');
    }
    return exec;
  }

  protected workflowTaskTimedOut(exec: Execution, seq: number): void {
    const wt = exec.wt;
    if (exec.status !== Status.Running || wt.state !== 'started' || wt.seq !== seq) return;
    if (!wt.transient) {
      this.emit(
        exec,
        EventType.EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT,
        { scheduledEventId: wt.scheduledEventId, startedEventId: wt.startedEventId, timeoutType: TimeoutType.TIMEOUT_TYPE_START_TO_CLOSE },
        { direct: true },
      );
    }
    this.releaseAttachedQueries(exec);
    wt.state = 'none';
    this.flushBuffer(exec);
    this.retryWorkflowTask(exec, wt.attempt + 1);
  }

  /** RespondWorkflowTaskFailed: WorkflowTaskFailed event on attempt 1 only, then retry. */
  failWorkflowTask(req: RpcRequest<'respondWorkflowTaskFailed'>): void {
    const exec = this.workflowTaskForToken(decodeToken(req.taskToken));
    const wt = exec.wt;
    this.clearTimer(exec, 'wt');
    if (!wt.transient) {
      this.emit(
        exec,
        EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED,
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

  /** ShutdownWorker / ResetStickyTaskQueue: stickiness cleared, sticky tasks move to the normal queue. */
  clearSticky(ns: string, stickyQueue: string | undefined, exec?: Execution): void {
    if (stickyQueue !== undefined) this.wfPolledAt.delete(wfKey(ns, stickyQueue));
    const targets = exec ? [exec] : [...this.executions.values()].filter((e) => e.namespace === ns && e.sticky?.queue === stickyQueue);
    for (const e of targets) {
      if (!e.sticky) continue;
      if (e.wt.state === 'scheduled' && e.wt.sticky) this.stickyTimeout(e, e.wt.seq);
      else e.sticky = null;
      this.dirty(e);
    }
  }
}
