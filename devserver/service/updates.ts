/**
 * temporal.api.workflowservice.v1 UpdateWorkflowExecution and PollWorkflowExecutionUpdate: thin
 * mappings onto the engine's updates layer (devserver/README.md "Updates").
 */
import type * as grpc from '@grpc/grpc-js';
import { temporal } from '@temporalio/proto';
import type { Engine } from '../engine';
import { Plain } from '../protoTypes';
import { Handlers, onCancelOf } from './common';

import ws = temporal.api.workflowservice.v1;

/** Update handlers bound to an engine. */
export function updateHandlers(engine: Engine): Handlers {
  return {
    async UpdateWorkflowExecution(req: Plain<ws.IUpdateWorkflowExecutionRequest>, call: grpc.ServerUnaryCall<unknown, unknown>) {
      const exec = engine.getExecution(req.namespace || 'default', req.workflowExecution?.workflowId, req.workflowExecution?.runId);
      return engine.updateWorkflow(exec, req, onCancelOf(call).onCancel);
    },
    async PollWorkflowExecutionUpdate(req: Plain<ws.IPollWorkflowExecutionUpdateRequest>, call: grpc.ServerUnaryCall<unknown, unknown>) {
      const ref = req.updateRef;
      const exec = engine.getExecution(req.namespace || 'default', ref?.workflowExecution?.workflowId, ref?.workflowExecution?.runId);
      return engine.pollUpdate(exec, ref?.updateId ?? '', req.waitPolicy?.lifecycleStage, onCancelOf(call).onCancel);
    },
  };
}
