/**
 * Visibility over the in-memory executions: ListWorkflowExecutions / ScanWorkflowExecutions /
 * CountWorkflowExecutions with the list filter of `visibility/query.ts`, and the
 * WorkflowExecutionInfo that Describe and List return (temporal.api.workflow.v1).
 */
import { status as Code } from '@grpc/grpc-js';
import type { Engine } from '../engine';
import { fromMs } from '../proto';
import { Payload, Plain, WorkflowExecutionStatus } from '../protoTypes';
import { temporal } from '@temporalio/proto';
import { Execution, ServiceError } from '../types';
import {
  compareForOrder,
  matchesVisibilityQuery,
  parseVisibilityQuery,
  VisibilityQueryError,
  VisibilityRecord,
  VisibilityStatus,
} from '../visibility/query';
import { pageToken } from './common';
import type { ScheduleState } from '../schedules';

/** temporal.api.workflow.v1.WorkflowExecutionInfo. */
type WorkflowExecutionInfo = Plain<temporal.api.workflow.v1.IWorkflowExecutionInfo>;
/** The fields of ListWorkflowExecutionsRequest / ScanWorkflowExecutionsRequest / CountWorkflowExecutionsRequest read here. */
interface ListRequest {
  namespace?: string | null;
  query?: string | null;
  pageSize?: number | null;
  nextPageToken?: Uint8Array | null;
}

/** List-filter names of temporal.api.enums.v1.WorkflowExecutionStatus. */
export const STATUS_NAMES: Record<number, VisibilityStatus> = {
  [WorkflowExecutionStatus.WORKFLOW_EXECUTION_STATUS_RUNNING]: 'Running',
  [WorkflowExecutionStatus.WORKFLOW_EXECUTION_STATUS_COMPLETED]: 'Completed',
  [WorkflowExecutionStatus.WORKFLOW_EXECUTION_STATUS_FAILED]: 'Failed',
  [WorkflowExecutionStatus.WORKFLOW_EXECUTION_STATUS_CANCELED]: 'Canceled',
  [WorkflowExecutionStatus.WORKFLOW_EXECUTION_STATUS_TERMINATED]: 'Terminated',
  [WorkflowExecutionStatus.WORKFLOW_EXECUTION_STATUS_CONTINUED_AS_NEW]: 'ContinuedAsNew',
  [WorkflowExecutionStatus.WORKFLOW_EXECUTION_STATUS_TIMED_OUT]: 'TimedOut',
};

/** Decodes a search-attribute payload into a visibility value (Keyword, Int, Datetime, ...). */
export function decodeSearchAttribute(p: Payload | null | undefined): unknown {
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

/** The visibility row of a run, with its search attributes decoded. */
function visibilityRecord(e: Execution): VisibilityRecord {
  const sa: Record<string, unknown> = {};
  for (const [k, p] of Object.entries(e.searchAttributes)) sa[k] = decodeSearchAttribute(p);
  if (e.buildIds?.length) sa.BuildIds = e.buildIds;
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

/**
 * A schedule as the real server's visibility holds it (a schedule is a scheduler workflow there):
 * `TemporalNamespaceDivision = 'TemporalScheduler'`, `TemporalSchedulePaused`, `ScheduleId`
 * and the schedule's own search attributes, status Running. ListSchedules' `query` and the Web
 * UI's schedule count (`TemporalNamespaceDivision="TemporalScheduler"`) filter these records.
 */
export function scheduleVisibilityRecord(s: ScheduleState): VisibilityRecord {
  const sa: Record<string, unknown> = {};
  for (const [k, p] of Object.entries(s.searchAttributes ?? {})) sa[k] = decodeSearchAttribute(p);
  sa.TemporalNamespaceDivision = 'TemporalScheduler';
  sa.TemporalSchedulePaused = !!s.schedule.state?.paused;
  sa.ScheduleId = s.scheduleId;
  return {
    namespace: s.namespace,
    workflowId: `temporal-sys-scheduler:${s.scheduleId}`,
    runId: '',
    workflowType: 'temporal-sys-scheduler-workflow',
    taskQueue: 'temporal-sys-per-ns-tq',
    status: 'Running',
    startTime: new Date(s.createMs),
    executionTime: new Date(s.createMs),
    closeTime: null,
    searchAttributes: sa,
  };
}

/** A KeywordList search attribute payload (json/plain with its type in the metadata). */
function keywordList(values: string[]): Payload {
  return { metadata: { encoding: Buffer.from('json/plain'), type: Buffer.from('KeywordList') }, data: Buffer.from(JSON.stringify(values)) };
}

/** WorkflowExecutionInfo as Describe/List return it. */
export function executionInfo(e: Execution): WorkflowExecutionInfo {
  return {
    execution: { workflowId: e.workflowId, runId: e.runId },
    type: { name: e.workflowType },
    startTime: fromMs(e.startTime),
    closeTime: e.closeTime !== null ? fromMs(e.closeTime) : undefined,
    status: e.status,
    historyLength: e.nextEventId - 1,
    // WorkflowExecutionInfo.history_size_bytes: the encoded events (the Web UI's "History Size (Bytes)").
    historySizeBytes: e.historySizeBytes ?? 0,
    parentNamespaceId: e.parent ? e.parent.namespace : undefined,
    parentExecution: e.parent ? { workflowId: e.parent.workflowId, runId: e.parent.runId } : undefined,
    executionTime: fromMs(e.executionTime),
    memo: { fields: e.memo },
    searchAttributes: { indexedFields: e.buildIds?.length ? { ...e.searchAttributes, BuildIds: keywordList(e.buildIds) } : e.searchAttributes },
    // The stamp of the worker that completed the last workflow task (buildIdBasedVersioning).
    mostRecentWorkerVersionStamp: e.workerStamp ?? undefined,
    taskQueue: e.taskQueue,
    stateTransitionCount: e.nextEventId,
    // A top-level run is its own root (WorkflowExecutionInfo.root_execution).
    rootExecution: e.startAttrs.rootWorkflowExecution ?? { workflowId: e.workflowId, runId: e.runId },
    firstRunId: e.firstRunId,
    executionDuration: e.closeTime !== null ? fromMs(e.closeTime - e.startTime) : undefined,
    // WorkflowExecutionInfo.priority: the run's own Priority (the Web UI shows it on the workflow).
    priority: e.startAttrs.priority ?? undefined,
  };
}

/**
 * ListWorkflowExecutions / ScanWorkflowExecutions (one page, ordered by the query's ORDER BY, then
 * run id) or, with `all`, every matching execution unpaged for CountWorkflowExecutions.
 * @throws ServiceError INVALID_ARGUMENT naming the query error; NOT_FOUND for an unknown namespace.
 */
export function listExecutions(engine: Engine, req: ListRequest, all: boolean): { executions: unknown[]; nextPageToken?: Buffer } {
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
  const size = req.pageSize && req.pageSize > 0 ? req.pageSize : 1000;
  const page = rows.slice(offset, offset + size);
  return {
    executions: page.map((r) => executionInfo(r.exec)),
    nextPageToken: offset + size < rows.length ? pageToken.encode(offset + size) : undefined,
  };
}
