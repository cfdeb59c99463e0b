/**
 * Activities: scheduling with the server's timeout defaults and retry policy, dispatch (queue or
 * eager), heartbeats, completion/failure/cancellation by token or id, server-side retries and
 * the four activity timeouts (devserver/README.md "Activities", "Eager activity dispatch").
 */
import crypto from 'node:crypto';
import { status as Code } from '@grpc/grpc-js';
import { fromMs, toMs } from '../proto';
import {
  ActivityCanceledRequest,
  ActivityCompletedRequest,
  ActivityFailedRequest,
  ActivityHeartbeatRequest,
  EventType,
  Failure,
  Payloads,
  PollActivityTaskQueueResponse,
  RecordActivityTaskHeartbeatResponse,
  RetryState,
  TimeoutType,
  CommandAttrs,
} from '../protoTypes';
import { ActivityState, Execution, ServiceError, Status } from '../types';
import { ActEntry, decodeToken, encodeToken, execKey, TaskPoll, TQ_NORMAL } from './state';
import { normalizeRetryPolicy, retryDecision, retryPolicyProto } from './retry';
import { WorkflowTasks } from './workflowTasks';

/** The fields of an activity request (by task token or by id) that identify the activity. */
interface ActivityRequestRef {
  taskToken?: Uint8Array | null;
  namespace?: string | null;
  workflowId?: string | null;
  runId?: string | null;
  activityId?: string | null;
  identity?: string | null;
}

/**
 * Heartbeat details, or nothing when they only hold data-less `binary/null` payloads (a TypeScript
 * SDK `heartbeat()` without details): what DescribeWorkflowExecution's
 * `PendingActivityInfo.heartbeat_details` and the next attempt's `heartbeat_details` show for a
 * heartbeat without details (absent, as from the Go and Java SDKs). The SDKs decode both to `undefined`.
 */
function detailsOrNothing(details: Payloads | null | undefined): Payloads | undefined {
  const payloads = details?.payloads ?? [];
  const isNull = (p: NonNullable<Payloads['payloads']>[number]) =>
    Buffer.from(p.metadata?.encoding ?? '').toString() === 'binary/null' && !p.data?.length && Object.keys(p.metadata ?? {}).length === 1;
  return payloads.length === 0 || payloads.every(isNull) ? undefined : (details ?? undefined);
}

/** Engine layer for activities (see `index.ts`). */
export abstract class Activities extends WorkflowTasks {
  /** Activities scheduled eagerly by the workflow task being completed (null outside a completion). */
  protected eagerActivities: number[] | null = null;

