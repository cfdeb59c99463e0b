/**
 * Types and enums of the Temporal API (temporal.api.*.v1 as shipped in @temporalio/proto) in the
 * form the dev server holds messages: plain objects decoded with int64 as number, enums as number
 * and bytes as Buffer (see `proto.ts`). Command and event handling is written against these, so a
 * misspelt attribute or a wrong enum is a type error rather than a silently dropped field.
 */
import { temporal } from '@temporalio/proto';

import history = temporal.api.history.v1;
import command = temporal.api.command.v1;
import common = temporal.api.common.v1;
import failure = temporal.api.failure.v1;
import taskqueue = temporal.api.taskqueue.v1;
import workflowservice = temporal.api.workflowservice.v1;
import enums = temporal.api.enums.v1;

/**
 * A generated message interface as decoded by `decodePlain`: every int64 (`Long` in the
 * generated typings) is a number, recursively. Enums stay the generated numeric enums.
 */
export type Plain<T> = T extends { low: number; high: number; unsigned: boolean }
  ? number
  : T extends Uint8Array
    ? T
    : T extends ReadonlyArray<infer U>
      ? Plain<U>[]
      : T extends object
        ? { [K in keyof T]: Plain<T[K]> }
        : T;

/** temporal.api.enums.v1.EventType. */
export const EventType = enums.EventType;
export type EventType = enums.EventType;
/** temporal.api.enums.v1.CommandType. */
export const CommandType = enums.CommandType;
export type CommandType = enums.CommandType;
/** temporal.api.enums.v1.WorkflowExecutionStatus. */
export const WorkflowExecutionStatus = enums.WorkflowExecutionStatus;
export type WorkflowExecutionStatus = enums.WorkflowExecutionStatus;
/** temporal.api.enums.v1.RetryState. */
export const RetryState = enums.RetryState;
export type RetryState = enums.RetryState;
/** temporal.api.enums.v1.TimeoutType. */
export const TimeoutType = enums.TimeoutType;
export type TimeoutType = enums.TimeoutType;
/** temporal.api.enums.v1.TaskQueueKind. */
export const TaskQueueKind = enums.TaskQueueKind;
/** temporal.api.enums.v1.ParentClosePolicy. */
export const ParentClosePolicy = enums.ParentClosePolicy;
export type ParentClosePolicy = enums.ParentClosePolicy;
/** temporal.api.enums.v1.WorkflowIdReusePolicy. */
export const WorkflowIdReusePolicy = enums.WorkflowIdReusePolicy;
/** temporal.api.enums.v1.WorkflowIdConflictPolicy. */
export const WorkflowIdConflictPolicy = enums.WorkflowIdConflictPolicy;
/** temporal.api.enums.v1.ContinueAsNewInitiator. */
export const ContinueAsNewInitiator = enums.ContinueAsNewInitiator;
export type ContinueAsNewInitiator = enums.ContinueAsNewInitiator;
/** temporal.api.enums.v1.WorkflowTaskFailedCause. */
export const WorkflowTaskFailedCause = enums.WorkflowTaskFailedCause;
export type WorkflowTaskFailedCause = enums.WorkflowTaskFailedCause;
/** temporal.api.enums.v1.StartChildWorkflowExecutionFailedCause. */
export const StartChildWorkflowExecutionFailedCause = enums.StartChildWorkflowExecutionFailedCause;
/** temporal.api.enums.v1.SignalExternalWorkflowExecutionFailedCause. */
export const SignalExternalWorkflowExecutionFailedCause = enums.SignalExternalWorkflowExecutionFailedCause;
/** temporal.api.enums.v1.CancelExternalWorkflowExecutionFailedCause. */
export const CancelExternalWorkflowExecutionFailedCause = enums.CancelExternalWorkflowExecutionFailedCause;
/** temporal.api.enums.v1.SuggestContinueAsNewReason. */
export const SuggestContinueAsNewReason = enums.SuggestContinueAsNewReason;
export type SuggestContinueAsNewReason = enums.SuggestContinueAsNewReason;
/** temporal.api.enums.v1.QueryResultType. */
export const QueryResultType = enums.QueryResultType;
/** temporal.api.enums.v1.QueryRejectCondition. */
export const QueryRejectCondition = enums.QueryRejectCondition;
/** temporal.api.enums.v1.HistoryEventFilterType. */
export const HistoryEventFilterType = enums.HistoryEventFilterType;
/** temporal.api.enums.v1.PendingActivityState. */
export const PendingActivityState = enums.PendingActivityState;
/** temporal.api.enums.v1.PendingWorkflowTaskState. */
export const PendingWorkflowTaskState = enums.PendingWorkflowTaskState;
/** temporal.api.enums.v1.IndexedValueType. */
export const IndexedValueType = enums.IndexedValueType;
/** temporal.api.enums.v1.NamespaceState. */
export const NamespaceStateEnum = enums.NamespaceState;
/** temporal.api.enums.v1.ArchivalState. */
export const ArchivalState = enums.ArchivalState;

