/**
 * Time skipping (temporal.api.testservice.v1.TestService semantics): when unlocked and nothing is
 * runnable, the virtual clock jumps to the next timer (devserver/README.md "Time skipping").
 */
import { Status } from '../types';
import { HistoryEvents } from './history';

/** Engine layer deciding when the virtual clock may jump (see `index.ts`). */
export abstract class TimeSkipping extends HistoryEvents {
  /**
   * True when no workflow or activity task is queued or running anywhere (time may jump). While a
   * TestService sleep waits (an activity's `env.sleep()` among them), a started activity does not
   * count: the activity itself may be what waits for the skipped time, as with the real test
   * server; queued tasks and started workflow tasks still do.
   */
  isIdle(): boolean {
    const startedActivitiesRun = this.testSleeps === 0;
    for (const e of this.executions.values()) {
      if (e.status !== Status.Running) continue;
      if (e.wt.state === 'started' || (e.wt.state === 'scheduled' && e.wt.backoffUntil === undefined)) return false;
      for (const a of Object.values(e.activities)) {
        if (a.state === 'scheduled' || (a.state === 'started' && startedActivitiesRun)) return false;
      }
    }
    for (const q of this.queries.values()) if (q.dispatched !== 'no') return false;
    return true;
  }

  /** Schedules a check that skips time when time skipping is unlocked and nothing is runnable. */
  override scheduleIdleCheck(): void {
    if (!this.timeSkipping || this.timeSkippingLocks > 0 || this.idleCheckScheduled || this.stopped) return;
    this.idleCheckScheduled = true;
    setImmediate(() => {
      this.idleCheckScheduled = false;
      this.maybeSkip();
    });
  }

  protected maybeSkip(): void {
    if (this.stopped || this.timeSkippingLocks > 0 || !this.isIdle()) return;
    const next = this.clock.nextAt();
    if (next === undefined) return;
    if (next > this.clock.now()) {
      this.log('debug', 'time skipping', { toMs: next });
      this.clock.skipToNext();
      this.runLater();
    }
    this.scheduleIdleCheck();
  }
}