  /**
   * ScheduleActivityTask command: fills the timeouts and retry policy as the real server does,
   * writes ActivityTaskScheduled and queues the task (or holds it for eager dispatch).
   * @throws ServiceError INVALID_ARGUMENT when neither schedule-to-close nor start-to-close is set.
   */
  protected scheduleActivity(exec: Execution, a: CommandAttrs<'scheduleActivityTaskCommandAttributes'>, completedId: number): void {
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
    const id = this.emit(exec, EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED, {
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
      activityId: a.activityId ?? '',
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
      priority: a.priority,
    };
    exec.activities[id] = act;
    this.armActivity(exec, act);
    if (a.requestEagerExecution && taskQueue === exec.taskQueue && this.eagerActivities) {
      this.eagerActivities.push(id);
      return;
    }
    this.actList(exec.namespace, taskQueue).add({ exec, scheduledEventId: id, attempt: 1 });
  }

  /**
   * RequestCancelActivityTask command: ActivityTaskCancelRequested; a not-started activity is
   * canceled at once (returns true: the workflow needs a new task), a started one is told through
   * its heartbeat. An unknown scheduled event id is ignored.
   */
  protected requestCancelActivity(exec: Execution, scheduledEventId: number, completedId: number): boolean {
    const act = exec.activities[scheduledEventId];
    if (!act) return false;
    const reqId = this.emit(exec, EventType.EVENT_TYPE_ACTIVITY_TASK_CANCEL_REQUESTED, {
      scheduledEventId,
      workflowTaskCompletedEventId: completedId,
    });
    if (act.state !== 'started') {
      this.emit(exec, EventType.EVENT_TYPE_ACTIVITY_TASK_CANCELED, {
        scheduledEventId,
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

  /** (Re)arms an activity's timers from its state (also used after reload). */
  protected armActivity(exec: Execution, act: ActivityState): void {
    const k = `act:${act.scheduledEventId}`;
    this.clearTimer(exec, `${k}:s2s`);
    this.clearTimer(exec, `${k}:stc`);
    this.clearTimer(exec, `${k}:hb`);
    this.clearTimer(exec, `${k}:backoff`);
    const attempt = act.attempt;
    if (act.scheduleToCloseMs > 0 && !exec.rt.timers.has(`${k}:s2c`)) {
      this.setTimer(exec, `${k}:s2c`, act.scheduledTime + act.scheduleToCloseMs, () =>
        this.activityTimedOut(exec, act.scheduledEventId, TimeoutType.TIMEOUT_TYPE_SCHEDULE_TO_CLOSE, -1),
      );
    }
    if (act.state === 'scheduled' && act.scheduleToStartMs > 0 && act.scheduleToStartMs !== act.scheduleToCloseMs) {
      this.setTimer(exec, `${k}:s2s`, act.attemptScheduledTime + act.scheduleToStartMs, () =>
        this.activityTimedOut(exec, act.scheduledEventId, TimeoutType.TIMEOUT_TYPE_SCHEDULE_TO_START, attempt),
      );
    }
    if (act.state === 'started') {
      if (act.startToCloseMs > 0) {
        this.setTimer(exec, `${k}:stc`, act.startedTime! + act.startToCloseMs, () =>
          this.activityTimedOut(exec, act.scheduledEventId, TimeoutType.TIMEOUT_TYPE_START_TO_CLOSE, attempt),
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
        // A paused activity waits for UnpauseActivity instead of its retry.
        if (act.pausedAt === undefined) this.actList(exec.namespace, act.taskQueue).add({ exec, scheduledEventId: act.scheduledEventId, attempt });
        this.dirty(exec);
      });
    }
  }

  protected armHeartbeat(exec: Execution, act: ActivityState): void {
    if (act.heartbeatMs <= 0 || act.state !== 'started') return;
    const attempt = act.attempt;
    const from = act.lastHeartbeatTime ?? act.startedTime!;
    this.setTimer(exec, `act:${act.scheduledEventId}:hb`, from + act.heartbeatMs, () =>
      this.activityTimedOut(exec, act.scheduledEventId, TimeoutType.TIMEOUT_TYPE_HEARTBEAT, attempt),
    );
  }

  protected removeActivity(exec: Execution, act: ActivityState): void {
    delete exec.activities[act.scheduledEventId];
    for (const s of ['s2c', 's2s', 'stc', 'hb', 'backoff']) this.clearTimer(exec, `act:${act.scheduledEventId}:${s}`);
  }

  /** PollActivityTaskQueue: returns a task or `{}` (no task). */
  pollActivityTask(poll: TaskPoll): Promise<PollActivityTaskQueueResponse> {
    this.namespace(poll.ns);
    return this.takeOrWait(this.actList(poll.ns, poll.queue), poll, (entry) => this.startActivityTask(entry, poll.identity));
  }

  protected startActivityTask(e: ActEntry, identity: string): PollActivityTaskQueueResponse {
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
  protected findActivity(req: ActivityRequestRef, byId: boolean): { exec: Execution; act: ActivityState } {
    if (byId) {
      const exec = this.getExecution(req.namespace || 'default', req.workflowId, req.runId);
      const act = Object.values(exec.activities).find((a) => a.activityId === req.activityId);
      if (!act || exec.status !== Status.Running) throw new ServiceError(Code.NOT_FOUND, 'activity not found');
      if (act.state !== 'started') {
        // Completion by id of a not-yet-started attempt: treat it as started now.
        act.state = 'started';
        act.startedTime = this.clock.now();
        act.identity = req.identity ?? undefined;
        act.requestId = crypto.randomUUID();
      }
      return { exec, act };
    }
    const t = decodeToken(req.taskToken);
    if (t.k !== 'a') throw new ServiceError(Code.INVALID_ARGUMENT, 'not an activity task token');
    const ns = t.nid ? this.namespaceById(t.nid).name : t.n;
    const exec = this.executions.get(execKey(ns, t.w, t.r));
    const act = exec?.activities[t.s];
    if (!exec || !act || exec.status !== Status.Running || act.attempt !== t.a || act.state !== 'started') {
      // The real server's ErrActivityTaskNotFound (service/history/consts).
      throw new ServiceError(Code.NOT_FOUND, 'invalid activityID or activity already timed out or invoking workflow is completed', {
        typeName: 'temporal.api.errordetails.v1.NotFoundFailure',
        value: { currentCluster: 'active', activeCluster: 'active' },
      });
    }
    return { exec, act };
  }

  protected emitActivityStarted(exec: Execution, act: ActivityState): number {
    return this.emit(exec, EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED, {
      scheduledEventId: act.scheduledEventId,
      identity: act.identity ?? '',
      requestId: act.requestId ?? '',
      attempt: act.attempt,
      lastFailure: act.lastFailure,
    });
  }

  /** RecordActivityTaskHeartbeat(ById): stores details, resets the heartbeat timeout. */
  heartbeatActivity(req: ActivityHeartbeatRequest, byId: boolean): RecordActivityTaskHeartbeatResponse {
    const { exec, act } = this.findActivity(req, byId);
    act.heartbeatDetails = detailsOrNothing(req.details);
    act.lastHeartbeatTime = this.clock.now();
    this.armHeartbeat(exec, act);
    this.dirty(exec);
    return { cancelRequested: act.cancelRequested, activityPaused: act.pausedAt !== undefined, activityReset: !!act.resetPending };
  }

  /** Pending activities of a run selected by activity id or type (`all` for every one). */
  private selectActivities(exec: Execution, sel: { id?: string | null; type?: string | null; all?: boolean | null }): ActivityState[] {
    if (exec.status !== Status.Running) throw new ServiceError(Code.NOT_FOUND, 'workflow execution already completed');
    const acts = Object.values(exec.activities).filter((a) => sel.all || (sel.id ? a.activityId === sel.id : !!sel.type && a.activityType === sel.type));
    if (!acts.length) throw new ServiceError(Code.NOT_FOUND, `activity not found: ${sel.id || sel.type || ''}`);
    return acts;
  }

  /** Dispatches a not-started attempt now (after unpause or reset), on a fresh queue entry. */
  private dispatchNow(exec: Execution, act: ActivityState): void {
    if (act.state === 'started') return;
    act.state = 'scheduled';
    act.attemptScheduledTime = this.clock.now();
    this.armActivity(exec, act);
    if (act.pausedAt === undefined) this.actList(exec.namespace, act.taskQueue).add({ exec, scheduledEventId: act.scheduledEventId, attempt: act.attempt });
  }

  /**
   * PauseActivity (the real server's activity pause): a pending activity is no longer dispatched
   * nor retried; a running attempt runs on and its heartbeats answer `activityPaused`.
   * @throws ServiceError NOT_FOUND when no pending activity matches.
   */
  pauseActivity(exec: Execution, sel: { id?: string | null; type?: string | null }): void {
    for (const act of this.selectActivities(exec, sel)) act.pausedAt ??= this.clock.now();
    this.dirty(exec);
  }

  /**
   * UnpauseActivity: a paused activity waiting to start or to retry is dispatched at once,
   * optionally with its attempts (`resetAttempts`) and heartbeat details (`resetHeartbeat`) reset.
   */
  unpauseActivity(exec: Execution, sel: { id?: string | null; type?: string | null; all?: boolean | null }, opts: { resetAttempts?: boolean | null; resetHeartbeat?: boolean | null }): void {
    for (const act of this.selectActivities(exec, sel)) {
      if (act.pausedAt === undefined) continue;
      act.pausedAt = undefined;
      if (opts.resetAttempts && act.state !== 'started') act.attempt = 1;
      if (opts.resetHeartbeat) act.heartbeatDetails = null;
      this.dispatchNow(exec, act);
    }
    this.dirty(exec);
  }

  /**
   * ResetActivity: attempt 1 at once for an activity waiting to start or to retry; a running
   * attempt runs on (its heartbeats answer `activityReset`) and, if it fails, is followed by
   * attempt 1 at once. `keepPaused` leaves a paused activity paused; otherwise reset unpauses it.
   */
  resetActivity(exec: Execution, sel: { id?: string | null; type?: string | null; all?: boolean | null }, opts: { keepPaused?: boolean | null; resetHeartbeat?: boolean | null }): void {
    for (const act of this.selectActivities(exec, sel)) {
      if (!opts.keepPaused) act.pausedAt = undefined;
      if (opts.resetHeartbeat) act.heartbeatDetails = null;
      if (act.state === 'started') {
        act.resetPending = true;
        continue;
      }
      act.attempt = 1;
      this.dispatchNow(exec, act);
    }
    this.dirty(exec);
  }

  /** RespondActivityTaskCompleted(ById). */
  completeActivity(req: ActivityCompletedRequest, byId: boolean): void {
    const { exec, act } = this.findActivity(req, byId);
    const started = this.emitActivityStarted(exec, act);
    this.emit(exec, EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED, {
      result: req.result,
      scheduledEventId: act.scheduledEventId,
      startedEventId: started,
      identity: req.identity ?? '',
    });
    this.removeActivity(exec, act);
    this.scheduleWorkflowTask(exec);
  }

  /** RespondActivityTaskFailed(ById): retried server-side per RetryPolicy without events. */
  failActivity(req: ActivityFailedRequest, byId: boolean): void {
    const { exec, act } = this.findActivity(req, byId);
    const failure = req.failure;
    if (req.lastHeartbeatDetails) act.heartbeatDetails = detailsOrNothing(req.lastHeartbeatDetails);
    this.attemptFailed(exec, act, failure);
  }

  protected attemptFailed(exec: Execution, act: ActivityState, failure: Failure | null | undefined, timedOut = false): void {
    const now = this.clock.now();
    const deadline = act.scheduleToCloseMs > 0 ? act.scheduledTime + act.scheduleToCloseMs : null;
    const d = act.cancelRequested
      ? { retryState: RetryState.RETRY_STATE_CANCEL_REQUESTED }
      : retryDecision(act.retryPolicy, act.attempt, failure, now, deadline);
    if ('backoffMs' in d) {
      act.lastFailure = failure;
      act.attempt = act.resetPending ? 1 : act.attempt + 1;
      act.state = 'backoff';
      act.startedTime = undefined;
      act.attemptScheduledTime = act.resetPending ? now : now + d.backoffMs;
      act.resetPending = undefined;
      this.armActivity(exec, act);
      this.dirty(exec);
      return;
    }
    const started = this.emitActivityStarted(exec, act);
    if (timedOut) {
      this.emit(exec, EventType.EVENT_TYPE_ACTIVITY_TASK_TIMED_OUT, {
        failure,
        scheduledEventId: act.scheduledEventId,
        startedEventId: started,
        retryState: d.retryState,
      });
    } else {
      this.emit(exec, EventType.EVENT_TYPE_ACTIVITY_TASK_FAILED, {
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

  protected activityTimedOut(exec: Execution, scheduledEventId: number, type: TimeoutType, attempt: number): void {
    const act = exec.activities[scheduledEventId];
    if (!act || exec.status !== Status.Running) return;
    if (attempt !== -1 && act.attempt !== attempt) return;
    // An attempt that no worker ever picked up by the time the schedule-to-close deadline passes
    // reports SCHEDULE_TO_START, as the real server does when schedule-to-start defaulted to
    // schedule-to-close (both deadlines fall together and the schedule-to-start timer wins).
    if (type === TimeoutType.TIMEOUT_TYPE_SCHEDULE_TO_CLOSE && act.state === 'scheduled' && act.scheduleToStartMs > 0 && act.attemptScheduledTime + act.scheduleToStartMs <= this.clock.now()) {
      type = TimeoutType.TIMEOUT_TYPE_SCHEDULE_TO_START;
    }
    const names: Partial<Record<TimeoutType, string>> = {
      [TimeoutType.TIMEOUT_TYPE_START_TO_CLOSE]: 'StartToClose',
      [TimeoutType.TIMEOUT_TYPE_SCHEDULE_TO_START]: 'ScheduleToStart',
      [TimeoutType.TIMEOUT_TYPE_SCHEDULE_TO_CLOSE]: 'ScheduleToClose',
      [TimeoutType.TIMEOUT_TYPE_HEARTBEAT]: 'Heartbeat',
    };
    const failure: Failure = {
      message: `activity ${names[type]} timeout`,
      source: 'Server',
      timeoutFailureInfo: { timeoutType: type, lastHeartbeatDetails: act.heartbeatDetails },
    };
    if (type === TimeoutType.TIMEOUT_TYPE_SCHEDULE_TO_CLOSE || type === TimeoutType.TIMEOUT_TYPE_SCHEDULE_TO_START) {
      if (act.lastFailure) failure.cause = act.lastFailure;
      const startedId = act.state === 'started' ? this.emitActivityStarted(exec, act) : 0;
      this.emit(exec, EventType.EVENT_TYPE_ACTIVITY_TASK_TIMED_OUT, {
        failure,
        scheduledEventId: act.scheduledEventId,
        startedEventId: startedId,
        retryState: RetryState.RETRY_STATE_TIMEOUT,
      });
      this.removeActivity(exec, act);
      this.scheduleWorkflowTask(exec);
      return;
    }
    if (act.state !== 'started') return;
    this.attemptFailed(exec, act, failure, true);
  }

  /** RespondActivityTaskCanceled(ById). */
  cancelActivity(req: ActivityCanceledRequest, byId: boolean): void {
    const { exec, act } = this.findActivity(req, byId);
    const started = this.emitActivityStarted(exec, act);
    this.emit(exec, EventType.EVENT_TYPE_ACTIVITY_TASK_CANCELED, {
      details: req.details,
      latestCancelRequestedEventId: act.cancelRequestedEventId ?? 0,
      scheduledEventId: act.scheduledEventId,
      startedEventId: started,
      identity: req.identity ?? '',
    });
    this.removeActivity(exec, act);
    this.scheduleWorkflowTask(exec);
  }
}
