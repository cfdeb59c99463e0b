/** Polling for tests that wait on something asynchronous (a callback, a workflow step, a notification). */

/**
 * Polls `fn` every `intervalMs` until it returns a truthy value, and returns that value.
 * @throws Error naming `label` and the last value after `timeoutMs`
 */
export async function until<T>(fn: () => Promise<T>, timeoutMs = 20_000, label = 'condition', intervalMs = 25): Promise<NonNullable<T>> {
  const end = Date.now() + timeoutMs;
  let last: T | undefined;
  for (;;) {
    last = await fn();
    if (last) return last as NonNullable<T>;
    if (Date.now() > end) throw new Error(`timed out waiting for ${label}; last value ${JSON.stringify(last)}`);
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}
