/**
 * Workflows used by the dev server tests. Each one exercises one slice of the server: activities,
 * timers, signals, queries, children, cancellation, continue-as-new, search attributes.
 */
import {
  ActivityCancellationType,
  ApplicationFailure,
  CancellationScope,
  condition,
  continueAsNew,
  defineQuery,
  defineSignal,
  executeChild,
  getExternalWorkflowHandle,
  isCancellation,
  proxyActivities,
  setHandler,
  sleep,
  startChild,
  upsertMemo,
  upsertSearchAttributes,
  workflowInfo,
  ParentClosePolicy,
} from '@temporalio/workflow';
import type * as activities from './activities';

const { greet } = proxyActivities<typeof activities>({ startToCloseTimeout: '10s' });

export const finishSignal = defineSignal<[string]>('finish');
export const addSignal = defineSignal<[number]>('add');
export const statusQuery = defineQuery<string>('status');
export const totalQuery = defineQuery<number>('total');

/** One activity. */
export async function greeting(name: string): Promise<string> {
  return await greet(name);
}

/** One activity with a start-to-close timeout (1 hour) long enough for an activity that sleeps through skipped time. */
export async function longGreeting(name: string): Promise<string> {
  const { greet: g } = proxyActivities<typeof activities>({ startToCloseTimeout: '1 hour', retry: { maximumAttempts: 1 } });
  return await g(name);
}

/** Returns its input immediately. */
export async function echo(value: string): Promise<string> {
  return value;
}

/** Waits for the `finish` signal, answering the `status` query meanwhile. */
export async function waitForFinish(): Promise<string> {
  let status = 'waiting';
  let payload = '';
  setHandler(statusQuery, () => status);
  setHandler(finishSignal, (p) => {
    payload = p;
    status = 'finishing';
  });
  await condition(() => status === 'finishing');
  const greeting = await greet(payload);
  status = 'done';
  return greeting;
}

/** Sums `add` signals until the total reaches `target`. */
export async function accumulate(target: number): Promise<number> {
  let total = 0;
  setHandler(totalQuery, () => total);
  setHandler(addSignal, (n) => {
    total += n;
  });
  await condition(() => total >= target);
  return total;
}

/** One activity + one signal (the benchmark workflow). */
export async function activityAndSignal(name: string): Promise<string> {
  let got = '';
  setHandler(finishSignal, (p) => {
    got = p;
  });
  const g = await greet(name);
  await condition(() => got !== '');
  return `${g} ${got}`;
}

/** Sleeps for `ms` (a durable timer) and returns the workflow's notion of elapsed time. */
export async function sleeper(ms: number): Promise<number> {
  const start = Date.now();
  await sleep(ms);
  return Date.now() - start;
}

/** Starts a timer and cancels it; returns whether the cancellation was observed. */
export async function cancelTimer(): Promise<string> {
  try {
    await CancellationScope.cancellable(async () => {
      const p = sleep(60_000);
      await sleep(10);
      CancellationScope.current().cancel();
      await p;
    });
    return 'fired';
  } catch (err) {
    return isCancellation(err) ? 'cancelled' : 'error';
  }
}

/** Waits on a one-hour timer and a signal; returns both facts (durability test). */
export async function timerAndSignal(): Promise<string> {
  let payload = '';
  setHandler(finishSignal, (p) => {
    payload = p;
  });
  const timerDone = sleep('1 hour').then(() => 'timer');
  await condition(() => payload !== '');
  const t = await timerDone;
  return `${t}+${payload}`;
}

/** Activity retried by the server until attempt `n` succeeds. */
export async function retrying(n: number): Promise<number> {
  const { flaky } = proxyActivities<typeof activities>({
    startToCloseTimeout: '10s',
    retry: { initialInterval: '50ms', backoffCoefficient: 1, maximumAttempts: 10 },
  });
  return await flaky(n);
}

