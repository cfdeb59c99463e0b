/**
 * The last stage of every turn, however it ended (docs/architecture.md "A turn"): the reply joins the messages,
 * the turn's latency closes the receipt, and the result for the caller to store in one transaction is built.
 */
import type { TurnResult } from './contract';
import { addUsage, round, type Turn, type TurnEnd } from './state';

/**
 * Builds the result of a turn that ended with `end`: the reply stored as the last assistant message (unless the
 * turn ends with client calls, whose assistant message is already last), the `turn` latency recorded, the
 * classification call's tokens added, and `escalation` kept only when the conversation ends `escalated`.
 */
export function finish(turn: Turn, end: TurnEnd): TurnResult {
  const { state } = end;
  if (end.reply && !end.clientCalls) state.messages.push({ role: 'assistant', content: end.reply });
  state.receipt.latency.push({ stage: 'turn', ms: round(turn.ports.now() - turn.startedAt) });
  const result: TurnResult = {
    messages: state.messages,
    reply: end.reply,
    receipt: state.receipt,
    usage: addUsage(end.usage, state.guardUsage),
    model: end.model ?? state.guardModel,
    variables: state.vars,
    playbook: end.playbook,
    end: state.end,
    ...(state.end === 'escalated' && state.escalation ? { escalation: state.escalation } : {}),
  };
  if (end.finishReason !== undefined) result.finishReason = end.finishReason;
  if (end.clientCalls) result.clientCalls = end.clientCalls;
  return result;
}
