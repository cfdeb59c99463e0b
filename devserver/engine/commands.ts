/**
 * RespondWorkflowTaskCompleted: validates the commands, writes WorkflowTaskCompleted and one event
 * group per command (temporal.api.command.v1), then the events held during the task; eager
 * activity dispatch and the sticky fast path (devserver/README.md "Events during a workflow task").
 * Each command's events are written by the layer of its concern (activities, timers, children,
 * executions); this layer dispatches on temporal.api.enums.v1.CommandType.
 */
import { status as Code } from '@grpc/grpc-js';
import { toMs } from '../proto';
import {
  Command,
  CommandType,
  EventType,
  Failure,
  Payload,
  PollActivityTaskQueueResponse,
  RespondWorkflowTaskCompletedResponse,
  WorkflowTaskFailedCause,
  RpcRequest,
} from '../protoTypes';
import { Execution, ServiceError, Status } from '../types';
import { decodeToken, DEFAULT_STICKY_SCHEDULE_TO_START_MS } from './state';
import { Children } from './children';
import { validateCronSchedule } from '../cron';
import { priorityError } from '../queues';
import { applyTypeMap } from '../searchAttributes';
import { oversizedCommand, type SizedMessage } from './blobSize';

/** Commands that close the workflow run. */
const CLOSE_COMMANDS = new Set<CommandType | null | undefined>([
  CommandType.COMMAND_TYPE_COMPLETE_WORKFLOW_EXECUTION,
  CommandType.COMMAND_TYPE_FAIL_WORKFLOW_EXECUTION,
  CommandType.COMMAND_TYPE_CANCEL_WORKFLOW_EXECUTION,
  CommandType.COMMAND_TYPE_CONTINUE_AS_NEW_WORKFLOW_EXECUTION,
]);

/** Commands the dev server applies (protocol messages: engine/updates.ts); Nexus is not among them. */
const SUPPORTED_COMMANDS = new Set<CommandType | null | undefined>([
  CommandType.COMMAND_TYPE_SCHEDULE_ACTIVITY_TASK,
  CommandType.COMMAND_TYPE_REQUEST_CANCEL_ACTIVITY_TASK,
  CommandType.COMMAND_TYPE_START_TIMER,
  CommandType.COMMAND_TYPE_COMPLETE_WORKFLOW_EXECUTION,
  CommandType.COMMAND_TYPE_FAIL_WORKFLOW_EXECUTION,
  CommandType.COMMAND_TYPE_CANCEL_TIMER,
  CommandType.COMMAND_TYPE_CANCEL_WORKFLOW_EXECUTION,
  CommandType.COMMAND_TYPE_REQUEST_CANCEL_EXTERNAL_WORKFLOW_EXECUTION,
  CommandType.COMMAND_TYPE_RECORD_MARKER,
  CommandType.COMMAND_TYPE_CONTINUE_AS_NEW_WORKFLOW_EXECUTION,
  CommandType.COMMAND_TYPE_START_CHILD_WORKFLOW_EXECUTION,
  CommandType.COMMAND_TYPE_SIGNAL_EXTERNAL_WORKFLOW_EXECUTION,
  CommandType.COMMAND_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES,
  CommandType.COMMAND_TYPE_MODIFY_WORKFLOW_PROPERTIES,
  CommandType.COMMAND_TYPE_PROTOCOL_MESSAGE,
]);

/** UNIMPLEMENTED naming the command type number, for commands outside SUPPORTED_COMMANDS. */
function unsupportedCommand(commandType: CommandType | null | undefined): ServiceError {
  return new ServiceError(
    Code.UNIMPLEMENTED,
    `command type ${commandType} is not implemented by the dev server (Nexus is not supported)`,
  );
}

/**
 * Rejects a completion before anything is written when a command cannot be applied.
 * @throws ServiceError UNIMPLEMENTED for unsupported commands; INVALID_ARGUMENT for an invalid child
 * cron schedule, for a ScheduleActivityTask without id, type, or schedule-to-close / start-to-close timeout.
 */
