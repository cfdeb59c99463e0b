/**
 * In-memory state of the dev server. One `Execution` per workflow run holds its append-only
 * history and the mutable state the real server keeps in "mutable state" (pending activities,
 * timers, children, the current workflow task). Everything except `rt` is persisted as JSON.
 */
import type { TimerHandle } from './clock';
import {
  EventType,
  EventAttrs,
  Failure,
  HistoryEventMessage,
  Header,
  ParentClosePolicy,
  Payload,
  Payloads,
  Priority,
  UserMetadata,
  WorkflowExecutionStatus,
} from './protoTypes';

/**
 * A temporal.api.history.v1.HistoryEvent as held in memory (int64 as number, enums as number);
 * `eventId` is provisional (negative) while the event is held during a workflow task.
 */
export type HistoryEvent = HistoryEventMessage & { eventId: number; eventType: EventType };

/** HistoryEvent attribute field name per event type (the `attributes` oneof member). */
export const ATTR_FIELD: Record<number, string> = {};
for (const [name, num] of Object.entries(EventType)) {
  if (typeof num !== 'number' || num === EventType.EVENT_TYPE_UNSPECIFIED) continue;
  // EVENT_TYPE_WORKFLOW_EXECUTION_STARTED -> workflowExecutionStartedEventAttributes
  ATTR_FIELD[num] = name.replace(/^EVENT_TYPE_/, '').toLowerCase().replace(/_([a-z])/g, (_, c: string) => c.toUpperCase()) + 'EventAttributes';
}

/**
 * temporal.api.enums.v1.WorkflowExecutionStatus under short names: the engine compares a run's
 * status in nearly every method.
 */
export const Status = {
  Running: WorkflowExecutionStatus.WORKFLOW_EXECUTION_STATUS_RUNNING,
  Completed: WorkflowExecutionStatus.WORKFLOW_EXECUTION_STATUS_COMPLETED,
  Failed: WorkflowExecutionStatus.WORKFLOW_EXECUTION_STATUS_FAILED,
  Canceled: WorkflowExecutionStatus.WORKFLOW_EXECUTION_STATUS_CANCELED,
  Terminated: WorkflowExecutionStatus.WORKFLOW_EXECUTION_STATUS_TERMINATED,
  ContinuedAsNew: WorkflowExecutionStatus.WORKFLOW_EXECUTION_STATUS_CONTINUED_AS_NEW,
  TimedOut: WorkflowExecutionStatus.WORKFLOW_EXECUTION_STATUS_TIMED_OUT,
} as const;

/** State of the one workflow task an execution can have at a time. */
export interface WorkflowTaskState {
  state: 'none' | 'scheduled' | 'started';
  /** Incremented on every (re)schedule; stale queue entries and tokens are detected by it. */
  seq: number;
  attempt: number;
  /** True for attempt > 1: scheduled/started events are synthesized, not yet in history. */
  transient: boolean;
  queue: string;
  sticky: boolean;
  scheduledEventId: number;
  startedEventId: number;
  scheduledTime: number;
  startedTime: number;
  /** When set, the task is waiting out a retry backoff and is not in a queue yet (epoch ms). */
  backoffUntil?: number;
  identity?: string;
  requestId?: string;
  /** workerInstanceKey of the poll that started the task (ShutdownWorker shortens its timeout). */
  workerKey?: string;
}

/** A pending activity (ActivityInfo in the real server's mutable state). */
export interface ActivityState {
  scheduledEventId: number;
  activityId: string;
  activityType: string;
  taskQueue: string;
  input?: Payloads | null;
  header?: Header | null;
  scheduleToCloseMs: number;
  scheduleToStartMs: number;
  startToCloseMs: number;
  heartbeatMs: number;
  retryPolicy: RetryPolicyPlain;
  attempt: number;
  state: 'scheduled' | 'started' | 'backoff';
  scheduledTime: number;
  attemptScheduledTime: number;
  startedTime?: number;
  lastFailure?: Failure | null;
  heartbeatDetails?: Payloads | null;
  lastHeartbeatTime?: number;
  cancelRequested: boolean;
  cancelRequestedEventId?: number;
  identity?: string;
  requestId?: string;
  /** The command's temporal.api.common.v1.Priority (unmerged; dispatch inherits from the run). */
  priority?: Priority | null;
  /** PauseActivity: not dispatched nor retried until unpaused (epoch ms of the pause). */
  pausedAt?: number;
  /** ResetActivity on a started attempt: the next attempt is attempt 1, at once. */
  resetPending?: boolean;
}

/** RetryPolicy with durations in ms (0 = unset/unlimited). */
export interface RetryPolicyPlain {
  initialIntervalMs: number;
  backoffCoefficient: number;
  maximumIntervalMs: number;
  maximumAttempts: number;
  nonRetryableErrorTypes: string[];
}

