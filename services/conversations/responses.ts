/**
 * The OpenAI-compatible Responses API over the conversation runtime (docs/api-notes.md "Responses API"; OpenAI API
 * reference "Responses", "Streaming events"). A response is one turn of a `chat` conversation: without
 * `previous_response_id` a conversation starts (pinned like `/chat/completions`: `model` names the agent), with it the
 * conversation of that response continues. The client's function tools are offered to the model beside the agent's
 * skills; a call of one ends the turn as a `function_call` output item, nothing runs server-side, and the next request
 * brings its `function_call_output`. The agent's own skills run server-side and never appear as function calls.
 * `text.format` `json_schema` asks the model for JSON and the answer is validated with ajv.
 *
 * Two steps, so a refusal is an error status before a stream starts: {@link prepareResponse} checks the request,
 * finds or starts the conversation; {@link runResponse} runs the turn, stores the response, and hands each streaming
 * event (`type` and `sequence_number`) to `onEvent`.
 */
import Ajv, { type ValidateFunction } from 'ajv';
import addFormats from 'ajv-formats';
import { randomBase62 } from '../../db/ids';
import { getResponse, insertResponse, type PendingCall } from '../../db/repositories/responses';
import type { ConversationRecord } from '../../db/repositories/conversations';
import type { ConversationMessage } from '../../schemas/types/chat';
import { ApiError, validationError, type FieldError } from '../../domain/errors';
import type { LlmMessage, LlmRequest, LlmTool, LlmToolCall } from '../../domain/conversations/llm';
import type { TurnOptions } from '../../domain/conversations/runtime';
import type { ResponseCreate, ResponseInputItem } from '../../schemas/types/responses';
import { requireConversation, sendMessage, startConversation, type ConversationDeps } from './service';

/** Longest user message of a turn, characters (as the chat routes). */
const MAX_USER_TEXT = 10_000;
/** Longest function output, characters. */
const MAX_TOOL_OUTPUT = 100_000;

const ajv = new Ajv({ allErrors: true, strict: false });
addFormats(ajv);

/**
 * A client's JSON Schema compiled, then removed from ajv's registry (ajv keeps every schema it compiled, and a `$id`
 * would clash with the next request's): the validate function stays usable. @throws when ajv cannot compile it
 */
function compileClientSchema(schema: Record<string, unknown>): ValidateFunction {
  try {
    return ajv.compile(schema);
  } finally {
    ajv.removeSchema(schema);
  }
}

/** A response object (OpenAI "The response object"), as answered and stored. */
export type ResponseObject = Record<string, unknown> & { id: string; status: string; output: Record<string, unknown>[] };

/** One streaming event (OpenAI "Streaming events"): `type`, `sequence_number` and the event's fields. */
export type ResponseStreamEvent = Record<string, unknown> & { type: string; sequence_number: number };

/** A checked request, its conversation found or started. */
export interface PreparedResponse {
  id: string;
  conversation: ConversationRecord & { recent?: ConversationMessage[] };
  /** The user's message; null when the turn only answers function outputs. */
  userText: string | null;
  turn: TurnOptions;
  /** JSON Schema validation of the answer (`text.format` `json_schema`). */
  validate?: ValidateFunction;
  formatName?: string;
  /** The response object before the turn (status `in_progress`, no output). */
  base: ResponseObject;
}

/** Text of a message's content: a string, or `input_text` / `output_text` / `text` parts. @returns field errors for other parts */
function contentText(content: ResponseInputItem['content'] | ResponseInputItem['output'], field: string, errors: FieldError[]): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) {
    errors.push({ field, message: 'must be text or an array of input_text parts' });
    return '';
  }
  return content
    .map((p, j) => {
      if (p && typeof p === 'object' && ['input_text', 'output_text', 'text'].includes(p.type) && typeof p.text === 'string') return p.text;
      errors.push({ field: `${field}[${j}].type`, message: 'only input_text parts are accepted (images, files and audio are not)' });
      return '';
    })
    .join('');
}

