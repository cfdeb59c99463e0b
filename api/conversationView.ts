/**
 * What a caller is shown of a conversation (spec "Scope rules" 1; docs/security.md "Public sessions"):
 * - a public session — a widget session token (`wst_…`), and likewise a talk token or a phone/SMS
 *   counterpart, which never reach these routes — sees the conversation only: the user's and the agent's
 *   messages, message deltas and the end of a stream; never a receipt, a tool call, a tool message or
 *   output, a guardrail decision, nor the session's variables and metadata (which hold caller
 *   verification's outcome and a playbook's skill outputs);
 * - a key without `calls:read` sees the same messages and stream events, with the session's state;
 * - `calls:read` (all or nothing, every channel) sees receipts, tool exchanges and every stream event.
 */
import type { AppContext } from './context';
import type { ChatSession, ChatTurn, ConversationMessage } from '../schemas/types/chat';

/** Stream events every audience receives (the rest — `tool.call`, `tool.result`, `guardrail` — need `calls:read`). */
const CONVERSATION_EVENTS = new Set(['message.delta', 'message.completed', 'error', 'done']);

/** Whether the caller may see receipts and tool exchanges: a non-public credential holding `calls:read`. */
export function seesReceipts(ctx: AppContext): boolean {
  const auth = ctx.state.auth;
  return !!auth && !isPublicSession(ctx) && auth.scopes.has('calls:read');
}

/** Whether the caller is public: a widget session token, or the publishable key that starts a widget session. */
export function isPublicSession(ctx: AppContext): boolean {
  const kind = ctx.state.auth?.kind;
  return kind === 'session' || kind === 'publishable';
}

/** The conversation's messages only: user and agent text (a member's too), no tool or context messages, no tool calls. */
export function conversationMessages(messages: readonly ConversationMessage[]): ConversationMessage[] {
  return messages
    .filter((m) => m.role !== 'tool' && m.role !== 'system' && !m.toolCalls?.length && m.content !== null)
    // A member's line says it is a person's, never which member (docs/security.md "Public sessions").
    .map((m) => (m.name?.startsWith('operator:') ? { ...m, name: 'operator' } : m));
}

/** The messages the caller may see. */
export function messagesFor(ctx: AppContext, messages: ConversationMessage[]): ConversationMessage[] {
  return seesReceipts(ctx) ? messages : conversationMessages(messages);
}

/** The session as the caller may see it: a public session gets no variables, metadata, playbook state or token usage. */
export function sessionFor(ctx: AppContext, s: ChatSession): ChatSession {
  if (!isPublicSession(ctx)) return s;
  return { ...s, variables: {}, metadata: {}, playbook: null, usage: { promptTokens: 0, completionTokens: 0, totalTokens: 0 } };
}

/** A turn as the caller may see it: the receipt only with `calls:read`. */
export function turnFor(ctx: AppContext, turn: ChatTurn): ChatTurn {
  if (seesReceipts(ctx)) return turn;
  const { receipt: _receipt, ...rest } = turn;
  return { ...rest, session: sessionFor(ctx, turn.session), messages: conversationMessages(turn.messages) };
}

/** Whether a stream event of this type goes to the caller. */
export function streamEventFor(ctx: AppContext, type: string): boolean {
  return seesReceipts(ctx) || CONVERSATION_EVENTS.has(type);
}
