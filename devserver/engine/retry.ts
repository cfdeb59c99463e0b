/**
 * Retry policies as the real server applies them (temporal.api.common.v1.RetryPolicy): defaults
 * (1 s initial, ×2, maximum 100× initial, unlimited attempts) and the retry decision
 * (devserver/README.md "Activities", "Workflows").
 */
import { fromMs, toMs } from '../proto';
import { RetryPolicyPlain, RetryState, TimeoutType } from '../types';

/** Maps a proto RetryPolicy (with server defaults applied) to ms-based form. */
export function normalizeRetryPolicy(rp: any | undefined | null): RetryPolicyPlain {
  const initial = toMs(rp?.initialInterval) || 1000;
  return {
    initialIntervalMs: initial,
    backoffCoefficient: rp?.backoffCoefficient || 2,
    maximumIntervalMs: toMs(rp?.maximumInterval) || initial * 100,
    maximumAttempts: rp?.maximumAttempts || 0,
    nonRetryableErrorTypes: rp?.nonRetryableErrorTypes ?? [],
  };
}
/** RetryPolicy (ms form) back to its proto plain-object form. */
export function retryPolicyProto(rp: RetryPolicyPlain): Record<string, unknown> {
  return {
    initialInterval: fromMs(rp.initialIntervalMs),
    backoffCoefficient: rp.backoffCoefficient,
    maximumInterval: fromMs(rp.maximumIntervalMs),
    maximumAttempts: rp.maximumAttempts,
    nonRetryableErrorTypes: rp.nonRetryableErrorTypes,
  };
}

/**
 * Decides whether a failed attempt is retried. Returns the backoff in ms, or the RetryState that
 * ends retrying. Follows the real server: maximum attempts, non-retryable flag/types, and the
 * schedule-to-close / execution deadline bound.
 */
export function retryDecision(
  rp: RetryPolicyPlain | null,
  attempt: number,
  failure: any,
  now: number,
  deadline: number | null,
): { backoffMs: number } | { retryState: number } {
  if (!rp) return { retryState: RetryState.RetryPolicyNotSet };
  const app = failure?.applicationFailureInfo;
  if (app?.nonRetryable) return { retryState: RetryState.NonRetryableFailure };
  if (app?.type && rp.nonRetryableErrorTypes.includes(app.type)) return { retryState: RetryState.NonRetryableFailure };
  const tt = failure?.timeoutFailureInfo?.timeoutType;
  if (tt === TimeoutType.ScheduleToStart || tt === TimeoutType.ScheduleToClose) return { retryState: RetryState.Timeout };
  if (rp.maximumAttempts > 0 && attempt >= rp.maximumAttempts) return { retryState: RetryState.MaximumAttemptsReached };
  let backoff = rp.initialIntervalMs * Math.pow(rp.backoffCoefficient, attempt - 1);
  if (rp.maximumIntervalMs > 0) backoff = Math.min(backoff, rp.maximumIntervalMs);
  const explicit = toMs(app?.nextRetryDelay);
  if (explicit !== undefined && explicit > 0) backoff = explicit;
  if (deadline !== null && now + backoff >= deadline) return { retryState: RetryState.Timeout };
  return { backoffMs: Math.round(backoff) };
}
