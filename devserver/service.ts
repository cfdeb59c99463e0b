/**
 * gRPC handlers: temporal.api.workflowservice.v1.WorkflowService (the subset the SDK client and
 * worker use) and temporal.api.testservice.v1.TestService (time skipping). Unlisted methods
 * answer UNIMPLEMENTED naming the method. Each mutating call resolves only after its changes are
 * committed to Postgres (group commit), when a database is configured.
 */
import * as grpc from '@grpc/grpc-js';
import { status as Code } from '@grpc/grpc-js';
import { Engine } from './engine';
import { encodePlain, fromMs, pbType, serviceDefinition, toMs, UnaryHandler } from './proto';
import { Execution, ServiceError, Status } from './types';
import {
  compareForOrder,
  matchesVisibilityQuery,
  parseVisibilityQuery,
  VisibilityQueryError,
  VisibilityRecord,
  VisibilityStatus,
} from './visibility/query';

/**
 * Methods whose reply does not wait for the Postgres commit: polls and heartbeats (a lost
 * dispatch is recovered by timeouts after a restart) and reads.
 */
export const NO_COMMIT_WAIT = new Set([
  'PollWorkflowTaskQueue',
  'PollActivityTaskQueue',
  'RecordActivityTaskHeartbeat',
  'RecordActivityTaskHeartbeatById',
  'QueryWorkflow',
  'GetWorkflowExecutionHistory',
  'GetWorkflowExecutionHistoryReverse',
  'DescribeWorkflowExecution',
  'DescribeNamespace',
  'ListNamespaces',
  'ListWorkflowExecutions',
  'ScanWorkflowExecutions',
  'CountWorkflowExecutions',
  'GetSystemInfo',
  'GetClusterInfo',
  'GetSearchAttributes',
  'DescribeTaskQueue',
  'GetCurrentTime',
]);

/** Server version reported by GetSystemInfo. */
export const SERVER_VERSION = '1.27.0-acp-devserver';

const STATUS_NAMES: Record<number, VisibilityStatus> = {
  1: 'Running',
  2: 'Completed',
  3: 'Failed',
  4: 'Canceled',
  5: 'Terminated',
  6: 'ContinuedAsNew',
  7: 'TimedOut',
};

type Handlers = Record<string, UnaryHandler>;

/** Converts an engine error into a grpc-js status (with google.rpc.Status details when given). */
function toGrpcError(err: unknown): Partial<grpc.StatusObject> & Error {
  if (err instanceof ServiceError) {
    const metadata = new grpc.Metadata();
    if (err.details) {
      const value = encodePlain(pbType(err.details.typeName), err.details.value);
      const st = encodePlain(pbType('google.rpc.Status'), {
        code: err.code,
        message: err.message,
        details: [{ type_url: `type.googleapis.com/${err.details.typeName}`, value }],
      });
      metadata.set('grpc-status-details-bin', st);
    }
    return Object.assign(new Error(err.message), { code: err.code, details: err.message, metadata });
  }
  const msg = err instanceof Error ? err.message : String(err);
  return Object.assign(new Error(msg), { code: Code.INTERNAL, details: msg });
}

function onCancelOf(call: grpc.ServerUnaryCall<any, any>): { onCancel: (fn: () => void) => void; isCancelled: () => boolean } {
  return {
    onCancel: (fn) => call.on('cancelled', fn),
    isCancelled: () => call.cancelled,
  };
}

/** Decodes a search-attribute payload into a visibility value (Keyword, Int, Datetime, ...). */
export function decodeSearchAttribute(p: any): unknown {
  if (!p?.data) return undefined;
  const type = p.metadata?.type ? Buffer.from(p.metadata.type).toString('utf8') : '';
  let v: unknown;
  try {
    v = JSON.parse(Buffer.from(p.data).toString('utf8'));
  } catch {
    return undefined;
  }
  if (Array.isArray(v) && type !== 'KeywordList' && v.length === 1) v = v[0];
  if (type === 'Datetime') {
    if (Array.isArray(v)) return v.map((x) => new Date(String(x)));
    return new Date(String(v));
  }
  return v;
}

