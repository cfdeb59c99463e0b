/**
 * The OpenAI-compatible adapter (DESIGN.md "Providers": `llm`), on the official `openai` SDK: `POST
 * {LLM_BASE_URL}/chat/completions` with `Authorization: Bearer {LLM_API_KEY}`, for OpenAI itself or any server that
 * speaks its wire format (OpenAI API reference "Chat Completions", "Streaming").
 *
 * - Messages map to the wire as `{role, content, name?, tool_calls?: [{id, type: 'function', function: {name,
 *   arguments}}], tool_call_id?}`, tools as `{type: 'function', function: {name, description, parameters}}`,
 *   `responseFormat: 'json_object'` as `response_format: {type: 'json_object'}`,
 *   `maxTokens` as `max_tokens` (the field every compatible server accepts), `temperature` as `temperature`; a
 *   `json_schema` response format as `response_format: {type: 'json_schema', json_schema: {name, schema, strict?}}`,
 *   `topP`, `stop`, `seed`, `presencePenalty`, `frequencyPenalty`, `logitBias`, `reasoningEffort`, `toolChoice` and
 *   `parallelToolCalls` (the last two only with tools) under their wire names, only when set; the model defaults to LLM_MODEL.
 * - Fallback model (`fallbackModel`; ./fallback.ts): when the model answers 429, 5xx or no connection, or times out,
 *   before any of its answer arrived, the request is sent once to the fallback model; the first model then gets no
 *   SDK retry of its own (the fallback is its retry), the fallback model the usual one.
 * - Streaming sends `stream: true, stream_options: {include_usage: true}`; text deltas are passed on as they come,
 *   tool-call deltas are accumulated by `index` (id and name arrive first, `arguments` in pieces) and emitted whole
 *   once the stream ends; the usage chunk (empty `choices`) gives `usage`. A stream that ends before any
 *   `finish_reason` was cut short: unavailable.
 * - Time: LLM_TIMEOUT_MS bounds each attempt until the answer starts (SDK `timeout`) and, for a stream, every wait
 *   between two chunks.
 * - Retries (SDK `maxRetries`, default 1): one retry for a failed connection, 408, 409 and 5xx, after the SDK's
 *   backoff (~0.4–0.5 s) or the server's Retry-After when it is at most `MAX_RETRY_WAIT_SECONDS`; a 429, or a longer
 *   Retry-After, is never waited for here: it surfaces at once (rate_limited with `retryAfterSeconds`), so the API
 *   can answer 503 with Retry-After and an activity retries on its own schedule.
 * - Errors become `LlmProviderError` (./errors): 429 → rate_limited; 5xx → unavailable; 401/403 → auth; 408 or no
 *   answer in time → timeout; no connection → unavailable; any other 4xx → bad_request. Aborting through the
 *   request's signal rejects with the signal's reason.
 * - Usage is the server's; a server that reports none gets the local `gpt-tokenizer` count (./tokens).
 */
import type OpenAI from 'openai';
import { createOpenAiClient, openAiSdk } from '../openaiClient';
import type {
  ChatCompletion,
  ChatCompletionChunk,
  ChatCompletionCreateParamsBase,
  ChatCompletionMessageParam,
  ChatCompletionTool,
} from 'openai/resources/chat/completions';
import { LlmProviderError } from './errors';
import { completeWithFallback, streamWithFallback } from './fallback';
import type { LlmMessage, LlmProvider, LlmRequest, LlmResponse, LlmStreamEvent, LlmToolCall, LlmUsage } from './index';
import { countMessages, countTokens } from './tokens';

/** Longest server Retry-After the adapter waits out before its one retry, seconds. */
export const MAX_RETRY_WAIT_SECONDS = 2;

/** Options of the OpenAI-compatible adapter (docs/configuration.md). */
export interface OpenAiLlmOptions {
  /** LLM_BASE_URL, e.g. `https://api.openai.com/v1` (the path before `/chat/completions`). */
  baseUrl: string;
  /** LLM_API_KEY, sent as a Bearer token. */
  apiKey: string;
  /** LLM_MODEL: the model of a request that names none. */
  model: string;
  /** LLM_TIMEOUT_MS: bound of one attempt and of each wait between stream chunks, ms (default 30000). */
  timeoutMs?: number;
  /** SDK retries after a transient failure (default 1; module docstring). */
  maxRetries?: number;
}