function validateCommands(commands: Command[]): void {
  for (const c of commands) {
    if (!SUPPORTED_COMMANDS.has(c.commandType)) throw unsupportedCommand(c.commandType);
    const childCron = c.commandType === CommandType.COMMAND_TYPE_START_CHILD_WORKFLOW_EXECUTION ? c.startChildWorkflowExecutionCommandAttributes?.cronSchedule : null;
    if (childCron) {
      try {
        validateCronSchedule(childCron);
      } catch (err) {
        throw new ServiceError(Code.INVALID_ARGUMENT, `BadStartChildExecutionAttributes: ${(err as Error).message}`);
      }
    }
    const priority = c.scheduleActivityTaskCommandAttributes?.priority ?? c.startChildWorkflowExecutionCommandAttributes?.priority;
    const priorityInvalid = priorityError(priority);
    if (priorityInvalid) throw new ServiceError(Code.INVALID_ARGUMENT, `Invalid Priorities: ${priorityInvalid}.`);
    if (c.commandType === CommandType.COMMAND_TYPE_SCHEDULE_ACTIVITY_TASK) {
      const a = c.scheduleActivityTaskCommandAttributes ?? {};
      if (!a.activityId || !a.activityType?.name) throw new ServiceError(Code.INVALID_ARGUMENT, 'ActivityId or ActivityType is not set on command.');
      if (!toMs(a.scheduleToCloseTimeout) && !toMs(a.startToCloseTimeout)) {
        throw new ServiceError(Code.INVALID_ARGUMENT, 'A valid StartToClose or ScheduleToCloseTimeout is not set on command.');
      }
    }
  }
}

/** Merges upserted payloads; an empty / null / [] payload removes the key (as the real server). */
function mergePayloadMap(target: Record<string, Payload>, fields: Record<string, Payload> | null | undefined): void {
  for (const [k, p] of Object.entries(fields ?? {})) {
    const data = p?.data ? Buffer.from(p.data).toString('utf8') : '';
    if (!data || data === 'null' || data === '[]') delete target[k];
    else target[k] = p;
  }
}

/** Engine layer applying workflow task completions (see `index.ts`). */
export abstract class Commands extends Children {
  /**
   * Keeps the completing worker's version stamp and adds it to the run's BuildIds search attribute
   * as the real server does (common/worker_versioning `VersionStampToBuildIdSearchAttribute`: an
   * unversioned worker adds the `unversioned` sentinel and `unversioned:<build id>`).
   */
  protected recordBuildId(exec: Execution, stamp: { buildId?: string | null; useVersioning?: boolean | null }): void {
    exec.workerStamp = { buildId: stamp.buildId ?? '', useVersioning: !!stamp.useVersioning };
    const ids = (exec.buildIds ??= []);
    const add = (v: string) => !ids.includes(v) && ids.push(v);
    if (!stamp.useVersioning) add('unversioned');
    if (stamp.buildId) add(`${stamp.useVersioning ? 'versioned' : 'unversioned'}:${stamp.buildId}`);
  }

  /**
   * Fails the task a completion belongs to instead of applying its commands: the attached queries are
   * answered, WorkflowTaskFailed is written with `cause` (and `failure` when given), then the events held
   * during the task. The caller decides what follows (a new task, or the run's termination).
   */
  private rejectCompletion(exec: Execution, req: RpcRequest<'respondWorkflowTaskCompleted'>, cause: WorkflowTaskFailedCause, failure?: Failure): void {
    const wt = exec.wt;
    this.answerAttachedQueries(exec, req.queryResults);
    this.clearTimer(exec, 'wt');
    if (wt.transient) this.writeTransient(exec);
    const attributes = { scheduledEventId: wt.scheduledEventId, startedEventId: wt.startedEventId, cause, ...(failure ? { failure } : {}), identity: req.identity ?? '' };
    this.emit(exec, EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED, attributes, { direct: true });
    wt.state = 'none';
    this.flushBuffer(exec);
  }

