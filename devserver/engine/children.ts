/**
 * Child workflows and cross-workflow requests: starting children, reporting their close to the
 * parent, parent close policies, and signals / cancel requests to external workflows
 * (devserver/README.md "Workflows").
 */
import { status as Code } from '@grpc/grpc-js';
import { fromMs } from '../proto';
import {
  CancelExternalWorkflowExecutionFailedCause,
  EventAttrs,
  EventType,
  ParentClosePolicy,
  RetryState,
  SignalExternalWorkflowExecutionFailedCause,
  StartChildWorkflowExecutionFailedCause,
  UserMetadata,
  WorkflowExecutionStatus,
  CommandAttrs,
} from '../protoTypes';
import { Execution, ParentRef, ServiceError, Status } from '../types';
import { CloseOutcome, DEFAULT_WORKFLOW_TASK_TIMEOUT_MS, execKey, TQ_NORMAL, wfKey } from './state';
import { Signals } from './signals';
import { mergePriority } from '../queues';

type StartChildInitiatedAttrs = EventAttrs<typeof EventType.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED>;

/** Engine layer for children and external workflows (see `index.ts`). */
export abstract class Children extends Signals {
  /**
   * StartChildWorkflowExecution command: StartChildWorkflowExecutionInitiated now, the child is
   * started after this completion (ChildWorkflowExecutionStarted or StartChildWorkflowExecutionFailed).
   */
  protected startChildCommand(exec: Execution, a: CommandAttrs<'startChildWorkflowExecutionCommandAttributes'>, completedId: number): void {
    const targetNs = a.namespace || exec.namespace;
    const attrs: StartChildInitiatedAttrs = {
      namespace: targetNs,
      workflowId: a.workflowId,
      workflowType: a.workflowType,
      taskQueue: a.taskQueue?.name ? a.taskQueue : { name: exec.taskQueue, kind: TQ_NORMAL },
      input: a.input,
      workflowExecutionTimeout: a.workflowExecutionTimeout,
      workflowRunTimeout: a.workflowRunTimeout,
      workflowTaskTimeout: a.workflowTaskTimeout ?? fromMs(DEFAULT_WORKFLOW_TASK_TIMEOUT_MS),
      parentClosePolicy: a.parentClosePolicy || ParentClosePolicy.PARENT_CLOSE_POLICY_TERMINATE,
      control: a.control,
      workflowTaskCompletedEventId: completedId,
      workflowIdReusePolicy: a.workflowIdReusePolicy,
      retryPolicy: a.retryPolicy,
      cronSchedule: a.cronSchedule,
      header: a.header,
      memo: a.memo,
      searchAttributes: a.searchAttributes,
      priority: a.priority,
    };
    const userMetadata = this.commandUserMetadata;
    const initiated = this.emit(exec, EventType.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED, attrs);
    exec.children[initiated] = {
      initiatedEventId: initiated,
      namespace: targetNs,
      workflowId: a.workflowId ?? '',
      workflowType: a.workflowType?.name ?? '',
      parentClosePolicy: a.parentClosePolicy || ParentClosePolicy.PARENT_CLOSE_POLICY_TERMINATE,
    };
    this.defer(() => this.startChild(exec, initiated, attrs, userMetadata));
  }

  /** SignalExternalWorkflowExecution command: the Initiated event now, delivery after this completion. */
  protected signalExternalCommand(exec: Execution, a: CommandAttrs<'signalExternalWorkflowExecutionCommandAttributes'>, completedId: number): void {
    const targetNs = a.namespace || exec.namespace;
    const initiated = this.emit(exec, EventType.EVENT_TYPE_SIGNAL_EXTERNAL_WORKFLOW_EXECUTION_INITIATED, {
      workflowTaskCompletedEventId: completedId,
      namespace: targetNs,
      workflowExecution: a.execution,
      signalName: a.signalName,
      input: a.input,
      control: a.control,
      childWorkflowOnly: a.childWorkflowOnly,
      header: a.header,
    });
    this.defer(() => this.deliverExternalSignal(exec, initiated, targetNs, a));
  }

  /** RequestCancelExternalWorkflowExecution command: the Initiated event now, delivery after this completion. */
  protected requestCancelExternalCommand(exec: Execution, a: CommandAttrs<'requestCancelExternalWorkflowExecutionCommandAttributes'>, completedId: number): void {
    const targetNs = a.namespace || exec.namespace;
    const initiated = this.emit(exec, EventType.EVENT_TYPE_REQUEST_CANCEL_EXTERNAL_WORKFLOW_EXECUTION_INITIATED, {
      workflowTaskCompletedEventId: completedId,
      namespace: targetNs,
      workflowExecution: { workflowId: a.workflowId, runId: a.runId },
      control: a.control,
      childWorkflowOnly: a.childWorkflowOnly,
      reason: a.reason,
    });
    this.defer(() => this.deliverExternalCancel(exec, initiated, targetNs, a));
  }

  protected override applyParentClosePolicy(exec: Execution, children: Execution['children'][string][]): void {
    for (const c of children) {
      // The current run must belong to the child's run chain (retries / continue-as-new).
      const child = this.current.get(wfKey(c.namespace, c.workflowId));
      const startedRun = c.runId ? this.executions.get(execKey(c.namespace, c.workflowId, c.runId)) : undefined;
      if (!child || child.status !== Status.Running) continue;
      if (startedRun && startedRun.firstRunId !== child.firstRunId) continue;
      if (c.parentClosePolicy === ParentClosePolicy.PARENT_CLOSE_POLICY_TERMINATE) this.terminate(child, 'by parent close policy', undefined, 'devserver');
      else if (c.parentClosePolicy === ParentClosePolicy.PARENT_CLOSE_POLICY_REQUEST_CANCEL) this.requestCancel(child, 'by parent close policy', 'devserver', { workflowId: exec.workflowId, runId: exec.runId });
    }
  }

