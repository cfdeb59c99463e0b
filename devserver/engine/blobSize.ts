/**
 * Blob size limits as the real server enforces them (dynamic config `limit.blobSize.warn` /
 * `limit.blobSize.error`, defaults 512 KiB and 2 MiB; service/history workflow size checker and
 * common.CheckEventBlobSizeLimit): a request payload over the error limit is refused with
 * INVALID_ARGUMENT "Blob data size exceeds limit."; a command payload over it fails the workflow
 * task with the command's cause and terminates the run ("<Cause>: <Command>Attributes.<Field>
 * exceeds size limit."); one over the warn limit is logged.
 */
import { status as Code } from '@grpc/grpc-js';
import { encodePlain, pbType } from '../proto';
import { temporal } from '@temporalio/proto';
import { Command, CommandType, Payloads, WorkflowTaskFailedCause } from '../protoTypes';

type Cause = temporal.api.enums.v1.WorkflowTaskFailedCause;
import { ServiceError } from '../types';

/** limit.blobSize.warn default (bytes). */
export const BLOB_SIZE_WARN = 512 * 1024;
/** limit.blobSize.error default (bytes); also advertised as NamespaceInfo.Limits.blob_size_limit_error. */
export const BLOB_SIZE_ERROR = 2 * 1024 * 1024;
/** limit.memoSize.error default (bytes), advertised as NamespaceInfo.Limits.memo_size_limit_error. */
export const MEMO_SIZE_ERROR = 2 * 1024 * 1024;

/** Encoded size of a temporal.api.common.v1.Payloads (`.Size()` in the real server); cheap below the warn limit. */
export function payloadsSize(p: Payloads | null | undefined): number {
  if (!p?.payloads?.length) return 0;
  let approx = 0;
  for (const x of p.payloads) {
    approx += 16 + (x?.data?.length ?? 0);
    for (const v of Object.values(x?.metadata ?? {})) approx += 16 + (v?.length ?? 0);
  }
  // Far below the warn limit the exact size does not matter.
  if (approx < BLOB_SIZE_WARN / 2) return approx;
  return encodePlain(pbType('temporal.api.common.v1.Payloads'), p).length;
}

/** What a too-large command does: its workflow-task failure cause and message. */
export interface OversizedCommand {
  cause: Cause;
  causeName: string;
  message: string;
}

const C = WorkflowTaskFailedCause;

/** The payload the size checker looks at per command type, with its cause and message. */
function checked(c: Command): { size: number; cause: Cause; causeName: string; field: string } | null {
  switch (c.commandType) {
    case CommandType.COMMAND_TYPE_SCHEDULE_ACTIVITY_TASK:
      return { size: payloadsSize(c.scheduleActivityTaskCommandAttributes?.input), cause: C.WORKFLOW_TASK_FAILED_CAUSE_BAD_SCHEDULE_ACTIVITY_ATTRIBUTES, causeName: 'BadScheduleActivityAttributes', field: 'ScheduleActivityTaskCommandAttributes.Input' };
    case CommandType.COMMAND_TYPE_COMPLETE_WORKFLOW_EXECUTION:
      // The real server (v1.31) reports this one under BadScheduleActivityAttributes too.
      return { size: payloadsSize(c.completeWorkflowExecutionCommandAttributes?.result), cause: C.WORKFLOW_TASK_FAILED_CAUSE_BAD_SCHEDULE_ACTIVITY_ATTRIBUTES, causeName: 'BadScheduleActivityAttributes', field: 'CompleteWorkflowExecutionCommandAttributes.Result' };
    case CommandType.COMMAND_TYPE_CONTINUE_AS_NEW_WORKFLOW_EXECUTION:
      return { size: payloadsSize(c.continueAsNewWorkflowExecutionCommandAttributes?.input), cause: C.WORKFLOW_TASK_FAILED_CAUSE_BAD_CONTINUE_AS_NEW_ATTRIBUTES, causeName: 'BadContinueAsNewAttributes', field: 'ContinueAsNewWorkflowExecutionCommandAttributes.Input' };
    case CommandType.COMMAND_TYPE_START_CHILD_WORKFLOW_EXECUTION:
      return { size: payloadsSize(c.startChildWorkflowExecutionCommandAttributes?.input), cause: C.WORKFLOW_TASK_FAILED_CAUSE_BAD_START_CHILD_EXECUTION_ATTRIBUTES, causeName: 'BadStartChildExecutionAttributes', field: 'StartChildWorkflowExecutionCommandAttributes.Input' };
    case CommandType.COMMAND_TYPE_SIGNAL_EXTERNAL_WORKFLOW_EXECUTION:
      return { size: payloadsSize(c.signalExternalWorkflowExecutionCommandAttributes?.input), cause: C.WORKFLOW_TASK_FAILED_CAUSE_BAD_SIGNAL_WORKFLOW_EXECUTION_ATTRIBUTES, causeName: 'BadSignalWorkflowExecutionAttributes', field: 'SignalExternalWorkflowExecutionCommandAttributes.Input' };
    default:
      return null;
  }
}

/**
 * The first command whose payload is over the error limit, or null; `warn` is called for each one
 * over the warn limit.
 */
export function oversizedCommand(commands: Command[], warn: (field: string, size: number) => void): OversizedCommand | null {
  for (const c of commands) {
    const k = checked(c);
    if (!k || k.size <= BLOB_SIZE_WARN) continue;
    if (k.size > BLOB_SIZE_ERROR) return { cause: k.cause, causeName: k.causeName, message: `${k.field} exceeds size limit.` };
    warn(k.field, k.size);
  }
  return null;
}

/**
 * Refuses a request payload over the error limit, as the real server's start and signal APIs do.
 * @throws ServiceError INVALID_ARGUMENT "Blob data size exceeds limit."
 */
export function checkRequestBlob(p: Payloads | null | undefined, warn: (size: number) => void): void {
  const size = payloadsSize(p);
  if (size > BLOB_SIZE_ERROR) throw new ServiceError(Code.INVALID_ARGUMENT, 'Blob data size exceeds limit.');
  if (size > BLOB_SIZE_WARN) warn(size);
}
