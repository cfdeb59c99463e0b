/**
 * The analytics rollup sweep (README "Observe"): every `intervalMs` it adds the conversations that ended
 * since the last sweep to the hourly rollup, in batches (db/repositories/conversations.ts `rollUpEnded`), so
 * no end of a conversation waits on the rollup's row. Analytics never depend on it: what it has not reached
 * yet is read live. Runs beside the webhook dispatcher (worker processes, `npm start`); several may run.
 */
import type { Logger } from 'pino';
import type { Db } from '../../db';
import { rollUpEnded } from '../../db/repositories/conversations';

/** Conversations rolled up per statement. */
export const ROLLUP_BATCH = 500;

/** A running sweep. */
export interface RollupSweeper {
  /** Rolls up everything ended now, batch by batch. @returns how many conversations it rolled up */
  sweep(): Promise<number>;
  /** Stops the timer and waits for a sweep in progress. */
  stop(): Promise<void>;
}

/**
 * Starts the sweep.
 * @param opts.intervalMs pause between sweeps, ms (default 2,000; 0: no timer, callers use `sweep()`)
 */
export function startRollupSweeper(opts: { db: Db; logger: Logger; intervalMs?: number }): RollupSweeper {
  const intervalMs = opts.intervalMs ?? 2000;
  let running: Promise<number> | null = null;
  let timer: NodeJS.Timeout | null = null;
  let stopped = false;
  const sweep = (): Promise<number> => {
    running ??= (async () => {
      let total = 0;
      try {
        for (;;) {
          const n = await rollUpEnded(opts.db, ROLLUP_BATCH);
          total += n;
          if (n < ROLLUP_BATCH || stopped) return total;
        }
      } finally {
        running = null;
      }
    })();
    return running;
  };
  const schedule = () => {
    if (stopped || intervalMs <= 0) return;
    timer = setTimeout(() => {
      sweep().then(
        () => schedule(),
        (err: unknown) => {
          opts.logger.warn({ err }, 'analytics rollup sweep failed; retrying at the next interval');
          schedule();
        },
      );
    }, intervalMs);
    timer.unref();
  };
  schedule();
  return {
    sweep,
    stop: async () => {
      stopped = true;
      if (timer) clearTimeout(timer);
      await running?.catch(() => undefined);
    },
  };
}