/** temporal.api.command.v1.Command. */
export type Command = Plain<command.ICommand>;
/** temporal.api.failure.v1.Failure. */
export type Failure = Plain<failure.IFailure>;
/** temporal.api.common.v1.Payload. */
export type Payload = Plain<common.IPayload>;
/** temporal.api.common.v1.Payloads. */
export type Payloads = Plain<common.IPayloads>;
/** temporal.api.common.v1.Header. */
export type Header = Plain<common.IHeader>;
/** temporal.api.sdk.v1.UserMetadata (a workflow's, timer's, activity's or child's summary and details). */
export type UserMetadata = Plain<temporal.api.sdk.v1.IUserMetadata>;
/** temporal.api.common.v1.Priority (priority key, fairness key and weight). */
export type Priority = Plain<common.IPriority>;
/** temporal.api.common.v1.RetryPolicy. */
export type RetryPolicy = Plain<common.IRetryPolicy>;
/** temporal.api.common.v1.WorkflowExecution. */
export type WorkflowExecutionRef = Plain<common.IWorkflowExecution>;
/** temporal.api.taskqueue.v1.TaskQueue. */
export type TaskQueue = Plain<taskqueue.ITaskQueue>;
/** temporal.api.history.v1.HistoryEvent as held in memory. */
export type HistoryEventMessage = Plain<history.IHistoryEvent>;

/**
 * The attributes of a command by the name of their field in temporal.api.command.v1.Command, as decoded:
 * `CommandAttrs<'startTimerCommandAttributes'>` is temporal.api.command.v1.StartTimerCommandAttributes.
 */
export type CommandAttrs<K extends keyof Command & `${string}CommandAttributes`> = NonNullable<Command[K]>;

/**
 * The request of WorkflowService RPC `M` as decoded: `RpcRequest<'startWorkflowExecution'>` is
 * temporal.api.workflowservice.v1.StartWorkflowExecutionRequest.
 */
export type RpcRequest<M extends RpcName> = Plain<Parameters<workflowservice.WorkflowService[M]>[0]>;
/** The names of WorkflowService's RPC methods (`startWorkflowExecution`, …). */
type RpcName = { [K in keyof workflowservice.WorkflowService]: workflowservice.WorkflowService[K] extends (request: never) => Promise<unknown> ? K : never }[keyof workflowservice.WorkflowService];

/** temporal.api.query.v1.WorkflowQuery. */
export type WorkflowQuery = Plain<temporal.api.query.v1.IWorkflowQuery>;
/** temporal.api.query.v1.WorkflowQueryResult. */
export type WorkflowQueryResult = Plain<temporal.api.query.v1.IWorkflowQueryResult>;

/**
 * An activity request that comes by task token or by id (RecordActivityTaskHeartbeat(ById),
 * RespondActivityTask{Completed,Failed,Canceled}(ById)): the fields of both forms, those of the
 * other form absent.
 */
