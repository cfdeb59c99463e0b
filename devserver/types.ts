/**
 * In-memory state of the dev server. One `Execution` per workflow run holds its append-only
 * history and the mutable state the real server keeps in "mutable state" (pending activities,
 * timers, children, the current workflow task). Everything except `rt` is persisted as JSON.
 */
import type { TimerHandle } from './clock';

/** A plain-object temporal.api.history.v1.HistoryEvent (int64 as number, enums as number). */
export type HistoryEvent = Record<string, any> & { eventId: number; eventType: number };

/** Proto enum values used by the engine (numbers from temporal.api.enums.v1). */
export const EventType = {
  WorkflowExecutionStarted: 1,
  WorkflowExecutionCompleted: 2,
  WorkflowExecutionFailed: 3,
  WorkflowExecutionTimedOut: 4,
  WorkflowTaskScheduled: 5,
  WorkflowTaskStarted: 6,
  WorkflowTaskCompleted: 7,
  WorkflowTaskTimedOut: 8,
  WorkflowTaskFailed: 9,
  ActivityTaskScheduled: 10,
  ActivityTaskStarted: 11,
  ActivityTaskCompleted: 12,
  ActivityTaskFailed: 13,
  ActivityTaskTimedOut: 14,
  ActivityTaskCancelRequested: 15,
  ActivityTaskCanceled: 16,
  TimerStarted: 17,
  TimerFired: 18,
  TimerCanceled: 19,
  WorkflowExecutionCancelRequested: 20,
  WorkflowExecutionCanceled: 21,
  RequestCancelExternalWorkflowExecutionInitiated: 22,
  RequestCancelExternalWorkflowExecutionFailed: 23,
  ExternalWorkflowExecutionCancelRequested: 24,
  MarkerRecorded: 25,
  WorkflowExecutionSignaled: 26,
  WorkflowExecutionTerminated: 27,
  WorkflowExecutionContinuedAsNew: 28,
  StartChildWorkflowExecutionInitiated: 29,
  StartChildWorkflowExecutionFailed: 30,
  ChildWorkflowExecutionStarted: 31,
  ChildWorkflowExecutionCompleted: 32,
  ChildWorkflowExecutionFailed: 33,
  ChildWorkflowExecutionCanceled: 34,
  ChildWorkflowExecutionTimedOut: 35,
  ChildWorkflowExecutionTerminated: 36,
  SignalExternalWorkflowExecutionInitiated: 37,
  SignalExternalWorkflowExecutionFailed: 38,
  ExternalWorkflowExecutionSignaled: 39,
  UpsertWorkflowSearchAttributes: 40,
  WorkflowPropertiesModified: 46,
} as const;

/** HistoryEvent attribute field name per event type (the oneof member). */
export const ATTR_FIELD: Record<number, string> = {};
for (const [name, num] of Object.entries(EventType)) {
  ATTR_FIELD[num] = name[0].toLowerCase() + name.slice(1) + 'EventAttributes';
}

export const Status = {
  Running: 1,
  Completed: 2,
  Failed: 3,
  Canceled: 4,
  Terminated: 5,
  ContinuedAsNew: 6,
  TimedOut: 7,
} as const;

export const RetryState = {
  InProgress: 1,
  NonRetryableFailure: 2,
  Timeout: 3,
  MaximumAttemptsReached: 4,
  RetryPolicyNotSet: 5,
  CancelRequested: 7,
} as const;

export const TimeoutType = { StartToClose: 1, ScheduleToStart: 2, ScheduleToClose: 3, Heartbeat: 4 } as const;

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
}

/** A pending activity (ActivityInfo in the real server's mutable state). */
export interface ActivityState {
  scheduledEventId: number;
  activityId: string;
  activityType: string;
  taskQueue: string;
  input?: unknown;
  header?: unknown;
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
  lastFailure?: unknown;
  heartbeatDetails?: unknown;
  lastHeartbeatTime?: number;
  cancelRequested: boolean;
  cancelRequestedEventId?: number;
  identity?: string;
  requestId?: string;
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
  parentClosePolicy: number;
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
  status: number;
  startTime: number;
  executionTime: number;
  closeTime: number | null;
  /** WorkflowExecutionStarted attributes (timeouts, retry policy, attempt, parent, ...). */
  startAttrs: Record<string, any>;
  workflowTaskTimeoutMs: number;
  runDeadline: number | null;
  executionDeadline: number | null;
  memo: Record<string, unknown>;
  searchAttributes: Record<string, any>;
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
  history: HistoryEvent[];
  rt: ExecutionRuntime;
}

export interface NamespaceState {
  name: string;
  id: string;
  description: string;
  ownerEmail: string;
  retentionMs: number;
  data: Record<string, string>;
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
