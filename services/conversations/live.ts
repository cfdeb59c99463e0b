/**
 * Following a conversation as it happens (docs/api-notes.md "Live control"): the stream behind
 * `GET /conversations/{id}/live` and the operator console's live page. Server-Sent Events as the spec's streaming
 * conventions have them (`event:<type>` / `data:<json>` / blank line, ending with `event: done`): `state` first and
 * whenever the status or who holds the conversation changes, `message` per transcript line (user, agent, operator)
 * in order, and — once the conversation ended — `done`. The stream reads Postgres every `pollMs` (one indexed
 * query per open stream), so it follows turns stored by any process.
 */
import { PassThrough } from 'node:stream';
import type { Db } from '../../db';
import { liveSlice } from '../../db/repositories/conversationControls';
import { toTranscriptMessage } from '../../db/repositories/observe';
import { ApiError } from '../../domain/errors';
import type { LiveMessageEvent, LiveStateEvent } from '../../schemas/types/control';

/** How often an open live stream reads new messages, ms. */
export const LIVE_POLL_MS = 500;

/** One SSE frame (spec "Events": `event:<type>` / `data:<json>` / blank line). */
function frame(type: string, data: unknown): string {
  return `event: ${type}\ndata: ${JSON.stringify(data)}\n\n`;
}

/**
 * Opens the live stream of a conversation of `orgId`.
 * @param opts.pollMs read interval (default {@link LIVE_POLL_MS}); `stillAllowed` is asked on every read and closes
 *   the stream (with `done`) once it answers false (a revoked key, an ended console session)
 * @throws ApiError 404 `conversation_not_found` (also another organization's)
 */
export async function openLiveStream(
  db: Db,
  orgId: string,
  id: string,
  opts: { pollMs?: number; stillAllowed?: () => Promise<boolean>; onError?: (err: unknown) => void } = {},
): Promise<PassThrough> {
  const first = /^cnv_[A-Za-z0-9]{8,40}$/.test(id) ? await liveSlice(db, orgId, id, -1) : undefined;
  if (!first) throw new ApiError(404, 'conversation_not_found', 'Conversation not found');
  const stream = new PassThrough();
  const toLine = toTranscriptMessage(first.conversation.channel);
  let seq = -1;
  let state = '';
  let closed = false;
  let timer: NodeJS.Timeout | null = null;
  const close = () => {
    if (closed) return;
    closed = true;
    if (timer) clearTimeout(timer);
    if (!stream.destroyed) stream.end(frame('done', {}));
  };
  stream.on('close', () => {
    closed = true;
    if (timer) clearTimeout(timer);
  });
  const emit = (slice: NonNullable<Awaited<ReturnType<typeof liveSlice>>>) => {
    const c = slice.conversation;
    const s: LiveStateEvent = { conversationId: c.id, status: c.status, endReason: c.endReason, takenOverBy: c.takenOverBy };
    const key = JSON.stringify(s);
    if (key !== state) {
      state = key;
      stream.write(frame('state', s));
    }
    for (const m of slice.messages) {
      seq = Math.max(seq, m.seq);
      if ((m.role !== 'user' && m.role !== 'assistant') || !m.content || m.toolCalls?.length) continue;
      const line: LiveMessageEvent = { ...toLine({ id: m.id, role: m.role, name: m.name, content: m.content, created_at: m.createdAt }), seq: m.seq };
      stream.write(frame('message', line));
    }
    return c.status === 'ended' && slice.messages.length === 0;
  };
  const poll = async () => {
    timer = null;
    if (closed) return;
    try {
      if (opts.stillAllowed && !(await opts.stillAllowed())) return close();
      const slice = await liveSlice(db, orgId, id, seq);
      if (!slice || emit(slice)) return close();
    } catch (err) {
      opts.onError?.(err);
      return close();
    }
    if (!closed) timer = setTimeout(poll, opts.pollMs ?? LIVE_POLL_MS);
  };
  if (emit(first)) close();
  else timer = setTimeout(poll, opts.pollMs ?? LIVE_POLL_MS);
  return stream;
}
