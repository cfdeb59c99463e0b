/**
 * Retry policies as the real server applies them (temporal.api.common.v1.RetryPolicy): defaults
 * (1 s initial, ×2, maximum 100× initial, unlimited attempts) and the retry decision
 * (devserver/README.md "Activities", "Workflows").
 */
import { fromMs, toMs } from '../proto';
import { Failure, RetryPolicy, RetryState, TimeoutType } from '../protoTypes';
import { RetryPolicyPlain } from '../types';

/** Maps a proto RetryPolicy (with server defaults applied) to ms-based form. */
export function normalizeRetryPolicy(rp: RetryPolicy | undefined | null): RetryPolicyPlain {
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
export function retryPolicyProto(rp: RetryPolicyPlain): RetryPolicy {
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
  failure: Failure | null | undefined,
  now: number,
  deadline: number | null,
): { backoffMs: number } | { retryState: number } {
  if (!rp) return { retryState: RetryState.RETRY_STATE_RETRY_POLICY_NOT_SET };
  const app = failure?.applicationFailureInfo;
  if (app?.nonRetryable) return { retryState: RetryState.RETRY_STATE_NON_RETRYABLE_FAILURE };
  // A non-retryable server failure (e.g. a result over the blob size limit) is not retried either (the real server's isRetryable).
  if (failure?.serverFailureInfo?.nonRetryable) return { retryState: RetryState.RETRY_STATE_NON_RETRYABLE_FAILURE };
  if (app?.type && rp.nonRetryableErrorTypes.includes(app.type)) return { retryState: RetryState.RETRY_STATE_NON_RETRYABLE_FAILURE };
  const tt = failure?.timeoutFailureInfo?.timeoutType;
  if (tt === TimeoutType.TIMEOUT_TYPE_SCHEDULE_TO_START || tt === TimeoutType.TIMEOUT_TYPE_SCHEDULE_TO_CLOSE) return { retryState: RetryState.RETRY_STATE_TIMEOUT };
  if (rp.maximumAttempts > 0 && attempt >= rp.maximumAttempts) return { retryState: RetryState.RETRY_STATE_MAXIMUM_ATTEMPTS_REACHED };
  let backoff = rp.initialIntervalMs * Math.pow(rp.backoffCoefficient, attempt - 1);
  if (rp.maximumIntervalMs > 0) backoff = Math.min(backoff, rp.maximumIntervalMs);
  const explicit = toMs(app?.nextRetryDelay);
  if (explicit !== undefined && explicit > 0) backoff = explicit;
  if (deadline !== null && now + backoff >= deadline) return { retryState: RetryState.RETRY_STATE_TIMEOUT };
  return { backoffMs: Math.round(backoff) };
}
