/**
 * The sandbox LLM (docs/api-notes.md "Sandbox LLM"): the default adapter, deterministic and offline. It answers like a model
 * that follows the conversation runtime's instructions, from `LlmRequest.hints` and a few documented patterns, so
 * conversations, playbooks, tools and knowledge can be exercised end to end without a model. Same request, same
 * answer — ids included; nothing random, no clock.
 *
 * Rules, first match wins:
 * 0. `hints.analysis` → the JSON of `sandboxAnalysis` (a post-conversation analysis read from the transcript);
 * 1. `hints.refusal` → said verbatim; 2. `hints.say` → verbatim;
 * 3. no user message yet and `hints.greeting` → the greeting verbatim;
 * 4. the last message(s) are `tool` results → what happened as a person would say it (`toolResultSentence`): never
 *    the JSON, the error text, a tool name or an identifier not asked for; dates and times in words in
 *    `hints.timeZone`;
 * 5. `tools` given and the last message is a user message that names a tool (`matchTool`), asks for a person while the
 *    `escalate` tool is offered (`matchEscalation`), or starts a playbook
 *    of `hints.playbooks` by a trigger phrase or the key words of its `whenToUse` (`matchPlaybook`) → one call of that
 *    tool with arguments read from the message (`extractArguments`), `finishReason: 'tool_calls'`, content null;
 * 6. `hints.ask` → verbatim; 7. `hints.knowledge` non-empty → the sentences that best match the question, headings
 *    left out, no citation (`answerFromKnowledge`);
 * 8. otherwise a fixed reply that echoes the last user message (`genericReply`).
 * Rule 5 follows `toolChoice`: `none` calls nothing, a named function is called whatever the message says, `required`
 * calls the tool the message names, else the first tool. Between rules 5 and 6: a `responseFormat` → one JSON object
 * (`structuredAnswer`). `stop` ends a text answer before the first stop sequence.
 * Before rule 0: `hints.classification` (a semantic topic guardrail) → the JSON of `sandboxClassification`, which
 * decides by key words (docs/api-notes.md "Sandbox LLM").
 * Failures by model name, so a fallback model can be exercised offline: a model ending in `-rate-limited` fails as
 * `rate_limited` (an upstream 429), `-unavailable` as `unavailable` (a 5xx), `-timeout` as `timeout`, at once; then
 * `fallbackModel`, when the request has one, answers instead (./fallback.ts).
 * `maxTokens` cuts a text answer to that many tokens (`finishReason: 'length'`). Usage comes from `gpt-tokenizer`:
 * prompt = `countMessages(messages)`, completion = tokens of the text (of the name plus the arguments for a call).
 * Streaming yields one `delta` per token (./tokens `tokenPieces`), SANDBOX_LLM_TOKEN_DELAY_MS apart.
 * This file holds the adapter and the order of the rules; the rules live by what they answer: which tool to call and
 * with what (./sandboxTools.ts, rule 5), what to say without a tool (./sandboxReplies.ts, rules 4, 7, 8), the
 * analysis and the topic verdict (./sandboxJudging.ts), on the shared word handling of ./sandboxWords.ts.
 */
import { createHash } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { LlmMessage, LlmProvider, LlmRequest, LlmResponse, LlmStreamEvent, LlmToolCall, LlmUsage } from './index';
import { countMessages, countTokens, encodeTokens, tokenPieces } from './tokens';
import { decode } from 'gpt-tokenizer';
import { LlmProviderError, type LlmErrorKind } from './errors';
import { streamWithFallback } from './fallback';
import { extractArguments, matchEscalation, matchPlaybook, matchTool } from './sandboxTools';
import { answerFromKnowledge, genericReply, toolResultSentence } from './sandboxReplies';
import { sandboxAnalysis, sandboxClassification } from './sandboxJudging';

/** Options of the sandbox LLM. */
export interface SandboxLlmOptions {
  /** Pause before each streamed token after the first, ms (SANDBOX_LLM_TOKEN_DELAY_MS, default 0). */
  tokenDelayMs?: number;
}

/** The sandbox adapter (module docstring). */
export class SandboxLlm implements LlmProvider {
  readonly name = 'sandbox';
  private readonly tokenDelayMs: number;

  /** @param opts token delay in ms */
  constructor(opts: SandboxLlmOptions = {}) {
    this.tokenDelayMs = opts.tokenDelayMs ?? 0;
  }

  /** The answer at once (after the token delays a stream would take). @throws the signal's reason when aborted */
  async complete(req: LlmRequest): Promise<LlmResponse> {
    let done: LlmResponse | undefined;
    for await (const ev of this.stream(req)) if (ev.type === 'done') done = ev.response;
    return done!;
  }

  /** The answer token by token (module docstring), from `fallbackModel` when the model fails by its name. @throws LlmProviderError for a failing model name; the signal's reason when aborted */
  stream(req: LlmRequest): AsyncIterable<LlmStreamEvent> {
    return streamWithFallback(req, 'sandbox', (r) => this.streamOnce(r));
  }

