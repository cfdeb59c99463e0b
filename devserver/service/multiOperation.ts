/**
 * temporal.api.workflowservice.v1 ExecuteMultiOperation: update-with-start, the one combination
 * the real server accepts — operations `[startWorkflow, updateWorkflow]` on the same workflow id.
 * The start follows its conflict policy (required) (USE_EXISTING sends the update to the running run, FAIL
 * refuses a running one, TERMINATE_EXISTING replaces it); the update is admitted on the resulting
 * run, which ends any start delay, and the call answers both outcomes together once the update
 * reached the requested stage (at least ACCEPTED). A failure names its operation as the real server
 * does: `MultiOperationExecutionFailure` with the failing operation's status and
 * `MultiOperationExecutionAborted` for the other, the top-level code being the failing one's
 * (go.temporal.io/api serviceerror.MultiOperationExecution).
 */
import { checkRequestBlob, checkRequestMemo } from '../engine/blobSize';
import type * as grpc from '@grpc/grpc-js';
import { status as Code } from '@grpc/grpc-js';
import { temporal } from '@temporalio/proto';
import type { Engine } from '../engine';
import { encodePlain, pbType } from '../proto';
import { Plain } from '../protoTypes';
import { ServiceError } from '../types';
import { Handlers, onCancelOf } from './common';

import ws = temporal.api.workflowservice.v1;

/** A google.rpc.Status for one operation of a MultiOperationExecutionFailure. */
function opStatus(err: unknown): Record<string, unknown> {
  const e = err instanceof ServiceError ? err : new ServiceError(Code.INTERNAL, err instanceof Error ? err.message : String(err));
  const details = e.details ? [{ type_url: `type.googleapis.com/${e.details.typeName}`, value: encodePlain(pbType(e.details.typeName), e.details.value) }] : [];
  return { code: e.code, message: e.message, details };
}

const ABORTED = {
  code: Code.ABORTED,
  message: 'Operation was aborted.',
  details: [{ type_url: 'type.googleapis.com/temporal.api.failure.v1.MultiOperationExecutionAborted', value: Buffer.alloc(0) }],
};

/** The error of operation `index` (0 = start, 1 = update) wrapped as the real server wraps it. */
function multiFailure(index: number, err: unknown): ServiceError {
  const failing = opStatus(err);
  return new ServiceError(failing.code as number, 'Update-with-Start could not be executed.', {
    typeName: 'temporal.api.errordetails.v1.MultiOperationExecutionFailure',
    value: { statuses: index === 0 ? [failing, ABORTED] : [ABORTED, failing] },
  });
}

/** ExecuteMultiOperation handler bound to an engine. */
export function multiOperationHandlers(engine: Engine): Handlers {
  return {
    async ExecuteMultiOperation(req: Plain<ws.IExecuteMultiOperationRequest>, call: grpc.ServerUnaryCall<unknown, unknown>) {
      const ns = req.namespace || 'default';
      engine.namespace(ns);
      const ops = req.operations ?? [];
      const start = ops[0]?.startWorkflow;
      const update = ops[1]?.updateWorkflow;
      if (ops.length !== 2 || !start || !update) {
        throw new ServiceError(Code.INVALID_ARGUMENT, 'Operations have to be exactly [Start, Update].');
      }
      // UNSPECIFIED (0) is refused: the caller must choose what happens to a running workflow.
      if (!start.workflowIdConflictPolicy) {
        throw multiFailure(0, new ServiceError(Code.INVALID_ARGUMENT, 'WorkflowIdConflictPolicy must be set for Update-with-Start.'));
      }
      if (start.cronSchedule) throw multiFailure(0, new ServiceError(Code.INVALID_ARGUMENT, 'CronSchedule is not allowed in Update-with-Start.'));
      const target = update.workflowExecution;
      if ((target?.workflowId && target.workflowId !== start.workflowId) || target?.runId) {
        throw multiFailure(1, new ServiceError(Code.INVALID_ARGUMENT, 'Update must target the workflow id of the start, without a run id.'));
      }
      let started: ReturnType<Engine['startWorkflow']>;
      try {
        // The start's input and memo limits (ValidateStartWorkflowExecutionRequest, engine/blobSize.ts).
        checkRequestBlob(start.input, (size) => engine.logWarn('Blob data size exceeds the warning limit.', { size }));
        checkRequestMemo(start.memo, (size) => engine.logWarn('Memo size exceeds the warning limit.', { size }));
        started = engine.startWorkflow({ ...start, namespace: ns });
      } catch (err) {
        throw multiFailure(0, err);
      }
      let outcome: Awaited<ReturnType<Engine['updateWorkflow']>>;
      try {
        outcome = await engine.updateWorkflow(started.exec, { ...update, namespace: ns }, onCancelOf(call).onCancel);
      } catch (err) {
        throw multiFailure(1, err);
      }
      return {
        responses: [
          { startWorkflow: { runId: started.exec.runId, started: started.started, status: started.exec.status } },
          { updateWorkflow: outcome },
        ],
      };
    },
  };
}
