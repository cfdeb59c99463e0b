/**
 * The first stages of a turn (docs/architecture.md "A turn"): the turn opens (its clock starts and the escalation
 * route and the MCP servers' tools are looked up beside the rest of it), the person's message is admitted (PII
 * redacted for storage, docs/api-notes.md "Conversations": guardrails) and a conversation past its
 * `maxConversationMinutes` ends.
 */
import type { RemoteTool } from '../../agents/mcp';
import { redactPii } from '../guardrails';
import type { LlmMessage } from '../llm';
import type { TurnContext, TurnEvent, TurnOptions, TurnPorts } from './contract';
import { decide, sayScripted } from './guardOutput';
import { scriptedEnd, ZERO_USAGE, type Next, type Turn, type TurnState } from './state';

/** Said when the conversation reached `maxConversationMinutes`. */
export const TIME_LIMIT_REPLY = 'We have reached the time limit for this conversation. Thank you, goodbye.';

/**
 * Opens a turn: starts its clock, and starts the look-ups a later stage awaits — where an escalation would go
 * (`ports.escalationRoute`) and the MCP servers' tools (`ports.remoteTools`) — so they run beside the rest of the
 * turn (an unreachable server costs no more than its timeout; a failing look-up is none).
 */
export function openTurn(ctx: TurnContext, userText: string | null, ports: TurnPorts, emit: (e: TurnEvent) => void, opts: TurnOptions): Turn {
  const startedAt = ports.now();
  const route = ports.escalationRoute ? ports.escalationRoute().catch(() => null) : Promise.resolve(null);
  const listed = ports.remoteTools ? ports.remoteTools().catch(() => ({ tools: [], unavailable: [] })) : Promise.resolve({ tools: [] as RemoteTool[], unavailable: [] });
  // Outputs of the client's function calls come first: they answer the previous turn's last assistant message.
  const prior: LlmMessage[] = (opts.toolOutputs ?? []).map((o) => ({ role: 'tool', toolCallId: o.callId, name: o.name, content: o.output }));
  return { ctx, userText, ports, emit, opts, startedAt, route, listed, prior };
}

/**
 * Admits the person's message: the state the stages start from, with the message as stored (card numbers and
 * SSNs redacted when the agent's `redactPii` is on, a `redactPii` decision recorded) after the client's tool outputs.
 */
export function admit(turn: Turn): TurnState {
  const { ctx, userText } = turn;
  const state: TurnState = {
    stored: userText ?? '',
    vars: { ...ctx.variables },
    end: null,
    resume: null,
    lead: null,
    guardUsage: ZERO_USAGE,
    guardModel: null,
    messages: [],
    receipt: { turn: ctx.turn + 1, toolCalls: [], knowledge: [], guardrails: [], latency: [], playbook: null },
  };
  if (ctx.agent.guardrails.redactPii && userText !== null) {
    const r = redactPii(userText);
    if (r.kinds.length) {
      state.stored = r.text;
      decide(turn, state, { rule: 'redactPii', action: 'redacted', excerpt: [...new Set(r.kinds)].join(', '), stage: 'input' });
    }
  }
  state.messages.push(...turn.prior, ...(userText !== null ? [{ role: 'user' as const, content: state.stored }] : []));
  return state;
}

/** Ends the conversation `max_duration` once it has run longer than the agent's `maxConversationMinutes`. */
export function limitDuration(turn: Turn, state: TurnState): Next<TurnState> {
  const g = turn.ctx.agent.guardrails;
  if (!(g.maxConversationMinutes !== null && turn.ports.wallClock() - turn.ctx.startedAtMs > g.maxConversationMinutes * 60_000)) return { next: state };
  decide(turn, state, { rule: 'maxConversationMinutes', action: 'ended', excerpt: `${g.maxConversationMinutes} minutes`, stage: 'input' });
  return scriptedEnd({ ...state, end: 'max_duration' }, sayScripted(turn, state, TIME_LIMIT_REPLY), null);
}
