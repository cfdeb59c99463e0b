/**
 * Child workflows and cross-workflow requests: starting children, reporting their close to the
 * parent, parent close policies, and signals / cancel requests to external workflows
 * (devserver/README.md "Workflows").
 */
import { status as Code } from '@grpc/grpc-js';
import { EventType as ET, Execution, ParentRef, RetryState, ServiceError, Status } from '../types';
import { CloseOutcome, execKey, wfKey } from './state';
import { Signals } from './signals';

/** Engine layer for children and external workflows (see `index.ts`). */
export abstract class Children extends Signals {
  protected override applyParentClosePolicy(exec: Execution, children: Execution['children'][string][]): void {
    for (const c of children) {
      // The current run must belong to the child's run chain (retries / continue-as-new).
      const child = this.current.get(wfKey(c.namespace, c.workflowId));
      const startedRun = c.runId ? this.executions.get(execKey(c.namespace, c.workflowId, c.runId)) : undefined;
      if (!child || child.status !== Status.Running) continue;
      if (startedRun && startedRun.firstRunId !== child.firstRunId) continue;
      if (c.parentClosePolicy === 1) this.terminate(child, 'by parent close policy', undefined, 'devserver');
      else if (c.parentClosePolicy === 3) this.requestCancel(child, 'by parent close policy', 'devserver', { workflowId: exec.workflowId, runId: exec.runId });
    }
  }

  protected override reportToParent(child: Execution, p: ParentRef, status: number, outcome: CloseOutcome): void {
    const parent = this.executions.get(execKey(p.namespace, p.workflowId, p.runId));
    if (!parent || parent.status !== Status.Running) return;
    const c = parent.children[p.initiatedEventId];
    if (!c) return;
    const base = {
      namespace: child.namespace,
      workflowExecution: { workflowId: child.workflowId, runId: child.runId },
      workflowType: { name: child.workflowType },
      initiatedEventId: p.initiatedEventId,
      startedEventId: c.startedEventId ?? 0,
    };
    switch (status) {
      case Status.Completed:
        this.emit(parent, ET.ChildWorkflowExecutionCompleted, { ...base, result: outcome.result });
        break;
      case Status.Failed:
        this.emit(parent, ET.ChildWorkflowExecutionFailed, { ...base, failure: outcome.failure, retryState: outcome.retryState });
        break;
      case Status.Canceled:
        this.emit(parent, ET.ChildWorkflowExecutionCanceled, { ...base, details: outcome.details });
        break;
      case Status.Terminated:
        this.emit(parent, ET.ChildWorkflowExecutionTerminated, base);
        break;
      case Status.TimedOut:
        this.emit(parent, ET.ChildWorkflowExecutionTimedOut, { ...base, retryState: RetryState.Timeout });
        break;
      default:
        return;
    }
    delete parent.children[p.initiatedEventId];
    this.scheduleWorkflowTask(parent);
  }

  protected startChild(parent: Execution, initiatedId: number, attrs: any): void {
    if (parent.status !== Status.Running || !parent.children[initiatedId]) return;
    try {
      const { exec } = this.startWorkflow(
        {
          namespace: attrs.namespace,
          workflowId: attrs.workflowId,
          workflowType: attrs.workflowType,
          taskQueue: attrs.taskQueue,
          input: attrs.input,
          workflowExecutionTimeout: attrs.workflowExecutionTimeout,
          workflowRunTimeout: attrs.workflowRunTimeout,
          workflowTaskTimeout: attrs.workflowTaskTimeout,
          workflowIdReusePolicy: attrs.workflowIdReusePolicy,
          retryPolicy: attrs.retryPolicy,
          cronSchedule: attrs.cronSchedule,
          header: attrs.header,
          memo: attrs.memo,
          searchAttributes: attrs.searchAttributes,
          identity: 'devserver',
        },
        {
          parent: { namespace: parent.namespace, workflowId: parent.workflowId, runId: parent.runId, initiatedEventId: initiatedId },
          root: parent.startAttrs.rootWorkflowExecution,
        },
      );
      parent.children[initiatedId].runId = exec.runId;
      this.emit(parent, ET.ChildWorkflowExecutionStarted, {
        namespace: attrs.namespace,
        initiatedEventId: initiatedId,
        workflowExecution: { workflowId: exec.workflowId, runId: exec.runId },
        workflowType: attrs.workflowType,
        header: attrs.header,
      });
    } catch (err) {
      const cause = err instanceof ServiceError && err.code === Code.ALREADY_EXISTS ? 1 : 2;
      this.emit(parent, ET.StartChildWorkflowExecutionFailed, {
        namespace: attrs.namespace,
        workflowId: attrs.workflowId,
        workflowType: attrs.workflowType,
        cause,
        control: attrs.control,
        initiatedEventId: initiatedId,
        workflowTaskCompletedEventId: attrs.workflowTaskCompletedEventId,
      });
      delete parent.children[initiatedId];
    }
    this.scheduleWorkflowTask(parent);
  }

  protected deliverExternalSignal(exec: Execution, initiatedId: number, ns: string, a: any): void {
    if (exec.status !== Status.Running) return;
    const target = this.tryGet(ns, a.execution?.workflowId, a.execution?.runId);
    if (!target || target.status !== Status.Running) {
      this.emit(exec, ET.SignalExternalWorkflowExecutionFailed, {
        cause: 1,
        workflowTaskCompletedEventId: 0,
        namespace: ns,
        workflowExecution: a.execution,
        initiatedEventId: initiatedId,
        control: a.control,
      });
    } else {
      this.signal(target, {
        signalName: a.signalName,
        input: a.input,
        identity: 'devserver',
        header: a.header,
        externalWorkflowExecution: { workflowId: exec.workflowId, runId: exec.runId },
      });
      this.emit(exec, ET.ExternalWorkflowExecutionSignaled, {
        initiatedEventId: initiatedId,
        namespace: ns,
        workflowExecution: { workflowId: target.workflowId, runId: target.runId },
        control: a.control,
      });
    }
    this.scheduleWorkflowTask(exec);
  }

  protected deliverExternalCancel(exec: Execution, initiatedId: number, ns: string, a: any): void {
    if (exec.status !== Status.Running) return;
    const target = this.tryGet(ns, a.workflowId, a.runId);
    if (!target || target.status !== Status.Running) {
      this.emit(exec, ET.RequestCancelExternalWorkflowExecutionFailed, {
        cause: 1,
        workflowTaskCompletedEventId: 0,
        namespace: ns,
        workflowExecution: { workflowId: a.workflowId, runId: a.runId },
        initiatedEventId: initiatedId,
        control: a.control,
      });
    } else {
      this.requestCancel(target, a.reason ?? '', 'devserver', { workflowId: exec.workflowId, runId: exec.runId }, initiatedId);
      this.emit(exec, ET.ExternalWorkflowExecutionCancelRequested, {
        initiatedEventId: initiatedId,
        namespace: ns,
        workflowExecution: { workflowId: target.workflowId, runId: target.runId },
      });
    }
    this.scheduleWorkflowTask(exec);
  }
}
