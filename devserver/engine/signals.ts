/**
 * Signals and cancellation requests from clients (SignalWorkflowExecution,
 * SignalWithStartWorkflowExecution, RequestCancelWorkflowExecution).
 */
import { status as Code } from '@grpc/grpc-js';
import { EventType as ET, Execution, ServiceError, Status } from '../types';
import { wfKey } from './state';
import { Executions } from './executions';

/** Engine layer for signals and cancel requests (see `index.ts`). */
export abstract class Signals extends Executions {
  /** SignalWorkflowExecution (deduplicated by requestId). */
  signal(exec: Execution, s: { signalName: string; input?: unknown; identity?: string; header?: unknown; requestId?: string; externalWorkflowExecution?: unknown }): void {
    if (exec.status !== Status.Running) throw new ServiceError(Code.NOT_FOUND, 'workflow execution already completed');
    if (s.requestId) {
      if (exec.signalRequestIds.includes(s.requestId)) return;
      exec.signalRequestIds.push(s.requestId);
      if (exec.signalRequestIds.length > 100) exec.signalRequestIds.shift();
    }
    this.emit(exec, ET.WorkflowExecutionSignaled, {
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
  signalWithStart(req: any): { exec: Execution; started: boolean } {
    const ns = req.namespace || 'default';
    const cur = this.current.get(wfKey(ns, req.workflowId));
    if (cur && cur.status === Status.Running && req.workflowIdConflictPolicy !== 3) {
      this.signal(cur, { signalName: req.signalName, input: req.signalInput, identity: req.identity, header: req.header, requestId: req.requestId });
      return { exec: cur, started: false };
    }
    return this.startWorkflow({ ...req, workflowIdConflictPolicy: req.workflowIdConflictPolicy === 3 ? 3 : 1 }, {
      signal: { signalName: req.signalName, input: req.signalInput, identity: req.identity ?? '', header: req.header },
    });
  }

  /** RequestCancelWorkflowExecution: WorkflowExecutionCancelRequested + workflow task. */
  requestCancel(exec: Execution, reason: string, identity: string, external?: { workflowId: string; runId: string }, initiatedId?: number): void {
    if (exec.status !== Status.Running) throw new ServiceError(Code.NOT_FOUND, 'workflow execution already completed');
    if (exec.cancelRequested) return;
    exec.cancelRequested = true;
    this.emit(exec, ET.WorkflowExecutionCancelRequested, {
      cause: reason,
      identity,
      externalWorkflowExecution: external,
      externalInitiatedEventId: initiatedId,
    });
    this.scheduleWorkflowTask(exec);
  }
}
