/**
 * Live control handlers (docs/api-notes.md "Live control"; additions beyond the spec's operations): a control on a
 * conversation in progress and the stream of its live turns.
 */
import type { Handler } from '../context';
import { orgOf } from '../http';
import { validateBody } from '../../domain/validation';
import { controlConversation as applyControl } from '../../services/conversations/control';
import { openLiveStream } from '../../services/conversations/live';
import type { ConversationControl, ConversationControlCreate } from '../../schemas/types/control';

/**
 * POST /conversations/{id}/control (controlConversation; calls:read and chat:write) `{action, content?, to?}`: see
 * services/conversations/control.ts. 404 `conversation_not_found`, 409 `conversation_ended`, 409 `not_taken_over`,
 * 409 `already_taken_over`, 400 naming `action`, `content` or `to`.
 */
export const controlConversation: Handler = async (ctx, deps) => {
  const body = validateBody<ConversationControlCreate>('ConversationControlCreate', ctx.request.body);
  const auth = ctx.state.auth!;
  const data: ConversationControl = await applyControl(
    { db: deps.db, llm: deps.providers.llm, temporal: deps.temporal, log: ctx.state.log },
    orgOf(ctx),
    String(ctx.params.id),
    body,
    auth.keyId,
  );
  return { data, ...(data.status === 'queued' ? { status: 202 } : {}) };
};

/**
 * GET /conversations/{id}/live (streamConversation; calls:read): Server-Sent Events `state`, `message` … `done`
 * (services/conversations/live.ts); the credential is re-checked on every read.
 */
export const streamConversation: Handler = async (ctx, deps) => {
  const still = deps.credentialStillValid;
  const stream = await openLiveStream(deps.db, orgOf(ctx), String(ctx.params.id), {
    stillAllowed: still ? () => still(ctx) : undefined,
    onError: (err) => ctx.state.log.warn({ err }, 'live stream failed'),
  });
  ctx.req.socket.setNoDelay(true);
  return { stream: { body: stream, contentType: 'text/event-stream; charset=utf-8' }, headers: { 'Cache-Control': 'no-cache', 'X-Accel-Buffering': 'no' } };
};

/** Handlers of this area by operationId. */
export const handlers = { controlConversation, streamConversation };

/** Schemas of this area's operations. */
export const routeSchemas = {
  controlConversation: { requestSchema: 'ConversationControlCreate', responseSchema: 'ConversationControl' },
};
