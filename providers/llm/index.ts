/**
 * The LLM interface (DESIGN.md "Providers": `llm`, OpenAI chat-completions semantics). The conversation runtime
 * talks to a model only through `LlmProvider`: `complete` for one answer, `stream` for the same answer piece by
 * piece. Adapters: `sandbox` (the default; deterministic, no network, docs/api-notes.md "Sandbox LLM") and `openai` (any
 * OpenAI-compatible `/chat/completions` endpoint, on the official `openai` SDK).
 *
 * Failures of the upstream reject with `LlmProviderError` (./errors, which documents the HTTP mapping); aborting
 * through `LlmRequest.signal` rejects with the signal's reason (an `AbortError` DOMException by default).
 */
import { envNumber, DEFAULT_LLM_MODEL } from '../../config';
import { OpenAiLlm } from './openai';
import { SandboxLlm } from './sandbox';

export { LlmProviderError, isRetryableLlmError, type LlmErrorKind } from './errors';
export { countMessages, countTokens } from './tokens';

import type { LlmProvider } from '../../domain/conversations/llm';
import { instrumentProvider } from '../../metrics';

/** The contract types live in the domain, where the pure conversation runtime uses them. */
export type { LlmRole, LlmToolCall, LlmMessage, LlmTool, LlmUsage, SandboxHints, LlmRequest, LlmResponse, LlmStreamEvent, LlmProvider } from '../../domain/conversations/llm';

/** Default of LLM_MODEL (config.ts, which also reads the LLM_MODELS allowlist). */
export { DEFAULT_LLM_MODEL };
/** Default of LLM_BASE_URL. */
export const DEFAULT_LLM_BASE_URL = 'https://api.openai.com/v1';
/** Default of LLM_TIMEOUT_MS. */
export const DEFAULT_LLM_TIMEOUT_MS = 30_000;

/**
 * The configured LLM (docs/configuration.md): LLM_PROVIDER `sandbox` (default; SANDBOX_LLM_TOKEN_DELAY_MS) or
 * `openai` (LLM_BASE_URL, LLM_API_KEY — required, any non-empty value for a server that takes none —, LLM_MODEL,
 * LLM_TIMEOUT_MS). Only these variables are read: the SDK's own OPENAI_* variables are ignored.
 * @throws Error for an unknown provider, a missing LLM_API_KEY with `openai`, or a malformed number
 */
export function createLlm(env: NodeJS.ProcessEnv = process.env): LlmProvider {
  const provider = env.LLM_PROVIDER || 'sandbox';
  if (provider === 'sandbox') {
    return instrumentProvider('llm', provider, new SandboxLlm({ tokenDelayMs: envNumber('SANDBOX_LLM_TOKEN_DELAY_MS', 0, env) }));
  }
  if (provider === 'openai') {
    const apiKey = env.LLM_API_KEY;
    if (!apiKey) throw new Error('LLM_API_KEY is required when LLM_PROVIDER=openai (any non-empty value for a server that takes no key)');
    const llm = new OpenAiLlm({
      baseUrl: env.LLM_BASE_URL || DEFAULT_LLM_BASE_URL,
      apiKey,
      model: env.LLM_MODEL || DEFAULT_LLM_MODEL,
      timeoutMs: envNumber('LLM_TIMEOUT_MS', DEFAULT_LLM_TIMEOUT_MS, env),
    });
    return instrumentProvider('llm', provider, llm);
  }
  throw new Error(`LLM_PROVIDER=${provider} is not supported; use "sandbox" or "openai"`);
}
