/**
 * RespondWorkflowTaskCompleted: validates the commands, writes WorkflowTaskCompleted and one event
 * group per command (temporal.api.command.v1), then the events held during the task; eager
 * activity dispatch and the sticky fast path (devserver/README.md "Events during a workflow task").
 */
import { status as Code } from '@grpc/grpc-js';
import { fromMs, toMs } from '../proto';
import { EventType as ET, Execution, ServiceError, Status } from '../types';
import { decodeToken, DEFAULT_STICKY_SCHEDULE_TO_START_MS, DEFAULT_WORKFLOW_TASK_TIMEOUT_MS, TQ_NORMAL } from './state';
import { Children } from './children';

const CLOSE_COMMANDS = new Set([4, 5, 7, 10]);
const SUPPORTED_COMMANDS = new Set([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 16]);

/** Rejects a completion before anything is written when a command cannot be applied. */
function validateCommands(commands: any[]): void {
  for (const c of commands) {
    if (!SUPPORTED_COMMANDS.has(c.commandType)) {
      throw new ServiceError(
        Code.UNIMPLEMENTED,
        `command type ${c.commandType} is not implemented by the dev server (updates, Nexus and protocol messages are not supported)`,
      );
    }
    if (c.commandType === 11 && c.startChildWorkflowExecutionCommandAttributes?.cronSchedule) {
      throw new ServiceError(Code.UNIMPLEMENTED, 'cron schedules are not implemented by the dev server');
    }
    if (c.commandType === 1) {
      const a = c.scheduleActivityTaskCommandAttributes ?? {};
      if (!a.activityId || !a.activityType?.name) throw new ServiceError(Code.INVALID_ARGUMENT, 'ActivityId or ActivityType is not set on command.');
      if (!toMs(a.scheduleToCloseTimeout) && !toMs(a.startToCloseTimeout)) {
        throw new ServiceError(Code.INVALID_ARGUMENT, 'A valid StartToClose or ScheduleToCloseTimeout is not set on command.');
      }
    }
  }
}

/** Merges upserted payloads; an empty / null / [] payload removes the key (as the real server). */
function mergePayloadMap(target: Record<string, unknown>, fields: Record<string, any> | undefined): void {
  for (const [k, p] of Object.entries(fields ?? {})) {
    const data = p?.data ? Buffer.from(p.data).toString('utf8') : '';
    if (!data || data === 'null' || data === '[]') delete target[k];
    else target[k] = p;
  }
}

