/**
 * `POST /chat/completions` (createChatCompletion, chat:write; docs/api-notes.md "OpenAI compatibility"): the OpenAI chat
 * completions wire format (OpenAI API reference "Chat Completions", "The chat completion chunk object", "Function
 * calling", "Structured Outputs"), so OpenAI clients work unchanged. `model` names the agent: `agt_…` (the published
 * version), `agt_…@draft` (the draft, compiled now) or `agt_…@v3` (version 3).
 *
 * A request ending with a user message is a new conversation over the history it carries: earlier `user`/`assistant`
 * text is stored as the conversation's opening, `system`/`developer` messages are ignored (the agent's configuration
 * decides). The request's function `tools` join the agent's skills for the turn; when the model calls one, the
 * completion returns the call (`finish_reason: "tool_calls"`, ids `call_<conversation id>_<n>`), nothing runs here, and
 * the conversation stays open. A request ending with the `tool` results of those calls continues that conversation.
 * Otherwise the conversation ends `ended_by_api` with the answer. Every documented parameter is accepted; which are
 * honoured, passed to the upstream model or refused is the table in docs/api-notes.md. Streams end with
 * `data: [DONE]` as OpenAI clients expect (the service's own streams end with `event: done`, spec "Events"). Errors
 * are in OpenAI's shape (api/middleware/problem.ts `openAiErrorBody`), in a stream too.
 */
import { PassThrough } from 'node:stream';
import type { Handler } from '../context';
import { orgOf } from '../http';
import { openAiErrorBody, toApiError } from '../middleware/problem';
import { ApiError, validationError, type FieldError } from '../../domain/errors';
import { validateBody } from '../../domain/validation';
import type { LlmMessage, LlmRequest, LlmTool, LlmToolCall } from '../../domain/conversations/llm';
import type { TurnOptions } from '../../domain/conversations/runtime';
import { compileAnswerSchema, structuredOutputProblem } from '../../domain/conversations/structuredOutput';
import { finishConversation, requireConversation, sendMessage, startConversation, type StoredTurnOutcome } from '../../services/conversations/service';
import type { ChatCompletionCreate, ChatCompletionMessage } from '../../schemas/types/chat';
import { conversationDeps, STREAM_RECHECK_MS } from './chat';

/** Conversation variable names (docs/api-notes.md "Variables"). */
const VARIABLE_NAME = /^[a-z][a-z0-9_]{0,63}$/;

/** Text of an OpenAI message's content (a string or text parts). */
function textOf(content: ChatCompletionMessage['content']): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) return content.map((p) => (p.type === 'text' && typeof p.text === 'string' ? p.text : '')).join('');
  return '';
}

/** The ids `model` may take (`agt_…`, `agt_…@draft`, `agt_…@vN`). */
const MODEL_ID = /^agt_[A-Za-z0-9]{8,40}(@(draft|v[0-9]{1,9}))?$/;

/**
 * 404 `model_not_found` naming `model`, as OpenAI answers a model that does not exist or the key cannot reach (OpenAI
 * API reference "Error codes"; the official clients raise `NotFoundError`).
 */
function modelNotFound(model: string, why: string): ApiError {
  return new ApiError(404, 'model_not_found', `The model '${model}' does not exist or you do not have access to it (models are this organization's agents: GET /models)`, {
    errors: [{ field: 'model', message: why }],
  });
}

/** `agt_…[@draft|@vN]` → agent id and pin. */
function parseModel(model: string): { agentId: string; draftMode: boolean; versionNumber?: number } {
  const [agentId, pin] = model.split('@');
  if (pin === 'draft') return { agentId, draftMode: true };
  if (pin) return { agentId, draftMode: false, versionNumber: Number(pin.slice(1)) };
  return { agentId, draftMode: false };
}

/** Id of the `index`th client tool call a completion of `conversationId` returns (the next request names it). */
function clientCallId(conversationId: string, index: number): string {
  return `call_${conversationId}_${index}`;
}

/** The conversation and call index a {@link clientCallId} names, or null. */
function parseClientCallId(id: string): { conversationId: string; index: number } | null {
  const m = /^call_(cnv_[A-Za-z0-9]{8,40})_(\d{1,3})$/.exec(id);
  return m ? { conversationId: m[1], index: Number(m[2]) } : null;
}

