/**
 * Chat handlers (spec "Chat" row, "Agent lifecycle" rules 1–2, "Events"; docs/api-notes.md "Conversations"):
 * sessions pinned to the published version (or the draft with `draftMode: true`), turns answered as JSON
 * or as Server-Sent Events, and the OpenAI-compatible `POST /chat/completions`.
 */
import { PassThrough } from 'node:stream';
import type { AppContext, AppDeps, Handler } from '../context';
import { orgOf } from '../http';
import { problemBody, toApiError } from '../middleware/problem';
import { markAuditStored, pendingAuditEntry } from '../middleware/audit';
import { ApiError, validationError, type FieldError } from '../../domain/errors';
import { validateBody } from '../../domain/validation';
import type { TurnEvent } from '../../domain/conversations/runtime';
import { allMessages, toChatSession } from '../../db/repositories/conversations';
import { finishConversation, requireConversation, sendMessage, startConversation, type ConversationDeps, type StoredTurnOutcome } from '../../services/conversations/service';
import type { ChatMessageCreate, ChatSessionCreate, ChatSessionStarted, ChatTurn } from '../../schemas/types/chat';
import { chatCompletion } from './chatCompletions';
import { messagesFor, sessionFor, streamEventFor, turnFor } from '../conversationView';

/** Channels the chat routes reach (`chat` sessions and `web` widget sessions). */
export const CHAT_CHANNELS = ['chat', 'web'] as const;

const VARIABLE_NAME = /^[a-z][a-z0-9_]{0,63}$/;

/** The conversation service's dependencies from the app's. */
export function conversationDeps(deps: AppDeps): ConversationDeps {
  return { db: deps.db, llm: deps.providers.llm, http: deps.providers.skillHttp, temporal: deps.temporal, log: deps.logger, embeddings: deps.providers.embeddings, indexes: deps.caches.knowledge };
}

/** Field errors of session variables: names as agent variables, values at most 1,000 characters. */
export function variableErrors(vars: Record<string, string> | undefined, prefix = 'variables'): FieldError[] {
  const errors: FieldError[] = [];
  for (const [k, v] of Object.entries(vars ?? {})) {
    if (!VARIABLE_NAME.test(k)) errors.push({ field: `${prefix}.${k}`, message: 'must be a variable name (lowercase letters, digits, _; starting with a letter)' });
    else if (v.length > 1000) errors.push({ field: `${prefix}.${k}`, message: 'must be at most 1000 characters' });
  }
  return errors;
}

/**
 * POST /chat/sessions (createChatSession, chat:write) `{agentId, draftMode?, variables?, metadata?, customerId?}` → 201
 * `{session, greeting}`. 404 `agent_not_found` naming `agentId`; 409 `no_published_version` for an agent
 * never published unless `draftMode: true`.
 */
export const createChatSession: Handler = async (ctx, deps) => {
  const body = validateBody<ChatSessionCreate>('ChatSessionCreate', ctx.request.body);
  const errors = variableErrors(body.variables);
  if (errors.length) throw validationError(errors);
  const { conversation, greeting } = await startConversation(deps.db, orgOf(ctx), {
    agentId: body.agentId,
    channel: 'chat',
    draftMode: body.draftMode === true,
    variables: body.variables,
    metadata: body.metadata,
    keyId: ctx.state.auth?.keyId ?? null,
    // The agent's traffic split keeps one customer on one version (docs/api-notes.md "Traffic splits").
    stickinessKey: body.customerId ?? null,
  });
  const data: ChatSessionStarted = { session: toChatSession(conversation), greeting };
  return { data, status: 201 };
};

/**
 * A widget session token reaches only its own session (docs/api-notes.md "Widget"): another id answers 403
 * `session_token_mismatch`.
 */
function checkSessionToken(ctx: AppContext): void {
  const s = ctx.state.auth?.session;
  if (s && s.conversationId !== ctx.params.id) throw new ApiError(403, 'session_token_mismatch', 'This session token belongs to another chat session');
}

/**
 * GET /chat/sessions/{id} (getChatSession, chat:read or the session's widget token) → the session and every
 * message, verbatim; tool exchanges only with calls:read, and a widget token sees the conversation only
 * (api/conversationView.ts). 404 `conversation_not_found`.
 */
export const getChatSession: Handler = async (ctx, { db }) => {
  checkSessionToken(ctx);
  const c = await requireConversation(db, orgOf(ctx), ctx.params.id, CHAT_CHANNELS);
  return { data: { session: sessionFor(ctx, toChatSession(c)), messages: messagesFor(ctx, await allMessages(db, c.orgId, c.id)) } };
};

/** POST /chat/sessions/{id}/end (endChatSession, chat:write) → the ended session (ending twice is a no-op). */
export const endChatSession: Handler = async (ctx, deps) => {
  const c = await requireConversation(deps.db, orgOf(ctx), ctx.params.id, CHAT_CHANNELS);
  // The post-conversation analysis runs once (docs/api-notes.md "Conversation analysis"); it never fails the end.
  return { data: toChatSession(await finishConversation(deps.db, c, 'ended_by_user', { ...conversationDeps(deps), log: ctx.state.log })) };
};

