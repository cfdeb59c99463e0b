/**
 * The one error an LLM adapter throws for a failed upstream call (DESIGN.md "Providers": `llm`). Aborting a
 * request through its `AbortSignal` is not a provider failure: it rejects with the signal's reason instead.
 *
 * How the API turns it into RFC 9457 problem+json (docs/api-notes.md "Sandbox LLM" and docs/configuration.md):
 * - `rate_limited` → 503 `llm_rate_limited` with `Retry-After: <retryAfterSeconds>` (30 when the upstream named none);
 * - `unavailable` (upstream 5xx or no connection) and `timeout` (no answer within LLM_TIMEOUT_MS) → 502 `llm_unavailable`;
 * - `bad_request` (upstream 4xx other than 401/403/429) and `auth` (401/403: a wrong LLM_API_KEY) → 502 `llm_error`.
 * None of them is the caller's fault, so none is a 4xx; the upstream's message goes to the log, not to the client.
 */

/** Why an upstream LLM call failed (see the module docstring for the HTTP mapping). */
export type LlmErrorKind = 'rate_limited' | 'unavailable' | 'timeout' | 'bad_request' | 'auth';

/** Whether a Temporal activity should retry a failure of this kind (the transient ones). */
export function isRetryableLlmError(kind: LlmErrorKind): boolean {
  return kind === 'rate_limited' || kind === 'unavailable' || kind === 'timeout';
}

/** A failed upstream LLM call. */
export class LlmProviderError extends Error {
  override readonly name = 'LlmProviderError';
  /** What failed; decides the HTTP answer (module docstring). */
  readonly kind: LlmErrorKind;
  /** HTTP status the upstream answered, when it answered at all. */
  readonly status?: number;
  /** Seconds the upstream asked us to wait (its `Retry-After`), for `rate_limited`. */
  readonly retryAfterSeconds?: number;

  /**
   * @param kind what failed
   * @param message a human sentence for logs (may quote the upstream's message; never a key)
   * @param opts upstream status, Retry-After in seconds, and the underlying error as `cause`
   */
  constructor(kind: LlmErrorKind, message: string, opts: { status?: number; retryAfterSeconds?: number; cause?: unknown } = {}) {
    super(message, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.kind = kind;
    if (opts.status !== undefined) this.status = opts.status;
    if (opts.retryAfterSeconds !== undefined) this.retryAfterSeconds = opts.retryAfterSeconds;
  }

  /** Whether retrying later may succeed (rate_limited, unavailable, timeout). */
  get retryable(): boolean {
    return isRetryableLlmError(this.kind);
  }
}