function visibilityRecord(e: Execution): VisibilityRecord {
  const sa: Record<string, unknown> = {};
  for (const [k, p] of Object.entries(e.searchAttributes)) sa[k] = decodeSearchAttribute(p);
  return {
    namespace: e.namespace,
    workflowId: e.workflowId,
    runId: e.runId,
    workflowType: e.workflowType,
    taskQueue: e.taskQueue,
    status: STATUS_NAMES[e.status],
    startTime: new Date(e.startTime),
    executionTime: new Date(e.executionTime),
    closeTime: e.closeTime !== null ? new Date(e.closeTime) : null,
    searchAttributes: sa,
  };
}

/** WorkflowExecutionInfo as Describe/List return it. */
function executionInfo(e: Execution): Record<string, unknown> {
  return {
    execution: { workflowId: e.workflowId, runId: e.runId },
    type: { name: e.workflowType },
    startTime: fromMs(e.startTime),
    closeTime: e.closeTime !== null ? fromMs(e.closeTime) : undefined,
    status: e.status,
    historyLength: e.nextEventId - 1,
    parentNamespaceId: e.parent ? e.parent.namespace : undefined,
    parentExecution: e.parent ? { workflowId: e.parent.workflowId, runId: e.parent.runId } : undefined,
    executionTime: fromMs(e.executionTime),
    memo: { fields: e.memo },
    searchAttributes: { indexedFields: e.searchAttributes },
    taskQueue: e.taskQueue,
    stateTransitionCount: e.nextEventId,
    rootExecution: e.startAttrs.rootWorkflowExecution,
    firstRunId: e.firstRunId,
    executionDuration: e.closeTime !== null ? fromMs(e.closeTime - e.startTime) : undefined,
  };
}

function namespaceDescription(engine: Engine, name: string): Record<string, unknown> {
  const ns = engine.namespace(name);
  return {
    namespaceInfo: {
      name: ns.name,
      state: 1,
      description: ns.description,
      ownerEmail: ns.ownerEmail,
      data: ns.data,
      id: ns.id,
      capabilities: {
        eagerWorkflowStart: false,
        syncUpdate: false,
        asyncUpdate: false,
        workerHeartbeats: false,
        reportedProblemsSearchAttribute: false,
        workflowPause: false,
        standaloneActivities: false,
        workerPollCompleteOnShutdown: false,
        pollerAutoscaling: false,
      },
      supportsSchedules: false,
    },
    config: { workflowExecutionRetentionTtl: fromMs(ns.retentionMs), historyArchivalState: 1, visibilityArchivalState: 1 },
    isGlobalNamespace: false,
  };
}

const pageToken = {
  encode: (o: unknown) => Buffer.from(JSON.stringify(o)),
  decode: <T>(b: Uint8Array | undefined): T | undefined => {
    if (!b || !b.length) return undefined;
    try {
      return JSON.parse(Buffer.from(b).toString('utf8')) as T;
    } catch {
      throw new ServiceError(Code.INVALID_ARGUMENT, 'invalid next page token');
    }
  },
};