/** `agt_…[@draft|@vN]` → agent id and pin. */
function agentOf(model: string): { agentId: string; draftMode: boolean; versionNumber?: number } {
  const [agentId, pin] = model.split('@');
  if (pin === 'draft') return { agentId, draftMode: true };
  if (pin) return { agentId, draftMode: false, versionNumber: Number(pin.slice(1)) };
  return { agentId, draftMode: false };
}

const newItemId = (prefix: string) => `${prefix}_${randomBase62(16)}`;

/**
 * Checks a `POST /responses` body and finds (`previous_response_id`) or starts the conversation it is a turn of.
 * @throws ApiError 400 `validation_error` naming the field (`input[1].call_id`, `tools[0].type`, `text.format.schema`,
 *   `background`, `tool_choice`, `model`); 404 `response_not_found` (`previous_response_id`: unknown or another
 *   organization's), 404 `agent_not_found` / `version_not_found` (`model`); 409 `conversation_ended`,
 *   `response_superseded` (a later response of the conversation exists), `no_published_version`
 */
export async function prepareResponse(deps: ConversationDeps, orgId: string, keyId: string | null, body: ResponseCreate): Promise<PreparedResponse> {
  const errors: FieldError[] = [];
  if (body.background) errors.push({ field: 'background', message: 'background responses are not supported; send false or omit it' });
  if (!body.model && !body.previous_response_id) errors.push({ field: 'model', message: 'is required: the agent (agt_…, agt_…@draft, agt_…@vN)' });
  for (const [k, v] of Object.entries(body.metadata ?? {})) {
    if (!/^[a-z][a-z0-9_]{0,63}$/.test(k)) errors.push({ field: `metadata.${k}`, message: 'must be a variable name (lowercase letters, digits, _; starting with a letter)' });
    else if (typeof v !== 'string' || v.length > 1000) errors.push({ field: `metadata.${k}`, message: 'must be text of at most 1000 characters' });
  }

  // Sampling and limits, over the agent's model settings (as on /chat/completions; the agent's maxTokens caps).
  const sampling: NonNullable<TurnOptions['sampling']> = {};
  const num = (v: unknown, field: string, min: number, max: number, integer = false): number | undefined => {
    if (v === undefined || v === null) return undefined;
    if (typeof v !== 'number' || !Number.isFinite(v) || v < min || v > max || (integer && !Number.isInteger(v))) {
      errors.push({ field, message: `must be ${integer ? 'an integer' : 'a number'} from ${min} to ${max}` });
      return undefined;
    }
    return v;
  };
  const temperature = num(body.temperature, 'temperature', 0, 2);
  const topP = num(body.top_p, 'top_p', 0, 1);
  const maxTokens = num(body.max_output_tokens, 'max_output_tokens', 1, 1_000_000, true);
  if (temperature !== undefined) sampling.temperature = temperature;
  if (topP !== undefined) sampling.topP = topP;
  if (maxTokens !== undefined) sampling.maxTokens = maxTokens;
  if (typeof body.parallel_tool_calls === 'boolean') sampling.parallelToolCalls = body.parallel_tool_calls;

  // Client function tools.
  const tools: LlmTool[] = [];
  (body.tools ?? []).forEach((t, i) => {
    if (t.type !== 'function') return errors.push({ field: `tools[${i}].type`, message: 'only function tools are accepted; the agent brings its own skills' });
    if (!t.name || !/^[a-zA-Z0-9_-]{1,64}$/.test(t.name)) return errors.push({ field: `tools[${i}].name`, message: 'must match ^[a-zA-Z0-9_-]{1,64}$' });
    if (tools.some((x) => x.name === t.name)) return errors.push({ field: `tools[${i}].name`, message: 'names another tool of the request' });
    const parameters = t.parameters && typeof t.parameters === 'object' ? t.parameters : { type: 'object', properties: {} };
    if (parameters.type !== 'object' || (parameters.properties !== undefined && (typeof parameters.properties !== 'object' || parameters.properties === null || Array.isArray(parameters.properties)))) {
      return errors.push({ field: `tools[${i}].parameters`, message: 'must be the JSON Schema of an object ({type: "object", properties})' });
    }
    try {
      compileClientSchema(parameters);
    } catch (err) {
      return errors.push({ field: `tools[${i}].parameters`, message: `is not a valid JSON Schema: ${(err as Error).message}`.slice(0, 300) });
    }
    tools.push({ name: t.name, description: t.description ?? '', parameters });
  });
  let toolChoice: LlmRequest['toolChoice'];
  const tc = body.tool_choice;
  if (tc === 'auto' || tc === 'none' || tc === 'required') toolChoice = tc;
  else if (tc && typeof tc === 'object' && tc.type === 'function' && tc.name && tools.some((t) => t.name === tc.name)) toolChoice = { name: tc.name };
  else if (tc !== undefined) errors.push({ field: 'tool_choice', message: 'must be auto, none, required or {type: "function", name} naming a tool of the request' });

  // text.format.
  let responseFormat: LlmRequest['responseFormat'];
  let validate: ValidateFunction | undefined;
  const format = body.text?.format;
  if (format?.type === 'json_object') responseFormat = 'json_object';
  else if (format?.type === 'json_schema') {
    if (!format.name || !/^[a-zA-Z0-9_-]{1,64}$/.test(format.name)) errors.push({ field: 'text.format.name', message: 'must match ^[a-zA-Z0-9_-]{1,64}$' });
    if (!format.schema || typeof format.schema !== 'object') errors.push({ field: 'text.format.schema', message: 'is required: the JSON Schema of the answer' });
    else {
      try {
        validate = compileClientSchema(format.schema);
        responseFormat = { type: 'json_schema', name: format.name ?? 'answer', schema: format.schema, ...(format.description ? { description: format.description } : {}), ...(format.strict != null ? { strict: format.strict } : {}) };
      } catch (err) {
        errors.push({ field: 'text.format.schema', message: `is not a valid JSON Schema: ${(err as Error).message}`.slice(0, 300) });
      }
    }
  }

  // The previous response, when continuing.
  const prev = body.previous_response_id ? await getResponse(deps.db, orgId, body.previous_response_id) : undefined;
  if (body.previous_response_id && !prev) {
    throw new ApiError(404, 'response_not_found', 'Response not found', { errors: [{ field: 'previous_response_id', message: 'names no response of this organization' }] });
  }

  // Input items.
  const pending = new Map((prev?.pendingCalls ?? []).map((c) => [c.callId, c]));
  const echoed = new Set(((prev?.body.output ?? []) as { id?: string }[]).map((o) => o.id).filter((x): x is string => typeof x === 'string'));
  const outputs: NonNullable<TurnOptions['toolOutputs']> = [];
  const said: { role: 'user' | 'assistant'; text: string; index: number }[] = [];
  const items: ResponseInputItem[] = typeof body.input === 'string' ? [{ role: 'user', content: body.input }] : body.input;
  const at = (i: number) => (typeof body.input === 'string' ? 'input' : `input[${i}]`);
  items.forEach((item, i) => {
    if (!item || typeof item !== 'object') return errors.push({ field: at(i), message: 'must be an input item object' });
    const type = item.type ?? (item.role ? 'message' : undefined);
    if (type === 'function_call_output') {
      if (!prev) return errors.push({ field: at(i), message: 'a function_call_output continues a response: send previous_response_id' });
      const call = typeof item.call_id === 'string' ? pending.get(item.call_id) : undefined;
      if (!call) return errors.push({ field: `${at(i)}.call_id`, message: 'names no function call of the previous response that waits for its output' });
      if (outputs.some((o) => o.callId === call.callId)) return errors.push({ field: `${at(i)}.call_id`, message: 'answers a call another item already answered' });
      const output = contentText(item.output, `${at(i)}.output`, errors);
      if (output.length > MAX_TOOL_OUTPUT) return errors.push({ field: `${at(i)}.output`, message: `must be at most ${MAX_TOOL_OUTPUT} characters` });
      return outputs.push({ callId: call.callId, name: call.name, output });
    }
    if (type === 'function_call') {
      // The client may echo the previous response's calls before their outputs; they are stored already.
      if (typeof item.call_id === 'string' && pending.has(item.call_id)) return;
      return errors.push({ field: at(i), message: 'a function_call item may only repeat a call of the previous response' });
    }
    if (type !== 'message') return errors.push({ field: `${at(i)}.type`, message: 'must be message, function_call_output or function_call' });
    if (!['user', 'assistant', 'system', 'developer'].includes(item.role ?? '')) return errors.push({ field: `${at(i)}.role`, message: 'must be user, assistant, system or developer' });
    // An echo of the previous response's own message is stored already.
    if (prev && item.role === 'assistant' && typeof item.id === 'string' && echoed.has(item.id)) return undefined;
    const text = contentText(item.content, `${at(i)}.content`, errors);
    // System and developer messages are ignored: the agent's configuration decides (as `instructions`).
    if (item.role === 'user' || item.role === 'assistant') said.push({ role: item.role, text, index: i });
    return undefined;
  });
  const last = said[said.length - 1];
  if (last && (last.role !== 'user' || !last.text.trim())) errors.push({ field: at(last.index), message: 'the last message must be a user message with text' });
  if (last && last.text.length > MAX_USER_TEXT) errors.push({ field: `${at(last.index)}.content`, message: `must be at most ${MAX_USER_TEXT} characters` });
  if (!last && !outputs.length) errors.push({ field: 'input', message: 'must hold a user message (or, continuing a response, function_call_output items)' });
  if (prev && said.length > 1) errors.push({ field: 'input', message: 'continuing a response takes one user message (the conversation holds the earlier ones)' });
  for (const call of pending.values()) {
    if (!outputs.some((o) => o.callId === call.callId)) errors.push({ field: 'input', message: `function_call_output for call_id ${call.callId} (${call.name}) is missing` });
  }
  if (errors.length) throw validationError(errors);

  let conversation: PreparedResponse['conversation'];
  let model: string;
  if (prev) {
    conversation = await requireConversation(deps.db, orgId, prev.conversationId, undefined, { withHistory: true });
    if (body.model && agentOf(body.model).agentId !== conversation.agentId) {
      throw validationError([{ field: 'model', message: 'names another agent than the previous response' }]);
    }
    if (conversation.status !== 'active') {
      throw new ApiError(409, 'conversation_ended', `The conversation of this response ended (${conversation.endReason ?? 'ended'}); start a new one without previous_response_id`, {
        errors: [{ field: 'previous_response_id', message: 'its conversation ended' }],
      });
    }
    if (conversation.turnCount !== prev.turn) {
      throw new ApiError(409, 'response_superseded', 'Only the latest response of a conversation can be continued', {
        errors: [{ field: 'previous_response_id', message: 'a later response continued this one' }],
      });
    }
    model = body.model ?? String(prev.body.model);
  } else {
    model = body.model!;
    const seed: LlmMessage[] = said.slice(0, -1).filter((m) => m.text).map((m) => ({ role: m.role, content: m.text }));
    const started = await startConversation(deps.db, orgId, {
      ...agentOf(model),
      channel: 'chat',
      variables: body.metadata ?? undefined,
      metadata: { api: 'responses' },
      keyId,
      seed,
      // Without `@vN`/`@draft` the agent's traffic split picks the version, sticky on the caller's end user.
      stickinessKey: typeof body.safety_identifier === 'string' ? body.safety_identifier : (body.user ?? null),
    }).catch((err: unknown) => {
      const e = err as ApiError;
      if (e instanceof ApiError && e.status === 404) throw new ApiError(404, e.code, e.message, { errors: [{ field: 'model', message: 'names no agent (or version) of this organization' }] });
      throw err;
    });
    conversation = started.conversation;
  }

  const id = newItemId('resp');
  const textFormat = format?.type === 'json_schema' ? { ...format, type: 'json_schema' } : { type: format?.type ?? 'text' };
  const base: ResponseObject = {
    id,
    object: 'response',
    created_at: Math.floor(Date.now() / 1000),
    status: 'in_progress',
    background: false,
    completed_at: null,
    conversation: { id: conversation.id },
    error: null,
    incomplete_details: null,
    instructions: null,
    max_output_tokens: maxTokens ?? null,
    metadata: body.metadata ?? {},
    model,
    output: [],
    parallel_tool_calls: body.parallel_tool_calls ?? true,
    previous_response_id: prev?.id ?? null,
    reasoning: { effort: null, summary: null },
    store: true,
    temperature: temperature ?? null,
    text: { format: textFormat },
    tool_choice: typeof toolChoice === 'object' ? { type: 'function', name: toolChoice.name } : (toolChoice ?? 'auto'),
    tools: tools.map((t) => ({ type: 'function', name: t.name, description: t.description || null, parameters: t.parameters, strict: false })),
    top_p: topP ?? null,
    truncation: 'disabled',
    usage: null,
    user: null,
  };
  return {
    id,
    conversation,
    userText: last ? last.text : null,
    turn: {
      clientTools: toolChoice === 'none' ? [] : tools,
      toolOutputs: outputs,
      ...(responseFormat ? { responseFormat } : {}),
      ...(Object.keys(sampling).length ? { sampling } : {}),
      ...(toolChoice && toolChoice !== 'none' && toolChoice !== 'auto' ? { toolChoice } : {}),
    },
    ...(validate ? { validate, formatName: format?.name } : {}),
    base,
  };
}

