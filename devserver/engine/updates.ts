/**
 * Workflow updates (temporal.api.update.v1, the update protocol of temporal.api.protocol.v1):
 * UpdateWorkflowExecution / PollWorkflowExecutionUpdate, delivery of update requests as protocol
 * messages on the next workflow task (sequenced after the event before WorkflowTaskStarted, as the
 * real server sequences them), the worker's Acceptance / Rejection / Response messages applied at
 * the position of their ProtocolMessage command, and the history events the real server writes
 * (WorkflowExecutionUpdateAccepted, WorkflowExecutionUpdateCompleted); deduplication by update
 * id; updates not yet accepted follow a run that continues as new (devserver/README.md "Updates").
 */
import { status as Code } from '@grpc/grpc-js';
import { temporal } from '@temporalio/proto';
import { decodePlain, encodePlain, pbType } from '../proto';
import { Command, CommandType, EventType, Plain, PollWorkflowTaskQueueResponse, RespondWorkflowTaskCompletedResponse, WorkflowExecutionStatus, RpcRequest } from '../protoTypes';
import { Execution, ServiceError, Status, UpdateState } from '../types';
import { CloseOutcome, decodeToken, HISTORY_LONG_POLL_MS, WfEntry } from './state';
import { Commands } from './commands';

const Stage = temporal.api.enums.v1.UpdateWorkflowExecutionLifecycleStage;
type Stage = temporal.api.enums.v1.UpdateWorkflowExecutionLifecycleStage;
type ProtocolMessage = Plain<temporal.api.protocol.v1.IMessage>;
const TYPE_PREFIX = 'type.googleapis.com/';
const REQUEST_TYPE = 'temporal.api.update.v1.Request';

/** The failure an accepted update gets when its run closes first (the real server's wording). */
const CLOSED_BEFORE_COMPLETION = {
  message: 'Workflow Update failed because the Workflow completed before the Update completed.',
  source: 'Server',
  applicationFailureInfo: { type: 'AcceptedUpdateCompletedWorkflow', nonRetryable: true },
};

/** UpdateWorkflowExecution / PollWorkflowExecutionUpdate answer (temporal.api.workflowservice.v1). */
export interface UpdateAnswer {
  updateRef: { workflowExecution: { workflowId: string; runId: string }; updateId: string };
  outcome?: Record<string, unknown>;
  stage: Stage;
}

function stageOf(u: UpdateState): Stage {
  if (u.stage === 'completed') return Stage.UPDATE_WORKFLOW_EXECUTION_LIFECYCLE_STAGE_COMPLETED;
  if (u.stage === 'accepted') return Stage.UPDATE_WORKFLOW_EXECUTION_LIFECYCLE_STAGE_ACCEPTED;
  return Stage.UPDATE_WORKFLOW_EXECUTION_LIFECYCLE_STAGE_ADMITTED;
}

/** Engine layer for workflow updates (see `index.ts`). */
export abstract class Updates extends Commands {
  /** Waiters per update (`ns\0workflowId\0updateId`), woken on every stage change. */
  private readonly updateWaiters = new Map<string, Set<() => void>>();
  /** Messages of the completion being applied, by message id (consumed by ProtocolMessage commands). */
  private completionMessages: Map<string, ProtocolMessage> | null = null;

  private waiterKey(exec: Execution, updateId: string): string {
    return `${exec.namespace}\u0000${exec.workflowId}\u0000${updateId}`;
  }

  private notifyUpdate(exec: Execution, updateId: string): void {
    const key = this.waiterKey(exec, updateId);
    const ws = this.updateWaiters.get(key);
    if (!ws) return;
    this.updateWaiters.delete(key);
    for (const w of ws) w();
  }

  /** Finds an update on the run or, when it moved on continue-as-new, on a later run of the chain. */
  private findUpdate(exec: Execution, updateId: string): { exec: Execution; update: UpdateState } | undefined {
    let e: Execution | undefined = exec;
    for (let i = 0; e && i < 1000; i++) {
      const u = e.updates?.[updateId];
      if (u) return { exec: e, update: u };
      e = e.newRunId ? this.tryGet(e.namespace, e.workflowId, e.newRunId) : undefined;
    }
    return undefined;
  }

  private answer(exec: Execution, u: UpdateState): UpdateAnswer {
    if (u.abortMessage) throw new ServiceError(Code.NOT_FOUND, u.abortMessage);
    return {
      updateRef: { workflowExecution: { workflowId: exec.workflowId, runId: exec.runId }, updateId: u.updateId },
      outcome: u.outcome,
      stage: stageOf(u),
    };
  }

