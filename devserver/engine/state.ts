/**
 * Types, limits and helpers shared by the engine's layers: task-list entries, pending queries,
 * task tokens, map keys and the persistence hook.
 */
import { status as Code } from '@grpc/grpc-js';
import type { Clock } from '../clock';
import {
  ContinueAsNewInitiator,
  EventAttrs,
  EventType,
  Failure,
  Payloads,
  RetryState,
  TaskQueueKind,
  WorkflowExecutionRef,
  WorkflowQuery,
} from '../protoTypes';
import { Execution, NamespaceState, ParentRef, ServiceError } from '../types';

/** Log function shape shared with startDevServer. */
export type LogFn = (level: 'debug' | 'info' | 'warn' | 'error', msg: string, fields?: Record<string, unknown>) => void;

/** Options for the engine (subset of startDevServer's). */
export interface EngineOptions {
  clock: Clock;
  log: LogFn;
  timeSkipping: boolean;
  /** Wall-clock ms after a run closes before its history is packed (engine/packedHistory.ts); default 5,000. */
  historyPackDelayMs?: number;
}

/** Persistence hook: the engine only marks things dirty; the store decides when to write. */
export interface PersistenceSink {
  markDirty(exec: Execution): void;
  markNamespaceDirty(ns: NamespaceState): void;
  /** The run was deleted (its retention passed): its state and history rows go with the next commit. */
  markDeleted(exec: Execution): void;
}

/** Workflow task timeout when the start request sets none (ms), as the real server. */
export const DEFAULT_WORKFLOW_TASK_TIMEOUT_MS = 10_000;
/** Sticky schedule-to-start timeout when the worker sets none (ms). */
export const DEFAULT_STICKY_SCHEDULE_TO_START_MS = 5_000;
/** Long-poll window of PollWorkflowTaskQueue / PollActivityTaskQueue (ms); an empty response after it. */
export const POLL_TIMEOUT_MS = 60_000;
/**
 * How long a workflow task started by a worker that called ShutdownWorker may still be answered
 * before it times out (ms); the dev server's own choice (devserver/README.md "Worker shutdown").
 */
export const SHUTDOWN_GRACE_MS = 1_000;

/**
 * A sticky queue whose worker has not polled it for this long (wall-clock ms) and has no poll
 * waiting is unavailable: its workflow tasks go to the normal queue at once. The real server's
 * matching engine hard-codes the same 10 s (`stickyPollerUnavailableWindow`, StickyWorkerUnavailable).
 */
export const STICKY_POLLER_UNAVAILABLE_MS = 10_000;
/** Long-poll window of GetWorkflowExecutionHistory with waitNewEvent (ms). */
export const HISTORY_LONG_POLL_MS = 20_000;
/** How long QueryWorkflow waits for a worker's answer (ms) before DEADLINE_EXCEEDED. */
export const QUERY_TIMEOUT_MS = 30_000;
/** History length (events) from which WorkflowTaskStarted suggests continue-as-new (server default). */
export const SUGGEST_CAN_EVENTS = 4 * 1024;
/** History size (bytes) from which WorkflowTaskStarted suggests continue-as-new (server default). */
export const SUGGEST_CAN_BYTES = 4 * 1024 * 1024;
/** temporal.api.enums.v1.TaskQueueKind NORMAL. */
export const TQ_NORMAL = TaskQueueKind.TASK_QUEUE_KIND_NORMAL;
/** temporal.api.enums.v1.TaskQueueKind STICKY. */
export const TQ_STICKY = TaskQueueKind.TASK_QUEUE_KIND_STICKY;

/** A workflow task list entry: a workflow task (valid while `seq` matches) or a legacy query task. */
export type WfEntry = { kind: 'wt'; exec: Execution; seq: number } | { kind: 'query'; exec: Execution; queryId: string };
/** An activity task list entry (valid while the activity is scheduled at this attempt). */
export type ActEntry = { exec: Execution; scheduledEventId: number; attempt: number };

/**
 * One long-poll of a task queue (PollWorkflowTaskQueue, PollActivityTaskQueue): namespace, queue name,
 * the poller's identity, and how to learn that the caller went away (the poll is then dropped).
 */
export interface TaskPoll {
  ns: string;
  queue: string;
  identity: string;
  /** PollXxxTaskQueueRequest.workerInstanceKey: ShutdownWorker with the same key completes the poll. */
  workerInstanceKey?: string;
  onCancel: (fn: () => void) => void;
  isCancelled: () => boolean;
}