/** Activity failing with a non-retryable type, or exhausting maximum attempts. */
export async function failing(type: string, maxAttempts: number): Promise<string> {
  const { failWith } = proxyActivities<typeof activities>({
    startToCloseTimeout: '10s',
    retry: { initialInterval: '20ms', maximumAttempts: maxAttempts, nonRetryableErrorTypes: ['Fatal'] },
  });
  try {
    await failWith(type);
    return 'unexpected';
  } catch (err: any) {
    return `${err.cause?.type}:${err.cause?.message}:${err.retryState}`;
  }
}

/** Activity start-to-close timeout without retries. */
export async function timingOut(): Promise<string> {
  const { slow } = proxyActivities<typeof activities>({ startToCloseTimeout: '300ms', retry: { maximumAttempts: 2, initialInterval: '10ms' } });
  try {
    await slow(3_000);
    return 'unexpected';
  } catch (err: any) {
    return `${err.cause?.constructor?.name}:${err.cause?.timeoutType}:${err.retryState}`;
  }
}

/** Heartbeat timeout with retries; the second attempt sees the first attempt's details. */
export async function heartbeatTimeout(): Promise<string> {
  const { heartbeatThenHang } = proxyActivities<typeof activities>({
    startToCloseTimeout: '10s',
    heartbeatTimeout: '300ms',
    retry: { maximumAttempts: 2, initialInterval: '10ms' },
  });
  try {
    await heartbeatThenHang();
    return 'unexpected';
  } catch (err: any) {
    return `${err.cause?.timeoutType}:${JSON.stringify(err.cause?.lastHeartbeatDetails ?? null)}`;
  }
}

/** An activity whose worker died mid-attempt: a one-minute start-to-close, but a 2 s heartbeat timeout. */
export async function heartbeatAfterCrash(): Promise<string> {
  const { abandonFirstAttempt } = proxyActivities<typeof activities>({
    startToCloseTimeout: '1 minute',
    heartbeatTimeout: '2s',
    retry: { maximumAttempts: 3, initialInterval: '100ms' },
  });
  return abandonFirstAttempt();
}

/** Schedule-to-start timeout: nobody polls the activity's task queue. */
export async function scheduleToStart(): Promise<string> {
  const { greet: g } = proxyActivities<typeof activities>({
    taskQueue: 'nobody-polls-this-queue',
    scheduleToStartTimeout: '200ms',
    startToCloseTimeout: '10s',
  });
  try {
    await g('x');
    return 'unexpected';
  } catch (err: any) {
    return `${err.cause?.timeoutType}`;
  }
}

/** Cancels a running heartbeating activity and reports how it ended. */
export async function cancelActivity(afterStart: boolean): Promise<string> {
  const acts = proxyActivities<typeof activities>({
    startToCloseTimeout: '10s',
    heartbeatTimeout: '2s',
    cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
    ...(afterStart ? {} : { taskQueue: 'nobody-polls-this-queue' }),
  });
  try {
    await CancellationScope.cancellable(async () => {
      const p = acts.heartbeatUntilCancelled();
      await sleep(afterStart ? 500 : 10);
      CancellationScope.current().cancel();
      await p;
    });
    return 'completed';
  } catch (err) {
    return isCancellation(err) ? 'cancelled' : `error:${(err as Error).message}`;
  }
}

/** Asynchronously completed activity. */
export async function asyncActivity(): Promise<string> {
  const { completeLater } = proxyActivities<typeof activities>({ startToCloseTimeout: '30s' });
  return await completeLater();
}

/** Runs a child workflow to completion and one that fails. */
export async function parent(): Promise<string> {
  const ok = await executeChild(greeting, { args: ['child'] });
  let failed = '';
  try {
    await executeChild(failingChild, { args: [] });
  } catch (err: any) {
    failed = err.cause?.message ?? 'no-cause';
  }
  return `${ok}|${failed}`;
}

/** Fails immediately. */
export async function failingChild(): Promise<string> {
  throw ApplicationFailure.nonRetryable('child failed on purpose');
}