export type ActivityHeartbeatRequest = Plain<workflowservice.IRecordActivityTaskHeartbeatRequest> &
  Plain<workflowservice.IRecordActivityTaskHeartbeatByIdRequest>;
/** temporal.api.workflowservice.v1.RespondActivityTaskCompletedRequest / temporal.api.workflowservice.v1.RespondActivityTaskCompletedByIdRequest. */
export type ActivityCompletedRequest = Plain<workflowservice.IRespondActivityTaskCompletedRequest> &
  Plain<workflowservice.IRespondActivityTaskCompletedByIdRequest>;
/** temporal.api.workflowservice.v1.RespondActivityTaskFailedRequest / temporal.api.workflowservice.v1.RespondActivityTaskFailedByIdRequest. */
export type ActivityFailedRequest = Plain<workflowservice.IRespondActivityTaskFailedRequest> &
  Plain<workflowservice.IRespondActivityTaskFailedByIdRequest>;
/** temporal.api.workflowservice.v1.RespondActivityTaskCanceledRequest / temporal.api.workflowservice.v1.RespondActivityTaskCanceledByIdRequest. */
export type ActivityCanceledRequest = Plain<workflowservice.IRespondActivityTaskCanceledRequest> &
  Plain<workflowservice.IRespondActivityTaskCanceledByIdRequest>;

/** WorkflowService responses the engine builds. */
export type PollWorkflowTaskQueueResponse = Plain<workflowservice.IPollWorkflowTaskQueueResponse>;
/** temporal.api.workflowservice.v1.PollActivityTaskQueueResponse. */
export type PollActivityTaskQueueResponse = Plain<workflowservice.IPollActivityTaskQueueResponse>;
/** temporal.api.workflowservice.v1.RespondWorkflowTaskCompletedResponse. */
export type RespondWorkflowTaskCompletedResponse = Plain<workflowservice.IRespondWorkflowTaskCompletedResponse>;
/** temporal.api.workflowservice.v1.RecordActivityTaskHeartbeatResponse. */
export type RecordActivityTaskHeartbeatResponse = Plain<workflowservice.IRecordActivityTaskHeartbeatResponse>;

/**
 * The attributes message of each event type the engine writes (the `attributes` oneof of
 * temporal.api.history.v1.HistoryEvent), so `emit` checks attributes against their event type.
 */
