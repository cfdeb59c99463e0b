/**
 * Blob size limits as the real server enforces them (dynamic config `limit.blobSize.warn` /
 * `limit.blobSize.error`, defaults 512 KiB and 2 MiB; `limit.memoSize.warn` / `limit.memoSize.error`,
 * 2 KiB and 2 MiB). Sources in temporalio/temporal:
 * - service/history/api/create_workflow_util.go `ValidateStart`: a start's input over the blob limit
 *   is INVALID_ARGUMENT "Blob data size exceeds limit." (common.ErrBlobSizeExceedsLimit), its memo
 *   over the memo limit INVALID_ARGUMENT "Memo size exceeds limit." (common.ErrMemoSizeExceedsLimit);
 * - service/history/api/respondworkflowtaskcompleted/workflow_task_completed_handler.go (with
 *   workflow_size_checker.go): a command payload (activity input, workflow result or failure, marker
 *   details, memo upsert, child or continue-as-new input and memo, signal input) or an update protocol
 *   message body over its limit fails the workflow task with the command's cause and terminates the
 *   run ("<Cause>: <message>");
 * - service/frontend/workflow_handler.go: an activity's result, failure, cancel details or heartbeat
 *   details over the limit never fail the call — the activity fails with a non-retryable server
 *   failure ("Complete result exceeds size limit.", "Failure exceeds size limit." with the truncated
 *   failure as its cause, "Cancel details exceed size limit.", "Heartbeat details exceed size
 *   limit.").
 * One over a warn limit is logged.
 */
import { status as Code } from '@grpc/grpc-js';
import { encodePlain, pbType } from '../proto';
import { temporal } from '@temporalio/proto';
import { Command, CommandType, Failure, Payload, Payloads, WorkflowTaskFailedCause } from '../protoTypes';

type Cause = temporal.api.enums.v1.WorkflowTaskFailedCause;
import { ServiceError } from '../types';

/** limit.blobSize.warn default (bytes). */
export const BLOB_SIZE_WARN = 512 * 1024;
/** limit.blobSize.error default (bytes); also advertised as NamespaceInfo.Limits.blob_size_limit_error. */
export const BLOB_SIZE_ERROR = 2 * 1024 * 1024;
/** limit.memoSize.error default (bytes), advertised as NamespaceInfo.Limits.memo_size_limit_error. */
export const MEMO_SIZE_ERROR = 2 * 1024 * 1024;
/** limit.memoSize.warn default (bytes). */
export const MEMO_SIZE_WARN = 2 * 1024;

/** Bytes of strings and byte arrays in a plain message: a cheap lower bound of its encoded size. */
function approxBytes(v: unknown, depth = 0): number {
  if (v == null || depth > 32) return 0;
  if (typeof v === 'string') return v.length + 2;
  if (v instanceof Uint8Array) return v.length + 2;
  if (typeof v !== 'object') return 4;
  let n = 0;
  if (Array.isArray(v)) for (const x of v) n += approxBytes(x, depth + 1) + 2;
  else for (const [k, x] of Object.entries(v as Record<string, unknown>)) n += approxBytes(x, depth + 1) + k.length + 2;
  return n;
}

/** Encoded size of a plain message of protobuf type `typeName` (`.Size()` in the real server); cheap far below `limit`. */
function encodedSize(typeName: string, msg: unknown, limit: number): number {
  if (msg == null) return 0;
  const approx = approxBytes(msg);
  if (approx < limit / 4) return approx;
  return encodePlain(pbType(typeName), msg as Record<string, unknown>).length;
}

/** Encoded size of a temporal.api.common.v1.Memo. */
export function memoSize(memo: { fields?: Record<string, Payload | null> | null } | null | undefined): number {
  return encodedSize('temporal.api.common.v1.Memo', memo, MEMO_SIZE_WARN);
}

/** Encoded size of a temporal.api.failure.v1.Failure. */
export function failureSize(f: Failure | null | undefined): number {
  return encodedSize('temporal.api.failure.v1.Failure', f, BLOB_SIZE_WARN);
}

/** Sum of key and data lengths of a payload map (payloadsMapSize of the real server's workflow task handler). */
function payloadMapDataSize(fields: Record<string, Payload | null | undefined> | null | undefined): number {
  let n = 0;
  for (const [k, v] of Object.entries(fields ?? {})) n += k.length + (v?.data?.length ?? 0);
  return n;
}

/** Sum of key lengths and Payloads sizes of a payloads map (common.GetPayloadsMapSize: marker details). */
function payloadsMapSize(details: Record<string, Payloads | null | undefined> | null | undefined): number {
  let n = 0;
  for (const [k, v] of Object.entries(details ?? {})) n += k.length + payloadsSize(v);
  return n;
}