/** Starts a long-running child and cancels it. */
export async function cancelChild(): Promise<string> {
  try {
    await CancellationScope.cancellable(async () => {
      const h = await startChild(waitForFinish, { workflowId: `${workflowInfo().workflowId}-child` });
      CancellationScope.current().cancel();
      await h.result();
    });
    return 'completed';
  } catch (err) {
    return isCancellation(err) ? 'cancelled' : `error:${(err as Error).message}`;
  }
}

/** Starts a child with the TERMINATE parent close policy and returns without waiting. */
export async function abandonChild(policy: 'terminate' | 'abandon'): Promise<string> {
  const h = await startChild(waitForFinish, {
    workflowId: `${workflowInfo().workflowId}-child`,
    parentClosePolicy: policy === 'terminate' ? ParentClosePolicy.TERMINATE : ParentClosePolicy.ABANDON,
  });
  return h.workflowId;
}

/** Signals another workflow by id. */
export async function signaller(targetId: string): Promise<string> {
  await getExternalWorkflowHandle(targetId).signal(finishSignal, 'from-signaller');
  return 'sent';
}

/** Continues as new until `n` reaches 0, returning the number of runs. */
export async function countdown(n: number, runs = 1): Promise<number> {
  if (n > 0) await continueAsNew<typeof countdown>(n - 1, runs + 1);
  return runs;
}

/** Upserts a Keyword and an Int search attribute, then waits for `finish`. */
export async function searchable(tag: string): Promise<string> {
  upsertSearchAttributes({ CustomKeywordField: [tag], CustomIntField: [tag.length] });
  upsertMemo({ stage: 'searching' });
  let done = false;
  setHandler(finishSignal, () => {
    done = true;
  });
  await condition(() => done);
  return tag;
}

/** Fails on attempts 1 and 2 (workflow retry policy) and succeeds on attempt 3. */
export async function retriedWorkflow(): Promise<number> {
  const { attempt } = workflowInfo();
  if (attempt < 3) throw ApplicationFailure.retryable(`workflow attempt ${attempt}`);
  return attempt;
}

/** Fails every workflow task after the `finish` signal says "boom" (a bug in workflow code). */
export async function buggy(): Promise<string> {
  let got = '';
  setHandler(finishSignal, (p) => {
    got = p;
  });
  await condition(() => got !== '');
  if (got === 'boom') throw new TypeError('bug in workflow code');
  return got;
}

/** Loops `n` signals into history for the per-event benchmark. */
export async function manyEvents(n: number): Promise<number> {
  let count = 0;
  setHandler(addSignal, () => {
    count++;
  });
  await condition(() => count >= n);
  return count;
}
export * from './features';

/** Runs one activity that heartbeats without details until the run is cancelled or terminated. */
export async function bareHeartbeats(): Promise<string> {
  const { heartbeatBare } = proxyActivities<typeof activities>({ startToCloseTimeout: '1 minute', heartbeatTimeout: '5s' });
  return await heartbeatBare();
}

/** Its own workflowInfo().priority as plain fields (what a child reads of the priority it got). */
export async function ownPriority(): Promise<{ priorityKey?: number; fairnessKey?: string; fairnessWeight?: number }> {
  const p = workflowInfo().priority ?? {};
  return { priorityKey: p.priorityKey, fairnessKey: p.fairnessKey, fairnessWeight: p.fairnessWeight };
}

/** Two children: one that inherits this workflow's priority and one that overrides its priority key. */
export async function priorityParent(): Promise<unknown[]> {
  const inherited = await executeChild(ownPriority, { args: [] });
  const overridden = await executeChild(ownPriority, { args: [], priority: { priorityKey: 5 } });
  return [inherited, overridden];
}

/** workflowInfo().currentBuildId before and after a workflow task boundary. */
export async function buildIdProbe(): Promise<string[]> {
  const first = workflowInfo().currentBuildId ?? '';
  await sleep(1);
  return [first, workflowInfo().currentBuildId ?? ''];
}
