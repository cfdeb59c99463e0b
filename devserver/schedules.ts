/**
 * Schedules (temporal.api.schedule.v1, the WorkflowService schedule RPCs): each schedule is a
 * timer on the dev server's virtual clock (so time skipping applies) at the next time of its spec
 * (`cron.ts`); when it fires the schedule starts its workflow under the overlap policy, as the real
 * server's scheduler workflow does: workflow id `<action id>-<nominal time RFC 3339>`, search
 * attributes TemporalScheduledById / TemporalScheduledStartTime, SKIP / BUFFER_ONE / BUFFER_ALL /
 * CANCEL_OTHER / TERMINATE_OTHER / ALLOW_ALL, catch-up window, pause, limited actions, trigger and
 * backfill patches (devserver/README.md "Schedules"). State is persisted through the store
 * (`schedules` table) and re-armed on start.
 */
import { status as Code } from '@grpc/grpc-js';
import { temporal } from '@temporalio/proto';
import type { TimerHandle } from './clock';
import { CompiledSpec, parseScheduleCron, specNext, StructuredCalendar } from './cron';
import type { Engine } from './engine';
import { fromMs, toMs } from './proto';
import { Payload, Plain } from './protoTypes';
import { ServiceError, Status } from './types';

const Overlap = temporal.api.enums.v1.ScheduleOverlapPolicy;
type Overlap = temporal.api.enums.v1.ScheduleOverlapPolicy;
/** temporal.api.schedule.v1.Schedule as held in memory. */
export type ScheduleMsg = Plain<temporal.api.schedule.v1.ISchedule>;

/** Default catch-up window of the real server (one year), and its minimum (10 s). */
const DEFAULT_CATCHUP_MS = 365 * 86_400_000;
const MIN_CATCHUP_MS = 10_000;
/** Recent actions kept in ScheduleInfo, as the real server (10). */
const RECENT_ACTIONS = 10;
/** Future action times reported by Describe/List, as the real server (10). */
const FUTURE_TIMES = 10;

/** A start waiting for the previous run to close (BUFFER_ONE / BUFFER_ALL / CANCEL_OTHER). */
interface BufferedStart {
  nominalMs: number;
  actualMs: number;
  overlap: Overlap;
}

/** One schedule's persisted state. */
export interface ScheduleState {
  namespace: string;
  scheduleId: string;
  schedule: ScheduleMsg;
  memo?: Record<string, Payload> | null;
  searchAttributes?: Record<string, Payload> | null;
  actionCount: number;
  missedCatchupWindow: number;
  overlapSkipped: number;
  bufferDropped: number;
  running: { workflowId: string; runId: string }[];
  recent: { scheduleMs: number; actualMs: number; workflowId: string; runId: string }[];
  buffer: BufferedStart[];
  createMs: number;
  updateMs: number;
  /** Every spec time up to here has been handled (epoch ms). */
  processedMs: number;
  conflictToken: number;
  requestId?: string;
}

/** Where schedule state is written (the Postgres store); `data` null deletes. */
export interface ScheduleSink {
  saveSchedule(namespace: string, scheduleId: string, data: ScheduleState | null): void;
}

/**
 * Compiles a ScheduleSpec as the real server stores it: cron strings become structured calendars
 * and intervals (`cron.ts`).
 * @throws ServiceError INVALID_ARGUMENT naming the bad cron string / interval.
 */
export function normalizeSpec(spec: ScheduleMsg['spec']): NonNullable<ScheduleMsg['spec']> {
  const out = { ...(spec ?? {}) };
  const calendars = [...(out.structuredCalendar ?? [])];
  const intervals = [...(out.interval ?? [])];
  for (const c of out.cronString ?? []) {
    try {
      const parsed = parseScheduleCron(c);
      if (parsed.calendar) calendars.push(parsed.calendar as NonNullable<typeof out.structuredCalendar>[number]);
      if (parsed.interval) intervals.push({ interval: fromMs(parsed.interval.intervalMs), phase: fromMs(parsed.interval.phaseMs) });
      if (parsed.timezone && !out.timezoneName) out.timezoneName = parsed.timezone;
    } catch (err) {
      throw new ServiceError(Code.INVALID_ARGUMENT, `invalid schedule spec: cron string "${c}": ${(err as Error).message}`);
    }
  }
  for (const iv of intervals) {
    if (!(toMs(iv.interval) ?? 0)) throw new ServiceError(Code.INVALID_ARGUMENT, 'invalid schedule spec: interval must be positive');
  }
  out.cronString = [];
  out.structuredCalendar = calendars;
  out.interval = intervals;
  return out;
}

