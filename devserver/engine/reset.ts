/**
 * ResetWorkflowExecution (temporalio/temporal service/history/api/resetworkflow and
 * ndc/workflow_resetter.go): a new run of the same workflow id continues the base run's history up
 * to the reset point's `WorkflowTaskStarted`, then writes `WorkflowTaskFailed` (cause
 * RESET_WORKFLOW, the reset reason as a `ResetWorkflowFailure`, `baseRunId` / `newRunId`), the
 * signals (and, unless excluded, the updates) the base run received after the reset point, and a
 * new workflow task. A running base run is terminated with the reason (identity `history-service`);
 * describe names the new run as the base run's `workflowExtendedInfo.resetRunId`.
 */
import crypto from 'node:crypto';
import { status as Code } from '@grpc/grpc-js';
import { temporal } from '@temporalio/proto';
import { toMs } from '../proto';
import { EventType, Plain, WorkflowTaskFailedCause } from '../protoTypes';
import { ActivityState, Execution, HistoryEvent, ServiceError, Status, UpdateState } from '../types';
import { execKey, wfKey } from './state';
import { normalizeRetryPolicy } from './retry';
import { Updates } from './updates';

import ReapplyType = temporal.api.enums.v1.ResetReapplyType;
import ExcludeType = temporal.api.enums.v1.ResetReapplyExcludeType;

/** The real server's identity on events it writes itself (common/consts IdentityHistoryService). */
const HISTORY_SERVICE = 'history-service';

const WT_FINISH = new Set<number>([
  EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED,
  EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED,
  EventType.EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT,
]);

const ACTIVITY_CLOSED = new Set<number>([
  EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED,
  EventType.EVENT_TYPE_ACTIVITY_TASK_FAILED,
  EventType.EVENT_TYPE_ACTIVITY_TASK_TIMED_OUT,
  EventType.EVENT_TYPE_ACTIVITY_TASK_CANCELED,
]);

/**
 * The event types a reset leaves out of reapplication (common/util.go
 * GetResetReapplyExcludeTypes): SIGNAL reapplies signals only, NONE nothing, ALL_ELIGIBLE and
 * UNSPECIFIED signals and updates; `resetReapplyExcludeTypes` removes more.
 */
export function reapplyExcludes(type: number | null | undefined, excludes: number[] | null | undefined): Set<number> {
  const out = new Set<number>(excludes ?? []);
  if (type === ReapplyType.RESET_REAPPLY_TYPE_SIGNAL) out.add(ExcludeType.RESET_REAPPLY_EXCLUDE_TYPE_UPDATE);
  if (type === ReapplyType.RESET_REAPPLY_TYPE_NONE) {
    out.add(ExcludeType.RESET_REAPPLY_EXCLUDE_TYPE_SIGNAL);
    out.add(ExcludeType.RESET_REAPPLY_EXCLUDE_TYPE_UPDATE);
  }
  return out;
}