/**
 * Runs the prepared turn and stores the response; while it runs, `onEvent` gets each streaming event in order:
 * `response.created`, `response.in_progress`, for text `response.output_item.added` (message),
 * `response.content_part.added`, `response.output_text.delta`…, `response.output_text.done`,
 * `response.content_part.done`, `response.output_item.done`; for each client call `response.output_item.added`
 * (function_call), `response.function_call_arguments.delta`, `.done`, `response.output_item.done`; then
 * `response.completed`, `response.incomplete` (the answer was cut by the token limit), or `response.failed` (an answer
 * that does not match `text.format`; a model failure, which stores nothing and is also thrown).
 * @returns the response object as stored
 * @throws what the turn throws (ApiError 409 `conversation_busy`, 502/503 from the model)
 */
export async function runResponse(deps: ConversationDeps, p: PreparedResponse, onEvent?: (e: ResponseStreamEvent) => void): Promise<ResponseObject> {
  let seq = 0;
  const send = (type: string, fields: Record<string, unknown>) => onEvent?.({ type, sequence_number: seq++, ...fields });
  send('response.created', { response: p.base });
  send('response.in_progress', { response: p.base });

  const msgId = newItemId('msg');
  let text = '';
  let opened = false;
  const part = (t: string) => ({ type: 'output_text', text: t, annotations: [], logprobs: [] });
  const open = () => {
    if (opened) return;
    opened = true;
    send('response.output_item.added', { output_index: 0, item: { id: msgId, type: 'message', status: 'in_progress', role: 'assistant', content: [] } });
    send('response.content_part.added', { item_id: msgId, output_index: 0, content_index: 0, part: part('') });
  };
  let out;
  try {
    out = await sendMessage(
      deps,
      p.conversation,
      p.userText,
      (e) => {
        if (e.type !== 'message.delta' || !e.data.content) return;
        open();
        text += e.data.content;
        send('response.output_text.delta', { item_id: msgId, output_index: 0, content_index: 0, delta: e.data.content, logprobs: [] });
      },
      p.turn,
    );
  } catch (err) {
    // Only a problem meant for the caller is shown (the model's failure, a busy conversation); anything else is ours.
    const message = err instanceof ApiError ? err.message : 'The turn failed; nothing was stored';
    send('response.failed', { response: { ...p.base, status: 'failed', error: { code: err instanceof ApiError && err.status === 503 ? 'rate_limit_exceeded' : 'server_error', message } } });
    throw err;
  }
  if (!text && out.result.reply && !out.result.clientCalls?.length) {
    open();
    text = out.result.reply;
    send('response.output_text.delta', { item_id: msgId, output_index: 0, content_index: 0, delta: text, logprobs: [] });
  }

  const calls: LlmToolCall[] = out.result.clientCalls ?? [];
  // An answer cut by the token limit (`max_output_tokens` or the agent's `maxTokens`) is incomplete, as OpenAI says it.
  const cut = !calls.length && out.result.finishReason === 'length';
  const output: Record<string, unknown>[] = [];
  if (opened) {
    const message = { id: msgId, type: 'message', status: cut ? 'incomplete' : 'completed', role: 'assistant', content: [part(text)] };
    send('response.output_text.done', { item_id: msgId, output_index: 0, content_index: 0, text, logprobs: [] });
    send('response.content_part.done', { item_id: msgId, output_index: 0, content_index: 0, part: part(text) });
    send('response.output_item.done', { output_index: 0, item: message });
    output.push(message);
  }
  for (const call of calls) {
    const index = output.length;
    const item = { id: newItemId('fc'), type: 'function_call', status: 'completed', call_id: call.id, name: call.name, arguments: call.arguments };
    send('response.output_item.added', { output_index: index, item: { ...item, status: 'in_progress', arguments: '' } });
    send('response.function_call_arguments.delta', { item_id: item.id, output_index: index, delta: call.arguments });
    send('response.function_call_arguments.done', { item_id: item.id, output_index: index, name: call.name, arguments: call.arguments });
    send('response.output_item.done', { output_index: index, item });
    output.push(item);
  }

  // Structured output: the answer must be JSON matching the schema (a turn ending with function calls has no answer yet).
  let error: { code: string; message: string } | null = null;
  if (p.validate && !calls.length && !cut) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      error = { code: 'server_error', message: `The answer is not JSON, as text.format ${p.formatName ?? ''} asks` };
    }
    if (!error && !p.validate(parsed)) {
      const why = (p.validate.errors ?? []).map((e) => `${e.instancePath || '(root)'} ${e.message}`).join('; ');
      error = { code: 'server_error', message: `The answer does not match the JSON Schema of text.format ${p.formatName ?? ''}: ${why}`.slice(0, 1000) };
    }
  }
  const u = out.result.usage;
  const status = error ? 'failed' : cut ? 'incomplete' : 'completed';
  const response: ResponseObject = {
    ...p.base,
    status,
    completed_at: status === 'completed' ? Math.floor(Date.now() / 1000) : null,
    error,
    incomplete_details: cut ? { reason: 'max_output_tokens' } : null,
    output,
    usage: {
      input_tokens: u.promptTokens,
      input_tokens_details: { cached_tokens: 0 },
      output_tokens: u.completionTokens,
      output_tokens_details: { reasoning_tokens: 0 },
      total_tokens: u.totalTokens,
    },
  };
  const pendingCalls: PendingCall[] = calls.map((c) => ({ callId: c.id, name: c.name }));
  await insertResponse(deps.db, p.conversation.orgId, {
    id: p.id,
    conversationId: p.conversation.id,
    previousResponseId: (p.base.previous_response_id as string | null) ?? null,
    turn: out.conversation.turnCount,
    pendingCalls,
    body: response,
  });
  send(`response.${status}`, { response });
  return response;
}

/** `GET /responses/{id}`: the stored response object. @throws ApiError 404 `response_not_found` (also another organization's) */
export async function retrieveResponse(deps: Pick<ConversationDeps, 'db'>, orgId: string, id: string): Promise<Record<string, unknown>> {
  const r = /^resp_[A-Za-z0-9]{8,40}$/.test(id) ? await getResponse(deps.db, orgId, id) : undefined;
  if (!r) throw new ApiError(404, 'response_not_found', 'Response not found');
  return r.body;
}