/** True when the client asked for Server-Sent Events. */
export function wantsEventStream(ctx: AppContext): boolean {
  return /\btext\/event-stream\b/i.test(ctx.get('accept'));
}

/** One SSE frame (spec "Events": `event:<type>` / `data:<json>` / blank line). */
export function sseFrame(type: string, data: unknown): string {
  return `event: ${type}\ndata: ${JSON.stringify(data)}\n\n`;
}

/** The stored turn as the caller may see it (api/conversationView.ts: the receipt and tool exchanges need calls:read). */
function turnData(ctx: AppContext, out: StoredTurnOutcome): ChatTurn {
  return turnFor(ctx, { session: toChatSession(out.conversation), messages: out.messages, reply: out.reply, receipt: out.receipt });
}

/** How often an open turn stream re-checks its credential, ms (docs/security.md "Revocation"). */
export const STREAM_RECHECK_MS = 500;

/**
 * POST /chat/sessions/{id}/messages (sendChatMessage, chat:write) `{content}`: runs one turn. JSON by
 * default (`ChatTurn`); with `Accept: text/event-stream` the turn streams as Server-Sent Events —
 * `message.delta` `{content}`, `tool.call`, `tool.result`, `guardrail`, then `message.completed` (the
 * `ChatTurn`) or `error` (a problem) — and always ends with `event: done`. The receipt, tool exchanges,
 * `tool.*` and `guardrail` events need calls:read; a widget token gets the conversation only
 * (api/conversationView.ts). While the stream is open its credential is re-checked every
 * {@link STREAM_RECHECK_MS} ms: once revoked the stream ends with `error` 401 `credential_revoked` and
 * `done` (docs/security.md "Revocation"); the turn itself is still stored. Refusals before the turn starts
 * are problem+json: 404 `conversation_not_found`, 409 `conversation_ended`.
 */
export const sendChatMessage: Handler = async (ctx, deps) => {
  const body = validateBody<ChatMessageCreate>('ChatMessageCreate', ctx.request.body);
  checkSessionToken(ctx);
  const c = await requireConversation(deps.db, orgOf(ctx), ctx.params.id, CHAT_CHANNELS, { withHistory: true });
  if (c.status !== 'active') throw new ApiError(409, 'conversation_ended', `The conversation ended (${c.endReason ?? 'ended'}); start a new one`);
  if (!wantsEventStream(ctx)) {
    // The request's audit entry is stored in the turn's own statement (one commit; api/middleware/audit.ts). A
    // ChatTurn carries no `id`, so the entry reads the same before the answer exists as after.
    const audit = pendingAuditEntry(ctx, 200, undefined);
    const out = await sendMessage(conversationDeps(deps), c, body.content, undefined, {}, audit?.rec);
    if (out.auditStored) markAuditStored(ctx, 200);
    return { data: turnData(ctx, out) };
  }

  const stream = new PassThrough();
  let closed = false;
  const write = (type: string, data: unknown) => {
    if (!closed && !stream.destroyed && streamEventFor(ctx, type)) stream.write(sseFrame(type, data));
  };
  const close = () => {
    if (closed) return;
    write('done', {});
    closed = true;
    clearInterval(recheck);
    stream.end();
  };
  const still = deps.credentialStillValid;
  const recheck = setInterval(() => {
    still?.(ctx).then(
      (ok) => {
        if (ok || closed) return;
        write('error', problemBody(ctx, new ApiError(401, 'credential_revoked', 'The credential of this stream was revoked; the stream is closed')));
        close();
      },
      (err: unknown) => ctx.state.log.warn({ err }, 'chat stream: re-checking the credential failed'),
    );
  }, STREAM_RECHECK_MS);
  recheck.unref();
  ctx.req.socket.setNoDelay(true);
  sendMessage(conversationDeps(deps), c, body.content, (e: TurnEvent) => write(e.type, e.data))
    .then((out) => write('message.completed', turnData(ctx, out)))
    .catch((err: unknown) => {
      const e = toApiError(err) ?? new ApiError(500, 'internal_error', 'The turn failed; nothing was stored');
      if (e.status >= 500) ctx.state.log.error({ err }, 'chat turn failed');
      write('error', problemBody(ctx, e));
    })
    .finally(close);
  return { stream: { body: stream, contentType: 'text/event-stream; charset=utf-8' }, headers: { 'Cache-Control': 'no-cache', 'X-Accel-Buffering': 'no' } };
};

/** Handlers of this area by operationId. */
export const handlers = { createChatSession, getChatSession, endChatSession, sendChatMessage, createChatCompletion: chatCompletion };

/** Schemas of this area's operations. */
export const routeSchemas = {
  createChatSession: { requestSchema: 'ChatSessionCreate', responseSchema: 'ChatSessionStarted' },
  getChatSession: { responseSchema: 'ChatSessionDetail' },
  endChatSession: { responseSchema: 'ChatSession' },
  sendChatMessage: { requestSchema: 'ChatMessageCreate', responseSchema: 'ChatTurn' },
  createChatCompletion: { requestSchema: 'ChatCompletionCreate' },
};