/** A server failure as common/failure NewServerFailure makes it (no source; non-retryable as given). */
export function serverFailure(message: string, nonRetryable = true): Failure {
  return { message, serverFailureInfo: { nonRetryable } };
}

/**
 * A failure cut to about `maxSize` bytes as common/failure `Truncate` cuts it: the application or
 * server failure info (type and non-retryable flag only, no details), source, message and stack trace,
 * then the causes (at most 20 deep) while bytes remain.
 */
export function truncateFailure(f: Failure | null | undefined, maxSize: number, depth = 20): Failure | undefined {
  if (!f) return undefined;
  let left = maxSize;
  const trunc = (s: string | null | undefined) => {
    const out = Buffer.from(s ?? '').subarray(0, Math.max(0, left)).toString('utf8').replace(/\uFFFD$/, '');
    left -= Buffer.byteLength(out);
    if (out) left -= 4;
    return out;
  };
  const out: Failure = {};
  if (f.applicationFailureInfo) {
    out.applicationFailureInfo = { nonRetryable: f.applicationFailureInfo.nonRetryable, type: trunc(f.applicationFailureInfo.type) };
    left -= 8;
  } else if (f.serverFailureInfo) {
    out.serverFailureInfo = { nonRetryable: f.serverFailureInfo.nonRetryable };
    left -= 4;
  }
  out.source = trunc(f.source);
  out.message = trunc(f.message);
  out.stackTrace = trunc(f.stackTrace);
  if (f.cause && left > 4 && depth > 0) out.cause = truncateFailure(f.cause, left - 4, depth - 1);
  return out;
}

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

/** One size check of a command: its size, the limits, its cause and message. */
interface Check {
  size: number;
  warn: number;
  error: number;
  cause: Cause;
  causeName: string;
  message: string;
}

const blob = (size: number, cause: Cause, causeName: string, message: string): Check => ({ size, warn: BLOB_SIZE_WARN, error: BLOB_SIZE_ERROR, cause, causeName, message });
const memo = (size: number, cause: Cause, causeName: string, message: string): Check => ({ size, warn: MEMO_SIZE_WARN, error: MEMO_SIZE_ERROR, cause, causeName, message });

/**
 * The checks of the real server's workflow task handler per command type, in its order, with its
 * causes and messages (verbatim, including their spacing). `runMemo` is the run's memo, which a memo
 * upsert is merged into before the memo limit is checked.
 */