function compile(spec: ScheduleMsg['spec']): CompiledSpec {
  const s = spec ?? {};
  return {
    calendars: (s.structuredCalendar ?? []) as StructuredCalendar[],
    intervals: (s.interval ?? []).map((iv) => ({ intervalMs: toMs(iv.interval) ?? 0, phaseMs: toMs(iv.phase) ?? 0 })),
    excludes: (s.excludeStructuredCalendar ?? []) as StructuredCalendar[],
    startMs: s.startTime ? (toMs(s.startTime) ?? null) : null,
    endMs: s.endTime ? (toMs(s.endTime) ?? null) : null,
    timezone: s.timezoneName || 'UTC',
  };
}

function rfc3339Seconds(ms: number): string {
  return new Date(Math.floor(ms / 1000) * 1000).toISOString().replace('.000Z', 'Z');
}

function saPayload(type: string, value: unknown): Payload {
  return { metadata: { encoding: Buffer.from('json/plain'), type: Buffer.from(type) }, data: Buffer.from(JSON.stringify(value)) };
}

const byEngine = new WeakMap<Engine, Scheduler>();

/** The scheduler of an engine (created on first use). */
export function schedulerOf(engine: Engine): Scheduler {
  let s = byEngine.get(engine);
  if (!s) {
    s = new Scheduler(engine);
    byEngine.set(engine, s);
  }
  return s;
}

/** All schedules of one engine, their timers and their actions. */
export class Scheduler {
  private readonly schedules = new Map<string, ScheduleState>();
  private readonly timers = new Map<string, TimerHandle>();
  private readonly watching = new Set<string>();
  sink: ScheduleSink | null = null;

  constructor(private readonly engine: Engine) {}

  private key(ns: string, id: string): string {
    return `${ns}\u0000${id}`;
  }

  private save(s: ScheduleState): void {
    this.sink?.saveSchedule(s.namespace, s.scheduleId, s);
  }

  /**
   * Looks a schedule up.
   * @throws ServiceError NOT_FOUND when the namespace has no schedule with this id.
   */
  get(ns: string, id: string | null | undefined): ScheduleState {
    this.engine.namespace(ns);
    const s = this.schedules.get(this.key(ns, id ?? ''));
    if (!s) throw new ServiceError(Code.NOT_FOUND, `schedule "${id}" not found`);
    return s;
  }

  /** Schedules of a namespace, ordered by id. */
  list(ns: string): ScheduleState[] {
    this.engine.namespace(ns);
    return [...this.schedules.values()].filter((s) => s.namespace === ns).sort((a, b) => (a.scheduleId < b.scheduleId ? -1 : 1));
  }

  /** Re-arms a schedule loaded from Postgres (missed times inside the catch-up window run now). */
  restore(s: ScheduleState): void {
    this.schedules.set(this.key(s.namespace, s.scheduleId), s);
    this.arm(s);
    if (s.buffer.length) this.watchRunning(s);
  }