  /**
   * RespondWorkflowTaskCompleted: writes WorkflowTaskCompleted, one event group per command, then
   * the events held during the task; schedules the next task when new events arrived.
   */
  completeWorkflowTask(req: RpcRequest<'respondWorkflowTaskCompleted'>): RespondWorkflowTaskCompletedResponse {
    const exec = this.workflowTaskForToken(decodeToken(req.taskToken));
    const wt = exec.wt;
    const commands: Command[] = req.commands ?? [];
    validateCommands(commands);
    // Blob size limits (engine/blobSize.ts): the task fails with the command's cause and the run is
    // terminated, as the real server's workflow size checker does.
    const oversized = oversizedCommand(commands, (field, size) => this.log('warn', 'Blob data size exceeds the warning limit.', { workflowId: exec.workflowId, runId: exec.runId, field, size }), exec.memo, (req.messages ?? []) as SizedMessage[]);
    if (oversized) {
      this.rejectCompletion(exec, req, oversized.cause, { message: oversized.message, serverFailureInfo: { nonRetryable: true } });
      this.terminate(exec, `${oversized.causeName}: ${oversized.message}`, null, 'history-service');
      return {};
    }
    const closes = commands.some((c) => CLOSE_COMMANDS.has(c.commandType));
    // A close command while new events are waiting is rejected, like the real server
    // (UNHANDLED_COMMAND): the worker must see the new events first.
    if (closes && exec.buffer.length > 0) {
      this.rejectCompletion(exec, req, WorkflowTaskFailedCause.WORKFLOW_TASK_FAILED_CAUSE_UNHANDLED_COMMAND);
      this.scheduleWorkflowTask(exec);
      return {};
    }
    this.clearTimer(exec, 'wt');
    if (wt.transient) this.writeTransient(exec);
    wt.state = 'none';
    const held = exec.buffer;
    exec.buffer = [];
    const completedId = this.emit(exec, EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED, {
      scheduledEventId: wt.scheduledEventId,
      startedEventId: wt.startedEventId,
      identity: req.identity ?? '',
      binaryChecksum: req.binaryChecksum ?? '',
      sdkMetadata: req.sdkMetadata,
      meteringMetadata: req.meteringMetadata,
      workerVersion: req.workerVersionStamp,
    });
    exec.lastCompletedStartedEventId = wt.startedEventId;
    if (req.workerVersionStamp) this.recordBuildId(exec, req.workerVersionStamp);
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
        this.commandUserMetadata = cmd.userMetadata?.summary || cmd.userMetadata?.details ? cmd.userMetadata : null;
        newTask = this.applyCommand(exec, cmd, completedId) || newTask;
        this.commandUserMetadata = null;
      }
    } catch (err) {
      // Nothing will be returned: activities held for eager dispatch go to their queue.
      for (const id of eager) this.actList(exec.namespace, exec.taskQueue).add({ exec, scheduledEventId: id, attempt: 1 });
      throw err;
    } finally {
      this.eagerActivities = null;
      this.commandUserMetadata = null;
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
    const activityTasks: PollActivityTaskQueueResponse[] = [];
    for (const id of eager) {
      const act = exec.activities[id];
      if (exec.status !== Status.Running || !act || act.state !== 'scheduled') continue;
      activityTasks.push(this.startActivityTask({ exec, scheduledEventId: id, attempt: act.attempt }, req.identity ?? ''));
    }
    const resp: RespondWorkflowTaskCompletedResponse = activityTasks.length ? { activityTasks } : {};
    // Like the real server, hand a task created by this completion straight back to a sticky
    // worker that asked for it, instead of a round trip through its sticky queue.
    if (req.returnNewWorkflowTask && exec.sticky && exec.wt.state === 'scheduled' && exec.wt.sticky && exec.wt.backoffUntil === undefined) {
      resp.workflowTask = this.startWorkflowTask({ kind: 'wt', exec, seq: exec.wt.seq }, req.identity ?? '');
      exec.wt.workerKey = req.workerInstanceKey ?? undefined;
      return resp;
    }
    this.dispatchWaitingQueries(exec);
    this.dirty(exec);
    return resp;
  }

  /** Applies one command; returns true when it produced an event needing a new workflow task. */
  protected applyCommand(exec: Execution, cmd: Command, completedId: number): boolean {
    switch (cmd.commandType) {
      case CommandType.COMMAND_TYPE_SCHEDULE_ACTIVITY_TASK:
        this.scheduleActivity(exec, cmd.scheduleActivityTaskCommandAttributes ?? {}, completedId);
        return false;
      case CommandType.COMMAND_TYPE_REQUEST_CANCEL_ACTIVITY_TASK:
        return this.requestCancelActivity(exec, Number(cmd.requestCancelActivityTaskCommandAttributes?.scheduledEventId ?? 0), completedId);
      case CommandType.COMMAND_TYPE_START_TIMER:
        this.startUserTimer(exec, cmd.startTimerCommandAttributes ?? {}, completedId);
        return false;
      case CommandType.COMMAND_TYPE_COMPLETE_WORKFLOW_EXECUTION: {
        const result = cmd.completeWorkflowExecutionCommandAttributes?.result;
        const cronRun = this.cronContinue(exec, { result });
        this.emit(exec, EventType.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED, { result, workflowTaskCompletedEventId: completedId, newExecutionRunId: cronRun });
        this.close(exec, Status.Completed, cronRun ? { continued: true } : { result });
        return false;
      }
      case CommandType.COMMAND_TYPE_FAIL_WORKFLOW_EXECUTION:
        this.failWorkflow(exec, cmd.failWorkflowExecutionCommandAttributes?.failure, completedId);
        return false;
      case CommandType.COMMAND_TYPE_CANCEL_TIMER:
        this.cancelUserTimer(exec, cmd.cancelTimerCommandAttributes?.timerId ?? '', completedId);
        return false;
      case CommandType.COMMAND_TYPE_CANCEL_WORKFLOW_EXECUTION: {
        const details = cmd.cancelWorkflowExecutionCommandAttributes?.details;
        this.emit(exec, EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CANCELED, { workflowTaskCompletedEventId: completedId, details });
        this.close(exec, Status.Canceled, { details });
        return false;
      }
      case CommandType.COMMAND_TYPE_REQUEST_CANCEL_EXTERNAL_WORKFLOW_EXECUTION:
        this.requestCancelExternalCommand(exec, cmd.requestCancelExternalWorkflowExecutionCommandAttributes ?? {}, completedId);
        return false;
      case CommandType.COMMAND_TYPE_RECORD_MARKER: {
        const a = cmd.recordMarkerCommandAttributes ?? {};
        this.emit(exec, EventType.EVENT_TYPE_MARKER_RECORDED, {
          markerName: a.markerName,
          details: a.details,
          workflowTaskCompletedEventId: completedId,
          header: a.header,
          failure: a.failure,
        });
        return false;
      }
      case CommandType.COMMAND_TYPE_CONTINUE_AS_NEW_WORKFLOW_EXECUTION:
        this.continueAsNew(exec, cmd.continueAsNewWorkflowExecutionCommandAttributes ?? {}, completedId);
        return false;
      case CommandType.COMMAND_TYPE_START_CHILD_WORKFLOW_EXECUTION:
        this.startChildCommand(exec, cmd.startChildWorkflowExecutionCommandAttributes ?? {}, completedId);
        return false;
      case CommandType.COMMAND_TYPE_SIGNAL_EXTERNAL_WORKFLOW_EXECUTION:
        this.signalExternalCommand(exec, cmd.signalExternalWorkflowExecutionCommandAttributes ?? {}, completedId);
        return false;
      case CommandType.COMMAND_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES: {
        const sa = cmd.upsertWorkflowSearchAttributesCommandAttributes?.searchAttributes ?? {};
        applyTypeMap(this.namespace(exec.namespace), sa.indexedFields);
        this.emit(exec, EventType.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES, { workflowTaskCompletedEventId: completedId, searchAttributes: sa });
        mergePayloadMap(exec.searchAttributes, sa.indexedFields);
        return false;
      }
      case CommandType.COMMAND_TYPE_MODIFY_WORKFLOW_PROPERTIES: {
        const memo = cmd.modifyWorkflowPropertiesCommandAttributes?.upsertedMemo ?? {};
        this.emit(exec, EventType.EVENT_TYPE_WORKFLOW_PROPERTIES_MODIFIED, { workflowTaskCompletedEventId: completedId, upsertedMemo: memo });
        mergePayloadMap(exec.memo, memo.fields);
        return false;
      }
      default:
        throw unsupportedCommand(cmd.commandType);
    }
  }
}
