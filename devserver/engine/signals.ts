/**
 * Signals and cancellation requests from clients (SignalWorkflowExecution,
 * SignalWithStartWorkflowExecution, RequestCancelWorkflowExecution).
 */
import { status as Code } from '@grpc/grpc-js';
import { EventAttrs, EventType, WorkflowExecutionRef, WorkflowIdConflictPolicy, RpcRequest } from '../protoTypes';
import { Execution, ServiceError, Status } from '../types';
import { wfKey } from './state';
import { Executions } from './executions';

/** Engine layer for signals and cancel requests (see `index.ts`). */
export abstract class Signals extends Executions {
  /** SignalWorkflowExecution (deduplicated by requestId). */
  signal(exec: Execution, s: EventAttrs<typeof EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED>): void {
    if (exec.status !== Status.Running) throw new ServiceError(Code.NOT_FOUND, 'workflow execution already completed');
    if (s.requestId) {
      if (exec.signalRequestIds.includes(s.requestId)) return;
      exec.signalRequestIds.push(s.requestId);
      if (exec.signalRequestIds.length > 100) exec.signalRequestIds.shift();
    }
    this.emit(exec, EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED, {
      signalName: s.signalName,
      input: s.input,
      identity: s.identity ?? '',
      header: s.header,
      externalWorkflowExecution: s.externalWorkflowExecution,
      requestId: s.requestId,
    });
    this.scheduleWorkflowTask(exec);
  }

  /** SignalWithStartWorkflowExecution: signal the running run or start one with the signal. */
  signalWithStart(req: RpcRequest<'signalWithStartWorkflowExecution'>): { exec: Execution; started: boolean } {
    const ns = req.namespace || 'default';
    const terminateExisting = WorkflowIdConflictPolicy.WORKFLOW_ID_CONFLICT_POLICY_TERMINATE_EXISTING;
    const cur = this.current.get(wfKey(ns, req.workflowId ?? ''));
    if (cur && cur.status === Status.Running && req.workflowIdConflictPolicy !== terminateExisting) {
      this.signal(cur, { signalName: req.signalName, input: req.signalInput, identity: req.identity, header: req.header, requestId: req.requestId });
      // A signal-with-start to a run waiting out its start delay ends the delay (the request's
      // workflowStartDelay docs; a cron or retry backoff is kept, as signalwithstart does).
      if (!cur.startAttrs.initiator && !cur.startAttrs.cronSchedule) this.endFirstTaskBackoff(cur);
      return { exec: cur, started: false };
    }
    const conflict = req.workflowIdConflictPolicy === terminateExisting ? terminateExisting : WorkflowIdConflictPolicy.WORKFLOW_ID_CONFLICT_POLICY_FAIL;
    return this.startWorkflow({ ...req, workflowIdConflictPolicy: conflict }, {
      signal: { signalName: req.signalName, input: req.signalInput, identity: req.identity ?? '', header: req.header },
    });
  }

  /** RequestCancelWorkflowExecution: WorkflowExecutionCancelRequested + workflow task. */
  requestCancel(exec: Execution, reason: string, identity: string, external?: WorkflowExecutionRef, initiatedId?: number): void {
    if (exec.status !== Status.Running) throw new ServiceError(Code.NOT_FOUND, 'workflow execution already completed');
    if (exec.cancelRequested) return;
    exec.cancelRequested = true;
    this.emit(exec, EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CANCEL_REQUESTED, {
      cause: reason,
      identity,
      externalWorkflowExecution: external,
      externalInitiatedEventId: initiatedId,
    });
    this.scheduleWorkflowTask(exec);
  }
}
