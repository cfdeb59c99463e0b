/**
 * temporal.api.workflowservice.v1.WorkflowService handlers: the subset the SDK client and worker
 * call, each a thin mapping of the request onto the engine (devserver/README.md "How it maps to
 * the real server": frontend).
 */
import type * as grpc from '@grpc/grpc-js';
import { status as Code } from '@grpc/grpc-js';
import { temporal } from '@temporalio/proto';
import type { Engine } from '../engine';
import { fromMs, toMs } from '../proto';
import {
  ArchivalState,
  HistoryEventFilterType,
  IndexedValueType,
  NamespaceStateEnum,
  PendingActivityState,
  PendingWorkflowTaskState,
  Plain,
  QueryRejectCondition,
  TaskQueueKind,
} from '../protoTypes';
import { ServiceError, Status } from '../types';
import { Handlers, onCancelOf, pageToken } from './common';
import { countExecutions } from './count';
import { PollerRegistry } from './pollers';
import { executionInfo, listExecutions } from './visibility';
import { customAttributes, SYSTEM_ATTRIBUTES } from '../searchAttributes';
import { updateHandlers } from './updates';
import { scheduleHandlers } from './schedules';
import { multiOperationHandlers } from './multiOperation';
import { BLOB_SIZE_ERROR, BLOB_SIZE_WARN, checkRequestBlob, checkRequestMemo, failureSize, MEMO_SIZE_ERROR, payloadsSize, serverFailure, truncateFailure } from '../engine/blobSize';
import { lastHistoryEvent } from '../engine/packedHistory';

import ws = temporal.api.workflowservice.v1;

/** temporal.api.enums.v1.IndexedValueType by the `type` metadata name of a search attribute payload. */

/** Server version reported by GetSystemInfo. */
export const SERVER_VERSION = '1.27.0-acp-devserver';

/** Custom search attributes of the default namespace: registered ones and those some run carries (GetSearchAttributes). */
export function searchAttributeKeys(engine: Engine): Record<string, number> {
  const ns = engine.namespace('default');
  const seen = [...engine.allExecutions()].filter((e) => e.namespace === ns.name).map((e) => e.searchAttributes);
  return { ...SYSTEM_ATTRIBUTES, ...customAttributes(ns, seen) };
}

/** A unary method that runs `fn` and answers the empty response (the Respond… calls return nothing). */
const ack =
  <Q>(fn: (req: Q) => void) =>
  async (req: Q): Promise<Record<string, never>> => {
    fn(req);
    return {};
  };

function namespaceDescription(engine: Engine, name: string): Record<string, unknown> {
  const ns = engine.namespace(name);
  return {
    namespaceInfo: {
      name: ns.name,
      state: NamespaceStateEnum.NAMESPACE_STATE_REGISTERED,
      description: ns.description,
      ownerEmail: ns.ownerEmail,
      data: ns.data,
      id: ns.id,
      capabilities: {
        eagerWorkflowStart: true,
        syncUpdate: true,
        asyncUpdate: true,
        workerHeartbeats: false,
        reportedProblemsSearchAttribute: false,
        workflowPause: false,
        standaloneActivities: false,
        workerPollCompleteOnShutdown: true,
        pollerAutoscaling: false,
      },
      supportsSchedules: true,
      // NamespaceInfo.limits: the blob and memo size error limits (limit.blobSize.error, limit.memoSize.error).
      limits: { blobSizeLimitError: BLOB_SIZE_ERROR, memoSizeLimitError: MEMO_SIZE_ERROR },
    },
    config: { workflowExecutionRetentionTtl: fromMs(ns.retentionMs), historyArchivalState: ArchivalState.ARCHIVAL_STATE_DISABLED, visibilityArchivalState: ArchivalState.ARCHIVAL_STATE_DISABLED },
    isGlobalNamespace: false,
  };
}