function checks(c: Command, runMemo: Record<string, Payload>): Check[] {
  switch (c.commandType) {
    case CommandType.COMMAND_TYPE_SCHEDULE_ACTIVITY_TASK:
      return [blob(payloadsSize(c.scheduleActivityTaskCommandAttributes?.input), C.WORKFLOW_TASK_FAILED_CAUSE_BAD_SCHEDULE_ACTIVITY_ATTRIBUTES, 'BadScheduleActivityAttributes', 'ScheduleActivityTaskCommandAttributes.Input exceeds size limit.')];
    case CommandType.COMMAND_TYPE_COMPLETE_WORKFLOW_EXECUTION:
      // The real server reports this one under BadScheduleActivityAttributes too.
      return [blob(payloadsSize(c.completeWorkflowExecutionCommandAttributes?.result), C.WORKFLOW_TASK_FAILED_CAUSE_BAD_SCHEDULE_ACTIVITY_ATTRIBUTES, 'BadScheduleActivityAttributes', 'CompleteWorkflowExecutionCommandAttributes.Result exceeds size limit.')];
    case CommandType.COMMAND_TYPE_FAIL_WORKFLOW_EXECUTION:
      return [blob(failureSize(c.failWorkflowExecutionCommandAttributes?.failure), C.WORKFLOW_TASK_FAILED_CAUSE_BAD_FAIL_WORKFLOW_EXECUTION_ATTRIBUTES, 'BadFailWorkflowExecutionAttributes', 'FailWorkflowExecutionCommandAttributes.Failure exceeds size limit.')];
    case CommandType.COMMAND_TYPE_RECORD_MARKER:
      return [blob(payloadsMapSize(c.recordMarkerCommandAttributes?.details), C.WORKFLOW_TASK_FAILED_CAUSE_BAD_RECORD_MARKER_ATTRIBUTES, 'BadRecordMarkerAttributes', 'RecordMarkerCommandAttributes.Details exceeds size limit.')];
    case CommandType.COMMAND_TYPE_MODIFY_WORKFLOW_PROPERTIES: {
      const upserted = c.modifyWorkflowPropertiesCommandAttributes?.upsertedMemo?.fields ?? {};
      const cause = C.WORKFLOW_TASK_FAILED_CAUSE_BAD_MODIFY_WORKFLOW_PROPERTIES_ATTRIBUTES;
      return [
        blob(payloadMapDataSize(upserted), cause, 'BadModifyWorkflowPropertiesAttributes', 'ModifyWorkflowPropertiesCommandAttributes exceeds size limit.'),
        memo(memoSize({ fields: { ...runMemo, ...upserted } }), cause, 'BadModifyWorkflowPropertiesAttributes', 'ModifyWorkflowPropertiesCommandAttributes. Memo exceeds size limit.'),
      ];
    }
    case CommandType.COMMAND_TYPE_CONTINUE_AS_NEW_WORKFLOW_EXECUTION: {
      const a = c.continueAsNewWorkflowExecutionCommandAttributes;
      const cause = C.WORKFLOW_TASK_FAILED_CAUSE_BAD_CONTINUE_AS_NEW_ATTRIBUTES;
      return [
        blob(payloadsSize(a?.input), cause, 'BadContinueAsNewAttributes', 'ContinueAsNewWorkflowExecutionCommandAttributes. Input exceeds size limit.'),
        memo(memoSize(a?.memo), cause, 'BadContinueAsNewAttributes', 'ContinueAsNewWorkflowExecutionCommandAttributes. Memo exceeds size limit.'),
      ];
    }
    case CommandType.COMMAND_TYPE_START_CHILD_WORKFLOW_EXECUTION: {
      const a = c.startChildWorkflowExecutionCommandAttributes;
      const cause = C.WORKFLOW_TASK_FAILED_CAUSE_BAD_START_CHILD_EXECUTION_ATTRIBUTES;
      return [
        blob(payloadsSize(a?.input), cause, 'BadStartChildExecutionAttributes', 'StartChildWorkflowExecutionCommandAttributes. Input exceeds size limit.'),
        memo(memoSize(a?.memo), cause, 'BadStartChildExecutionAttributes', 'StartChildWorkflowExecutionCommandAttributes.Memo exceeds size limit.'),
      ];
    }
    case CommandType.COMMAND_TYPE_SIGNAL_EXTERNAL_WORKFLOW_EXECUTION:
      return [blob(payloadsSize(c.signalExternalWorkflowExecutionCommandAttributes?.input), C.WORKFLOW_TASK_FAILED_CAUSE_BAD_SIGNAL_WORKFLOW_EXECUTION_ATTRIBUTES, 'BadSignalWorkflowExecutionAttributes', 'SignalExternalWorkflowExecutionCommandAttributes.Input exceeds size limit.')];
    default:
      return [];
  }
}

/** A protocol message of a workflow task completion (temporal.api.protocol.v1.Message, body as Any). */
export interface SizedMessage {
  body?: { type_url?: string | null; value?: Uint8Array | null } | null;
}

/**
 * The first command or protocol message over its error limit, or null; `warn` is called for each one
 * over its warn limit. Commands are checked before the messages, each against the checks of
 * {@link checks}; an update message body (`proto.Size(message.Body)`) against the blob limit, failing
 * with BAD_UPDATE_WORKFLOW_EXECUTION_MESSAGE "Message type <type> exceeds size limit.".
 */
export function oversizedCommand(commands: Command[], warn: (field: string, size: number) => void, runMemo: Record<string, Payload> = {}, messages: SizedMessage[] = []): OversizedCommand | null {
  for (const c of commands) {
    for (const k of checks(c, runMemo)) {
      if (k.size <= k.warn) continue;
      if (k.size > k.error) return { cause: k.cause, causeName: k.causeName, message: k.message };
      warn(k.message.replace(/ exceeds size limit\.$/, ''), k.size);
    }
  }
  for (const m of messages) {
    const typeUrl = m.body?.type_url ?? '';
    const size = (m.body?.value?.length ?? 0) + typeUrl.length + 6;
    if (size <= BLOB_SIZE_WARN) continue;
    const type = typeUrl.slice(typeUrl.lastIndexOf('/') + 1);
    if (size > BLOB_SIZE_ERROR) return { cause: C.WORKFLOW_TASK_FAILED_CAUSE_BAD_UPDATE_WORKFLOW_EXECUTION_MESSAGE, causeName: 'BadUpdateWorkflowExecutionMessage', message: `Message type ${type} exceeds size limit.` };
    warn(type, size);
  }
  return null;
}

/**
 * Refuses a start's memo over the memo error limit, as the real server's ValidateStart does.
 * @throws ServiceError INVALID_ARGUMENT "Memo size exceeds limit."
 */
export function checkRequestMemo(m: { fields?: Record<string, Payload | null> | null } | null | undefined, warn: (size: number) => void): void {
  const size = memoSize(m);
  if (size > MEMO_SIZE_ERROR) throw new ServiceError(Code.INVALID_ARGUMENT, 'Memo size exceeds limit.');
  if (size > MEMO_SIZE_WARN) warn(size);
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
