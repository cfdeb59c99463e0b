/**
 * Live control of conversations (docs/api-notes.md "Live control"), shared by `POST /conversations/{id}/control` and
 * the operator console:
 * - chat, widget and SMS: `take_over` (the agent stops answering: `sendMessage` stores the person's messages
 *   through {@link heldTurn}), `say` (a member's message to the person, stored as an `assistant` message named
 *   `operator:<actor>`; on SMS also texted), `add_message` (a `system` line for the model's context), `hand_back`, `end`;
 * - calls: `say` (spoken by the carrier), `add_message`, `transfer` and `end`, queued for the relay session that
 *   holds the call's socket (services/voice/liveCalls.ts), which claims and applies them in order.
 * Events: `conversation.taken_over`, `conversation.handed_back` and `message.created` for a member's message.
 */
import type { Client } from '@temporalio/client';
import { ApiError } from '../../domain/errors';
import { redactPii } from '../../domain/conversations/guardrails';
import type { LlmMessage } from '../../domain/conversations/llm';
import type { TurnResult } from '../../domain/conversations/runtime';
import { setTakeover, queueControl, type QueuedControl } from '../../db/repositories/conversationControls';
import { getConversation, type ConversationRecord } from '../../db/repositories/conversations';
import { checkedEvents, emitEvents } from '../../events/emit';
import type { ConversationMessage, TurnReceipt } from '../../schemas/types/chat';
import { queueText } from '../sms/send';
import { changeEvents, finishConversation, HISTORY_MESSAGES, pinnedAgent, storeTurn, type ConversationDeps, type StoredTurnOutcome } from './service';
import { deliverControls, holdsCall } from '../voice/liveCalls';
import type { AnalysisDeps } from './analysis';

/** The actions of a control (docs/api-notes.md "Live control"). */
export const CONTROL_ACTIONS = ['say', 'add_message', 'transfer', 'end', 'take_over', 'hand_back'] as const;
/** One action. */
export type ControlAction = (typeof CONTROL_ACTIONS)[number];

/** Actions each kind of channel takes. */
const ACTIONS_BY_CHANNEL: Record<'voice' | 'text', readonly ControlAction[]> = {
  voice: ['say', 'add_message', 'transfer', 'end'],
  text: ['take_over', 'hand_back', 'say', 'add_message', 'end'],
};

/** A control as asked for. */
export interface ControlRequest {
  action: ControlAction;
  /** The line said (`say`) or added (`add_message`), 1–2,000 characters. */
  content?: string;
  /** `transfer`: where the call goes, E.164 or a `sip:` URI. */
  to?: string;
}

/** What a control did. */
export interface ControlOutcome {
  conversationId: string;
  action: ControlAction;
  /** `applied` now, or `queued` for the relay session holding the call (applied when it claims it). */
  status: 'applied' | 'queued';
  conversationStatus: 'active' | 'ended';
  takenOverBy: string | null;
  /** The stored message of `say` or `add_message` on a text channel, else null. */
  message: ConversationMessage | null;
}

/** An empty receipt of a turn the model did not run (a held message, a member's line). */
function emptyReceipt(turn: number): TurnReceipt {
  return { turn, toolCalls: [], knowledge: [], guardrails: [], latency: [], playbook: null };
}

/**
 * Stores `messages` as a turn of `c` without running the model (the optimistic lock of every turn holds: a turn
 * stored meanwhile makes this one 409 `conversation_busy`), with `message.created` for user and assistant lines.
 * @throws ApiError 409 `conversation_ended` or `conversation_busy`
 */
export async function storeMessages(deps: Pick<ConversationDeps, 'db'>, c: ConversationRecord, messages: LlmMessage[], receipt?: TurnReceipt): Promise<{ conversation: ConversationRecord; messages: ConversationMessage[] }> {
  const stored = await storeTurn(deps.db, {
    c,
    turn: {
      messages,
      receipt: receipt ?? emptyReceipt(c.turnCount + 1),
      promptTokens: 0,
      completionTokens: 0,
      model: null,
      variables: c.variables,
      playbook: c.playbook,
      end: null,
      stats: { toolCalls: 0, toolCallsOk: 0, guardrailTriggers: receipt?.guardrails.length ?? 0, knowledgeLookups: 0, knowledgeHits: 0, costCents: 0 },
    },
    effects: { events: (change) => checkedEvents(changeEvents(change.conversation, change.messages)), usage: [] },
  });
  if (stored === 'conflict') {
    const now = await getConversation(deps.db, c.orgId, c.id);
    if (now?.status === 'ended') throw new ApiError(409, 'conversation_ended', `The conversation ended (${now.endReason ?? 'ended'})`);
    throw new ApiError(409, 'conversation_busy', 'Another message of this conversation was stored meanwhile; send this one again');
  }
  return stored;
}

/**
 * A person's message while a member holds the conversation (`sendMessage` with `takenOverBy` set): stored verbatim
 * (PII redacted when the agent says so, as the runtime's `admit` does) and not answered — the reply is empty.
 */
export async function heldTurn(deps: ConversationDeps, c: ConversationRecord & { recent?: ConversationMessage[] }, text: string): Promise<StoredTurnOutcome> {
  const agent = await pinnedAgent(deps.db, c);
  const receipt = emptyReceipt(c.turnCount + 1);
  let content = text;
  if (agent.guardrails.redactPii) {
    const r = redactPii(text);
    if (r.kinds.length) {
      content = r.text;
      receipt.guardrails.push({ rule: 'redactPii', action: 'redacted', excerpt: [...new Set(r.kinds)].join(', '), stage: 'input' });
    }
  }
  const messages: LlmMessage[] = [{ role: 'user', content }];
  const stored = await storeMessages(deps, c, messages, receipt);
  const result: TurnResult = { messages, reply: '', receipt, usage: { promptTokens: 0, completionTokens: 0, totalTokens: 0 }, model: null, variables: c.variables, playbook: c.playbook, end: null };
  const recent = [...(c.recent ?? []), ...stored.messages].slice(-HISTORY_MESSAGES);
  return { conversation: stored.conversation, messages: stored.messages, reply: null, receipt, result, recent };
}