/** The OpenAI-compatible adapter (module docstring). */
export class OpenAiLlm implements LlmProvider {
  readonly name = 'openai';
  private readonly client: OpenAI;
  private readonly model: string;
  private readonly timeoutMs: number;

  /** @param opts base URL, key, default model, timeout (ms) and retries */
  constructor(opts: OpenAiLlmOptions) {
    this.model = opts.model;
    this.timeoutMs = opts.timeoutMs ?? 30_000;
    this.client = createOpenAiClient({ apiKey: opts.apiKey, baseUrl: opts.baseUrl, timeoutMs: this.timeoutMs, maxRetries: opts.maxRetries ?? 1, fetch: boundedRetryFetch });
  }

  /** One answer (`stream: false`), from the fallback model when the model failed (module docstring). @throws LlmProviderError; the signal's reason when aborted */
  complete(req: LlmRequest): Promise<LlmResponse> {
    return completeWithFallback(req, this.model, (r, followed) => this.completeOnce(r, followed));
  }

  /** The answer as `LlmStreamEvent`s (module docstring), from the fallback model when the model failed before its first event. @throws LlmProviderError; the signal's reason when aborted */
  stream(req: LlmRequest): AsyncIterable<LlmStreamEvent> {
    return streamWithFallback(req, this.model, (r, followed) => this.streamOnce(r, followed));
  }

  /** One answer of one model; `followed`: a fallback follows a failure, so the SDK does not retry. */
  private async completeOnce(req: LlmRequest, followed: boolean): Promise<LlmResponse> {
    let completion: ChatCompletion;
    try {
      completion = await this.client.chat.completions.create({ ...this.params(req), stream: false }, { signal: req.signal, ...(followed ? { maxRetries: 0 } : {}) });
    } catch (err) {
      throw toProviderError(err, req.signal);
    }
    const choice = completion.choices[0];
    const toolCalls: LlmToolCall[] = [];
    for (const c of choice?.message.tool_calls ?? []) {
      if (c.type === 'function') toolCalls.push({ id: c.id, name: c.function.name, arguments: c.function.arguments });
    }
    const content = choice?.message.content ?? null;
    return {
      content,
      toolCalls,
      finishReason: finishReason(choice?.finish_reason, toolCalls.length > 0),
      usage: completion.usage ? fromWireUsage(completion.usage) : localUsage(req.messages, content, toolCalls),
      model: completion.model || req.model || this.model,
    };
  }

  /** The streamed answer of one model; `followed`: a fallback follows a failure, so the SDK does not retry. */
  private async *streamOnce(req: LlmRequest, followed: boolean): AsyncIterable<LlmStreamEvent> {
    // One controller for the caller's abort and the idle timeout between chunks.
    const controller = new AbortController();
    const onAbort = () => controller.abort(req.signal?.reason);
    if (req.signal?.aborted) throw req.signal.reason;
    req.signal?.addEventListener('abort', onAbort, { once: true });
    let idle: NodeJS.Timeout | undefined;
    let timedOut = false;
    const arm = () => {
      clearTimeout(idle);
      idle = setTimeout(() => {
        timedOut = true;
        controller.abort(new LlmProviderError('timeout', `no chunk from the LLM within ${this.timeoutMs} ms`));
      }, this.timeoutMs);
    };
    const fail = (err: unknown) =>
      timedOut ? new LlmProviderError('timeout', `no chunk from the LLM within ${this.timeoutMs} ms`, { cause: err }) : toProviderError(err, req.signal);

    const calls = new Map<number, LlmToolCall>();
    let content: string | null = null;
    let finish: string | null | undefined;
    let usage: LlmUsage | undefined;
    let model = '';
    try {
      let chunks: AsyncIterable<ChatCompletionChunk>;
      try {
        arm();
        chunks = await this.client.chat.completions.create(
          { ...this.params(req), stream: true, stream_options: { include_usage: true } },
          { signal: controller.signal, ...(followed ? { maxRetries: 0 } : {}) },
        );
      } catch (err) {
        throw fail(err);
      }
      const iterator = chunks[Symbol.asyncIterator]();
      for (;;) {
        let next: IteratorResult<ChatCompletionChunk>;
        try {
          arm();
          next = await iterator.next();
        } catch (err) {
          throw fail(err);
        }
        if (next.done) {
          // The SDK ends its iteration quietly when aborted: tell the caller why, and a cut stream from a whole one.
          if (timedOut || req.signal?.aborted) throw fail(new Error('aborted'));
          if (finish === undefined) throw new LlmProviderError('unavailable', "the LLM's stream ended before its finish_reason");
          break;
        }
        const chunk = next.value;
        if (chunk.model) model = chunk.model;
        if (chunk.usage) usage = fromWireUsage(chunk.usage);
        const choice = chunk.choices?.[0];
        if (!choice) continue;
        if (choice.finish_reason) finish = choice.finish_reason;
        const delta = choice.delta;
        if (delta?.content) {
          content = (content ?? '') + delta.content;
          yield { type: 'delta', content: delta.content };
        }
        for (const d of delta?.tool_calls ?? []) {
          const call = calls.get(d.index) ?? { id: '', name: '', arguments: '' };
          if (d.id) call.id = d.id;
          if (d.function?.name) call.name += d.function.name;
          if (d.function?.arguments) call.arguments += d.function.arguments;
          calls.set(d.index, call);
        }
      }
    } finally {
      clearTimeout(idle);
      req.signal?.removeEventListener('abort', onAbort);
    }
    const toolCalls = [...calls.entries()].sort((a, b) => a[0] - b[0]).map(([, c]) => c);
    for (const call of toolCalls) yield { type: 'tool_call', call };
    yield {
      type: 'done',
      response: {
        content,
        toolCalls,
        finishReason: finishReason(finish, toolCalls.length > 0),
        usage: usage ?? localUsage(req.messages, content, toolCalls),
        model: model || req.model || this.model,
      },
    };
  }

