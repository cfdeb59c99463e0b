/**
 * Workflow queries (QueryWorkflow / RespondQueryTaskCompleted): a legacy query task when no
 * workflow task is pending, attached to the pending workflow task otherwise
 * (devserver/README.md "Queries").
 */
import crypto from 'node:crypto';
import { status as Code } from '@grpc/grpc-js';
import { fromMs } from '../proto';
import { Execution, ServiceError, Status } from '../types';
import {
  PollWorkflowTaskQueueResponse,
  QueryResultType,
  WorkflowQuery,
  WorkflowQueryResult,
  RpcRequest,
} from '../protoTypes';
import { decodeToken, encodeToken, PendingQuery, QUERY_TIMEOUT_MS, QueryAnswer, TQ_NORMAL } from './state';
import { TimeSkipping } from './timeSkipping';

/** Engine layer for queries (see `index.ts`). */
export abstract class Queries extends TimeSkipping {
  /**
   * QueryWorkflow: dispatched as a query task when no workflow task is in flight, attached to the
   * next workflow task when one is scheduled, or held until the in-flight task completes.
   */
  query(exec: Execution, query: WorkflowQuery): Promise<QueryAnswer> {
    // A run still waiting out its start delay or first-task backoff has no workflow task the query
    // could ride on: the real server answers at once (history queryworkflow/api.go,
    // ErrWorkflowTaskNotScheduled) instead of buffering a query that would time out.
    if (exec.wt.seq === 0) {
      return Promise.reject(
        new ServiceError(Code.FAILED_PRECONDITION, 'Workflow task is not scheduled yet.', {
          typeName: 'temporal.api.errordetails.v1.WorkflowNotReadyFailure',
          value: {},
        }),
      );
    }
    return new Promise((resolve, reject) => {
      const id = crypto.randomUUID();
      const timer = setTimeout(() => {
        this.queries.delete(id);
        reject(new ServiceError(Code.DEADLINE_EXCEEDED, 'query timed out: no worker answered'));
      }, QUERY_TIMEOUT_MS);
      const q: PendingQuery = {
        id,
        exec,
        query,
        dispatched: 'no',
        resolve: (r) => {
          clearTimeout(timer);
          this.queries.delete(id);
          resolve(r);
        },
      };
      this.queries.set(id, q);
      this.dispatchWaitingQueries(exec);
    });
  }

  protected dispatchWaitingQueries(exec: Execution): void {
    if (exec.wt.state !== 'none' && exec.status === Status.Running) return; // attached to / waits for the task
    // Straight to a worker only once a workflow task has started (the worker knows the run); until
    // then the query waits for the first task, as the real server buffers it.
    if (exec.lastCompletedStartedEventId === 0 && exec.wt.startedEventId === 0) return;
    for (const q of this.queries.values()) {
      if (q.exec !== exec || q.dispatched !== 'no') continue;
      q.dispatched = 'legacy';
      const queue = exec.sticky && exec.status === Status.Running ? exec.sticky.queue : exec.taskQueue;
      this.wfList(exec.namespace, queue).add({ kind: 'query', exec, queryId: q.id });
    }
  }

  protected legacyQueryTask(exec: Execution, queryId: string): PollWorkflowTaskQueueResponse {
    const q = this.queries.get(queryId)!;
    const sticky = !!exec.sticky && exec.status === Status.Running;
    const events = sticky ? exec.history.slice(exec.lastCompletedStartedEventId) : exec.history.slice();
    return {
      taskToken: encodeToken({ k: 'q', id: queryId }),
      workflowExecution: { workflowId: exec.workflowId, runId: exec.runId },
      workflowType: { name: exec.workflowType },
      previousStartedEventId: exec.lastCompletedStartedEventId,
      startedEventId: exec.lastCompletedStartedEventId,
      attempt: 1,
      history: { events },
      query: q.query,
      workflowExecutionTaskQueue: { name: exec.taskQueue, kind: TQ_NORMAL },
      scheduledTime: fromMs(this.clock.now()),
      startedTime: fromMs(this.clock.now()),
    };
  }

  /** RespondQueryTaskCompleted (legacy query tasks). */
  respondQuery(req: RpcRequest<'respondQueryTaskCompleted'>): void {
    const t = decodeToken(req.taskToken);
    if (t.k !== 'q') throw new ServiceError(Code.INVALID_ARGUMENT, 'not a query task token');
    const q = this.queries.get(t.id);
    if (!q) throw new ServiceError(Code.NOT_FOUND, 'query not found (timed out?)');
    if (req.completedType === QueryResultType.QUERY_RESULT_TYPE_ANSWERED) q.resolve({ answer: req.queryResult });
    else q.resolve({ error: req.errorMessage || req.failure?.message || 'query failed', failure: req.failure });
  }

  protected answerAttachedQueries(exec: Execution, results: Record<string, WorkflowQueryResult> | null | undefined): void {
    for (const q of [...this.queries.values()]) {
      if (q.exec !== exec || q.dispatched !== 'attached') continue;
      const r = results?.[q.id];
      if (!r) {
        q.dispatched = 'no';
        continue;
      }
      if (r.resultType === QueryResultType.QUERY_RESULT_TYPE_ANSWERED) q.resolve({ answer: r.answer });
      else q.resolve({ error: r.errorMessage || r.failure?.message || 'query failed', failure: r.failure });
    }
  }

  protected releaseAttachedQueries(exec: Execution): void {
    for (const q of this.queries.values()) if (q.exec === exec && q.dispatched === 'attached') q.dispatched = 'no';
  }
}
