/**
 * User timers (StartTimer / CancelTimer commands, TimerFired events) on the virtual clock.
 */
import { EventType as ET, Execution, Status } from '../types';
import { Activities } from './activities';

/** Engine layer for user timers (see `index.ts`). */
export abstract class UserTimers extends Activities {
  protected armUserTimer(exec: Execution, timerId: string): void {
    const t = exec.timers[timerId];
    if (!t) return;
    this.setTimer(exec, `timer:${timerId}`, t.fireAt, () => {
      if (exec.timers[timerId] !== t || exec.status !== Status.Running) return;
      delete exec.timers[timerId];
      this.emit(exec, ET.TimerFired, { timerId, startedEventId: t.startedEventId });
      this.scheduleWorkflowTask(exec);
    });
  }
}