/** Engine layer for workflow reset (see `index.ts`). */
export abstract class Resets extends Updates {
  /**
   * ResetWorkflowExecution: returns the new run id (the same one again for a repeated request id).
   * @throws ServiceError INVALID_ARGUMENT when `workflowTaskFinishEventId` is not the end of a
   *   workflow task of the base run, or the reset point has pending child workflows (not supported
   *   here).
   */
  resetWorkflow(base: Execution, req: Plain<temporal.api.workflowservice.v1.IResetWorkflowExecutionRequest>): string {
    if (req.requestId && base.resetRequestId === req.requestId && base.resetRunId) return base.resetRunId;
    const finishId = Number(req.workflowTaskFinishEventId ?? 0);
    const lastId = base.nextEventId - 1;
    // resetworkflow/api.go: the finish event id must lie inside the base run's history.
    if (finishId <= 1 || finishId > lastId) {
      throw new ServiceError(Code.INVALID_ARGUMENT, 'Workflow task finish ID must be > 1 && <= workflow last event ID.');
    }
    const started = base.history[finishId - 2];
    const finish = base.history[finishId - 1];
    if (started?.eventType !== EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED || !(WT_FINISH.has(finish.eventType) || finish.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED)) {
      throw new ServiceError(Code.INVALID_ARGUMENT, `Unable to reset to event ${finishId}: it is not the end of a workflow task.`);
    }
    const prefix = base.history.slice(0, started.eventId).map((ev) => structuredClone(ev) as HistoryEvent);
    const closedChildren = new Set(
      prefix.flatMap((ev) => {
        const a = (ev as unknown as Record<string, { initiatedEventId?: number | null } | undefined>)[attrName(ev)];
        return ev.eventType !== EventType.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED && a?.initiatedEventId ? [a.initiatedEventId] : [];
      }),
    );
    if (prefix.some((ev) => ev.eventType === EventType.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED && !closedChildren.has(ev.eventId))) {
      throw new ServiceError(Code.INVALID_ARGUMENT, 'The dev server cannot reset to a point where child workflows are pending.');
    }
    const reason = req.reason ?? '';
    // The workflow's current run, when running, is terminated (the base run or a later one).
    const current = this.current.get(wfKey(base.namespace, base.workflowId));
    if (current && current.status === Status.Running) this.terminate(current, reason, null, HISTORY_SERVICE);
    const after = base.history.slice(finishId);
    const exclude = reapplyExcludes(req.resetReapplyType, req.resetReapplyExcludeTypes);

    const now = this.clock.now();
    const runId = crypto.randomUUID();
    const s = base.startAttrs;
    const runTimeoutMs = toMs(s.workflowRunTimeout) ?? 0;
    let runDeadline = runTimeoutMs > 0 ? now + runTimeoutMs : null;
    if (base.executionDeadline !== null && (runDeadline === null || runDeadline > base.executionDeadline)) runDeadline = base.executionDeadline;
    // The task's own scheduled event: a signal or update that arrived before the task started lies between the two.
    const scheduledEventId = started.workflowTaskStartedEventAttributes?.scheduledEventId;
    const exec: Execution = {
      ...base,
      runId,
      seq: ++this.seq,
      status: Status.Running,
      closeTime: null,
      runDeadline,
      memo: { ...base.memo },
      searchAttributes: { ...base.searchAttributes },
      nextEventId: started.eventId + 1,
      persistedEvents: 0,
      historySizeBytes: 0,
      wt: { state: 'none', seq: 0, attempt: 1, transient: false, queue: '', sticky: false, scheduledEventId: 0, startedEventId: 0, scheduledTime: 0, startedTime: 0 },
      lastCompletedStartedEventId: lastCompletedStarted(prefix),
      sticky: null,
      buffer: [],
      activities: {},
      timers: {},
      children: {},
      cancelRequested: prefix.some((ev) => ev.eventType === EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CANCEL_REQUESTED),
      startRequestId: crypto.randomUUID(),
      signalRequestIds: [],
      firstTaskAt: null,
      newRunId: undefined,
      resetRunId: undefined,
      resetRequestId: undefined,
      updates: rebuildUpdates(prefix),
      history: [],
      rt: { timers: new Map(), waiters: new Set() },
    };
    for (const ev of prefix) {
      exec.history.push(ev);
      this.onAppended(exec, ev);
    }
    this.executions.set(execKey(exec.namespace, exec.workflowId, runId), exec);
    this.current.set(wfKey(exec.namespace, exec.workflowId), exec);
    base.resetRunId = runId;
    base.resetRequestId = req.requestId ?? undefined;
    this.dirty(base);

    this.emit(exec, EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED, {
      scheduledEventId,
      startedEventId: started.eventId,
      cause: WorkflowTaskFailedCause.WORKFLOW_TASK_FAILED_CAUSE_RESET_WORKFLOW,
      failure: { message: reason, resetWorkflowFailureInfo: {} },
      identity: HISTORY_SERVICE,
      baseRunId: base.runId,
      newRunId: runId,
      forkEventVersion: 0,
    });
    this.rebuildPending(exec, prefix, now);
    for (const ev of after) {
      const sig = ev.workflowExecutionSignaledEventAttributes;
      if (sig && !exclude.has(ExcludeType.RESET_REAPPLY_EXCLUDE_TYPE_SIGNAL)) {
        this.emit(exec, EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED, structuredClone(sig));
      }
      const acc = ev.workflowExecutionUpdateAcceptedEventAttributes;
      const updateId = acc?.acceptedRequest?.meta?.updateId;
      if (updateId && !exclude.has(ExcludeType.RESET_REAPPLY_EXCLUDE_TYPE_UPDATE) && !exec.updates?.[updateId]) {
        // Re-admitted on the new run and delivered with its next workflow task (the real server
        // writes WorkflowExecutionUpdateAdmitted with origin REAPPLY; see devserver/README.md).
        exec.updates![updateId] = { updateId, request: structuredClone(acc!.acceptedRequest) as Record<string, unknown>, stage: 'admitted' };
      }
    }
    this.armExecution(exec);
    this.scheduleWorkflowTask(exec);
    this.dirty(exec);
    return runId;
  }