export interface EventAttributesByType {
  [EventType.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED]: history.IWorkflowExecutionStartedEventAttributes;
  [EventType.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED]: history.IWorkflowExecutionCompletedEventAttributes;
  [EventType.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED]: history.IWorkflowExecutionFailedEventAttributes;
  [EventType.EVENT_TYPE_WORKFLOW_EXECUTION_TIMED_OUT]: history.IWorkflowExecutionTimedOutEventAttributes;
  [EventType.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED]: history.IWorkflowTaskScheduledEventAttributes;
  [EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED]: history.IWorkflowTaskStartedEventAttributes;
  [EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED]: history.IWorkflowTaskCompletedEventAttributes;
  [EventType.EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT]: history.IWorkflowTaskTimedOutEventAttributes;
  [EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED]: history.IWorkflowTaskFailedEventAttributes;
  [EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED]: history.IActivityTaskScheduledEventAttributes;
  [EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED]: history.IActivityTaskStartedEventAttributes;
  [EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED]: history.IActivityTaskCompletedEventAttributes;
  [EventType.EVENT_TYPE_ACTIVITY_TASK_FAILED]: history.IActivityTaskFailedEventAttributes;
  [EventType.EVENT_TYPE_ACTIVITY_TASK_TIMED_OUT]: history.IActivityTaskTimedOutEventAttributes;
  [EventType.EVENT_TYPE_ACTIVITY_TASK_CANCEL_REQUESTED]: history.IActivityTaskCancelRequestedEventAttributes;
  [EventType.EVENT_TYPE_ACTIVITY_TASK_CANCELED]: history.IActivityTaskCanceledEventAttributes;
  [EventType.EVENT_TYPE_TIMER_STARTED]: history.ITimerStartedEventAttributes;
  [EventType.EVENT_TYPE_TIMER_FIRED]: history.ITimerFiredEventAttributes;
  [EventType.EVENT_TYPE_TIMER_CANCELED]: history.ITimerCanceledEventAttributes;
  [EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CANCEL_REQUESTED]: history.IWorkflowExecutionCancelRequestedEventAttributes;
  [EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CANCELED]: history.IWorkflowExecutionCanceledEventAttributes;
  [EventType.EVENT_TYPE_REQUEST_CANCEL_EXTERNAL_WORKFLOW_EXECUTION_INITIATED]: history.IRequestCancelExternalWorkflowExecutionInitiatedEventAttributes;
  [EventType.EVENT_TYPE_REQUEST_CANCEL_EXTERNAL_WORKFLOW_EXECUTION_FAILED]: history.IRequestCancelExternalWorkflowExecutionFailedEventAttributes;
  [EventType.EVENT_TYPE_EXTERNAL_WORKFLOW_EXECUTION_CANCEL_REQUESTED]: history.IExternalWorkflowExecutionCancelRequestedEventAttributes;
  [EventType.EVENT_TYPE_MARKER_RECORDED]: history.IMarkerRecordedEventAttributes;
  [EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED]: history.IWorkflowExecutionSignaledEventAttributes;
  [EventType.EVENT_TYPE_WORKFLOW_EXECUTION_TERMINATED]: history.IWorkflowExecutionTerminatedEventAttributes;
  [EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW]: history.IWorkflowExecutionContinuedAsNewEventAttributes;
  [EventType.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED]: history.IStartChildWorkflowExecutionInitiatedEventAttributes;
  [EventType.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_FAILED]: history.IStartChildWorkflowExecutionFailedEventAttributes;
  [EventType.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_STARTED]: history.IChildWorkflowExecutionStartedEventAttributes;
  [EventType.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_COMPLETED]: history.IChildWorkflowExecutionCompletedEventAttributes;
  [EventType.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_FAILED]: history.IChildWorkflowExecutionFailedEventAttributes;
  [EventType.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_CANCELED]: history.IChildWorkflowExecutionCanceledEventAttributes;
  [EventType.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_TIMED_OUT]: history.IChildWorkflowExecutionTimedOutEventAttributes;
  [EventType.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_TERMINATED]: history.IChildWorkflowExecutionTerminatedEventAttributes;
  [EventType.EVENT_TYPE_SIGNAL_EXTERNAL_WORKFLOW_EXECUTION_INITIATED]: history.ISignalExternalWorkflowExecutionInitiatedEventAttributes;
  [EventType.EVENT_TYPE_SIGNAL_EXTERNAL_WORKFLOW_EXECUTION_FAILED]: history.ISignalExternalWorkflowExecutionFailedEventAttributes;
  [EventType.EVENT_TYPE_EXTERNAL_WORKFLOW_EXECUTION_SIGNALED]: history.IExternalWorkflowExecutionSignaledEventAttributes;
  [EventType.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES]: history.IUpsertWorkflowSearchAttributesEventAttributes;
  [EventType.EVENT_TYPE_WORKFLOW_PROPERTIES_MODIFIED]: history.IWorkflowPropertiesModifiedEventAttributes;
  [EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED]: history.IWorkflowExecutionUpdateAcceptedEventAttributes;
  [EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_COMPLETED]: history.IWorkflowExecutionUpdateCompletedEventAttributes;
}

/** Attributes of event type `E`, as held in memory. */
export type EventAttrs<E extends keyof EventAttributesByType> = Plain<EventAttributesByType[E]>;
