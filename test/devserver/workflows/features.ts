/**
 * Workflows for the dev server's updates, cron and schedule tests, and the timeout-type fidelity
 * check (an activity that no worker polls, with only a schedule-to-close timeout).
 */
import { condition, continueAsNew, defineSignal, defineUpdate, ParentClosePolicy, proxyActivities, setHandler, startChild, workflowInfo } from '@temporalio/workflow';
import type * as activities from './activities';

export const addUpdate = defineUpdate<number, [number]>('add');
export const greetUpdate = defineUpdate<string, [string]>('greetViaActivity');
export const waitUpdate = defineUpdate<string, []>('waitForRelease');
export const releaseSignal = defineSignal('release');
export const stopSignal = defineSignal('stop');

const { greet } = proxyActivities<typeof activities>({ startToCloseTimeout: '10s' });

/**
 * Holds a total changed by the `add` update (negative numbers rejected by its validator); the
 * `greetViaActivity` update runs an activity; `waitForRelease` completes after the `release`
 * signal. Returns the total when `stop` is signalled.
 */
export async function updatable(): Promise<number> {
  let total = 0;
  let released = false;
  let stopped = false;
  setHandler(
    addUpdate,
    (n) => {
      total += n;
      return total;
    },
    {
      validator: (n) => {
        if (n < 0) throw new Error(`negative amount ${n}`);
      },
    },
  );
  setHandler(greetUpdate, (name) => greet(name));
  setHandler(waitUpdate, async () => {
    await condition(() => released);
    return 'released';
  });
  setHandler(releaseSignal, () => void (released = true));
  setHandler(stopSignal, () => void (stopped = true));
  await condition(() => stopped);
  return total;
}

/**
 * Continues as new `runs` times in a row (each run after a first workflow task), accepting `add`
 * updates on every run; the last run waits for the `stop` signal and returns its total.
 */
export async function updatableChain(runs: number): Promise<number> {
  let total = 0;
  let stopped = false;
  setHandler(addUpdate, (n) => (total += n));
  setHandler(stopSignal, () => void (stopped = true));
  if (runs > 0) {
    await condition(() => false, 1);
    await continueAsNew<typeof updatableChain>(runs - 1);
  }
  await condition(() => stopped);
  return total;
}

/** A cron run: one more than the previous run's result (the last completion result). */
export async function cronCounter(): Promise<number> {
  const last = workflowInfo().lastResult as number | undefined;
  return (last ?? 0) + 1;
}

/** Starts `cronCounter` as an hourly cron child (abandoned when this parent completes); returns the child's id. */
export async function cronParent(childId: string): Promise<string> {
  const child = await startChild(cronCounter, { workflowId: childId, cronSchedule: '0 * * * *', parentClosePolicy: ParentClosePolicy.ABANDON });
  return child.workflowId;
}

/** An activity on a queue nobody polls with only a schedule-to-close timeout: the timeout type. */
export async function unpolledScheduleToClose(): Promise<string> {
  const { greet: g } = proxyActivities<typeof activities>({ taskQueue: 'nobody-polls-this-queue', scheduleToCloseTimeout: '300ms' });
  try {
    await g('x');
    return 'unexpected';
  } catch (err: any) {
    return `${err.cause?.timeoutType}`;
  }
}
