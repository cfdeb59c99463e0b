/**
 * Workflow execution lifecycle: start (id reuse and conflict policies, start delay, timeouts),
 * close (completed, failed, canceled, terminated, timed out, continued as new), workflow retries
 * and continue-as-new (devserver/README.md "Workflows").
 */
import crypto from 'node:crypto';
import { status as Code } from '@grpc/grpc-js';
import { fromMs, toMs } from '../proto';
import {
  ContinueAsNewInitiator,
  EventType,
  Failure,
  Payloads,
  RetryState,
  TimeoutType,
  WorkflowExecutionStatus,
  WorkflowIdConflictPolicy,
  WorkflowIdReusePolicy,
  CommandAttrs,
  RpcRequest,
} from '../protoTypes';
import { Execution, ParentRef, ServiceError, Status } from '../types';
import { CloseOutcome, DEFAULT_WORKFLOW_TASK_TIMEOUT_MS, execKey, StartExtra, TQ_NORMAL, wfKey } from './state';
import { normalizeRetryPolicy, retryDecision, retryPolicyProto } from './retry';
import { UserTimers } from './timers';
import { cronBackoffMs, validateCronSchedule } from '../cron';
import { priorityError } from '../queues';
import { applyTypeMap } from '../searchAttributes';
import { packHistory } from './packedHistory';

/** The real server's messages for a start refused by a closed run (service/history/api create_workflow_util.go, id reuse policy check). */
const REUSE_MESSAGES = {
  running: 'Workflow execution is already running. WorkflowId: %w, RunId: %r.',
  rejectDuplicate: 'Workflow execution already finished. WorkflowId: %w, RunId: %r. Workflow Id reuse policy: reject duplicate workflow Id.',
  failedOnly: 'Workflow execution already finished successfully. WorkflowId: %w, RunId: %r. Workflow Id reuse policy: allow duplicate workflow Id if last run failed.',
};

/**
 * ALREADY_EXISTS with WorkflowExecutionAlreadyStartedFailure details, as the real frontend answers:
 * `why` picks the message (a running run, or a closed one under REJECT_DUPLICATE / ALLOW_DUPLICATE_FAILED_ONLY).
 */
function alreadyStarted(prev: Execution, workflowId: string, why: keyof typeof REUSE_MESSAGES = 'running'): ServiceError {
  return new ServiceError(Code.ALREADY_EXISTS, REUSE_MESSAGES[why].replace('%w', workflowId).replace('%r', prev.runId), {
    typeName: 'temporal.api.errordetails.v1.WorkflowExecutionAlreadyStartedFailure',
    value: { startRequestId: prev.startRequestId, runId: prev.runId },
  });
}

/** Engine layer for starting and closing runs (see `index.ts`). */
export abstract class Executions extends UserTimers {
  /** Implemented by the children layer: parent close policies on a closing parent. */
  protected abstract applyParentClosePolicy(exec: Execution, children: Execution['children'][string][]): void;
  /** Implemented by the children layer: a closing child's result event on its parent. */
  protected abstract reportToParent(child: Execution, p: ParentRef, status: WorkflowExecutionStatus, outcome: CloseOutcome): void;