/** Engine layer applying workflow task completions (see `index.ts`). */
export abstract class Commands extends Children {
  /**
   * RespondWorkflowTaskCompleted: writes WorkflowTaskCompleted, one event group per command, then
   * the events held during the task; schedules the next task when new events arrived.
   */
  completeWorkflowTask(req: any): Record<string, unknown> {
    const exec = this.workflowTaskForToken(decodeToken(req.taskToken));
    const wt = exec.wt;
    const commands: any[] = req.commands ?? [];
    validateCommands(commands);
    const closes = commands.some((c) => CLOSE_COMMANDS.has(c.commandType));
    // A close command while new events are waiting is rejected, like the real server
    // (UNHANDLED_COMMAND): the worker must see the new events first.
    if (closes && exec.buffer.length > 0) {
      this.answerAttachedQueries(exec, req.queryResults);
      this.clearTimer(exec, 'wt');
      if (wt.transient) this.writeTransient(exec);
      this.emit(
        exec,
        ET.WorkflowTaskFailed,
        {
          scheduledEventId: wt.scheduledEventId,
          startedEventId: wt.startedEventId,
          cause: 1,
          identity: req.identity ?? '',
        },
        { direct: true },
      );
      wt.state = 'none';
      this.flushBuffer(exec);
      this.scheduleWorkflowTask(exec);
      return {};
    }
    this.clearTimer(exec, 'wt');
    if (wt.transient) this.writeTransient(exec);
    wt.state = 'none';
    const held = exec.buffer;
    exec.buffer = [];
    const completedId = this.emit(exec, ET.WorkflowTaskCompleted, {
      scheduledEventId: wt.scheduledEventId,
      startedEventId: wt.startedEventId,
      identity: req.identity ?? '',
      binaryChecksum: req.binaryChecksum ?? '',
      sdkMetadata: req.sdkMetadata,
      meteringMetadata: req.meteringMetadata,
      workerVersion: req.workerVersionStamp,
    });
    exec.lastCompletedStartedEventId = wt.startedEventId;
    if (req.stickyAttributes?.workerTaskQueue?.name) {
      exec.sticky = {
        queue: req.stickyAttributes.workerTaskQueue.name,
        scheduleToStartMs: toMs(req.stickyAttributes.scheduleToStartTimeout) || DEFAULT_STICKY_SCHEDULE_TO_START_MS,
      };
    } else {
      exec.sticky = null;
    }
    let newTask = false;
    const eager: number[] = [];
    this.eagerActivities = eager;
    try {
      for (const cmd of commands) {
        if (exec.status !== Status.Running) break;
        newTask = this.applyCommand(exec, cmd, completedId) || newTask;
      }
    } catch (err) {
      // Nothing will be returned: activities held for eager dispatch go to their queue.
      for (const id of eager) this.actList(exec.namespace, exec.taskQueue).add({ exec, scheduledEventId: id, attempt: 1 });
      throw err;
    } finally {
      this.eagerActivities = null;
    }
    exec.buffer = held;
    if (exec.status === Status.Running) {
      if (this.flushBuffer(exec)) newTask = true;
    } else {
      exec.buffer = [];
    }
    this.answerAttachedQueries(exec, req.queryResults);
    if (exec.status === Status.Running && (newTask || req.forceCreateNewWorkflowTask)) this.scheduleWorkflowTask(exec);
    // Eager activity dispatch, as the real server does it: activities whose command asked for it
    // (the worker reserved a slot for each) and that run on the workflow's own task queue are
    // started now and returned in this response instead of going through the matching queue.
    const activityTasks: Record<string, unknown>[] = [];
    for (const id of eager) {
      const act = exec.activities[id];
      if (exec.status !== Status.Running || !act || act.state !== 'scheduled') continue;
      activityTasks.push(this.startActivityTask({ exec, scheduledEventId: id, attempt: act.attempt }, req.identity ?? ''));
    }
    const resp: Record<string, unknown> = activityTasks.length ? { activityTasks } : {};
    // Like the real server, hand a task created by this completion straight back to a sticky
    // worker that asked for it, instead of a round trip through its sticky queue.
    if (req.returnNewWorkflowTask && exec.sticky && exec.wt.state === 'scheduled' && exec.wt.sticky && exec.wt.backoffUntil === undefined) {
      resp.workflowTask = this.startWorkflowTask({ kind: 'wt', exec, seq: exec.wt.seq }, req.identity ?? '');
      return resp;
    }
    this.dispatchWaitingQueries(exec);
    this.dirty(exec);
    return resp;
  }

