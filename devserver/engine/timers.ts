/**
 * User timers (StartTimer / CancelTimer commands, TimerFired events) on the virtual clock.
 */
import { fromMs, toMs } from '../proto';
import { EventType, CommandAttrs } from '../protoTypes';
import { Execution, Status } from '../types';
import { Activities } from './activities';

/** Engine layer for user timers (see `index.ts`). */
export abstract class UserTimers extends Activities {
  /** StartTimer command: TimerStarted, and TimerFired when the virtual clock reaches it. */
  protected startUserTimer(exec: Execution, a: CommandAttrs<'startTimerCommandAttributes'>, completedId: number): void {
    const timerId = a.timerId ?? '';
    const ms = toMs(a.startToFireTimeout) ?? 0;
    const id = this.emit(exec, EventType.EVENT_TYPE_TIMER_STARTED, {
      timerId,
      startToFireTimeout: a.startToFireTimeout ?? fromMs(0),
      workflowTaskCompletedEventId: completedId,
    });
    exec.timers[timerId] = { timerId, startedEventId: id, fireAt: this.clock.now() + ms };
    this.armUserTimer(exec, timerId);
  }

  /** CancelTimer command: TimerCanceled for a pending timer; an unknown timer id is ignored. */
  protected cancelUserTimer(exec: Execution, timerId: string, completedId: number): void {
    const t = exec.timers[timerId];
    if (!t) return;
    this.emit(exec, EventType.EVENT_TYPE_TIMER_CANCELED, {
      timerId,
      startedEventId: t.startedEventId,
      workflowTaskCompletedEventId: completedId,
    });
    delete exec.timers[timerId];
    this.clearTimer(exec, `timer:${timerId}`);
  }

  /** (Re)arms a pending user timer on the virtual clock (also after reload). */
  protected armUserTimer(exec: Execution, timerId: string): void {
    const t = exec.timers[timerId];
    if (!t) return;
    this.setTimer(exec, `timer:${timerId}`, t.fireAt, () => {
      if (exec.timers[timerId] !== t || exec.status !== Status.Running) return;
      delete exec.timers[timerId];
      this.emit(exec, EventType.EVENT_TYPE_TIMER_FIRED, { timerId, startedEventId: t.startedEventId });
      this.scheduleWorkflowTask(exec);
    });
  }
}
