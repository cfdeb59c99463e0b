/**
 * The fallback model of a request (`LlmRequest.fallbackModel`; docs/api-notes.md "Agents": model settings), shared by
 * the adapters: when the request's model answers 429 (`rate_limited`), 5xx or no connection (`unavailable`) or
 * does not answer in time (`timeout`), the same request is sent once more, to the fallback model. A stream falls
 * back only while nothing of it has been passed on (a person may already be hearing the first answer). Any other
 * failure (401/403, another 4xx) and the caller's abort are not retried: another model would fail the same way.
 */
import { LlmProviderError } from './errors';
import type { LlmRequest, LlmResponse, LlmStreamEvent } from './index';

/** Whether the fallback model is asked after `err`: a rate limit, an unavailable upstream or a timeout. */
export function fallsBack(err: unknown): boolean {
  return err instanceof LlmProviderError && (err.kind === 'rate_limited' || err.kind === 'unavailable' || err.kind === 'timeout');
}

/** The request as sent to its fallback model (which has no fallback of its own). */
function onFallback(req: LlmRequest): LlmRequest {
  return { ...req, model: req.fallbackModel, fallbackModel: undefined };
}

/** Whether `req` has a fallback other than its own model (`defaultModel` stands in for an unnamed one). */
function hasFallback(req: LlmRequest, defaultModel: string): boolean {
  return !!req.fallbackModel && req.fallbackModel !== (req.model || defaultModel);
}

/**
 * `once(req)` and, when it fails as {@link fallsBack} says, `once` on the fallback model.
 * @param once one attempt; `followed` tells it a fallback attempt follows a failure (the OpenAI adapter then skips
 *   its own retry of the same model)
 * @param defaultModel the adapter's model of a request that names none
 */
export async function completeWithFallback(
  req: LlmRequest,
  defaultModel: string,
  once: (req: LlmRequest, followed: boolean) => Promise<LlmResponse>,
): Promise<LlmResponse> {
  if (!hasFallback(req, defaultModel)) return once(req, false);
  try {
    return await once(req, true);
  } catch (err) {
    if (req.signal?.aborted || !fallsBack(err)) throw err;
    return once(onFallback(req), false);
  }
}

/** The streaming form of {@link completeWithFallback}: falls back only while no event has been yielded. */
export async function* streamWithFallback(
  req: LlmRequest,
  defaultModel: string,
  once: (req: LlmRequest, followed: boolean) => AsyncIterable<LlmStreamEvent>,
): AsyncIterable<LlmStreamEvent> {
  if (!hasFallback(req, defaultModel)) {
    yield* once(req, false);
    return;
  }
  let yielded = false;
  try {
    for await (const ev of once(req, true)) {
      yielded = true;
      yield ev;
    }
    return;
  } catch (err) {
    if (yielded || req.signal?.aborted || !fallsBack(err)) throw err;
  }
  yield* once(onFallback(req), false);
}
