/**
 * `POST /chat/completions` (createChatCompletion, chat:write; docs/api-notes.md "Conversations"): the OpenAI chat
 * completions wire format (OpenAI API reference "Chat Completions", "The chat completion chunk object"),
 * so the official `openai` client works unchanged. `model` names the agent: `agt_…` (the published
 * version), `agt_…@draft` (the draft, compiled now) or `agt_…@v3` (version 3). Each request is one
 * conversation of one turn over the history it carries: earlier `user`/`assistant` messages are stored as
 * the conversation's opening, `system`/`developer` messages are ignored (the agent's configuration
 * decides), the last message must be the user's. Skills run server-side, so the answer is text.
 * Streams end with `data: [DONE]` as OpenAI clients expect (the service's own streams end with
 * `event: done`, spec "Events"). Errors stay problem+json; the client surfaces them with their status.
 */
import { PassThrough } from 'node:stream';
import type { Handler } from '../context';
import { orgOf } from '../http';
import { toApiError } from '../middleware/problem';
import { ApiError, validationError } from '../../domain/errors';
import { validateBody } from '../../domain/validation';
import type { LlmMessage } from '../../domain/conversations/llm';
import { finishConversation, sendMessage, startConversation } from '../../services/conversations/service';
import type { ChatCompletionCreate, ChatCompletionMessage } from '../../schemas/types/chat';
import { conversationDeps, variableErrors } from './chat';

/** Text of an OpenAI message's content (a string or text parts). */
function textOf(content: ChatCompletionMessage['content']): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) return content.map((p) => (p && typeof p === 'object' && typeof p.text === 'string' ? p.text : '')).join('');
  return '';
}

/** `agt_…[@draft|@vN]` → agent id and pin. */
function parseModel(model: string): { agentId: string; draftMode: boolean; versionNumber?: number } {
  const [agentId, pin] = model.split('@');
  if (pin === 'draft') return { agentId, draftMode: true };
  if (pin) return { agentId, draftMode: false, versionNumber: Number(pin.slice(1)) };
  return { agentId, draftMode: false };
}

/** POST /chat/completions: see the module comment. 404 `agent_not_found` / `version_not_found` (field `model`), 409 `no_published_version`. */
export const chatCompletion: Handler = async (ctx, deps) => {
  const body = validateBody<ChatCompletionCreate>('ChatCompletionCreate', ctx.request.body);
  if (body.n !== undefined && body.n !== null && body.n !== 1) throw validationError([{ field: 'n', message: 'only one choice is generated; send 1 or omit it' }]);
  const verrors = variableErrors(body.metadata, 'metadata');
  if (verrors.length) throw validationError(verrors);
  const last = body.messages[body.messages.length - 1];
  const userText = textOf(last.content);
  if (last.role !== 'user' || !userText.trim()) {
    throw validationError([{ field: `messages[${body.messages.length - 1}]`, message: 'the last message must be a user message with text' }]);
  }
  if (userText.length > 10_000) throw validationError([{ field: `messages[${body.messages.length - 1}].content`, message: 'must be at most 10000 characters' }]);
  const seed: LlmMessage[] = body.messages
    .slice(0, -1)
    .filter((m) => m.role === 'user' || m.role === 'assistant')
    .map((m) => ({ role: m.role as 'user' | 'assistant', content: textOf(m.content) }))
    .filter((m) => m.content);
  const pin = parseModel(body.model);
  const { conversation } = await startConversation(deps.db, orgOf(ctx), {
    ...pin,
    channel: 'chat',
    variables: body.metadata,
    metadata: { api: 'chat.completions' },
    keyId: ctx.state.auth?.keyId ?? null,
    seed,
  }).catch((err: unknown) => {
    const e = toApiError(err);
    if (e && e.status === 404) throw new ApiError(404, e.code, e.message, { errors: [{ field: 'model', message: 'names no agent (or version) of this organization' }] });
    throw err;
  });
  const id = `chatcmpl-${conversation.id}`;
  const created = Math.floor(Date.parse(conversation.startedAt) / 1000);
  const cdeps = conversationDeps(deps);
  const run = async (onDelta?: (s: string) => void) => {
    try {
      return await sendMessage(cdeps, conversation, userText, (e) => e.type === 'message.delta' && onDelta?.(e.data.content));
    } finally {
      await finishConversation(deps.db, conversation, 'ended_by_api').catch(() => undefined);
    }
  };
  const usageOf = (u: { promptTokens: number; completionTokens: number; totalTokens: number }) => ({
    prompt_tokens: u.promptTokens,
    completion_tokens: u.completionTokens,
    total_tokens: u.totalTokens,
  });

  if (!body.stream) {
    const out = await run();
    const completion = {
      id,
      object: 'chat.completion',
      created,
      model: body.model,
      system_fingerprint: conversation.versionId ?? `draft-${conversation.draftVersion}`,
      choices: [{ index: 0, message: { role: 'assistant', content: out.result.reply, refusal: null }, logprobs: null, finish_reason: 'stop' }],
      usage: usageOf(out.result.usage),
    };
    return { rawJson: JSON.stringify(completion) };
  }

  const stream = new PassThrough();
  const send = (data: unknown) => !stream.destroyed && stream.write(`data: ${JSON.stringify(data)}\n\n`);
  const chunk = (delta: Record<string, unknown>, finish: string | null) => ({
    id,
    object: 'chat.completion.chunk',
    created,
    model: body.model,
    choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
  });
  send(chunk({ role: 'assistant', content: '' }, null));
  run((content) => send(chunk({ content }, null)))
    .then((out) => {
      send(chunk({}, 'stop'));
      if (body.stream_options?.include_usage) send({ id, object: 'chat.completion.chunk', created, model: body.model, choices: [], usage: usageOf(out.result.usage) });
    })
    .catch((err: unknown) => {
      const e = toApiError(err) ?? new ApiError(500, 'internal_error', 'The turn failed; nothing was stored');
      if (e.status >= 500) ctx.state.log.error({ err }, 'chat completion failed');
      send({ error: { message: e.message, type: e.code, code: e.code, status: e.status } });
    })
    .finally(() => {
      if (!stream.destroyed) stream.end('data: [DONE]\n\n');
    });
  return { stream: { body: stream, contentType: 'text/event-stream; charset=utf-8' }, headers: { 'Cache-Control': 'no-cache', 'X-Accel-Buffering': 'no' } };
};
