/**
 * Escalating inside a turn (docs/api-notes.md "Conversations": escalation): `escalateOn`, failed PIN attempts, the
 * `escalate` tool and a playbook `escalate` node all end the conversation `escalated` the same way.
 */
import { escalationLine, type EscalationReason } from '../escalation';
import type { Turn, TurnState } from './state';

/**
 * Ends the conversation `escalated` for `reason`. @returns the state so ended (with where the escalation goes)
 * and what to say: `line`, then in chat, the widget and SMS how the person will be reached (../escalation.ts).
 */
export async function escalate(turn: Turn, state: TurnState, reason: EscalationReason, line: string): Promise<{ state: TurnState; said: string }> {
  const route = await turn.route;
  return { state: { ...state, end: 'escalated', escalation: { reason, route } }, said: escalationLine(line, turn.ctx.channel, route) };
}
