/**
 * History events: appending (dense ids), holding events that arrive while a workflow task is
 * started and writing them after it, waking history long-polls (devserver/README.md "Behaviour
 * that follows the real server": History events, Events during a workflow task, History).
 */
import { encodeHistoryEvent, fromMs } from '../proto';
import { EventAttrs, EventAttributesByType, EventType, UserMetadata } from '../protoTypes';
import { ATTR_FIELD, Execution, HistoryEvent, Status } from '../types';
import { HISTORY_LONG_POLL_MS } from './state';
import { EngineCore } from './core';

/** Engine layer that writes history (see `index.ts`). */
export abstract class HistoryEvents extends EngineCore {
  /** User metadata of the command being applied, until its first event is written. */
  protected commandUserMetadata: UserMetadata | null = null;

  /**
   * Appends an event, or holds it (provisional negative id) while a workflow task is started.
   * Returns the (possibly provisional) event id.
   */
  protected emit<E extends keyof EventAttributesByType>(
    exec: Execution,
    eventType: E,
    attrs: EventAttrs<E>,
    opts: { direct?: boolean; userMetadata?: UserMetadata | null } = {},
  ): number {
    const ev = {
      eventId: 0,
      eventTime: fromMs(this.clock.now()),
      eventType,
      taskId: ++this.seq,
      [ATTR_FIELD[eventType]]: attrs,
    } as HistoryEvent;
    // HistoryEvent.user_metadata: the command's (or start request's) summary and details go on the
    // first event the command writes (TimerStarted, ActivityTaskScheduled, …), as on the real server.
    const meta = opts.userMetadata ?? this.commandUserMetadata;
    if (meta) {
      ev.userMetadata = meta;
      this.commandUserMetadata = null;
    }
    if (!opts.direct && exec.wt.state === 'started') {
      ev.eventId = -(exec.buffer.length + 1);
      exec.buffer.push(ev);
      this.dirty(exec);
      return ev.eventId;
    }
    ev.eventId = exec.nextEventId++;
    exec.history.push(ev);
    this.onAppended(exec, ev);
    return ev.eventId;
  }

  protected onAppended(exec: Execution, ev: HistoryEvent): void {
    exec.historySizeBytes = (exec.historySizeBytes ?? 0) + encodeHistoryEvent(ev).length;
    if (ev.eventType === EventType.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_STARTED) {
      const a = ev.childWorkflowExecutionStartedEventAttributes;
      const c = a ? exec.children[a.initiatedEventId ?? 0] : undefined;
      if (c) c.startedEventId = ev.eventId;
    }
    this.dirty(exec);
    this.wakeWaiters(exec);
  }

  /** Writes held events after a workflow task completed/failed, remapping provisional ids. */
  protected flushBuffer(exec: Execution): boolean {
    if (!exec.buffer.length) return false;
    const held = exec.buffer;
    exec.buffer = [];
    const map = new Map<number, number>();
    for (const ev of held) {
      const id = exec.nextEventId++;
      map.set(ev.eventId, id);
      ev.eventId = id;
      // The attributes oneof member of this event type, looked up by its field name.
      const attrs = (ev as unknown as Record<string, { startedEventId?: number | null } | undefined>)[ATTR_FIELD[ev.eventType]];
      if (attrs && typeof attrs.startedEventId === 'number' && attrs.startedEventId < 0) {
        attrs.startedEventId = map.get(attrs.startedEventId) ?? 0;
      }
      exec.history.push(ev);
      this.onAppended(exec, ev);
    }
    return true;
  }

  protected wakeWaiters(exec: Execution): void {
    if (!exec.rt.waiters.size) return;
    const ws = [...exec.rt.waiters];
    exec.rt.waiters.clear();
    for (const w of ws) w();
  }

  /**
   * Waits until the execution has an event with id >= `fromEventId` (or is closed), or the
   * long-poll window passes. `onCancel` drops the wait when the caller goes away.
   */
  waitForEvents(exec: Execution, fromEventId: number, closeOnly: boolean, onCancel: (fn: () => void) => void): Promise<void> {
    const ready = () => (closeOnly ? exec.status !== Status.Running : exec.nextEventId > fromEventId || exec.status !== Status.Running);
    if (ready()) return Promise.resolve();
    return new Promise((resolve) => {
      let done = false;
      const finish = () => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        exec.rt.waiters.delete(check);
        resolve();
      };
      const check = () => {
        if (ready()) finish();
        else exec.rt.waiters.add(check);
      };
      const timer = setTimeout(finish, HISTORY_LONG_POLL_MS);
      exec.rt.waiters.add(check);
      onCancel(finish);
    });
  }
}