  /** Waits (long-poll window HISTORY_LONG_POLL_MS) until the update reaches `stage` or is aborted. */
  private async waitStage(exec: Execution, updateId: string, stage: Stage, onCancel: (fn: () => void) => void): Promise<UpdateAnswer> {
    const deadline = Date.now() + HISTORY_LONG_POLL_MS;
    for (;;) {
      const found = this.findUpdate(exec, updateId);
      if (!found) throw new ServiceError(Code.NOT_FOUND, `update ${updateId} not found`);
      if (found.update.abortMessage || stageOf(found.update) >= stage || Date.now() >= deadline || this.stopped) return this.answer(found.exec, found.update);
      let cancelled = false;
      await new Promise<void>((resolve) => {
        const key = this.waiterKey(exec, updateId);
        const set = this.updateWaiters.get(key) ?? new Set();
        this.updateWaiters.set(key, set);
        const timer = setTimeout(finish, Math.max(0, deadline - Date.now()));
        function finish() {
          clearTimeout(timer);
          set.delete(finish);
          resolve();
        }
        set.add(finish);
        onCancel(() => {
          cancelled = true;
          finish();
        });
      });
      if (cancelled) throw new ServiceError(Code.CANCELLED, 'update wait cancelled');
    }
  }

  /**
   * UpdateWorkflowExecution: admits the update (or finds the one with the same update id) and
   * waits for the requested stage (at least ACCEPTED; after the long-poll window the current stage
   * is answered and the SDK asks again).
   * @throws ServiceError NOT_FOUND for a closed run that does not know the update id.
   */
  updateWorkflow(
    exec: Execution,
    req: Plain<temporal.api.workflowservice.v1.IUpdateWorkflowExecutionRequest>,
    onCancel: (fn: () => void) => void,
  ): Promise<UpdateAnswer> {
    const request = (req.request ?? {}) as Plain<temporal.api.update.v1.IRequest>;
    const updateId = request.meta?.updateId;
    if (!updateId) throw new ServiceError(Code.INVALID_ARGUMENT, 'Update ID is not set on request.');
    if (!request.input?.name) throw new ServiceError(Code.INVALID_ARGUMENT, 'Update name is not set on request.');
    if (!this.findUpdate(exec, updateId)) {
      if (exec.status !== Status.Running) throw new ServiceError(Code.NOT_FOUND, 'workflow execution already completed');
      exec.updates ??= {};
      exec.updates[updateId] = { updateId, request: request as Record<string, unknown>, stage: 'admitted' };
      this.dirty(exec);
      // The update needs a workflow task now, also on a run waiting out a start delay or backoff
      // (the real server's updateworkflow API schedules one whenever none is pending).
      this.endFirstTaskBackoff(exec);
      this.scheduleWorkflowTask(exec);
    }
    const wanted = Math.max(req.waitPolicy?.lifecycleStage ?? 0, Stage.UPDATE_WORKFLOW_EXECUTION_LIFECYCLE_STAGE_ACCEPTED);
    return this.waitStage(exec, updateId, wanted, onCancel);
  }

  /**
   * PollWorkflowExecutionUpdate: the update's stage and outcome, waiting for the requested stage.
   * @throws ServiceError NOT_FOUND when the run does not know the update id.
   */
  pollUpdate(exec: Execution, updateId: string, stage: Stage | null | undefined, onCancel: (fn: () => void) => void): Promise<UpdateAnswer> {
    return this.waitStage(exec, updateId, stage || Stage.UPDATE_WORKFLOW_EXECUTION_LIFECYCLE_STAGE_ACCEPTED, onCancel);
  }

  /** Adds the requests of admitted (or sent but unanswered) updates to a starting workflow task. */
  protected override startWorkflowTask(e: WfEntry, identity: string): PollWorkflowTaskQueueResponse {
    const resp = super.startWorkflowTask(e, identity);
    if (e.kind !== 'wt' || !e.exec.updates) return resp;
    const exec = e.exec;
    const messages: ProtocolMessage[] = [];
    for (const u of Object.values(exec.updates ?? {})) {
      if (u.stage !== 'admitted' && u.stage !== 'sent') continue;
      u.stage = 'sent';
      messages.push({
        id: `${u.updateId}/request`,
        protocolInstanceId: u.updateId,
        // Sequenced after the event before WorkflowTaskStarted, as the real server sequences them.
        eventId: exec.wt.startedEventId - 1,
        body: { type_url: TYPE_PREFIX + REQUEST_TYPE, value: encodePlain(pbType(REQUEST_TYPE), u.request) },
      });
    }
    if (messages.length) resp.messages = messages;
    return resp;
  }