  /**
   * CreateSchedule.
   * @throws ServiceError ALREADY_EXISTS for a duplicate id (unless the same request id), INVALID_ARGUMENT for a bad spec/action.
   */
  create(ns: string, id: string, schedule: ScheduleMsg, extra: { memo?: Record<string, Payload> | null; searchAttributes?: Record<string, Payload> | null; requestId?: string | null; initialPatch?: Plain<temporal.api.schedule.v1.ISchedulePatch> | null }): ScheduleState {
    this.engine.namespace(ns);
    if (!id) throw new ServiceError(Code.INVALID_ARGUMENT, 'ScheduleId is not set on request.');
    const existing = this.schedules.get(this.key(ns, id));
    if (existing) {
      if (extra.requestId && existing.requestId === extra.requestId) return existing;
      throw new ServiceError(Code.ALREADY_EXISTS, 'Schedule with this ID is already registered.', {
        typeName: 'temporal.api.errordetails.v1.WorkflowExecutionAlreadyStartedFailure',
        value: { startRequestId: existing.requestId ?? '', runId: '' },
      });
    }
    this.validateAction(schedule);
    const now = this.engine.clock.now();
    const s: ScheduleState = {
      namespace: ns,
      scheduleId: id,
      schedule: { ...schedule, spec: normalizeSpec(schedule.spec) },
      memo: extra.memo,
      searchAttributes: extra.searchAttributes,
      actionCount: 0,
      missedCatchupWindow: 0,
      overlapSkipped: 0,
      bufferDropped: 0,
      running: [],
      recent: [],
      buffer: [],
      createMs: now,
      updateMs: now,
      processedMs: now,
      conflictToken: 1,
      requestId: extra.requestId ?? undefined,
    };
    this.schedules.set(this.key(ns, id), s);
    this.arm(s);
    if (extra.initialPatch) this.patch(s, extra.initialPatch);
    this.save(s);
    return s;
  }

  private validateAction(schedule: ScheduleMsg): void {
    const a = schedule.action?.startWorkflow;
    if (!a?.workflowId || !a.workflowType?.name || !a.taskQueue?.name) {
      throw new ServiceError(Code.INVALID_ARGUMENT, 'invalid schedule action: startWorkflow needs workflowId, workflowType and taskQueue');
    }
  }

  /**
   * UpdateSchedule: replaces the schedule (spec times from now on).
   * @throws ServiceError FAILED_PRECONDITION when the conflict token does not match.
   */
  update(s: ScheduleState, schedule: ScheduleMsg, conflictToken: Uint8Array | null | undefined, searchAttributes?: Record<string, Payload> | null): void {
    if (conflictToken && conflictToken.length && Number(Buffer.from(conflictToken).toString()) !== s.conflictToken) {
      throw new ServiceError(Code.FAILED_PRECONDITION, 'mismatched conflict token');
    }
    this.validateAction(schedule);
    s.schedule = { ...schedule, spec: normalizeSpec(schedule.spec) };
    if (searchAttributes) s.searchAttributes = searchAttributes;
    s.updateMs = this.engine.clock.now();
    s.processedMs = Math.max(s.processedMs, s.updateMs);
    s.conflictToken++;
    this.arm(s);
    this.save(s);
  }

  /** PatchSchedule: trigger immediately, backfill, pause / unpause. */
  patch(s: ScheduleState, p: Plain<temporal.api.schedule.v1.ISchedulePatch>): void {
    const state = (s.schedule.state ??= {});
    if (p.pause) {
      state.paused = true;
      state.notes = p.pause;
    }
    if (p.unpause) {
      state.paused = false;
      state.notes = p.unpause;
    }
    const now = this.engine.clock.now();
    if (p.triggerImmediately) {
      const at = toMs(p.triggerImmediately.scheduledTime) ?? now;
      this.takeAction(s, at, now, p.triggerImmediately.overlapPolicy || this.overlapOf(s), true);
    }
    for (const b of p.backfillRequest ?? []) {
      const start = toMs(b.startTime) ?? now;
      const end = toMs(b.endTime) ?? now;
      const spec = compile(s.schedule.spec);
      for (let t = specNext(spec, start - 1); t !== undefined && t <= end; t = specNext(spec, t)) {
        this.takeAction(s, t, now, b.overlapPolicy || this.overlapOf(s), true);
      }
    }
    s.updateMs = now;
    s.conflictToken++;
    this.save(s);
  }

  /** DeleteSchedule: the schedule stops; workflows it started keep running. */
  delete(s: ScheduleState): void {
    this.timers.get(this.key(s.namespace, s.scheduleId))?.cancel();
    this.timers.delete(this.key(s.namespace, s.scheduleId));
    this.schedules.delete(this.key(s.namespace, s.scheduleId));
    this.sink?.saveSchedule(s.namespace, s.scheduleId, null);
  }