  /** Activities and timers pending at the reset point are pending again on the new run. */
  private rebuildPending(exec: Execution, prefix: HistoryEvent[], now: number): void {
    const closedActs = new Set<number>();
    const cancelReq = new Set<number>();
    const closedTimers = new Set<string>();
    for (const ev of prefix) {
      if (ACTIVITY_CLOSED.has(ev.eventType)) {
        const a = (ev as unknown as Record<string, { scheduledEventId?: number | null }>)[attrName(ev)];
        closedActs.add(a.scheduledEventId ?? 0);
      }
      if (ev.eventType === EventType.EVENT_TYPE_ACTIVITY_TASK_CANCEL_REQUESTED) cancelReq.add(ev.activityTaskCancelRequestedEventAttributes?.scheduledEventId ?? 0);
      if (ev.timerFiredEventAttributes) closedTimers.add(ev.timerFiredEventAttributes.timerId ?? '');
      if (ev.timerCanceledEventAttributes) closedTimers.add(ev.timerCanceledEventAttributes.timerId ?? '');
    }
    for (const ev of prefix) {
      const a = ev.activityTaskScheduledEventAttributes;
      if (a && !closedActs.has(ev.eventId)) {
        const act: ActivityState = {
          scheduledEventId: ev.eventId,
          activityId: a.activityId ?? '',
          activityType: a.activityType?.name ?? '',
          taskQueue: a.taskQueue?.name ?? exec.taskQueue,
          input: a.input,
          header: a.header,
          scheduleToCloseMs: toMs(a.scheduleToCloseTimeout) ?? 0,
          scheduleToStartMs: toMs(a.scheduleToStartTimeout) ?? 0,
          startToCloseMs: toMs(a.startToCloseTimeout) ?? 0,
          heartbeatMs: toMs(a.heartbeatTimeout) ?? 0,
          retryPolicy: normalizeRetryPolicy(a.retryPolicy),
          attempt: 1,
          state: 'scheduled',
          scheduledTime: now,
          attemptScheduledTime: now,
          cancelRequested: cancelReq.has(ev.eventId),
          priority: a.priority,
        };
        exec.activities[ev.eventId] = act;
        this.armActivity(exec, act);
        this.actList(exec.namespace, act.taskQueue).add({ exec, scheduledEventId: ev.eventId, attempt: 1 });
      }
      const t = ev.timerStartedEventAttributes;
      if (t && !closedTimers.has(t.timerId ?? '')) {
        const timerId = t.timerId ?? '';
        exec.timers[timerId] = { timerId, startedEventId: ev.eventId, fireAt: (toMs(ev.eventTime) ?? now) + (toMs(t.startToFireTimeout) ?? 0) };
        this.armUserTimer(exec, timerId);
      }
    }
  }
}

/** The attributes field name of an event (`…EventAttributes`). */
function attrName(ev: HistoryEvent): string {
  return Object.keys(ev).find((k) => k.endsWith('EventAttributes') && (ev as unknown as Record<string, unknown>)[k]) ?? '';
}

/** Started event id of the last completed workflow task in `events` (previousStartedEventId). */
function lastCompletedStarted(events: HistoryEvent[]): number {
  for (let i = events.length - 1; i >= 0; i--) {
    const c = events[i].workflowTaskCompletedEventAttributes;
    if (c) return Number(c.startedEventId ?? 0);
  }
  return 0;
}

/** Updates accepted (and completed) before the reset point, so their ids stay deduplicated. */
function rebuildUpdates(events: HistoryEvent[]): Record<string, UpdateState> {
  const out: Record<string, UpdateState> = {};
  const byAccepted = new Map<number, string>();
  for (const ev of events) {
    const acc = ev.workflowExecutionUpdateAcceptedEventAttributes;
    const id = acc?.acceptedRequest?.meta?.updateId;
    if (acc && id) {
      out[id] = { updateId: id, request: (acc.acceptedRequest ?? {}) as Record<string, unknown>, stage: 'accepted', acceptedEventId: ev.eventId };
      byAccepted.set(ev.eventId, id);
    }
    const done = ev.workflowExecutionUpdateCompletedEventAttributes;
    const doneId = done?.meta?.updateId ?? byAccepted.get(Number(done?.acceptedEventId ?? 0));
    if (done && doneId && out[doneId]) {
      out[doneId].stage = 'completed';
      out[doneId].outcome = (done.outcome ?? undefined) as Record<string, unknown> | undefined;
    }
  }
  return out;
}