/**
 * What the request asks of the turn, and the parameters refused (docs/api-notes.md "OpenAI compatibility"): sampling
 * for the model, client tools, `tool_choice`, `response_format`. Refusals: `n` > 1, `logprobs`, `top_logprobs`, audio
 * output, `web_search_options`, the deprecated `functions`/`function_call`, custom tools and non-text content parts.
 * @returns the turn's options and every refused field
 */
export function completionOptions(body: ChatCompletionCreate): { options: TurnOptions; errors: FieldError[] } {
  const errors: FieldError[] = [];
  const refuse = (field: string, message: string) => errors.push({ field, message });
  if (body.n !== undefined && body.n !== null && body.n !== 1) refuse('n', 'only one choice is generated; send 1 or omit it');
  if (body.logprobs) refuse('logprobs', 'log probabilities are not available; omit it or send false');
  if (body.top_logprobs) refuse('top_logprobs', 'log probabilities are not available; omit it');
  if (body.audio) refuse('audio', 'audio output is not available; use the voice channel (POST /calls)');
  if (body.modalities?.some((m) => m !== 'text')) refuse('modalities', 'only "text" is available');
  if (body.web_search_options) refuse('web_search_options', 'web search is not available; give the agent knowledge sources or skills');
  if (body.functions) refuse('functions', 'deprecated by OpenAI; send tools');
  if (body.function_call) refuse('function_call', 'deprecated by OpenAI; send tool_choice');
  body.messages.forEach((m, i) => {
    if (Array.isArray(m.content)) m.content.forEach((p, j) => p.type !== 'text' && p.type !== 'refusal' && refuse(`messages[${i}].content[${j}].type`, 'only text content parts are read'));
  });
  const sampling: NonNullable<TurnOptions['sampling']> = {};
  if (body.temperature != null) sampling.temperature = body.temperature;
  if (body.top_p != null) sampling.topP = body.top_p;
  if (body.seed != null) sampling.seed = body.seed;
  if (body.presence_penalty != null) sampling.presencePenalty = body.presence_penalty;
  if (body.frequency_penalty != null) sampling.frequencyPenalty = body.frequency_penalty;
  if (body.logit_bias) sampling.logitBias = body.logit_bias;
  if (body.reasoning_effort) sampling.reasoningEffort = body.reasoning_effort;
  if (body.parallel_tool_calls !== undefined) sampling.parallelToolCalls = body.parallel_tool_calls;
  const limits = [body.max_tokens, body.max_completion_tokens].filter((n): n is number => typeof n === 'number');
  if (limits.length) sampling.maxTokens = Math.min(...limits);
  if (body.stop != null) {
    const stop = typeof body.stop === 'string' ? [body.stop] : body.stop;
    if (stop.length > 4) refuse('stop', 'at most 4 sequences');
    else if (stop.length) sampling.stop = stop;
  }
  const options: TurnOptions = { sampling };

  const tools: LlmTool[] = [];
  (body.tools ?? []).forEach((t, i) => {
    if (t.type !== 'function' || !t.function) return refuse(`tools[${i}].type`, 'only function tools are available');
    tools.push({ name: t.function.name, description: t.function.description ?? '', parameters: t.function.parameters ?? { type: 'object', properties: {} } });
  });
  if (tools.length) options.clientTools = tools;
  const choice = body.tool_choice;
  if (typeof choice === 'string') {
    if (choice === 'required' && !tools.length) refuse('tool_choice', '"required" needs tools');
    else if (tools.length) options.toolChoice = choice;
  } else if (choice?.type === 'function') {
    if (!tools.some((t) => t.name === choice.function.name)) refuse('tool_choice.function.name', 'names no function of tools');
    else options.toolChoice = { name: choice.function.name };
  } else if (choice) refuse('tool_choice.type', 'only "none", "auto", "required" or a named function');

  const format = body.response_format;
  if (format?.type === 'json_object') options.responseFormat = 'json_object';
  else if (format?.type === 'json_schema') {
    const schema = format.json_schema.schema ?? { type: 'object' };
    const compiled = compileAnswerSchema(schema);
    if (typeof compiled === 'string') refuse('response_format.json_schema.schema', `is not a usable JSON Schema: ${compiled}`);
    else {
      const f: Exclude<NonNullable<LlmRequest['responseFormat']>, 'json_object'> = { type: 'json_schema', name: format.json_schema.name, schema };
      if (format.json_schema.description !== undefined) f.description = format.json_schema.description;
      if (format.json_schema.strict != null) f.strict = format.json_schema.strict;
      options.responseFormat = f;
    }
  }
  return { options, errors };
}