  /** The next `n` spec times after `afterMs` (epoch ms). */
  futureTimes(s: ScheduleState, afterMs = this.engine.clock.now(), n = FUTURE_TIMES, untilMs = Infinity): number[] {
    const spec = compile(s.schedule.spec);
    const out: number[] = [];
    for (let t = specNext(spec, afterMs); t !== undefined && out.length < n && t <= untilMs; t = specNext(spec, t)) out.push(t);
    return out;
  }

  /** Running workflows started by the schedule (closed ones are dropped). */
  runningWorkflows(s: ScheduleState): { workflowId: string; runId: string }[] {
    s.running = s.running.filter((r) => {
      const cur = this.engine.currentRun(s.namespace, r.workflowId);
      // The run the schedule started is a fresh start, its chain's first run, which later runs (continue-as-new,
      // retries) name as their firstRunId; it is not looked up, as retention may have deleted it (engine/retention.ts).
      return !!cur && cur.status === Status.Running && cur.firstRunId === r.runId;
    });
    return s.running;
  }

  private overlapOf(s: ScheduleState): Overlap {
    return s.schedule.policies?.overlapPolicy || Overlap.SCHEDULE_OVERLAP_POLICY_SKIP;
  }

  private arm(s: ScheduleState): void {
    const key = this.key(s.namespace, s.scheduleId);
    this.timers.get(key)?.cancel();
    this.timers.delete(key);
    const next = specNext(compile(s.schedule.spec), s.processedMs);
    if (next === undefined) return;
    this.timers.set(
      key,
      this.engine.clock.schedule(next, () => {
        this.timers.delete(key);
        if (this.schedules.get(key) !== s) return;
        this.fire(s, next);
        this.arm(s);
      }),
    );
  }

  /** A spec time came: take the action unless paused, out of actions or past the catch-up window. */
  private fire(s: ScheduleState, nominalMs: number): void {
    const now = this.engine.clock.now();
    s.processedMs = Math.max(s.processedMs, nominalMs);
    const state = s.schedule.state ?? {};
    const catchup = Math.max(MIN_CATCHUP_MS, toMs(s.schedule.policies?.catchupWindow) || DEFAULT_CATCHUP_MS);
    if (state.paused) {
      // Paused: the time passes without an action.
    } else if (now - nominalMs > catchup) {
      s.missedCatchupWindow++;
    } else if (!state.limitedActions || (state.remainingActions ?? 0) > 0) {
      this.takeAction(s, nominalMs, now, this.overlapOf(s), false);
    }
    this.save(s);
  }

  /** Applies the overlap policy to one start (a fired time, a trigger or a backfilled time). */
  private takeAction(s: ScheduleState, nominalMs: number, actualMs: number, overlap: Overlap, manual: boolean): void {
    const running = this.runningWorkflows(s);
    if (!running.length || overlap === Overlap.SCHEDULE_OVERLAP_POLICY_ALLOW_ALL) {
      this.start(s, nominalMs, actualMs, manual);
      return;
    }
    switch (overlap) {
      case Overlap.SCHEDULE_OVERLAP_POLICY_TERMINATE_OTHER:
        for (const r of running) this.engine.terminate(this.engine.getExecution(s.namespace, r.workflowId), 'terminated by schedule overlap policy', undefined, 'schedule');
        this.start(s, nominalMs, actualMs, manual);
        return;
      case Overlap.SCHEDULE_OVERLAP_POLICY_CANCEL_OTHER:
        for (const r of running) this.engine.requestCancel(this.engine.getExecution(s.namespace, r.workflowId), 'canceled by schedule overlap policy', 'schedule');
        s.buffer = [{ nominalMs, actualMs, overlap }];
        this.watchRunning(s);
        return;
      case Overlap.SCHEDULE_OVERLAP_POLICY_BUFFER_ONE:
        if (s.buffer.length) s.bufferDropped++;
        s.buffer = [{ nominalMs, actualMs, overlap }];
        this.watchRunning(s);
        return;
      case Overlap.SCHEDULE_OVERLAP_POLICY_BUFFER_ALL:
        s.buffer.push({ nominalMs, actualMs, overlap });
        this.watchRunning(s);
        return;
      default:
        s.overlapSkipped++;
    }
  }

