/**
 * Heartbeats for activities that wait on an outside system (Temporal "Activity heartbeat": a worker that
 * dies stops heartbeating, so the server times the attempt out after `heartbeatTimeout` and retries it
 * elsewhere, instead of waiting out the whole start-to-close timeout). The SDK throttles what it sends to
 * 80 % of the heartbeat timeout, so beating every second costs nothing extra.
 */
import { Context } from '@temporalio/activity';

/** How often {@link whileHeartbeating} beats, ms. Below every heartbeatTimeout the workflows set (≥ 5 s). */
export const HEARTBEAT_EVERY_MS = 1000;

/**
 * Runs `work`, heartbeating every {@link HEARTBEAT_EVERY_MS} ms until it settles (outside an activity,
 * e.g. in a unit test, it only runs `work`). @returns what `work` returns; rethrows what it throws
 */
export async function whileHeartbeating<T>(work: () => Promise<T>): Promise<T> {
  let ctx: Context | undefined;
  try {
    ctx = Context.current();
  } catch {
    return work();
  }
  ctx.heartbeat();
  const timer = setInterval(() => ctx!.heartbeat(), HEARTBEAT_EVERY_MS);
  try {
    return await work();
  } finally {
    clearInterval(timer);
  }
}