export interface TimerState {
  timerId: string;
  startedEventId: number;
  fireAt: number;
}

export interface ChildState {
  initiatedEventId: number;
  namespace: string;
  workflowId: string;
  workflowType: string;
  runId?: string;
  startedEventId?: number;
  parentClosePolicy: ParentClosePolicy;
}

/** Parent reference carried by a child run. */
export interface ParentRef {
  namespace: string;
  workflowId: string;
  runId: string;
  initiatedEventId: number;
}

/** Runtime-only state (timers, long-poll waiters, in-flight queries); never persisted. */
export interface ExecutionRuntime {
  timers: Map<string, TimerHandle>;
  waiters: Set<() => void>;
}

export interface Execution {
  namespace: string;
  workflowId: string;
  runId: string;
  firstRunId: string;
  /** Creation order, used to find the current run of a workflow id after reload. */
  seq: number;
  workflowType: string;
  taskQueue: string;
  status: WorkflowExecutionStatus;
  startTime: number;
  executionTime: number;
  closeTime: number | null;
  /** WorkflowExecutionStarted attributes (timeouts, retry policy, attempt, parent, ...). */
  startAttrs: EventAttrs<typeof EventType.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED>;
  workflowTaskTimeoutMs: number;
  runDeadline: number | null;
  executionDeadline: number | null;
  memo: Record<string, Payload>;
  searchAttributes: Record<string, Payload>;
  nextEventId: number;
  /** Number of history events already written to Postgres. */
  persistedEvents: number;
  /** Sum of encoded history event sizes (WorkflowTaskStarted.historySizeBytes). */
  historySizeBytes?: number;
  wt: WorkflowTaskState;
  /** Started event id of the last completed workflow task (previousStartedEventId). */
  lastCompletedStartedEventId: number;
  sticky: { queue: string; scheduleToStartMs: number } | null;
  /** Events that arrived while a workflow task was started; provisional negative ids. */
  buffer: HistoryEvent[];
  activities: Record<string, ActivityState>;
  timers: Record<string, TimerState>;
  children: Record<string, ChildState>;
  parent: ParentRef | null;
  cancelRequested: boolean;
  startRequestId: string;
  signalRequestIds: string[];
  /** First workflow task held back until this time (start delay / retry backoff), epoch ms. */
  firstTaskAt: number | null;
  newRunId?: string;
  /** ResetWorkflowExecution: the run a reset of this run created (WorkflowExecutionExtendedInfo.reset_run_id). */
  resetRunId?: string;
  /** The request id of that reset (a repeated request answers the same run). */
  resetRequestId?: string;
  /** WorkerVersionStamp of the last completed workflow task (describe's mostRecentWorkerVersionStamp). */
  workerStamp?: { buildId?: string | null; useVersioning?: boolean | null } | null;
  /** The BuildIds search attribute: `unversioned` and `unversioned:<id>` / `versioned:<id>` per stamp seen. */
  buildIds?: string[];
  /** The start request's temporal.api.sdk.v1.UserMetadata (static summary and details). */
  userMetadata?: UserMetadata | null;
  /** Workflow updates of this run by update id (engine/updates.ts). */
  updates?: Record<string, UpdateState>;
  history: HistoryEvent[];
  rt: ExecutionRuntime;
}

/**
 * One workflow update (temporal.api.update.v1): admitted (waiting for a workflow task), sent (in a
 * started task's messages), accepted (WorkflowExecutionUpdateAccepted written), completed (outcome
 * known: WorkflowExecutionUpdateCompleted written, or rejected by a validator without events).
 */
export interface UpdateState {
  updateId: string;
  /** temporal.api.update.v1.Request as a plain object. */
  request: Record<string, unknown>;
  stage: 'admitted' | 'sent' | 'accepted' | 'completed';
  acceptedEventId?: number;
  /** temporal.api.update.v1.Outcome as a plain object. */
  outcome?: Record<string, unknown>;
  /** Set when the run closed before accepting the update: the error waiters get. */
  abortMessage?: string;
}

export interface NamespaceState {
  name: string;
  id: string;
  description: string;
  ownerEmail: string;
  retentionMs: number;
  data: Record<string, string>;
  /** Registered custom search attributes: name → temporal.api.enums.v1.IndexedValueType. */
  searchAttributes?: Record<string, number>;
}

/** gRPC-status-carrying error thrown by the engine; the service layer maps it to a status. */
export class ServiceError extends Error {
  constructor(
    readonly code: number,
    message: string,
    readonly details?: { typeName: string; value: Record<string, unknown> },
  ) {
    super(message);
  }
}