/**
 * The caller's identifiers stored on the conversation (flat, as conversation metadata is): `user`,
 * `safety_identifier` and each `metadata` pair as `metadata.<key>`; metadata keys that are variable names also set
 * conversation variables.
 */
function storedMetadata(body: ChatCompletionCreate): { metadata: Record<string, string>; variables: Record<string, string>; errors: FieldError[] } {
  const metadata: Record<string, string> = { api: 'chat.completions' };
  const variables: Record<string, string> = {};
  const errors: FieldError[] = [];
  if (body.user) metadata.user = body.user;
  if (body.safety_identifier) metadata.safety_identifier = body.safety_identifier;
  for (const [k, v] of Object.entries(body.metadata ?? {})) {
    if (k.length > 64) errors.push({ field: `metadata.${k}`, message: 'keys are at most 64 characters' });
    else if (v.length > 512) errors.push({ field: `metadata.${k}`, message: 'must be at most 512 characters' });
    else {
      metadata[`metadata.${k}`] = v;
      if (VARIABLE_NAME.test(k)) variables[k] = v;
    }
  }
  return { metadata, variables, errors };
}

/** POST /chat/completions: see the module comment. 404 `model_not_found` (param `model`: no such agent or version), 409 `no_published_version`. */
export const chatCompletion: Handler = async (ctx, deps) => {
  const body = validateBody<ChatCompletionCreate>('ChatCompletionCreate', ctx.request.body);
  if (!MODEL_ID.test(body.model)) throw modelNotFound(body.model, 'must be an agent id (agt_…), agt_…@draft or agt_…@vN');
  const { options, errors } = completionOptions(body);
  const meta = storedMetadata(body);
  errors.push(...meta.errors);
  const lastIndex = body.messages.length - 1;
  const last = body.messages[lastIndex];
  // The tool results ending the request, answering the calls a previous completion returned.
  let firstResult = body.messages.length;
  while (firstResult > 0 && body.messages[firstResult - 1].role === 'tool') firstResult--;
  const results = body.messages.slice(firstResult);
  const userText = textOf(last.content);
  if (!results.length) {
    if (last.role !== 'user' || !userText.trim()) errors.push({ field: `messages[${lastIndex}]`, message: 'the last message must be a user message with text, or tool results' });
    else if (userText.length > 10_000) errors.push({ field: `messages[${lastIndex}].content`, message: 'must be at most 10000 characters' });
  }
  const targets = results.map((m, i) => ({ at: firstResult + i, id: m.tool_call_id ?? '', parsed: parseClientCallId(m.tool_call_id ?? '') }));
  for (const t of targets) {
    if (!t.parsed || t.parsed.conversationId !== targets[0].parsed?.conversationId) {
      errors.push({ field: `messages[${t.at}].tool_call_id`, message: 'names no pending tool call of a completion of this service' });
    }
  }
  if (errors.length) throw validationError(errors);

  let conversation;
  let toolOutputs: NonNullable<TurnOptions['toolOutputs']> | undefined;
  if (results.length) {
    conversation = await requireConversation(deps.db, orgOf(ctx), targets[0].parsed!.conversationId, ['chat'], { withHistory: true });
    if (conversation.metadata.api !== 'chat.completions') throw new ApiError(404, 'conversation_not_found', 'Conversation was not found');
    if (parseModel(body.model).agentId !== conversation.agentId) throw validationError([{ field: 'model', message: 'must name the agent whose completion returned these tool calls' }]);
    // The calls waiting: those of the last assistant message with calls that no stored tool message answers (the
    // agent's own skills called in the same answer ran and were answered already).
    const recent = conversation.recent ?? [];
    let at = recent.length - 1;
    while (at >= 0 && recent[at].role === 'tool') at--;
    const answeredIds = new Set(recent.slice(at + 1).map((m) => m.toolCallId));
    const calls = at >= 0 && recent[at].role === 'assistant' ? (recent[at].toolCalls ?? []).filter((call) => !answeredIds.has(call.id)) : [];
    if (!calls.length && conversation.status === 'active') {
      throw new ApiError(409, 'tool_results_not_pending', 'The conversation has no tool calls waiting for results; send a user message in a new request');
    }
    const answered = new Map(targets.map((t, i) => [t.parsed!.index, results[i]]));
    const missing = calls.map((_c, i) => i).filter((i) => !answered.has(i));
    const unknown = targets.filter((t) => t.parsed!.index >= calls.length);
    if (conversation.status === 'active' && (missing.length || unknown.length)) {
      throw validationError([
        ...missing.map((i) => ({ field: 'messages', message: `no tool message answers ${clientCallId(conversation!.id, i)}` })),
        ...unknown.map((t) => ({ field: `messages[${t.at}].tool_call_id`, message: 'names no pending tool call of this conversation' })),
      ]);
    }
    toolOutputs = calls.map((call, i) => ({ callId: call.id, name: call.name, output: textOf(answered.get(i)?.content) }));
  } else {
    const seed: LlmMessage[] = body.messages
      .slice(0, -1)
      .filter((m) => m.role === 'user' || m.role === 'assistant')
      .map((m) => ({ role: m.role as 'user' | 'assistant', content: textOf(m.content) }))
      .filter((m) => m.content);
    const pin = parseModel(body.model);
    ({ conversation } = await startConversation(deps.db, orgOf(ctx), {
      ...pin,
      channel: 'chat',
      variables: meta.variables,
      metadata: meta.metadata,
      keyId: ctx.state.auth?.keyId ?? null,
      seed,
      // Without `@vN`/`@draft` the agent's traffic split picks the version, sticky on the caller's end user.
      stickinessKey: body.safety_identifier ?? body.user ?? null,
    }).catch((err: unknown) => {
      const e = toApiError(err);
      if (e && e.status === 404) throw modelNotFound(body.model, `names no agent (or version) of this organization (${e.code})`);
      throw err;
    }));
  }
  const c = conversation;
  const id = `chatcmpl-${c.id}`;
  const created = Math.floor(Date.parse(c.startedAt) / 1000);
  const cdeps = conversationDeps(deps);
  const turnOptions: TurnOptions = { ...options, ...(toolOutputs ? { toolOutputs } : {}) };
  /** Runs the turn; the conversation ends with it unless the answer is client tool calls (or a continuation failed). */
  const run = async (onDelta?: (s: string) => void): Promise<{ out: StoredTurnOutcome; calls: LlmToolCall[] }> => {
    let out: StoredTurnOutcome | undefined;
    try {
      out = await sendMessage(cdeps, c, results.length ? null : userText, (e) => e.type === 'message.delta' && onDelta?.(e.data.content), turnOptions);
      const calls = (out.result.clientCalls ?? []).map((call, i) => ({ ...call, id: clientCallId(c.id, i) }));
      return { out, calls };
    } finally {
      const waiting = !!out?.result.clientCalls?.length && out.conversation.status === 'active';
      if (!waiting && (out || !results.length)) await finishConversation(deps.db, out?.conversation ?? c, 'ended_by_api').catch(() => undefined);
    }
  };
  /** The answer's problem when it does not keep to `response_format` (the turn is stored; the answer is not given). */
  const formatProblem = (text: string, calls: LlmToolCall[]): ApiError | null => {
    if (!options.responseFormat || calls.length) return null;
    const why = structuredOutputProblem(text, options.responseFormat);
    return why ? new ApiError(502, 'response_format_unmet', `The model's answer does not keep to response_format: ${why}`, { errors: [{ field: 'response_format', message: why }] }) : null;
  };
  const usageOf = (u: { promptTokens: number; completionTokens: number; totalTokens: number }) => ({
    prompt_tokens: u.promptTokens,
    completion_tokens: u.completionTokens,
    total_tokens: u.totalTokens,
  });
  const wireCalls = (calls: LlmToolCall[]) => calls.map((call) => ({ id: call.id, type: 'function' as const, function: { name: call.name, arguments: call.arguments } }));
  const finishReason = (out: StoredTurnOutcome, calls: LlmToolCall[]) => (calls.length ? 'tool_calls' : out.result.finishReason === 'length' ? 'length' : 'stop');

  if (!body.stream) {
    const { out, calls } = await run();
    const text = out.result.reply;
    const bad = formatProblem(text, calls);
    if (bad) throw bad;
    const message = calls.length ? { role: 'assistant', content: text || null, refusal: null, tool_calls: wireCalls(calls) } : { role: 'assistant', content: text, refusal: null };
    const completion = {
      id,
      object: 'chat.completion',
      created,
      model: body.model,
      system_fingerprint: c.versionId ?? `draft-${c.draftVersion}`,
      choices: [{ index: 0, message, logprobs: null, finish_reason: finishReason(out, calls) }],
      usage: usageOf(out.result.usage),
    };
    return { rawJson: JSON.stringify(completion) };
  }

  const stream = new PassThrough();
  let closed = false;
  const send = (data: unknown) => !closed && !stream.destroyed && stream.write(`data: ${JSON.stringify(data)}\n\n`);
  const close = () => {
    if (closed) return;
    closed = true;
    clearInterval(recheck);
    if (!stream.destroyed) stream.end('data: [DONE]\n\n');
  };
  // An open stream re-checks its credential as the chat session stream does (docs/security.md "Revocation"): once
  // revoked it ends with an error event in OpenAI's shape and [DONE]; the turn runs on and is stored.
  const still = deps.credentialStillValid;
  const recheck = setInterval(() => {
    still?.(ctx).then(
      (ok) => {
        if (ok || closed) return;
        send(openAiErrorBody(new ApiError(401, 'credential_revoked', 'The credential of this stream was revoked; the stream is closed')));
        close();
      },
      (err: unknown) => ctx.state.log.warn({ err }, 'chat completion stream: re-checking the credential failed'),
    );
  }, STREAM_RECHECK_MS);
  recheck.unref();
  const chunk = (delta: Record<string, unknown>, finish: string | null) => ({
    id,
    object: 'chat.completion.chunk',
    created,
    model: body.model,
    system_fingerprint: c.versionId ?? `draft-${c.draftVersion}`,
    choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
  });
  send(chunk({ role: 'assistant', content: '' }, null));
  run((content) => send(chunk({ content }, null)))
    .then(({ out, calls }) => {
      const bad = formatProblem(out.result.reply, calls);
      if (bad) throw bad;
      // Tool calls as OpenAI streams them: index, id and name first, then the arguments in pieces.
      calls.forEach((call, index) => {
        send(chunk({ tool_calls: [{ index, id: call.id, type: 'function', function: { name: call.name, arguments: '' } }] }, null));
        for (const piece of call.arguments.match(/[\s\S]{1,16}/g) ?? []) send(chunk({ tool_calls: [{ index, function: { arguments: piece } }] }, null));
      });
      send(chunk({}, finishReason(out, calls)));
      if (body.stream_options?.include_usage) send({ id, object: 'chat.completion.chunk', created, model: body.model, choices: [], usage: usageOf(out.result.usage) });
    })
    .catch((err: unknown) => {
      const e = toApiError(err) ?? new ApiError(500, 'internal_error', 'The turn failed; nothing was stored');
      if (e.status >= 500 && e.code !== 'response_format_unmet') ctx.state.log.error({ err }, 'chat completion failed');
      // The openai client raises an APIError for a data event carrying `error` (OpenAI API reference "Streaming").
      send(openAiErrorBody(e));
    })
    .finally(close);
  return { stream: { body: stream, contentType: 'text/event-stream; charset=utf-8' }, headers: { 'Cache-Control': 'no-cache', 'X-Accel-Buffering': 'no' } };
};