  /**
   * StartWorkflowExecution (also used for children, retries and continue-as-new).
   * Applies id reuse and conflict policies; returns `{ exec, started }`.
   */
  startWorkflow(req: RpcRequest<'startWorkflowExecution'>, extra: StartExtra = {}): { exec: Execution; started: boolean } {
    const ns = req.namespace || 'default';
    // Registered search attributes get their type on the way in (devserver/searchAttributes.ts).
    applyTypeMap(this.namespace(ns), req.searchAttributes?.indexedFields);
    if (!req.workflowId) throw new ServiceError(Code.INVALID_ARGUMENT, 'WorkflowId is not set on request.');
    if (!req.workflowType?.name) throw new ServiceError(Code.INVALID_ARGUMENT, 'WorkflowType is not set on request.');
    if (!req.taskQueue?.name) throw new ServiceError(Code.INVALID_ARGUMENT, 'TaskQueue is not set on request.');
    const priorityInvalid = priorityError(req.priority);
    if (priorityInvalid) throw new ServiceError(Code.INVALID_ARGUMENT, priorityInvalid);
    if (req.cronSchedule) {
      try {
        validateCronSchedule(req.cronSchedule);
      } catch (err) {
        throw new ServiceError(Code.INVALID_ARGUMENT, (err as Error).message);
      }
    }
    const prev = this.current.get(wfKey(ns, req.workflowId));
    if (prev && !extra.continuedFrom) {
      if (prev.status === Status.Running) {
        if (req.requestId && prev.startRequestId === req.requestId) return { exec: prev, started: true };
        const conflict = req.workflowIdConflictPolicy || WorkflowIdConflictPolicy.WORKFLOW_ID_CONFLICT_POLICY_UNSPECIFIED;
        if (conflict === WorkflowIdConflictPolicy.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING) return { exec: prev, started: false };
        if (
          conflict === WorkflowIdConflictPolicy.WORKFLOW_ID_CONFLICT_POLICY_TERMINATE_EXISTING ||
          req.workflowIdReusePolicy === WorkflowIdReusePolicy.WORKFLOW_ID_REUSE_POLICY_TERMINATE_IF_RUNNING
        ) {
          this.terminate(prev, 'TerminateExisting', undefined, req.identity);
        } else {
          throw alreadyStarted(prev, req.workflowId);
        }
      } else {
        const reuse = req.workflowIdReusePolicy || WorkflowIdReusePolicy.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE;
        if (reuse === WorkflowIdReusePolicy.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE) throw alreadyStarted(prev, req.workflowId, 'rejectDuplicate');
        if (reuse === WorkflowIdReusePolicy.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE_FAILED_ONLY && (prev.status === Status.Completed || prev.status === Status.ContinuedAsNew)) {
          throw alreadyStarted(prev, req.workflowId, 'failedOnly');
        }
      }
    }
    const now = this.clock.now();
    const runId = crypto.randomUUID();
    const runTimeoutMs = toMs(req.workflowRunTimeout) ?? 0;
    const execTimeoutMs = toMs(req.workflowExecutionTimeout) ?? 0;
    const wtTimeoutMs = Math.min(toMs(req.workflowTaskTimeout) || DEFAULT_WORKFLOW_TASK_TIMEOUT_MS, 120_000);
    const executionDeadline = extra.executionDeadline ?? (execTimeoutMs > 0 ? now + execTimeoutMs : null);
    // A cron workflow's first run waits for the first cron time (the real server's cron semantics).
    const delayMs = extra.backoffMs ?? (req.cronSchedule ? cronBackoffMs(req.cronSchedule, now, now) : (toMs(req.workflowStartDelay) ?? 0));
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
      // Unset timeouts stay out of the event, as the real server's history builder leaves them.
      workflowExecutionTimeout: execTimeoutMs > 0 ? fromMs(execTimeoutMs) : undefined,
      workflowRunTimeout: runTimeoutMs > 0 ? fromMs(runTimeoutMs) : undefined,
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
      // Only a child run names its root (the top of its parent chain); a top-level run leaves it out.
      rootWorkflowExecution: extra.root ?? undefined,
      priority: req.priority,
    };
    this.executions.set(execKey(ns, exec.workflowId, runId), exec);
    this.current.set(wfKey(ns, exec.workflowId), exec);
    if (req.userMetadata?.summary || req.userMetadata?.details) exec.userMetadata = req.userMetadata;
    this.emit(exec, EventType.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED, exec.startAttrs, { userMetadata: exec.userMetadata ?? null });
    if (extra.signal) {
      this.emit(exec, EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED, extra.signal);
    }
    this.armExecution(exec);
    this.scheduleWorkflowTask(exec);
    this.dirty(exec);
    return { exec, started: true };
  }

  /**
   * Ends a start delay or first-task backoff: the first workflow task is scheduled now and the
   * timer that would have scheduled it is dropped (the real server's backoff timer task is a no-op
   * once the run had a workflow task).
   */
  protected endFirstTaskBackoff(exec: Execution): void {
    if (exec.firstTaskAt === null || exec.status !== Status.Running) return;
    exec.firstTaskAt = null;
    this.clearTimer(exec, 'first');
    this.scheduleWorkflowTask(exec);
  }

  /** Arms run/execution deadline and delayed-first-task timers (also after reload). */
  protected armExecution(exec: Execution): void {
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

  protected workflowTimedOut(exec: Execution): void {
    if (exec.status !== Status.Running) return;
    const rp = exec.startAttrs.retryPolicy ? normalizeRetryPolicy(exec.startAttrs.retryPolicy) : null;
    const now = this.clock.now();
    const timedOutFailure = { message: 'workflow timed out', timeoutFailureInfo: { timeoutType: TimeoutType.TIMEOUT_TYPE_START_TO_CLOSE } };
    const d =
      rp && (exec.executionDeadline === null || now < exec.executionDeadline)
        ? retryDecision(rp, exec.startAttrs.attempt ?? 1, timedOutFailure, now, exec.executionDeadline)
        : { retryState: RetryState.RETRY_STATE_TIMEOUT };
    this.discardWorkflowTask(exec);
    if ('backoffMs' in d) {
      const next = this.retryRun(exec, d.backoffMs, timedOutFailure);
      this.emit(exec, EventType.EVENT_TYPE_WORKFLOW_EXECUTION_TIMED_OUT, { retryState: RetryState.RETRY_STATE_IN_PROGRESS, newExecutionRunId: next });
      this.close(exec, Status.TimedOut, { continued: true });
      return;
    }
    const cronRun = this.cronContinue(exec, { failure: timedOutFailure });
    this.emit(exec, EventType.EVENT_TYPE_WORKFLOW_EXECUTION_TIMED_OUT, { retryState: d.retryState, newExecutionRunId: cronRun });
    this.close(exec, Status.TimedOut, cronRun ? { continued: true } : {});
  }

  /** Drops an in-flight workflow task (terminate/timeout): held events are written first. */
  protected discardWorkflowTask(exec: Execution): void {
    if (exec.wt.state === 'started') {
      exec.wt.state = 'none';
      this.flushBuffer(exec);
    }
    exec.wt.state = 'none';
    this.clearTimer(exec, 'wt');
  }

  protected failWorkflow(exec: Execution, failure: Failure | null | undefined, completedId: number): void {
    const rp = exec.startAttrs.retryPolicy ? normalizeRetryPolicy(exec.startAttrs.retryPolicy) : null;
    const d = retryDecision(rp, exec.startAttrs.attempt ?? 1, failure, this.clock.now(), exec.executionDeadline);
    if ('backoffMs' in d) {
      const next = this.retryRun(exec, d.backoffMs, failure);
      this.emit(exec, EventType.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED, {
        failure,
        retryState: RetryState.RETRY_STATE_IN_PROGRESS,
        workflowTaskCompletedEventId: completedId,
        newExecutionRunId: next,
      });
      this.close(exec, Status.Failed, { continued: true });
      return;
    }
    const cronRun = this.cronContinue(exec, { failure });
    this.emit(exec, EventType.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED, { failure, retryState: d.retryState, workflowTaskCompletedEventId: completedId, newExecutionRunId: cronRun });
    this.close(exec, Status.Failed, cronRun ? { continued: true } : { failure, retryState: d.retryState });
  }

  /** The start request of a run's next run of the same workflow (a retry or the next cron run): its own start attributes, memo and search attributes. */
  private sameRunRequest(exec: Execution) {
    const s = exec.startAttrs;
    return {
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
      cronSchedule: s.cronSchedule,
      priority: s.priority,
    };
  }

  protected retryRun(exec: Execution, backoffMs: number, failure: Failure | null | undefined): string {
    const s = exec.startAttrs;
    const { exec: next } = this.startWorkflow(
      this.sameRunRequest(exec),
      {
        continuedFrom: exec.runId,
        firstRunId: exec.firstRunId,
        initiator: ContinueAsNewInitiator.CONTINUE_AS_NEW_INITIATOR_RETRY,
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

  /**
   * Cron workflows (StartWorkflowExecution.cronSchedule): when a run closes (completed, failed
   * without retry, timed out) the next run starts now and waits for the next cron time
   * (initiator CRON_SCHEDULE, attempt 1, last completion result carried over). Returns the new
   * run id for the close event's `newExecutionRunId`, or undefined for a run without cron schedule.
   */
  protected cronContinue(exec: Execution, outcome: { result?: Payloads | null; failure?: Failure | null }): string | undefined {
    const s = exec.startAttrs;
    if (!s.cronSchedule) return undefined;
    const now = this.clock.now();
    if (exec.executionDeadline !== null && now >= exec.executionDeadline) return undefined;
    const { exec: next } = this.startWorkflow(
      this.sameRunRequest(exec),
      {
        continuedFrom: exec.runId,
        firstRunId: exec.firstRunId,
        initiator: ContinueAsNewInitiator.CONTINUE_AS_NEW_INITIATOR_CRON_SCHEDULE,
        backoffMs: cronBackoffMs(s.cronSchedule, exec.startTime, now),
        lastCompletionResult: outcome.failure ? s.lastCompletionResult : outcome.result,
        continuedFailure: outcome.failure,
        executionDeadline: exec.executionDeadline,
        parent: exec.parent ?? undefined,
        root: s.rootWorkflowExecution,
      },
    );
    exec.newRunId = next.runId;
    return next.runId;
  }

  protected continueAsNew(exec: Execution, a: CommandAttrs<'continueAsNewWorkflowExecutionCommandAttributes'>, completedId: number): void {
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
        cronSchedule: a.cronSchedule || s.cronSchedule,
        // The new run keeps the run's priority (ContinueAsNew has no priority of its own).
        priority: s.priority,
      },
      {
        continuedFrom: exec.runId,
        firstRunId: exec.firstRunId,
        initiator: a.initiator || ContinueAsNewInitiator.CONTINUE_AS_NEW_INITIATOR_WORKFLOW,
        backoffMs: toMs(a.backoffStartInterval) ?? 0,
        lastCompletionResult: a.lastCompletionResult,
        continuedFailure: a.failure,
        executionDeadline: exec.executionDeadline,
        parent: exec.parent ?? undefined,
        root: s.rootWorkflowExecution,
      },
    );
    exec.newRunId = next.runId;
    this.emit(exec, EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW, {
      newExecutionRunId: next.runId,
      workflowType: next.startAttrs.workflowType,
      taskQueue: next.startAttrs.taskQueue,
      input: a.input,
      workflowRunTimeout: next.startAttrs.workflowRunTimeout,
      workflowTaskTimeout: next.startAttrs.workflowTaskTimeout,
      workflowTaskCompletedEventId: completedId,
      backoffStartInterval: a.backoffStartInterval,
      initiator: a.initiator || ContinueAsNewInitiator.CONTINUE_AS_NEW_INITIATOR_WORKFLOW,
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
  protected close(exec: Execution, status: WorkflowExecutionStatus, outcome: CloseOutcome): void {
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
    this.retention.add(exec);
    // Its history never changes again: off the heap once the reads that follow a close are done (engine/packedHistory.ts).
    setTimeout(() => {
      const bytes = packHistory(exec);
      if (bytes !== undefined) this.log('debug', 'history packed', { namespace: exec.namespace, workflowId: exec.workflowId, runId: exec.runId, bytes });
    }, this.historyPackDelayMs).unref();
  }

  /** TerminateWorkflowExecution. */
  terminate(exec: Execution, reason: string, details: Payloads | null | undefined, identity: string | null | undefined): void {
    if (exec.status !== Status.Running) throw new ServiceError(Code.NOT_FOUND, 'workflow execution already completed');
    this.discardWorkflowTask(exec);
    this.emit(exec, EventType.EVENT_TYPE_WORKFLOW_EXECUTION_TERMINATED, { reason, details, identity });
    this.close(exec, Status.Terminated, {});
  }
}