  /** The wire request without `stream` (module docstring). @throws LlmProviderError bad_request for a tool message without `toolCallId` */
  private params(req: LlmRequest): ChatCompletionCreateParamsBase {
    const params: ChatCompletionCreateParamsBase = { model: req.model || this.model, messages: req.messages.map(toWireMessage) };
    if (req.tools?.length) {
      params.tools = req.tools.map(
        (t): ChatCompletionTool => ({ type: 'function', function: { name: t.name, description: t.description, parameters: t.parameters } }),
      );
    }
    if (req.temperature !== undefined) params.temperature = req.temperature;
    if (req.maxTokens !== undefined) params.max_tokens = req.maxTokens;
    if (req.responseFormat === 'json_object') params.response_format = { type: 'json_object' };
    else if (req.responseFormat) {
      const f = req.responseFormat;
      params.response_format = {
        type: 'json_schema',
        json_schema: { name: f.name, schema: f.schema, ...(f.description !== undefined ? { description: f.description } : {}), ...(f.strict !== undefined ? { strict: f.strict } : {}) },
      };
    }
    if (req.topP !== undefined) params.top_p = req.topP;
    if (req.stop?.length) params.stop = req.stop;
    if (req.seed !== undefined) params.seed = req.seed;
    if (req.presencePenalty !== undefined) params.presence_penalty = req.presencePenalty;
    if (req.frequencyPenalty !== undefined) params.frequency_penalty = req.frequencyPenalty;
    if (req.logitBias) params.logit_bias = req.logitBias;
    if (req.reasoningEffort !== undefined) params.reasoning_effort = req.reasoningEffort as ChatCompletionCreateParamsBase['reasoning_effort'];
    if (req.toolChoice !== undefined && params.tools) params.tool_choice = req.toolChoice === 'auto' || req.toolChoice === 'none' || req.toolChoice === 'required' ? req.toolChoice : { type: 'function', function: { name: req.toolChoice.name } };
    if (req.parallelToolCalls !== undefined && params.tools) params.parallel_tool_calls = req.parallelToolCalls;
    return params;
  }
}

/** One message in the chat-completions wire format. @throws LlmProviderError bad_request for a tool message without `toolCallId` */
export function toWireMessage(m: LlmMessage): ChatCompletionMessageParam {
  const name = m.name ? { name: m.name } : {};
  switch (m.role) {
    case 'system':
      return { role: 'system', content: m.content ?? '', ...name };
    case 'user':
      return { role: 'user', content: m.content ?? '', ...name };
    case 'assistant':
      return {
        role: 'assistant',
        content: m.content,
        ...name,
        ...(m.toolCalls?.length
          ? { tool_calls: m.toolCalls.map((c) => ({ id: c.id, type: 'function' as const, function: { name: c.name, arguments: c.arguments } })) }
          : {}),
      };
    case 'tool':
      if (!m.toolCallId) throw new LlmProviderError('bad_request', 'a tool message needs the toolCallId of the call it answers');
      return { role: 'tool', content: m.content ?? '', tool_call_id: m.toolCallId };
  }
}