/** WorkflowService handlers bound to an engine. */
export function workflowServiceHandlers(engine: Engine): Handlers {
  const nsOf = (req: { namespace?: string | null }) => req.namespace || 'default';
  const pollers = new PollerRegistry();
  const warnBlob = (size: number) => engine.logWarn('Blob data size exceeds the warning limit.', { size });
  const warnMemo = (size: number) => engine.logWarn('Memo size exceeds the warning limit.', { size });
  // Activity results, failures, cancel details and heartbeat details over the blob error limit never
  // fail the call: the activity fails with a non-retryable server failure instead
  // (service/frontend/workflow_handler.go; engine/blobSize.ts).
  const tooLarge = (p: Parameters<typeof payloadsSize>[0]) => payloadsSize(p) > BLOB_SIZE_ERROR;
  type ActivityRef = { taskToken?: Uint8Array | null; namespace?: string | null; workflowId?: string | null; runId?: string | null; activityId?: string | null; identity?: string | null };
  const failInstead = (req: ActivityRef, byId: boolean, message: string) =>
    engine.failActivity({ taskToken: req.taskToken, namespace: req.namespace, workflowId: req.workflowId, runId: req.runId, activityId: req.activityId, identity: req.identity, failure: serverFailure(message) }, byId);
  /**
   * RespondActivityTaskFailed(ById) over the limits, as the real frontend answers it: heartbeat details
   * over the blob error limit are dropped, a failure over it is replaced by the server failure "Failure
   * exceeds size limit." caused by the original cut to the warn limit; each replacement is listed in
   * the response's `failures`. Mutates `req`.
   */
  const capFailure = (req: Plain<ws.IRespondActivityTaskFailedRequest>) => {
    const failures: ReturnType<typeof serverFailure>[] = [];
    if (req.lastHeartbeatDetails && tooLarge(req.lastHeartbeatDetails)) {
      failures.push(serverFailure('Heartbeat details exceed size limit.'));
      req.lastHeartbeatDetails = undefined;
    }
    if (failureSize(req.failure) > BLOB_SIZE_ERROR) {
      req.failure = { ...serverFailure('Failure exceeds size limit.'), cause: truncateFailure(req.failure, BLOB_SIZE_WARN) };
      failures.push(req.failure);
    }
    return failures;
  };
  return {
    ...updateHandlers(engine),
    ...scheduleHandlers(engine),
    ...multiOperationHandlers(engine),
    async GetSystemInfo() {
      return {
        serverVersion: SERVER_VERSION,
        capabilities: {
          signalAndQueryHeader: true,
          internalErrorDifferentiation: true,
          activityFailureIncludeHeartbeat: true,
          supportsSchedules: true,
          encodedFailureAttributes: true,
          buildIdBasedVersioning: true,
          upsertMemo: true,
          eagerWorkflowStart: true,
          sdkMetadata: true,
          countGroupByExecutionStatus: false,
          nexus: false,
        },
      };
    },
    async GetClusterInfo() {
      return { clusterName: 'active', serverVersion: SERVER_VERSION, historyShardCount: 1, persistenceStore: 'acp-devserver', visibilityStore: 'acp-devserver' };
    },
    async DescribeNamespace(req: Plain<ws.IDescribeNamespaceRequest>) {
      return namespaceDescription(engine, req.namespace || (req.id ? [...engine.namespaces.values()].find((n) => n.id === req.id)?.name : '') || '');
    },
    async RegisterNamespace(req: Plain<ws.IRegisterNamespaceRequest>) {
      if (!req.namespace) throw new ServiceError(Code.INVALID_ARGUMENT, 'Namespace is not set on request.');
      if (engine.namespaces.has(req.namespace)) throw new ServiceError(Code.ALREADY_EXISTS, 'Namespace already exists.');
      const ns = engine.ensureNamespace(req.namespace, req.description ?? '');
      ns.ownerEmail = req.ownerEmail ?? '';
      ns.data = req.data ?? {};
      ns.retentionMs = toMs(req.workflowExecutionRetentionPeriod) || ns.retentionMs;
      return {};
    },
    async ListNamespaces(req: Plain<ws.IListNamespacesRequest>) {
      const names = [...engine.namespaces.keys()].sort();
      const start = pageToken.decode<number>(req.nextPageToken) ?? 0;
      const size = req.pageSize || 100;
      const page = names.slice(start, start + size);
      return {
        namespaces: page.map((n) => namespaceDescription(engine, n)),
        nextPageToken: start + size < names.length ? pageToken.encode(start + size) : undefined,
      };
    },
    async GetSearchAttributes() {
      return { keys: searchAttributeKeys(engine) };
    },
    async StartWorkflowExecution(req: Plain<ws.IStartWorkflowExecutionRequest>) {
      checkRequestBlob(req.input, warnBlob);
      checkRequestMemo(req.memo, warnMemo);
      const fresh = engine.currentRun(nsOf(req), req.workflowId ?? '');
      const { exec, started } = engine.startWorkflow(req);
      // Eager workflow start: a run this call created hands its first workflow task to the caller.
      const eager = req.requestEagerExecution && started && exec !== fresh ? engine.startEagerWorkflowTask(exec, req.identity ?? '') : undefined;
      return { runId: exec.runId, started, status: exec.status, eagerWorkflowTask: eager };
    },
    async SignalWithStartWorkflowExecution(req: Plain<ws.ISignalWithStartWorkflowExecutionRequest>) {
      checkRequestBlob(req.input, warnBlob);
      checkRequestMemo(req.memo, warnMemo);
      checkRequestBlob(req.signalInput, warnBlob);
      const { exec, started } = engine.signalWithStart(req);
      return { runId: exec.runId, started };
    },
    async SignalWorkflowExecution(req: Plain<ws.ISignalWorkflowExecutionRequest>) {
      checkRequestBlob(req.input, warnBlob);
      const exec = engine.getExecution(nsOf(req), req.workflowExecution?.workflowId, req.workflowExecution?.runId);
      engine.signal(exec, req);
      return {};
    },
    async RequestCancelWorkflowExecution(req: Plain<ws.IRequestCancelWorkflowExecutionRequest>) {
      const exec = engine.getExecution(nsOf(req), req.workflowExecution?.workflowId, req.workflowExecution?.runId);
      engine.requestCancel(exec, req.reason ?? '', req.identity ?? '');
      return {};
    },
    async TerminateWorkflowExecution(req: Plain<ws.ITerminateWorkflowExecutionRequest>) {
      const exec = engine.getExecution(nsOf(req), req.workflowExecution?.workflowId, req.workflowExecution?.runId);
      engine.terminate(exec, req.reason ?? '', req.details, req.identity ?? '');
      return {};
    },
    // ResetWorkflowExecution (the Web UI's Reset; devserver/engine/reset.ts).
    async ResetWorkflowExecution(req: Plain<ws.IResetWorkflowExecutionRequest>) {
      const exec = engine.getExecution(nsOf(req), req.workflowExecution?.workflowId, req.workflowExecution?.runId);
      return { runId: engine.resetWorkflow(exec, req) };
    },
    async QueryWorkflow(req: Plain<ws.IQueryWorkflowRequest>) {
      const exec = engine.getExecution(nsOf(req), req.execution?.workflowId, req.execution?.runId);
      if (req.queryRejectCondition && exec.status !== Status.Running) {
        // QUERY_REJECT_CONDITION_NONE never rejects.
        const reject =
          req.queryRejectCondition === QueryRejectCondition.QUERY_REJECT_CONDITION_NOT_OPEN ||
          (req.queryRejectCondition === QueryRejectCondition.QUERY_REJECT_CONDITION_NOT_COMPLETED_CLEANLY && exec.status !== Status.Completed);
        if (reject) return { queryRejected: { status: exec.status } };
      }
      const r = await engine.query(exec, req.query ?? {});
      if (r.error !== undefined) {
        throw new ServiceError(Code.INVALID_ARGUMENT, r.error, {
          typeName: 'temporal.api.errordetails.v1.QueryFailedFailure',
          value: { failure: r.failure },
        });
      }
      return { queryResult: r.answer };
    },
    async DescribeWorkflowExecution(req: Plain<ws.IDescribeWorkflowExecutionRequest>) {
      const e = engine.getExecution(nsOf(req), req.execution?.workflowId, req.execution?.runId);
      return {
        executionConfig: {
          taskQueue: { name: e.taskQueue, kind: TaskQueueKind.TASK_QUEUE_KIND_NORMAL },
          workflowExecutionTimeout: e.startAttrs.workflowExecutionTimeout,
          workflowRunTimeout: e.startAttrs.workflowRunTimeout,
          defaultWorkflowTaskTimeout: fromMs(e.workflowTaskTimeoutMs),
          // WorkflowExecutionConfig.user_metadata: the static summary and details the UI shows.
          userMetadata: e.userMetadata ?? undefined,
        },
        workflowExecutionInfo: executionInfo(e),
        pendingActivities: Object.values(e.activities).map((a) => ({
          activityId: a.activityId,
          activityType: { name: a.activityType },
          state: a.cancelRequested
            ? PendingActivityState.PENDING_ACTIVITY_STATE_CANCEL_REQUESTED
            : a.state === 'started'
              ? PendingActivityState.PENDING_ACTIVITY_STATE_STARTED
              : PendingActivityState.PENDING_ACTIVITY_STATE_SCHEDULED,
          heartbeatDetails: a.heartbeatDetails,
          lastHeartbeatTime: a.lastHeartbeatTime ? fromMs(a.lastHeartbeatTime) : undefined,
          lastStartedTime: a.startedTime ? fromMs(a.startedTime) : undefined,
          attempt: a.attempt,
          maximumAttempts: a.retryPolicy.maximumAttempts,
          priority: a.priority ?? undefined,
          paused: a.pausedAt !== undefined,
          pauseInfo: a.pausedAt !== undefined ? { pauseTime: fromMs(a.pausedAt), manual: {} } : undefined,
          // As the real server's describe: a started attempt has its start time and no scheduled time
          // (the Web UI shows a scheduled time as "Next Retry"); one waiting to start or to retry has
          // the time it is (to be) scheduled.
          scheduledTime: a.state === 'started' ? undefined : fromMs(a.attemptScheduledTime),
          expirationTime: a.scheduleToCloseMs > 0 ? fromMs(a.scheduledTime + a.scheduleToCloseMs) : undefined,
          lastFailure: a.lastFailure,
          lastWorkerIdentity: a.identity,
          nextAttemptScheduleTime: a.state === 'backoff' ? fromMs(a.attemptScheduledTime) : undefined,
        })),
        pendingChildren: Object.values(e.children).map((c) => ({
          workflowId: c.workflowId,
          runId: c.runId,
          workflowTypeName: c.workflowType,
          initiatedId: c.initiatedEventId,
          parentClosePolicy: c.parentClosePolicy,
        })),
        pendingWorkflowTask:
          e.wt.state === 'none' || e.status !== Status.Running
            ? undefined
            : {
                state:
                  e.wt.state === 'started'
                    ? PendingWorkflowTaskState.PENDING_WORKFLOW_TASK_STATE_STARTED
                    : PendingWorkflowTaskState.PENDING_WORKFLOW_TASK_STATE_SCHEDULED,
                scheduledTime: fromMs(e.wt.scheduledTime),
                originalScheduledTime: fromMs(e.wt.scheduledTime),
                startedTime: e.wt.state === 'started' ? fromMs(e.wt.startedTime) : undefined,
                attempt: e.wt.attempt,
              },
        // WorkflowExecutionExtendedInfo.reset_run_id: the run the last reset of this run created.
        workflowExtendedInfo: e.resetRunId ? { resetRunId: e.resetRunId } : undefined,
      };
    },
    async GetWorkflowExecutionHistory(req: Plain<ws.IGetWorkflowExecutionHistoryRequest>, call: grpc.ServerUnaryCall<unknown, unknown>) {
      const ns = nsOf(req);
      const tok = pageToken.decode<{ r: string; n: number }>(req.nextPageToken);
      const exec = engine.getExecution(ns, req.execution?.workflowId, tok?.r ?? req.execution?.runId);
      const closeOnly = req.historyEventFilterType === HistoryEventFilterType.HISTORY_EVENT_FILTER_TYPE_CLOSE_EVENT;
      const from = tok?.n ?? 1;
      const { onCancel } = onCancelOf(call);
      if (closeOnly) {
        if (req.waitNewEvent) await engine.waitForEvents(exec, from, true, onCancel);
        if (exec.status === Status.Running) return { history: { events: [] }, nextPageToken: pageToken.encode({ r: exec.runId, n: from }) };
        return { history: { events: [lastHistoryEvent(exec)] } };
      }
      if (req.waitNewEvent && exec.nextEventId <= from && exec.status === Status.Running) {
        await engine.waitForEvents(exec, from, false, onCancel);
      }
      const size = req.maximumPageSize && req.maximumPageSize > 0 ? req.maximumPageSize : 1000;
      const events = exec.history.slice(from - 1, from - 1 + size);
      const next = from + events.length;
      const more = next < exec.nextEventId || (req.waitNewEvent && exec.status === Status.Running);
      return { history: { events }, nextPageToken: more ? pageToken.encode({ r: exec.runId, n: next }) : undefined };
    },
    async GetWorkflowExecutionHistoryReverse(req: Plain<ws.IGetWorkflowExecutionHistoryReverseRequest>) {
      const exec = engine.getExecution(nsOf(req), req.execution?.workflowId, req.execution?.runId);
      const tok = pageToken.decode<{ n: number }>(req.nextPageToken);
      const end = tok?.n ?? exec.history.length;
      const size = req.maximumPageSize && req.maximumPageSize > 0 ? req.maximumPageSize : 1000;
      const start = Math.max(0, end - size);
      const events = exec.history.slice(start, end).reverse();
      return { history: { events }, nextPageToken: start > 0 ? pageToken.encode({ n: start }) : undefined };
    },
    async PollWorkflowTaskQueue(req: Plain<ws.IPollWorkflowTaskQueueRequest>, call: grpc.ServerUnaryCall<unknown, unknown>) {
      pollers.record(nsOf(req), req.taskQueue?.name ?? '', 1, req.identity ?? '');
      return engine.pollWorkflowTask({ ns: nsOf(req), queue: req.taskQueue?.name ?? '', identity: req.identity ?? '', workerInstanceKey: req.workerInstanceKey ?? undefined, ...onCancelOf(call) });
    },
    async RespondWorkflowTaskCompleted(req: Plain<ws.IRespondWorkflowTaskCompletedRequest>) {
      return engine.completeWorkflowTask(req);
    },
    async RespondWorkflowTaskFailed(req: Plain<ws.IRespondWorkflowTaskFailedRequest>) {
      engine.failWorkflowTask(req);
      return {};
    },
    async PollActivityTaskQueue(req: Plain<ws.IPollActivityTaskQueueRequest>, call: grpc.ServerUnaryCall<unknown, unknown>) {
      pollers.record(nsOf(req), req.taskQueue?.name ?? '', 2, req.identity ?? '');
      return engine.pollActivityTask({ ns: nsOf(req), queue: req.taskQueue?.name ?? '', identity: req.identity ?? '', workerInstanceKey: req.workerInstanceKey ?? undefined, ...onCancelOf(call) });
    },
    // Activity pause / unpause / reset (the Web UI's buttons; the real server's activity operations).
    async PauseActivity(req: Plain<ws.IPauseActivityRequest>) {
      engine.pauseActivity(engine.getExecution(nsOf(req), req.execution?.workflowId, req.execution?.runId), req);
      return {};
    },
    async UnpauseActivity(req: Plain<ws.IUnpauseActivityRequest>) {
      const exec = engine.getExecution(nsOf(req), req.execution?.workflowId, req.execution?.runId);
      engine.unpauseActivity(exec, { id: req.id, type: req.type, all: req.unpauseAll }, req);
      return {};
    },
    async ResetActivity(req: Plain<ws.IResetActivityRequest>) {
      const exec = engine.getExecution(nsOf(req), req.execution?.workflowId, req.execution?.runId);
      engine.resetActivity(exec, { id: req.id, type: req.type, all: req.matchAll }, req);
      return {};
    },
    async RecordActivityTaskHeartbeat(req: Plain<ws.IRecordActivityTaskHeartbeatRequest>) {
      if (!tooLarge(req.details)) return engine.heartbeatActivity(req, false);
      failInstead(req, false, 'Heartbeat details exceed size limit.');
      return { cancelRequested: true };
    },
    async RecordActivityTaskHeartbeatById(req: Plain<ws.IRecordActivityTaskHeartbeatByIdRequest>) {
      if (!tooLarge(req.details)) return engine.heartbeatActivity(req, true);
      failInstead(req, true, 'Heartbeat details exceed size limit.');
      return { cancelRequested: true };
    },
    RespondActivityTaskCompleted: ack((req: Plain<ws.IRespondActivityTaskCompletedRequest>) => (tooLarge(req.result) ? failInstead(req, false, 'Complete result exceeds size limit.') : engine.completeActivity(req, false))),
    RespondActivityTaskCompletedById: ack((req: Plain<ws.IRespondActivityTaskCompletedByIdRequest>) => (tooLarge(req.result) ? failInstead(req, true, 'Complete result exceeds size limit.') : engine.completeActivity(req, true))),
    async RespondActivityTaskFailed(req: Plain<ws.IRespondActivityTaskFailedRequest>) {
      const failures = capFailure(req);
      engine.failActivity(req, false);
      return { failures };
    },
    async RespondActivityTaskFailedById(req: Plain<ws.IRespondActivityTaskFailedByIdRequest>) {
      const failures = capFailure(req);
      engine.failActivity(req, true);
      return { failures };
    },
    RespondActivityTaskCanceled: ack((req: Plain<ws.IRespondActivityTaskCanceledRequest>) => (tooLarge(req.details) ? failInstead(req, false, 'Cancel details exceed size limit.') : engine.cancelActivity(req, false))),
    RespondActivityTaskCanceledById: ack((req: Plain<ws.IRespondActivityTaskCanceledByIdRequest>) => (tooLarge(req.details) ? failInstead(req, true, 'Cancel details exceed size limit.') : engine.cancelActivity(req, true))),
    async RespondQueryTaskCompleted(req: Plain<ws.IRespondQueryTaskCompletedRequest>) {
      engine.respondQuery(req);
      return {};
    },
    async ResetStickyTaskQueue(req: Plain<ws.IResetStickyTaskQueueRequest>) {
      const exec = engine.getExecution(nsOf(req), req.execution?.workflowId, req.execution?.runId);
      engine.clearSticky(exec.namespace, undefined, exec);
      return {};
    },
    async ShutdownWorker(req: Plain<ws.IShutdownWorkerRequest>) {
      if (req.workerInstanceKey) engine.shutdownWorker(req.workerInstanceKey);
      if (req.stickyTaskQueue) engine.clearSticky(nsOf(req), req.stickyTaskQueue);
      return {};
    },
    async ListWorkflowExecutions(req: Plain<ws.IListWorkflowExecutionsRequest>) {
      return listExecutions(engine, req, false);
    },
    async ScanWorkflowExecutions(req: Plain<ws.IScanWorkflowExecutionsRequest>) {
      return listExecutions(engine, req, false);
    },
    async CountWorkflowExecutions(req: Plain<ws.ICountWorkflowExecutionsRequest>) {
      return countExecutions(engine, req);
    },
    async DescribeTaskQueue(req: Plain<ws.IDescribeTaskQueueRequest>) {
      const kind = req.taskQueueType === 2 ? 2 : 1;
      const list = pollers.list(nsOf(req), req.taskQueue?.name ?? '', kind);
      if (!req.reportStats) return { pollers: list };
      // reportStats: the backlog in all and by priority key (TaskQueueStats.approximateBacklogCount; the
      // dev server keeps no add/dispatch rates or backlog age).
      const byKey = engine.backlogByPriorityKey(nsOf(req), req.taskQueue?.name ?? '', kind);
      const statsByPriorityKey: Record<number, { approximateBacklogCount: number }> = {};
      let total = 0;
      for (const [key, n] of byKey) {
        statsByPriorityKey[key] = { approximateBacklogCount: n };
        total += n;
      }
      return { pollers: list, stats: { approximateBacklogCount: total }, statsByPriorityKey };
    },
  };
}