/** WorkflowService handlers bound to an engine. */
export function workflowServiceHandlers(engine: Engine): Handlers {
  const nsOf = (req: any) => req.namespace || 'default';
  return {
    async GetSystemInfo() {
      return {
        serverVersion: SERVER_VERSION,
        capabilities: {
          signalAndQueryHeader: true,
          internalErrorDifferentiation: true,
          activityFailureIncludeHeartbeat: true,
          supportsSchedules: false,
          encodedFailureAttributes: true,
          buildIdBasedVersioning: false,
          upsertMemo: true,
          eagerWorkflowStart: false,
          sdkMetadata: true,
          countGroupByExecutionStatus: false,
          nexus: false,
        },
      };
    },
    async GetClusterInfo() {
      return { clusterName: 'active', serverVersion: SERVER_VERSION, historyShardCount: 1, persistenceStore: 'acp-devserver', visibilityStore: 'acp-devserver' };
    },
    async DescribeNamespace(req) {
      return namespaceDescription(engine, req.namespace || (req.id ? [...engine.namespaces.values()].find((n) => n.id === req.id)?.name : '') || '');
    },
    async RegisterNamespace(req) {
      if (!req.namespace) throw new ServiceError(Code.INVALID_ARGUMENT, 'Namespace is not set on request.');
      if (engine.namespaces.has(req.namespace)) throw new ServiceError(Code.ALREADY_EXISTS, 'Namespace already exists.');
      const ns = engine.ensureNamespace(req.namespace, req.description ?? '');
      ns.ownerEmail = req.ownerEmail ?? '';
      ns.data = req.data ?? {};
      ns.retentionMs = toMs(req.workflowExecutionRetentionPeriod) || ns.retentionMs;
      return {};
    },
    async ListNamespaces(req) {
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
      const keys: Record<string, number> = {};
      for (const e of engine.allExecutions()) {
        for (const [k, p] of Object.entries(e.searchAttributes)) {
          const t = p?.metadata?.type ? Buffer.from(p.metadata.type).toString('utf8') : 'Keyword';
          keys[k] = ({ Text: 1, Keyword: 2, Int: 3, Double: 4, Bool: 5, Datetime: 6, KeywordList: 7 } as Record<string, number>)[t] ?? 2;
        }
      }
      return { keys };
    },
    async StartWorkflowExecution(req) {
      const { exec, started } = engine.startWorkflow(req);
      return { runId: exec.runId, started, status: exec.status };
    },
    async SignalWithStartWorkflowExecution(req) {
      const { exec, started } = engine.signalWithStart(req);
      return { runId: exec.runId, started };
    },
    async SignalWorkflowExecution(req) {
      const exec = engine.getExecution(nsOf(req), req.workflowExecution?.workflowId, req.workflowExecution?.runId);
      engine.signal(exec, req);
      return {};
    },
    async RequestCancelWorkflowExecution(req) {
      const exec = engine.getExecution(nsOf(req), req.workflowExecution?.workflowId, req.workflowExecution?.runId);
      engine.requestCancel(exec, req.reason ?? '', req.identity ?? '');
      return {};
    },
    async TerminateWorkflowExecution(req) {
      const exec = engine.getExecution(nsOf(req), req.workflowExecution?.workflowId, req.workflowExecution?.runId);
      engine.terminate(exec, req.reason ?? '', req.details, req.identity ?? '');
      return {};
    },
    async QueryWorkflow(req) {
      const exec = engine.getExecution(nsOf(req), req.execution?.workflowId, req.execution?.runId);
      if (req.queryRejectCondition && exec.status !== Status.Running) {
        // 2 = NOT_OPEN, 3 = NOT_COMPLETED_CLEANLY (1 = NONE never rejects).
        const reject = req.queryRejectCondition === 2 || (req.queryRejectCondition === 3 && exec.status !== Status.Completed);
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
    async DescribeWorkflowExecution(req) {
      const e = engine.getExecution(nsOf(req), req.execution?.workflowId, req.execution?.runId);
      return {
        executionConfig: {
          taskQueue: { name: e.taskQueue, kind: 1 },
          workflowExecutionTimeout: e.startAttrs.workflowExecutionTimeout,
          workflowRunTimeout: e.startAttrs.workflowRunTimeout,
          defaultWorkflowTaskTimeout: fromMs(e.workflowTaskTimeoutMs),
        },
        workflowExecutionInfo: executionInfo(e),
        pendingActivities: Object.values(e.activities).map((a) => ({
          activityId: a.activityId,
          activityType: { name: a.activityType },
          state: a.cancelRequested ? 3 : a.state === 'started' ? 2 : 1,
          heartbeatDetails: a.heartbeatDetails,
          lastHeartbeatTime: a.lastHeartbeatTime ? fromMs(a.lastHeartbeatTime) : undefined,
          lastStartedTime: a.startedTime ? fromMs(a.startedTime) : undefined,
          attempt: a.attempt,
          maximumAttempts: a.retryPolicy.maximumAttempts,
          scheduledTime: fromMs(a.attemptScheduledTime),
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
                state: e.wt.state === 'started' ? 2 : 1,
                scheduledTime: fromMs(e.wt.scheduledTime),
                originalScheduledTime: fromMs(e.wt.scheduledTime),
                startedTime: e.wt.state === 'started' ? fromMs(e.wt.startedTime) : undefined,
                attempt: e.wt.attempt,
              },
      };
    },
    async GetWorkflowExecutionHistory(req, call) {
      const ns = nsOf(req);
      const tok = pageToken.decode<{ r: string; n: number }>(req.nextPageToken);
      const exec = engine.getExecution(ns, req.execution?.workflowId, tok?.r ?? req.execution?.runId);
      const closeOnly = req.historyEventFilterType === 2;
      const from = tok?.n ?? 1;
      const { onCancel } = onCancelOf(call);
      if (closeOnly) {
        if (req.waitNewEvent) await engine.waitForEvents(exec, from, true, onCancel);
        if (exec.status === Status.Running) return { history: { events: [] }, nextPageToken: pageToken.encode({ r: exec.runId, n: from }) };
        return { history: { events: [exec.history[exec.history.length - 1]] } };
      }
      if (req.waitNewEvent && exec.nextEventId <= from && exec.status === Status.Running) {
        await engine.waitForEvents(exec, from, false, onCancel);
      }
      const size = req.maximumPageSize > 0 ? req.maximumPageSize : 1000;
      const events = exec.history.slice(from - 1, from - 1 + size);
      const next = from + events.length;
      const more = next < exec.nextEventId || (req.waitNewEvent && exec.status === Status.Running);
      return { history: { events }, nextPageToken: more ? pageToken.encode({ r: exec.runId, n: next }) : undefined };
    },
    async GetWorkflowExecutionHistoryReverse(req) {
      const exec = engine.getExecution(nsOf(req), req.execution?.workflowId, req.execution?.runId);
      const tok = pageToken.decode<{ n: number }>(req.nextPageToken);
      const end = tok?.n ?? exec.history.length;
      const size = req.maximumPageSize > 0 ? req.maximumPageSize : 1000;
      const start = Math.max(0, end - size);
      const events = exec.history.slice(start, end).reverse();
      return { history: { events }, nextPageToken: start > 0 ? pageToken.encode({ n: start }) : undefined };
    },
    async PollWorkflowTaskQueue(req, call) {
      const { onCancel, isCancelled } = onCancelOf(call);
      return engine.pollWorkflowTask(nsOf(req), req.taskQueue?.name ?? '', req.identity ?? '', onCancel, isCancelled);
    },
    async RespondWorkflowTaskCompleted(req) {
      return engine.completeWorkflowTask(req);
    },
    async RespondWorkflowTaskFailed(req) {
      engine.failWorkflowTask(req);
      return {};
    },
    async PollActivityTaskQueue(req, call) {
      const { onCancel, isCancelled } = onCancelOf(call);
      return engine.pollActivityTask(nsOf(req), req.taskQueue?.name ?? '', req.identity ?? '', onCancel, isCancelled);
    },
    async RecordActivityTaskHeartbeat(req) {
      return engine.heartbeatActivity(req, false);
    },
    async RecordActivityTaskHeartbeatById(req) {
      return engine.heartbeatActivity(req, true);
    },
    async RespondActivityTaskCompleted(req) {
      engine.completeActivity(req, false);
      return {};
    },
    async RespondActivityTaskCompletedById(req) {
      engine.completeActivity(req, true);
      return {};
    },
    async RespondActivityTaskFailed(req) {
      engine.failActivity(req, false);
      return {};
    },
    async RespondActivityTaskFailedById(req) {
      engine.failActivity(req, true);
      return {};
    },
    async RespondActivityTaskCanceled(req) {
      engine.cancelActivity(req, false);
      return {};
    },
    async RespondActivityTaskCanceledById(req) {
      engine.cancelActivity(req, true);
      return {};
    },
    async RespondQueryTaskCompleted(req) {
      engine.respondQuery(req);
      return {};
    },
    async ResetStickyTaskQueue(req) {
      const exec = engine.getExecution(nsOf(req), req.execution?.workflowId, req.execution?.runId);
      engine.clearSticky(exec.namespace, undefined, exec);
      return {};
    },
    async ShutdownWorker(req) {
      if (req.stickyTaskQueue) engine.clearSticky(nsOf(req), req.stickyTaskQueue);
      return {};
    },
    async ListWorkflowExecutions(req) {
      return listExecutions(engine, req, false);
    },
    async ScanWorkflowExecutions(req) {
      return listExecutions(engine, req, false);
    },
    async CountWorkflowExecutions(req) {
      return { count: (listExecutions(engine, { ...req, pageSize: Number.MAX_SAFE_INTEGER }, true).executions as unknown[]).length };
    },
    async DescribeTaskQueue() {
      return { pollers: [] };
    },
  };
}

function listExecutions(engine: Engine, req: any, all: boolean): { executions: unknown[]; nextPageToken?: Buffer } {
  const ns = req.namespace || 'default';
  engine.namespace(ns);
  let q;
  try {
    q = parseVisibilityQuery(req.query ?? '');
  } catch (err) {
    if (err instanceof VisibilityQueryError) throw new ServiceError(Code.INVALID_ARGUMENT, err.message);
    throw err;
  }
  const rows: Array<{ rec: VisibilityRecord; exec: Execution }> = [];
  for (const e of engine.allExecutions()) {
    if (e.namespace !== ns) continue;
    const rec = visibilityRecord(e);
    if (matchesVisibilityQuery(q, rec)) rows.push({ rec, exec: e });
  }
  if (all) return { executions: rows };
  const cmp = compareForOrder(q);
  rows.sort((a, b) => cmp(a.rec, b.rec) || (a.exec.runId < b.exec.runId ? -1 : 1));
  const offset = pageToken.decode<number>(req.nextPageToken) ?? 0;
  const size = req.pageSize > 0 ? req.pageSize : 1000;
  const page = rows.slice(offset, offset + size);
  return {
    executions: page.map((r) => executionInfo(r.exec)),
    nextPageToken: offset + size < rows.length ? pageToken.encode(offset + size) : undefined,
  };
}

/** TestService handlers (time skipping), compatible with @temporalio/testing. */
export function testServiceHandlers(engine: Engine): Handlers {
  const sleepUntil = (at: number) =>
    new Promise<void>((resolve) => {
      if (at <= engine.clock.now()) return resolve();
      engine.clock.schedule(at, resolve);
      engine.scheduleIdleCheck();
    });
  return {
    async LockTimeSkipping() {
      engine.timeSkippingLocks++;
      return {};
    },
    async UnlockTimeSkipping() {
      if (engine.timeSkippingLocks <= 0) throw new ServiceError(Code.FAILED_PRECONDITION, 'Time skipping is not locked');
      engine.timeSkippingLocks--;
      engine.scheduleIdleCheck();
      return {};
    },
    async UnlockTimeSkippingWithSleep(req) {
      const at = engine.clock.now() + (toMs(req.duration) ?? 0);
      engine.timeSkippingLocks--;
      try {
        await sleepUntil(at);
      } finally {
        engine.timeSkippingLocks++;
      }
      return {};
    },
    async Sleep(req) {
      await sleepUntil(engine.clock.now() + (toMs(req.duration) ?? 0));
      return {};
    },
    async SleepUntil(req) {
      await sleepUntil(toMs(req.timestamp) ?? 0);
      return {};
    },
    async GetCurrentTime() {
      return { time: fromMs(engine.clock.now()) };
    },
  };
}

/**
 * Builds the grpc-js implementation object for a service: known handlers wrapped with error
 * mapping and commit-before-reply; every other method answers UNIMPLEMENTED naming itself.
 */
export function buildImplementation(
  serviceName: string,
  handlers: Handlers,
  afterEach: (method: string) => Promise<void>,
  log: (msg: string, fields: Record<string, unknown>) => void,
): { definition: grpc.ServiceDefinition; implementation: grpc.UntypedServiceImplementation } {
  const { definition, methods } = serviceDefinition(serviceName);
  const implementation: grpc.UntypedServiceImplementation = {};
  for (const m of methods) {
    const h = handlers[m];
    implementation[m] = (call: grpc.ServerUnaryCall<any, any>, callback: grpc.sendUnaryData<any>) => {
      if (!h) {
        callback({ code: Code.UNIMPLEMENTED, details: `${serviceName}/${m} is not implemented by the dev server` });
        return;
      }
      Promise.resolve()
        .then(() => h(call.request ?? {}, call))
        .then(
          async (res) => {
            await afterEach(m);
            callback(null, res ?? {});
          },
          async (err) => {
            if (!(err instanceof ServiceError)) log('unexpected error', { method: m, err: String(err?.stack ?? err) });
            await afterEach(m).catch(() => undefined);
            callback(toGrpcError(err));
          },
        )
        .catch((err) => callback(toGrpcError(err)));
    };
  }
  return { definition, implementation };
}