  /**
   * RespondWorkflowTaskCompleted with protocol messages: each message referenced by a
   * ProtocolMessage command is applied at the command's position, the others (rejections) after
   * the commands; updates still waiting get a new workflow task.
   */
  override completeWorkflowTask(req: RpcRequest<'respondWorkflowTaskCompleted'>): RespondWorkflowTaskCompletedResponse {
    const msgs = (req.messages ?? []) as ProtocolMessage[];
    this.completionMessages = new Map(msgs.map((m) => [m.id ?? '', m]));
    const exec = this.workflowTaskForToken(decodeToken(req.taskToken));
    let resp: RespondWorkflowTaskCompletedResponse;
    try {
      resp = super.completeWorkflowTask(req);
      // A run the completion closed (or a size check terminated) takes no more update messages.
      if (exec.status === Status.Running) for (const m of this.completionMessages.values()) this.applyUpdateMessage(exec, m);
    } finally {
      this.completionMessages = null;
    }
    if (exec.status === Status.Running && exec.wt.state === 'none' && Object.values(exec.updates ?? {}).some((u) => u.stage === 'admitted' || u.stage === 'sent')) {
      this.scheduleWorkflowTask(exec);
    }
    return resp;
  }

  protected override applyCommand(exec: Execution, cmd: Command, completedId: number): boolean {
    if (cmd.commandType !== CommandType.COMMAND_TYPE_PROTOCOL_MESSAGE) return super.applyCommand(exec, cmd, completedId);
    const id = cmd.protocolMessageCommandAttributes?.messageId ?? '';
    const msg = this.completionMessages?.get(id);
    if (!msg) throw new ServiceError(Code.INVALID_ARGUMENT, `ProtocolMessageCommand references unknown message ${id}`);
    this.completionMessages!.delete(id);
    this.applyUpdateMessage(exec, msg);
    return false;
  }

  /** Applies one Acceptance / Rejection / Response message from a worker. */
  private applyUpdateMessage(exec: Execution, msg: ProtocolMessage): void {
    const typeName = (msg.body?.type_url ?? '').replace(TYPE_PREFIX, '');
    if (!typeName.startsWith('temporal.api.update.v1.')) throw new ServiceError(Code.INVALID_ARGUMENT, `unsupported protocol message ${typeName}`);
    const body = decodePlain(pbType(typeName), msg.body?.value ?? Buffer.alloc(0)) as Record<string, any>;
    const u = exec.updates?.[msg.protocolInstanceId ?? ''];
    if (!u || u.stage === 'completed') return;
    if (typeName.endsWith('.Acceptance')) {
      u.acceptedEventId = this.emit(exec, EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED, {
        protocolInstanceId: u.updateId,
        acceptedRequestMessageId: body.acceptedRequestMessageId,
        acceptedRequestSequencingEventId: body.acceptedRequestSequencingEventId,
        acceptedRequest: body.acceptedRequest ?? u.request,
      });
      u.stage = 'accepted';
    } else if (typeName.endsWith('.Rejection')) {
      // A rejected update leaves no event; its outcome is the validator's failure.
      u.outcome = { failure: body.failure };
      u.stage = 'completed';
    } else if (typeName.endsWith('.Response')) {
      if (u.stage !== 'accepted') throw new ServiceError(Code.INVALID_ARGUMENT, `update ${u.updateId} responded before it was accepted`);
      this.emit(exec, EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_COMPLETED, {
        meta: body.meta ?? { updateId: u.updateId },
        acceptedEventId: u.acceptedEventId,
        outcome: body.outcome,
      });
      u.outcome = body.outcome;
      u.stage = 'completed';
    } else {
      throw new ServiceError(Code.INVALID_ARGUMENT, `unsupported protocol message ${typeName}`);
    }
    this.dirty(exec);
    this.notifyUpdate(exec, u.updateId);
  }

  /**
   * A closing run: updates not yet accepted move to the next run (continue-as-new, retry, cron) or
   * are aborted; accepted ones fail as on the real server.
   */
  protected override close(exec: Execution, status: WorkflowExecutionStatus, outcome: CloseOutcome): void {
    super.close(exec, status, outcome);
    if (!exec.updates) return;
    const next = exec.newRunId ? this.tryGet(exec.namespace, exec.workflowId, exec.newRunId) : undefined;
    for (const u of Object.values(exec.updates)) {
      if (u.stage === 'admitted' || u.stage === 'sent') {
        if (next && next.status === Status.Running) {
          delete exec.updates[u.updateId];
          next.updates ??= {};
          next.updates[u.updateId] = { ...u, stage: 'admitted' };
          this.dirty(next);
          this.defer(() => this.scheduleWorkflowTask(next));
        } else {
          u.abortMessage = 'workflow execution already completed';
        }
      } else if (u.stage === 'accepted') {
        u.outcome = { failure: CLOSED_BEFORE_COMPLETION };
        u.stage = 'completed';
      } else {
        continue;
      }
      this.notifyUpdate(exec, u.updateId);
    }
  }
}