  protected override reportToParent(child: Execution, p: ParentRef, status: WorkflowExecutionStatus, outcome: CloseOutcome): void {
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
        this.emit(parent, EventType.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_COMPLETED, { ...base, result: outcome.result });
        break;
      case Status.Failed:
        this.emit(parent, EventType.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_FAILED, { ...base, failure: outcome.failure, retryState: outcome.retryState });
        break;
      case Status.Canceled:
        this.emit(parent, EventType.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_CANCELED, { ...base, details: outcome.details });
        break;
      case Status.Terminated:
        this.emit(parent, EventType.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_TERMINATED, base);
        break;
      case Status.TimedOut:
        this.emit(parent, EventType.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_TIMED_OUT, { ...base, retryState: RetryState.RETRY_STATE_TIMEOUT });
        break;
      default:
        return;
    }
    delete parent.children[p.initiatedEventId];
    this.scheduleWorkflowTask(parent);
  }

  protected startChild(parent: Execution, initiatedId: number, attrs: StartChildInitiatedAttrs, userMetadata?: UserMetadata | null): void {
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
          // The child inherits the parent's priority field by field unless it sets its own.
          priority: mergePriority(parent.startAttrs.priority, attrs.priority),
          // The child's own summary and details (StartChildWorkflowExecution's user metadata).
          userMetadata,
        },
        {
          parent: { namespace: parent.namespace, workflowId: parent.workflowId, runId: parent.runId, initiatedEventId: initiatedId },
          root: parent.startAttrs.rootWorkflowExecution ?? { workflowId: parent.workflowId, runId: parent.runId },
        },
      );
      parent.children[initiatedId].runId = exec.runId;
      this.emit(parent, EventType.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_STARTED, {
        namespace: attrs.namespace,
        initiatedEventId: initiatedId,
        workflowExecution: { workflowId: exec.workflowId, runId: exec.runId },
        workflowType: attrs.workflowType,
        header: attrs.header,
      });
    } catch (err) {
      const cause =
        err instanceof ServiceError && err.code === Code.ALREADY_EXISTS
          ? StartChildWorkflowExecutionFailedCause.START_CHILD_WORKFLOW_EXECUTION_FAILED_CAUSE_WORKFLOW_ALREADY_EXISTS
          : StartChildWorkflowExecutionFailedCause.START_CHILD_WORKFLOW_EXECUTION_FAILED_CAUSE_NAMESPACE_NOT_FOUND;
      this.emit(parent, EventType.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_FAILED, {
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

  protected deliverExternalSignal(exec: Execution, initiatedId: number, ns: string, a: CommandAttrs<'signalExternalWorkflowExecutionCommandAttributes'>): void {
    if (exec.status !== Status.Running) return;
    const target = this.tryGet(ns, a.execution?.workflowId, a.execution?.runId);
    if (!target || target.status !== Status.Running) {
      this.emit(exec, EventType.EVENT_TYPE_SIGNAL_EXTERNAL_WORKFLOW_EXECUTION_FAILED, {
        cause: SignalExternalWorkflowExecutionFailedCause.SIGNAL_EXTERNAL_WORKFLOW_EXECUTION_FAILED_CAUSE_EXTERNAL_WORKFLOW_EXECUTION_NOT_FOUND,
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
      this.emit(exec, EventType.EVENT_TYPE_EXTERNAL_WORKFLOW_EXECUTION_SIGNALED, {
        initiatedEventId: initiatedId,
        namespace: ns,
        workflowExecution: { workflowId: target.workflowId, runId: target.runId },
        control: a.control,
      });
    }
    this.scheduleWorkflowTask(exec);
  }

  protected deliverExternalCancel(exec: Execution, initiatedId: number, ns: string, a: CommandAttrs<'requestCancelExternalWorkflowExecutionCommandAttributes'>): void {
    if (exec.status !== Status.Running) return;
    const target = this.tryGet(ns, a.workflowId, a.runId);
    if (!target || target.status !== Status.Running) {
      this.emit(exec, EventType.EVENT_TYPE_REQUEST_CANCEL_EXTERNAL_WORKFLOW_EXECUTION_FAILED, {
        cause: CancelExternalWorkflowExecutionFailedCause.CANCEL_EXTERNAL_WORKFLOW_EXECUTION_FAILED_CAUSE_EXTERNAL_WORKFLOW_EXECUTION_NOT_FOUND,
        workflowTaskCompletedEventId: 0,
        namespace: ns,
        workflowExecution: { workflowId: a.workflowId, runId: a.runId },
        initiatedEventId: initiatedId,
        control: a.control,
      });
    } else {
      this.requestCancel(target, a.reason ?? '', 'devserver', { workflowId: exec.workflowId, runId: exec.runId }, initiatedId);
      this.emit(exec, EventType.EVENT_TYPE_EXTERNAL_WORKFLOW_EXECUTION_CANCEL_REQUESTED, {
        initiatedEventId: initiatedId,
        namespace: ns,
        workflowExecution: { workflowId: target.workflowId, runId: target.runId },
      });
    }
    this.scheduleWorkflowTask(exec);
  }
}