/** A QueryWorkflow call waiting for its answer; `dispatched` says how it reached a worker. */
export interface PendingQuery {
  id: string;
  exec: Execution;
  query: WorkflowQuery;
  dispatched: 'no' | 'legacy' | 'attached';
  resolve: (r: QueryAnswer) => void;
}

/** The outcome of a query: the answer, or the error message and failure a worker reported. */
export interface QueryAnswer {
  answer?: Payloads | null;
  error?: string;
  failure?: Failure | null;
}

/** Map key of one run. */
export const execKey = (ns: string, wf: string | null | undefined, run: string | null | undefined) => `${ns}\u0000${wf}\u0000${run}`;
/** Map key of a workflow id (its current run) or of a task queue. */
export const wfKey = (ns: string, wf: string | null | undefined) => `${ns}\u0000${wf}`;

/**
 * Task token payloads: JSON in the tokens this server issues; a token in the real server's format
 * (below) names its namespace by id (`nid`) instead of by name (`n`).
 */
export type Token =
  | { k: 'w'; n: string; w: string; r: string; q: number; nid?: string }
  | { k: 'a'; n: string; w: string; r: string; s: number; a: number; nid?: string }
  | { k: 'q'; id: string };

/** Encodes a task token as JSON bytes. */
export function encodeToken(t: Token): Buffer {
  return Buffer.from(JSON.stringify(t));
}

/**
 * Reads the real server's task token, the protobuf message `temporal.server.api.token.v1.Task`
 * (temporalio/temporal proto/internal/temporal/server/api/token/v1/message.proto): 1 namespace_id,
 * 2 workflow_id, 3 run_id, 4 scheduled_event_id, 5 attempt, 6 activity_id. Tokens SDK tests build
 * in that format (async completion of an activity that does not exist) then answer NOT_FOUND as on
 * the real server, not INVALID_ARGUMENT. Returns undefined when the bytes are not such a message.
 */
function decodeServerToken(b: Buffer): Token | undefined {
  let i = 0;
  const varint = (): number => {
    let v = 0;
    let mul = 1;
    for (let n = 0; n < 10; n++) {
      if (i >= b.length) throw new Error('truncated');
      const c = b[i++];
      v += (c & 0x7f) * mul;
      if (c < 0x80) return v;
      mul *= 128;
    }
    throw new Error('varint too long');
  };
  const f: Record<number, string | number> = {};
  try {
    while (i < b.length) {
      const key = varint();
      const field = Math.floor(key / 8);
      const wire = key & 7;
      if (wire === 0) f[field] = varint();
      else if (wire === 2) {
        const len = varint();
        if (i + len > b.length) return undefined;
        f[field] = b.subarray(i, i + len).toString('utf8');
        i += len;
      } else if (wire === 1) i += 8;
      else if (wire === 5) i += 4;
      else return undefined;
    }
  } catch {
    return undefined;
  }
  if (typeof f[1] !== 'string' || typeof f[2] !== 'string') return undefined;
  const base = { n: '', nid: f[1], w: f[2], r: typeof f[3] === 'string' ? f[3] : '' };
  if (typeof f[6] === 'string' && f[6]) return { k: 'a', ...base, s: Number(f[4] ?? 0), a: Number(f[5] ?? 0) };
  return { k: 'w', ...base, q: -1 };
}

/**
 * Decodes a task token: one this server issued (JSON), or one in the real server's format.
 * @throws ServiceError INVALID_ARGUMENT when the bytes are neither.
 */
export function decodeToken(b: Uint8Array | null | undefined): Token {
  const buf = Buffer.from(b ?? []);
  if (buf[0] === 0x7b) {
    try {
      return JSON.parse(buf.toString('utf8')) as Token;
    } catch {
      // not JSON after all: try the real server's format
    }
  }
  const t = decodeServerToken(buf);
  if (!t) throw new ServiceError(Code.INVALID_ARGUMENT, 'malformed task token');
  return t;
}

/** How a run closed, for its parent's child event and the close bookkeeping. */
export interface CloseOutcome {
  result?: Payloads | null;
  failure?: Failure | null;
  details?: Payloads | null;
  retryState?: RetryState;
  continued?: boolean;
}

/** Extra inputs for internal starts (children, retries, continue-as-new, signal-with-start). */
export interface StartExtra {
  parent?: ParentRef;
  root?: WorkflowExecutionRef | null;
  continuedFrom?: string;
  firstRunId?: string;
  initiator?: ContinueAsNewInitiator;
  attempt?: number;
  backoffMs?: number;
  continuedFailure?: Failure | null;
  lastCompletionResult?: Payloads | null;
  executionDeadline?: number | null;
  signal?: EventAttrs<typeof EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED>;
}
