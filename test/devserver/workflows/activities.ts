/** Activities used by the dev server tests (run by the real SDK worker). */
import { activityInfo, heartbeat, sleep, cancelled, ApplicationFailure, CompleteAsyncError } from '@temporalio/activity';

/** Returns a greeting. */
export async function greet(name: string): Promise<string> {
  return `Hello, ${name}!`;
}

/** Fails until `succeedOnAttempt`, then returns the attempt number. */
export async function flaky(succeedOnAttempt: number): Promise<number> {
  const { attempt } = activityInfo();
  if (attempt < succeedOnAttempt) throw ApplicationFailure.retryable(`attempt ${attempt} failed`, 'Flaky');
  return attempt;
}

/** Always fails with the given error type. */
export async function failWith(type: string): Promise<never> {
  throw ApplicationFailure.retryable(`failing with ${type} on attempt ${activityInfo().attempt}`, type);
}

/** Sleeps `ms` (used for start-to-close timeouts). */
export async function slow(ms: number): Promise<string> {
  await sleep(ms);
  return 'done';
}

/** Heartbeats every 100 ms until cancelled; returns 'cancelled' details via the failure. */
export async function heartbeatUntilCancelled(): Promise<string> {
  for (let i = 0; ; i++) {
    heartbeat(i);
    try {
      await Promise.race([sleep(100), cancelled()]);
    } catch (err) {
      throw err;
    }
  }
}

/** Heartbeats once with details then stops heartbeating (heartbeat timeout). */
export async function heartbeatThenHang(): Promise<string> {
  const prev = activityInfo().heartbeatDetails as number | undefined;
  heartbeat((prev ?? 0) + 1);
  await sleep(5_000);
  return 'never';
}

/** Completes asynchronously: the test completes it by task token or by id. */
export async function completeLater(): Promise<string> {
  asyncTokens.push(Buffer.from(activityInfo().taskToken).toString('base64'));
  throw new CompleteAsyncError();
}

/**
 * Its first attempt is left started without a heartbeat, as on a worker that died (asynchronous
 * completion frees the worker while the server keeps the attempt running); later attempts answer.
 */
export async function abandonFirstAttempt(): Promise<string> {
  const { attempt } = activityInfo();
  if (attempt === 1) {
    abandonedAttempts.push(attempt);
    throw new CompleteAsyncError();
  }
  return `attempt ${attempt}`;
}

/** First attempts {@link abandonFirstAttempt} left behind. */
export const abandonedAttempts: number[] = [];

/** Task tokens of activities waiting for asynchronous completion (base64). */
export const asyncTokens: string[] = [];

/** Heartbeats without details (a liveness heartbeat) every 100 ms until cancelled. */
export async function heartbeatBare(): Promise<string> {
  for (;;) {
    heartbeat();
    await Promise.race([sleep(100), cancelled()]);
  }
}
