/**
 * One shape for the service's background sweeps (owed workflow starts, pending wallet charges): a pass runs at
 * most once at a time, on a timer every `intervalMs` (unref'd, so it never keeps a process alive) and on demand;
 * a failed pass is logged at warn and retried on the next tick; `stop` clears the timer and waits for a pass in
 * progress.
 */
import type { Logger } from 'pino';

/** A running sweep. */
export interface PeriodicSweep {
  /** Runs a pass now, or joins the one in progress. @returns what the pass counted (rows started, charges folded); 0 for a pass that failed (logged; what it did before failing stays done and is not counted) */
  sweep(): Promise<number>;
  /** Stops the timer; waits for a pass in progress. */
  stop(): Promise<void>;
}

/**
 * Starts a sweep.
 * @param pass one pass; `stopped()` turns true once `stop` was called (a pass ends early then). @returns a count
 * @param intervalMs ms between passes (0: only on demand)
 * @param log where a failed pass is reported, with `failure` as its message (not after `stop`)
 */
export function startPeriodicSweep(pass: (stopped: () => boolean) => Promise<number>, intervalMs: number, log: Logger, failure: string): PeriodicSweep {
  let stopped = false;
  let running: Promise<number> | null = null;
  const sweep = (): Promise<number> => {
    running ??= pass(() => stopped)
      .catch((err) => {
        if (!stopped) log.warn({ err }, failure);
        return 0;
      })
      .finally(() => {
        running = null;
      });
    return running;
  };
  const timer = intervalMs > 0 ? setInterval(() => void sweep(), intervalMs) : undefined;
  timer?.unref();
  return {
    sweep,
    async stop() {
      stopped = true;
      if (timer) clearInterval(timer);
      await running?.catch(() => undefined);
    },
  };
}