function finishReason(wire: string | null | undefined, hasCalls: boolean): LlmResponse['finishReason'] {
  switch (wire) {
    case 'length':
      return 'length';
    case 'content_filter':
      return 'content_filter';
    case 'tool_calls':
    case 'function_call':
      return 'tool_calls';
    default:
      return hasCalls ? 'tool_calls' : 'stop';
  }
}

function fromWireUsage(u: { prompt_tokens: number; completion_tokens: number; total_tokens: number }): LlmUsage {
  return { promptTokens: u.prompt_tokens, completionTokens: u.completion_tokens, totalTokens: u.total_tokens };
}

function localUsage(messages: LlmMessage[], content: string | null, calls: LlmToolCall[]): LlmUsage {
  const promptTokens = countMessages(messages);
  const completionTokens = countTokens(content ?? '') + calls.reduce((n, c) => n + countTokens(c.name) + countTokens(c.arguments), 0);
  return { promptTokens, completionTokens, totalTokens: promptTokens + completionTokens };
}

/**
 * Seconds of a `Retry-After` (RFC 9110 §10.2.3: delay-seconds or an HTTP-date) or `retry-after-ms` header,
 * rounded up; undefined when absent or unreadable.
 */
export function retryAfterSeconds(headers: Headers | undefined, now = Date.now()): number | undefined {
  const ms = headers?.get('retry-after-ms');
  const raw = headers?.get('retry-after');
  if (raw) {
    const seconds = Number(raw);
    if (Number.isFinite(seconds) && seconds >= 0) return Math.ceil(seconds);
    const at = Date.parse(raw);
    if (!Number.isNaN(at)) return Math.max(0, Math.ceil((at - now) / 1000));
  }
  if (ms && Number.isFinite(Number(ms)) && Number(ms) >= 0) return Math.ceil(Number(ms) / 1000);
  return undefined;
}

/**
 * `fetch` for the SDK that marks a 429, or an answer asking to wait longer than `MAX_RETRY_WAIT_SECONDS`, as not to
 * be retried (`x-should-retry: false`, which the SDK honours), so the adapter never sleeps on a long Retry-After.
 */
async function boundedRetryFetch(input: string | URL | Request, init?: RequestInit): Promise<Response> {
  const res = await fetch(input, init);
  if (res.ok) return res;
  const wait = retryAfterSeconds(res.headers);
  if (res.status !== 429 && (wait === undefined || wait <= MAX_RETRY_WAIT_SECONDS)) return res;
  const headers = new Headers(res.headers);
  headers.set('x-should-retry', 'false');
  return new Response(res.body, { status: res.status, statusText: res.statusText, headers });
}

/** An SDK failure as `LlmProviderError` (module docstring); the signal's reason when the caller aborted. */
export function toProviderError(err: unknown, signal?: AbortSignal): unknown {
  if (err instanceof LlmProviderError) return err;
  if (signal?.aborted) return signal.reason;
  const sdk = openAiSdk.loaded();
  if (sdk && err instanceof sdk.APIUserAbortError) return err;
  if (sdk && err instanceof sdk.APIConnectionTimeoutError) return new LlmProviderError('timeout', 'the LLM did not answer in time', { cause: err });
  if (sdk && err instanceof sdk.APIConnectionError) return new LlmProviderError('unavailable', `cannot reach the LLM: ${err.message}`, { cause: err });
  if (sdk && err instanceof sdk.APIError && typeof err.status === 'number') {
    const status = err.status;
    const message = `the LLM answered ${status}: ${err.message}`;
    if (status === 429) return new LlmProviderError('rate_limited', message, { status, retryAfterSeconds: retryAfterSeconds(err.headers), cause: err });
    if (status === 401 || status === 403) return new LlmProviderError('auth', message, { status, cause: err });
    if (status === 408) return new LlmProviderError('timeout', message, { status, cause: err });
    if (status >= 500) return new LlmProviderError('unavailable', message, { status, cause: err });
    return new LlmProviderError('bad_request', message, { status, cause: err });
  }
  // A stream cut short or unreadable: the upstream failed mid-answer.
  return new LlmProviderError('unavailable', `the LLM's answer broke off: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
}
