/**
 * The OpenAI-compatible Responses API (docs/api-notes.md "Responses API"; OpenAI API reference "Responses"):
 * `POST /responses` (createResponse, chat:write) runs one turn of an agent's conversation and answers the response
 * object — or, with `stream: true`, the typed streaming events as Server-Sent Events (`event: <type>` /
 * `data: <event>`; no `[DONE]`, the stream ends after `response.completed` or `response.failed`, or after an `error`
 * event when its credential is revoked mid-stream) — and `GET /responses/{id}` (getResponse, chat:read) answers a
 * stored one. The work is in services/conversations/responses.ts; refusals before the turn starts are error
 * statuses, never a stream.
 */
import { PassThrough } from 'node:stream';
import type { Handler } from '../context';
import { orgOf } from '../http';
import { toApiError } from '../middleware/problem';
import { ApiError } from '../../domain/errors';
import { validateBody } from '../../domain/validation';
import { prepareResponse, retrieveResponse, runResponse, type ResponseStreamEvent } from '../../services/conversations/responses';
import type { ResponseCreate } from '../../schemas/types/responses';
import { conversationDeps, sseFrame, STREAM_RECHECK_MS } from './chat';

/**
 * POST /responses: see the module comment and services/conversations/responses.ts `prepareResponse` for refusals.
 * While a stream is open its credential is re-checked every {@link STREAM_RECHECK_MS} ms, as the chat session stream
 * does (docs/security.md "Revocation"): once revoked the stream ends with OpenAI's `error` event (OpenAI API reference
 * "Streaming events": `{type: "error", code: "credential_revoked", message, param: null, sequence_number}`); the
 * turn itself runs on and its response is stored, as a chat turn is.
 */
export const createResponse: Handler = async (ctx, deps) => {
  const body = validateBody<ResponseCreate>('ResponseCreate', ctx.request.body);
  const cdeps = conversationDeps(deps);
  const prepared = await prepareResponse(cdeps, orgOf(ctx), ctx.state.auth?.keyId ?? null, body);
  if (!body.stream) return { rawJson: JSON.stringify(await runResponse(cdeps, prepared)) };

  const stream = new PassThrough();
  let closed = false;
  /** The sequence number the next event carries (the service numbers its own; the `error` event follows them). */
  let next = 0;
  const write = (e: ResponseStreamEvent) => {
    if (closed || stream.destroyed) return;
    next = e.sequence_number + 1;
    stream.write(sseFrame(e.type, e));
  };
  const close = () => {
    if (closed) return;
    closed = true;
    clearInterval(recheck);
    if (!stream.destroyed) stream.end();
  };
  const still = deps.credentialStillValid;
  const recheck = setInterval(() => {
    still?.(ctx).then(
      (ok) => {
        if (ok || closed) return;
        write({ type: 'error', sequence_number: next, code: 'credential_revoked', message: 'The credential of this stream was revoked; the stream is closed', param: null });
        close();
      },
      (err: unknown) => ctx.state.log.warn({ err }, 'response stream: re-checking the credential failed'),
    );
  }, STREAM_RECHECK_MS);
  recheck.unref();
  ctx.req.socket.setNoDelay(true);
  runResponse(cdeps, prepared, write)
    .catch((err: unknown) => {
      // `response.failed` was sent with the error; only log what is the service's own fault.
      const e = toApiError(err) ?? new ApiError(500, 'internal_error', 'The turn failed; nothing was stored');
      if (e.status >= 500) ctx.state.log.error({ err }, 'response failed');
    })
    .finally(close);
  return { stream: { body: stream, contentType: 'text/event-stream; charset=utf-8' }, headers: { 'Cache-Control': 'no-cache', 'X-Accel-Buffering': 'no' } };
};

/** GET /responses/{id}: the stored response object; 404 `response_not_found` (also another organization's). */
export const getResponse: Handler = async (ctx, deps) => ({ rawJson: JSON.stringify(await retrieveResponse(deps, orgOf(ctx), ctx.params.id)) });

/** Handlers of this area by operationId. */
export const handlers = { createResponse, getResponse };

/** Schemas of this area's operations. */
export const routeSchemas = {
  createResponse: { requestSchema: 'ResponseCreate' },
};
