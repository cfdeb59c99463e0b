/**
 * The LLM interface (DESIGN.md "Providers": `llm`, OpenAI chat-completions semantics). The conversation runtime
 * talks to a model only through `LlmProvider`: `complete` for one answer, `stream` for the same answer piece by
 * piece. Adapters: `sandbox` (the default; deterministic, no network, README "Sandbox LLM") and `openai` (any
 * OpenAI-compatible `/chat/completions` endpoint, on the official `openai` SDK).
 *
 * Failures of the upstream reject with `LlmProviderError` (./errors, which documents the HTTP mapping); aborting
 * through `LlmRequest.signal` rejects with the signal's reason (an `AbortError` DOMException by default).
 */
import { envNumber } from '../../../config';
import { OpenAiLlm } from './openai';
import { SandboxLlm } from './sandbox';

export { LlmProviderError, isRetryableLlmError, type LlmErrorKind } from './errors';
export { countMessages, countTokens } from './tokens';

/** Author of a message, as in the chat-completions API. */
export type LlmRole = 'system' | 'user' | 'assistant' | 'tool';

/** A function call the model asks for. `arguments` is JSON text (the model's, so possibly malformed). */
export interface LlmToolCall {
  /** The model's id of the call; the `tool` message answering it repeats it as `toolCallId`. */
  id: string;
  /** The tool's name, as in `LlmTool.name`. */
  name: string;
  /** JSON text of an object, e.g. `{"email":"a@b.co"}`. */
  arguments: string;
}

/** One message of the conversation. */
export interface LlmMessage {
  role: LlmRole;
  /** Text; null for an assistant message that only calls tools. */
  content: string | null;
  /** Calls an assistant message made. */
  toolCalls?: LlmToolCall[];
  /** For role `tool`: the id of the call this message answers. */
  toolCallId?: string;
  /** Optional author name (chat-completions `name`). */
  name?: string;
}

/** A function the model may call (chat-completions `tools[].function`). */
export interface LlmTool {
  /** `^[a-zA-Z0-9_-]{1,64}$` upstream. */
  name: string;
  description: string;
  /** JSON Schema of the arguments object (`{type: 'object', properties, required}`). */
  parameters: Record<string, unknown>;
}

/** Tokens used by one request, as the upstream reports them (the sandbox counts with `gpt-tokenizer`). */
export interface LlmUsage {
  promptTokens: number;
  completionTokens: number;
  totalTokens: number;
}

/**
 * What the conversation runtime hands the sandbox so it can answer like a model following the agent's
 * instructions (README "Sandbox LLM"); real adapters ignore it. Precedence: refusal, say, greeting (no user turn
 * yet), tool result, tool call, ask, knowledge, generic.
 */
export interface SandboxHints {
  /** Said verbatim when the conversation has no user message yet. */
  greeting?: string;
  /** Retrieved knowledge, best first; the sandbox quotes the first chunk with its source. `score` in 0..1. */
  knowledge?: { text: string; source: string; score: number }[];
  /** The question the current playbook node gathers next: said verbatim. */
  ask?: string;
  /** A guardrail blocked the turn: this refusal is said verbatim. */
  refusal?: string;
  /** A playbook `say` node: said verbatim. */
  say?: string;
}

/** One chat-completions request. */
export interface LlmRequest {
  /** Model name; default LLM_MODEL (openai) or `sandbox`. */
  model?: string;
  messages: LlmMessage[];
  tools?: LlmTool[];
  /** 0..2 upstream. */
  temperature?: number;
  /** Upper bound of completion tokens. */
  maxTokens?: number;
  /** Only the sandbox reads these. */
  hints?: SandboxHints;
  /** Aborts the request; the promise or stream rejects with the signal's reason. */
  signal?: AbortSignal;
}

/** One complete answer. */
export interface LlmResponse {
  /** Text; null when the model only called tools. */
  content: string | null;
  /** Calls the model asks for (empty when none). */
  toolCalls: LlmToolCall[];
  finishReason: 'stop' | 'tool_calls' | 'length' | 'content_filter';
  usage: LlmUsage;
  /** The model that answered. */
  model: string;
}

/**
 * What `stream` yields, in order: `delta` pieces of text (their concatenation is the final `content`), then one
 * `tool_call` per complete call, then exactly one `done` with the whole response.
 */
export type LlmStreamEvent =
  | { type: 'delta'; content: string }
  | { type: 'tool_call'; call: LlmToolCall }
  | { type: 'done'; response: LlmResponse };

/** A chat-completions model. */
export interface LlmProvider {
  /** `sandbox` or `openai`. */
  readonly name: string;
  /** One answer. @throws LlmProviderError; the signal's reason when aborted */
  complete(req: LlmRequest): Promise<LlmResponse>;
  /** The same answer as events (`LlmStreamEvent`). @throws LlmProviderError; the signal's reason when aborted */
  stream(req: LlmRequest): AsyncIterable<LlmStreamEvent>;
}

/** Default of LLM_MODEL. */
export const DEFAULT_LLM_MODEL = 'gpt-4o-mini';
/** Default of LLM_BASE_URL. */
export const DEFAULT_LLM_BASE_URL = 'https://api.openai.com/v1';
/** Default of LLM_TIMEOUT_MS. */
export const DEFAULT_LLM_TIMEOUT_MS = 30_000;

/**
 * The configured LLM (README "Configuration"): LLM_PROVIDER `sandbox` (default; SANDBOX_LLM_TOKEN_DELAY_MS) or
 * `openai` (LLM_BASE_URL, LLM_API_KEY — required, any non-empty value for a server that takes none —, LLM_MODEL,
 * LLM_TIMEOUT_MS). Only these variables are read: the SDK's own OPENAI_* variables are ignored.
 * @throws Error for an unknown provider, a missing LLM_API_KEY with `openai`, or a malformed number
 */
export function createLlm(env: NodeJS.ProcessEnv = process.env): LlmProvider {
  const provider = env.LLM_PROVIDER || 'sandbox';
  if (provider === 'sandbox') {
    return new SandboxLlm({ tokenDelayMs: envNumber('SANDBOX_LLM_TOKEN_DELAY_MS', 0, env) });
  }
  if (provider === 'openai') {
    const apiKey = env.LLM_API_KEY;
    if (!apiKey) throw new Error('LLM_API_KEY is required when LLM_PROVIDER=openai (any non-empty value for a server that takes no key)');
    return new OpenAiLlm({
      baseUrl: env.LLM_BASE_URL || DEFAULT_LLM_BASE_URL,
      apiKey,
      model: env.LLM_MODEL || DEFAULT_LLM_MODEL,
      timeoutMs: envNumber('LLM_TIMEOUT_MS', DEFAULT_LLM_TIMEOUT_MS, env),
    });
  }
  throw new Error(`LLM_PROVIDER=${provider} is not supported; use "sandbox" or "openai"`);
}