/** The `name` of a message a member wrote. */
export function operatorName(actor: string): string {
  return `operator:${actor}`;
}

/** What {@link controlConversation} needs. */
export interface ControlDeps extends AnalysisDeps {
  db: ConversationDeps['db'];
  temporal?: { client: Client; taskQueue: string };
}

function refuse(field: string, message: string): ApiError {
  return new ApiError(400, 'validation_error', `The control is not valid: ${field} ${message}`, { errors: [{ field, message }] });
}

/**
 * Applies one control to a conversation of `orgId` on behalf of `actor` (`mem_…` or a key id).
 * @throws ApiError 404 `conversation_not_found` (also another organization's); 409 `conversation_ended`;
 *   400 `validation_error` naming `action` (not one of the channel's), `content` or `to`; 409 `not_taken_over`
 *   (`say` on a text channel nobody took over); 409 `already_taken_over` (another member holds it)
 */
export async function controlConversation(deps: ControlDeps, orgId: string, id: string, req: ControlRequest, actor: string): Promise<ControlOutcome> {
  const c = /^cnv_[A-Za-z0-9]{8,40}$/.test(id) ? await getConversation(deps.db, orgId, id) : undefined;
  if (!c || c.simulation) throw new ApiError(404, 'conversation_not_found', 'Conversation not found');
  if (c.status !== 'active') throw new ApiError(409, 'conversation_ended', `The conversation ended (${c.endReason ?? 'ended'}); a control needs one in progress`);
  const kind = c.channel === 'voice' ? 'voice' : 'text';
  if (!(ACTIONS_BY_CHANNEL[kind] as readonly string[]).includes(req.action)) {
    throw refuse('action', `must be one of ${ACTIONS_BY_CHANNEL[kind].join(', ')} on a ${c.channel} conversation`);
  }
  const content = (req.content ?? '').trim();
  if ((req.action === 'say' || req.action === 'add_message') && (!content || content.length > 2000)) throw refuse('content', 'must be 1 to 2000 characters');
  if (req.action === 'transfer' && !(req.to && (/^\+[1-9]\d{6,14}$/.test(req.to) || /^sips?:[^\s]{3,200}$/.test(req.to)))) throw refuse('to', 'must be an E.164 number or a sip: URI');
  const out = (conversation: ConversationRecord, status: ControlOutcome['status'], message: ConversationMessage | null = null): ControlOutcome => ({
    conversationId: conversation.id,
    action: req.action,
    status,
    conversationStatus: conversation.status,
    takenOverBy: conversation.takenOverBy,
    message,
  });

  if (kind === 'voice') {
    const queued = await queueControl(deps.db, orgId, { conversationId: c.id, action: req.action as QueuedControl['action'], content: content || null, destination: req.to ?? null, actor });
    // The socket is held by this process: applied before answering; otherwise by its holder, on the feed's notice.
    const applied = await deliverControls(deps.db, orgId, c.id);
    const now = (await getConversation(deps.db, orgId, c.id)) ?? c;
    // Held here, the control was applied by this delivery or by the feed's, which this one waited for.
    return out(now, applied.includes(queued.id) || holdsCall(orgId, c.id) || now.status === 'ended' ? 'applied' : 'queued');
  }

  switch (req.action) {
    case 'take_over':
    case 'hand_back': {
      if (req.action === 'take_over' && c.takenOverBy && c.takenOverBy !== actor) throw new ApiError(409, 'already_taken_over', `The conversation is held by ${c.takenOverBy}; they hand it back first`);
      const changed = await deps.db.transaction(async (trx) => {
        const after = await setTakeover(trx, orgId, c.id, req.action === 'take_over' ? actor : null);
        if (!after) return undefined;
        const data = { conversationId: c.id, agentId: c.agentId, channel: c.channel, actor, at: new Date().toISOString() };
        await emitEvents(trx, orgId, [req.action === 'take_over' ? { type: 'conversation.taken_over', data } : { type: 'conversation.handed_back', data }]);
        return after;
      });
      if (!changed) throw new ApiError(409, 'conversation_ended', 'The conversation ended; a control needs one in progress');
      return out(changed, 'applied');
    }
    case 'say': {
      if (!c.takenOverBy) throw new ApiError(409, 'not_taken_over', 'Take the conversation over before writing to the person (action take_over)');
      const stored = await storeMessages(deps, c, [{ role: 'assistant', content, name: operatorName(actor) }]);
      // An SMS conversation's metadata names both numbers (services/sms/answer.ts): the member's line is texted back.
      if (c.channel === 'sms' && typeof c.metadata.from === 'string' && typeof c.metadata.to === 'string') {
        await queueText(deps.db, deps.temporal, orgId, { from: c.metadata.to, to: c.metadata.from, body: content, trigger: 'reply' });
      }
      return out(stored.conversation, 'applied', stored.messages[0] ?? null);
    }
    case 'add_message': {
      const stored = await storeMessages(deps, c, [{ role: 'system', content, name: operatorName(actor) }]);
      return out(stored.conversation, 'applied', stored.messages[0] ?? null);
    }
    default: {
      // Analysed once, like every end (docs/api-notes.md "Conversation analysis").
      const ended = await finishConversation(deps.db, c, 'ended_by_api', deps);
      return out(ended, 'applied');
    }
  }
}