  private async *streamOnce(req: LlmRequest): AsyncIterable<LlmStreamEvent> {
    const signal = req.signal;
    signal?.throwIfAborted();
    const failure = sandboxModelFailure(req.model);
    if (failure) throw new LlmProviderError(failure, `the sandbox model ${req.model} fails as ${failure} (docs/api-notes.md "Sandbox LLM")`, failure === 'rate_limited' ? { status: 429, retryAfterSeconds: 1 } : failure === 'unavailable' ? { status: 503 } : {});
    const response = sandboxAnswer(req);
    if (response.content !== null) {
      let first = true;
      for (const piece of tokenPieces(response.content)) {
        if (!first && this.tokenDelayMs > 0) await pause(this.tokenDelayMs, signal);
        signal?.throwIfAborted();
        first = false;
        yield { type: 'delta', content: piece };
      }
    }
    for (const call of response.toolCalls) {
      signal?.throwIfAborted();
      yield { type: 'tool_call', call };
    }
    signal?.throwIfAborted();
    yield { type: 'done', response };
  }
}

/** The failure a sandbox model name asks for (module docstring): `…-rate-limited`, `…-unavailable`, `…-timeout`; else null. */
export function sandboxModelFailure(model: string | undefined): LlmErrorKind | null {
  if (!model) return null;
  if (model.endsWith('-rate-limited')) return 'rate_limited';
  if (model.endsWith('-unavailable')) return 'unavailable';
  if (model.endsWith('-timeout')) return 'timeout';
  return null;
}

/** Waits `ms`; rejects with the signal's reason when it aborts first. */
async function pause(ms: number, signal?: AbortSignal): Promise<void> {
  try {
    await sleep(ms, undefined, signal ? { signal } : undefined);
  } catch (err) {
    if (signal?.aborted) throw signal.reason;
    throw err;
  }
}

/** The sandbox's whole answer to `req` (module docstring), computed synchronously. */
export function sandboxAnswer(req: LlmRequest): LlmResponse {
  const model = req.model ?? 'sandbox';
  const hints = req.hints ?? {};
  const messages = req.messages;
  const last = messages[messages.length - 1];
  const hasUser = messages.some((m) => m.role === 'user');

  const text = (content: string): LlmResponse => {
    let out = content;
    let finishReason: LlmResponse['finishReason'] = 'stop';
    // `stop`: the answer ends before the first stop sequence, which is left out (chat-completions `stop`).
    for (const seq of req.stop ?? []) {
      const at = seq ? out.indexOf(seq) : -1;
      if (at >= 0) out = out.slice(0, at);
    }
    if (req.maxTokens !== undefined && req.maxTokens >= 0) {
      const ids = encodeTokens(content);
      if (ids.length > req.maxTokens) {
        out = decode(ids.slice(0, req.maxTokens)).replace(/\uFFFD+$/, '');
        finishReason = 'length';
      }
    }
    return { content: out, toolCalls: [], finishReason, usage: usage(messages, countTokens(out)), model };
  };

  if (hints.classification) return text(JSON.stringify(sandboxClassification(hints.classification)));
  if (hints.analysis) return text(JSON.stringify(sandboxAnalysis(hints.analysis)));
  if (hints.refusal) return text(hints.refusal);
  if (hints.say) return text(hints.say);
  if (!hasUser && hints.greeting) return text(hints.greeting);
  if (last?.role === 'tool') return text(toolResultSentence(messages, hints.timeZone));
  if (last?.role === 'user' && req.tools?.length && req.toolChoice !== 'none') {
    const message = last.content ?? '';
    const forced = typeof req.toolChoice === 'object' ? req.tools.find((t) => t.name === (req.toolChoice as { name: string }).name) : undefined;
    const tool =
      forced ??
      matchTool(message, req.tools) ??
      matchEscalation(message, req.tools) ??
      matchPlaybook(message, hints.playbooks ?? [], req.tools) ??
      (req.toolChoice === 'required' ? req.tools[0] : undefined);
    if (tool) {
      const args = JSON.stringify(extractArguments(last.content ?? '', tool.parameters));
      const call: LlmToolCall = { id: toolCallId(messages, tool.name, args), name: tool.name, arguments: args };
      return { content: null, toolCalls: [call], finishReason: 'tool_calls', usage: usage(messages, countTokens(call.name) + countTokens(args)), model };
    }
  }
  if (req.responseFormat && last?.role === 'user') return text(JSON.stringify(structuredAnswer(req, last.content ?? '')));
  if (hints.ask) return text(hints.ask);
  if (hints.knowledge?.length) {
    const question = [...messages].reverse().find((m) => m.role === 'user')?.content ?? '';
    return text(answerFromKnowledge(question, hints.knowledge));
  }
  return text(genericReply(messages));
}

/**
 * The JSON object the sandbox answers a `response_format` with (docs/api-notes.md "Sandbox LLM"): for `json_schema`,
 * the schema's properties read from the user's message by `extractArguments` (missing ones left out, so a required
 * property the message does not give makes a non-conforming answer); for `json_object`, `{"answer": <the text rules
 * 6–8 would say>}`.
 */
function structuredAnswer(req: LlmRequest, message: string): Record<string, unknown> {
  const f = req.responseFormat!;
  if (f !== 'json_object') return extractArguments(message, f.schema);
  const plain = sandboxAnswer({ ...req, responseFormat: undefined, tools: undefined, stop: undefined, maxTokens: undefined });
  return { answer: plain.content ?? '' };
}

function usage(messages: LlmMessage[], completionTokens: number): LlmUsage {
  const promptTokens = countMessages(messages);
  return { promptTokens, completionTokens, totalTokens: promptTokens + completionTokens };
}

/** `call_` + 24 hex digits of a hash of the conversation so far and the call: deterministic, distinct per turn. */
function toolCallId(messages: LlmMessage[], name: string, args: string): string {
  const h = createHash('sha256').update(JSON.stringify(messages)).update('\n').update(name).update('\n').update(args);
  return `call_${h.digest('hex').slice(0, 24)}`;
}