  /** Applies one command; returns true when it produced an event needing a new workflow task. */
  protected applyCommand(exec: Execution, cmd: any, completedId: number): boolean {
    const ns = exec.namespace;
    switch (cmd.commandType) {
      case 1: {
        const a = cmd.scheduleActivityTaskCommandAttributes ?? {};
        this.scheduleActivity(exec, a, completedId);
        return false;
      }
      case 2: {
        const sched = Number(cmd.requestCancelActivityTaskCommandAttributes?.scheduledEventId ?? 0);
        const act = exec.activities[sched];
        if (!act) return false;
        const reqId = this.emit(exec, ET.ActivityTaskCancelRequested, {
          scheduledEventId: sched,
          workflowTaskCompletedEventId: completedId,
        });
        if (act.state !== 'started') {
          this.emit(exec, ET.ActivityTaskCanceled, {
            scheduledEventId: sched,
            latestCancelRequestedEventId: reqId,
            startedEventId: 0,
          });
          this.removeActivity(exec, act);
          return true;
        }
        act.cancelRequested = true;
        act.cancelRequestedEventId = reqId;
        return false;
      }
      case 3: {
        const a = cmd.startTimerCommandAttributes ?? {};
        const ms = toMs(a.startToFireTimeout) ?? 0;
        const id = this.emit(exec, ET.TimerStarted, {
          timerId: a.timerId,
          startToFireTimeout: a.startToFireTimeout ?? fromMs(0),
          workflowTaskCompletedEventId: completedId,
        });
        exec.timers[a.timerId] = { timerId: a.timerId, startedEventId: id, fireAt: this.clock.now() + ms };
        this.armUserTimer(exec, a.timerId);
        return false;
      }
      case 4:
        this.emit(exec, ET.WorkflowExecutionCompleted, {
          result: cmd.completeWorkflowExecutionCommandAttributes?.result,
          workflowTaskCompletedEventId: completedId,
        });
        this.close(exec, Status.Completed, { result: cmd.completeWorkflowExecutionCommandAttributes?.result });
        return false;
      case 5: {
        const failure = cmd.failWorkflowExecutionCommandAttributes?.failure;
        this.failWorkflow(exec, failure, completedId);
        return false;
      }
      case 6: {
        const timerId = cmd.cancelTimerCommandAttributes?.timerId;
        const t = exec.timers[timerId];
        if (!t) return false;
        this.emit(exec, ET.TimerCanceled, {
          timerId,
          startedEventId: t.startedEventId,
          workflowTaskCompletedEventId: completedId,
        });
        delete exec.timers[timerId];
        this.clearTimer(exec, `timer:${timerId}`);
        return false;
      }
      case 7:
        this.emit(exec, ET.WorkflowExecutionCanceled, {
          workflowTaskCompletedEventId: completedId,
          details: cmd.cancelWorkflowExecutionCommandAttributes?.details,
        });
        this.close(exec, Status.Canceled, { details: cmd.cancelWorkflowExecutionCommandAttributes?.details });
        return false;
      case 8: {
        const a = cmd.requestCancelExternalWorkflowExecutionCommandAttributes ?? {};
        const targetNs = a.namespace || ns;
        const initiated = this.emit(exec, ET.RequestCancelExternalWorkflowExecutionInitiated, {
          workflowTaskCompletedEventId: completedId,
          namespace: targetNs,
          workflowExecution: { workflowId: a.workflowId, runId: a.runId },
          control: a.control,
          childWorkflowOnly: a.childWorkflowOnly,
          reason: a.reason,
        });
        this.defer(() => this.deliverExternalCancel(exec, initiated, targetNs, a));
        return false;
      }
      case 9: {
        const a = cmd.recordMarkerCommandAttributes ?? {};
        this.emit(exec, ET.MarkerRecorded, {
          markerName: a.markerName,
          details: a.details,
          workflowTaskCompletedEventId: completedId,
          header: a.header,
          failure: a.failure,
        });
        return false;
      }
      case 10:
        this.continueAsNew(exec, cmd.continueAsNewWorkflowExecutionCommandAttributes ?? {}, completedId);
        return false;
      case 11: {
        const a = cmd.startChildWorkflowExecutionCommandAttributes ?? {};
        const targetNs = a.namespace || ns;
        const attrs = {
          namespace: targetNs,
          workflowId: a.workflowId,
          workflowType: a.workflowType,
          taskQueue: a.taskQueue?.name ? a.taskQueue : { name: exec.taskQueue, kind: TQ_NORMAL },
          input: a.input,
          workflowExecutionTimeout: a.workflowExecutionTimeout,
          workflowRunTimeout: a.workflowRunTimeout,
          workflowTaskTimeout: a.workflowTaskTimeout ?? fromMs(DEFAULT_WORKFLOW_TASK_TIMEOUT_MS),
          parentClosePolicy: a.parentClosePolicy || 1,
          control: a.control,
          workflowTaskCompletedEventId: completedId,
          workflowIdReusePolicy: a.workflowIdReusePolicy,
          retryPolicy: a.retryPolicy,
          cronSchedule: a.cronSchedule,
          header: a.header,
          memo: a.memo,
          searchAttributes: a.searchAttributes,
        };
        const initiated = this.emit(exec, ET.StartChildWorkflowExecutionInitiated, attrs);
        exec.children[initiated] = {
          initiatedEventId: initiated,
          namespace: targetNs,
          workflowId: a.workflowId,
          workflowType: a.workflowType?.name ?? '',
          parentClosePolicy: attrs.parentClosePolicy,
        };
        this.defer(() => this.startChild(exec, initiated, attrs));
        return false;
      }
      case 12: {
        const a = cmd.signalExternalWorkflowExecutionCommandAttributes ?? {};
        const targetNs = a.namespace || ns;
        const initiated = this.emit(exec, ET.SignalExternalWorkflowExecutionInitiated, {
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
        return false;
      }
      case 13: {
        const sa = cmd.upsertWorkflowSearchAttributesCommandAttributes?.searchAttributes ?? {};
        this.emit(exec, ET.UpsertWorkflowSearchAttributes, {
          workflowTaskCompletedEventId: completedId,
          searchAttributes: sa,
        });
        mergePayloadMap(exec.searchAttributes, sa.indexedFields);
        return false;
      }
      case 16: {
        const memo = cmd.modifyWorkflowPropertiesCommandAttributes?.upsertedMemo ?? {};
        this.emit(exec, ET.WorkflowPropertiesModified, { workflowTaskCompletedEventId: completedId, upsertedMemo: memo });
        mergePayloadMap(exec.memo, memo.fields);
        return false;
      }
      default:
        throw new ServiceError(
          Code.UNIMPLEMENTED,
          `command type ${cmd.commandType} is not implemented by the dev server (updates, Nexus and protocol messages are not supported)`,
        );
    }
  }
}