  /** Waits for the running workflow(s) to close, then starts the first buffered action. */
  private watchRunning(s: ScheduleState): void {
    const key = this.key(s.namespace, s.scheduleId);
    if (this.watching.has(key)) return;
    this.watching.add(key);
    void (async () => {
      try {
        while (this.schedules.get(key) === s && s.buffer.length) {
          const running = this.runningWorkflows(s);
          if (!running.length) {
            const b = s.buffer.shift()!;
            this.start(s, b.nominalMs, b.actualMs, false);
            this.save(s);
            continue;
          }
          // Resolves when the run closes, or after the long-poll window (the loop then looks again).
          const exec = this.engine.getExecution(s.namespace, running[0].workflowId);
          await this.engine.waitForEvents(exec, exec.nextEventId, true, () => undefined);
          if (this.engine.isStopped()) return;
        }
      } catch (err) {
        this.engine.logError('schedule buffer watch failed', { scheduleId: s.scheduleId, err: String(err) });
      } finally {
        this.watching.delete(key);
      }
    })();
  }

  /** Starts the schedule's workflow as the real scheduler does (id suffix, search attributes). */
  private start(s: ScheduleState, nominalMs: number, actualMs: number, manual: boolean): void {
    const a = s.schedule.action!.startWorkflow!;
    const workflowId = `${a.workflowId}-${rfc3339Seconds(nominalMs)}`;
    const sa: Record<string, Payload> = {
      ...(a.searchAttributes?.indexedFields ?? {}),
      TemporalScheduledById: saPayload('Keyword', s.scheduleId),
      TemporalScheduledStartTime: saPayload('Datetime', new Date(nominalMs).toISOString()),
    };
    try {
      const { exec } = this.engine.startWorkflow({
        namespace: s.namespace,
        workflowId,
        workflowType: a.workflowType,
        taskQueue: a.taskQueue,
        input: a.input,
        workflowExecutionTimeout: a.workflowExecutionTimeout,
        workflowRunTimeout: a.workflowRunTimeout,
        workflowTaskTimeout: a.workflowTaskTimeout,
        retryPolicy: a.retryPolicy,
        memo: a.memo,
        header: a.header,
        priority: a.priority,
        userMetadata: a.userMetadata,
        searchAttributes: { indexedFields: sa },
        identity: `temporal-scheduler-${s.scheduleId}`,
        requestId: `${s.namespace}/${s.scheduleId}/${nominalMs}/${manual ? actualMs : 0}`,
        workflowIdReusePolicy: temporal.api.enums.v1.WorkflowIdReusePolicy.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
      });
      s.running.push({ workflowId, runId: exec.runId });
      s.recent.push({ scheduleMs: nominalMs, actualMs, workflowId, runId: exec.runId });
      if (s.recent.length > RECENT_ACTIONS) s.recent.shift();
      s.actionCount++;
      const state = s.schedule.state;
      if (!manual && state?.limitedActions) state.remainingActions = Math.max(0, (state.remainingActions ?? 0) - 1);
    } catch (err) {
      // A start that fails (e.g. the id is taken by a running workflow) is skipped, as the real
      // scheduler records it and moves on.
      s.overlapSkipped++;
      this.engine.logError('schedule start failed', { scheduleId: s.scheduleId, workflowId, err: String((err as Error).message ?? err) });
    }
  }
}

/** ScheduleInfo / ScheduleListInfo pieces shared by Describe and List. */
export function scheduleInfo(sch: Scheduler, s: ScheduleState): Record<string, unknown> {
  return {
    actionCount: s.actionCount,
    missedCatchupWindow: s.missedCatchupWindow,
    overlapSkipped: s.overlapSkipped,
    bufferDropped: s.bufferDropped,
    bufferSize: s.buffer.length,
    runningWorkflows: sch.runningWorkflows(s),
    recentActions: s.recent.map((r) => ({
      scheduleTime: fromMs(r.scheduleMs),
      actualTime: fromMs(r.actualMs),
      startWorkflowResult: { workflowId: r.workflowId, runId: r.runId },
    })),
    futureActionTimes: sch.futureTimes(s).map(fromMs),
    createTime: fromMs(s.createMs),
    updateTime: fromMs(s.updateMs),
  };
}

