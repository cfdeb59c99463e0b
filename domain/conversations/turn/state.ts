/**
 * The one state a turn's stages pass along (docs/architecture.md "A turn"): {@link Turn} is what the turn was
 * asked (fixed for its whole run), {@link TurnState} what it has done so far. A stage takes the state and returns
 * {@link Next}: the state for the next stage, or `{ done }` — the turn ends there and ./finish.ts builds the result.
 */
import type { LlmMessage, LlmResponse, LlmToolCall, LlmUsage } from '../llm';
import type { PlaybookState } from '../playbook';
import type { EscalationRoute } from '../escalation';
import type { RemoteTool } from '../../agents/mcp';
import type { TurnReceipt } from '../../../schemas/types/chat';
import type { EndReason, TurnContext, TurnEvent, TurnOptions, TurnPorts, TurnResult } from './contract';

/** What a turn was asked, fixed while it runs (./admit.ts `openTurn`). */
export interface Turn {
  ctx: TurnContext;
  /** The person's message as sent; null: none (the turn answers `opts.toolOutputs`). */
  userText: string | null;
  ports: TurnPorts;
  emit: (e: TurnEvent) => void;
  opts: TurnOptions;
  /** `ports.now()` when the turn began, ms (the receipt's `turn` latency). */
  startedAt: number;
  /** Where an escalation would go, looked up beside the rest of the turn (null: nowhere, or the look-up failed). */
  route: Promise<EscalationRoute | null>;
  /** The agent's MCP servers' tools, listed beside the rest of the turn (none when the listing failed). */
  listed: Promise<{ tools: RemoteTool[]; unavailable: { skill: string; error: string }[] }>;
  /** `tool` messages answering the previous turn's client calls (`opts.toolOutputs`), stored first. */
  prior: LlmMessage[];
}

/**
 * What the turn has done so far. `receipt` and `messages` are the turn's logs: a stage appends to them (in the
 * order things happen, which is the order of the streamed events) and never rewrites an entry; every other
 * field is replaced by the stage that changes it, in the state it returns.
 */
export interface TurnState {
  /** The person's message as stored (PII redacted when the agent says so); '' when there is none. */
  stored: string;
  /** Conversation variables as the turn leaves them. */
  vars: Record<string, string>;
  /** Set when the conversation ends with this turn. */
  end: EndReason | null;
  /** Why and where the turn escalated (kept in the result only when `end` is `escalated`). */
  escalation?: TurnResult['escalation'];
  /**
   * A protected action waiting for the PIN that matched this turn, run now: `skill:<name>` or `playbook:<name>`
   * (../callerVerification.ts `VERIFICATION_PENDING`); null when none.
   */
  resume: string | null;
  /** Said before the rest of the reply (the thanks for a matching PIN); null when nothing. */
  lead: string | null;
  /** Tokens and model of a semantic guardrail's classification call, added to the rest of the turn's. */
  guardUsage: LlmUsage;
  guardModel: string | null;
  /** Messages to store, in order (the client's tool outputs, the person's message, tool exchanges). */
  messages: LlmMessage[];
  receipt: TurnReceipt;
}

/** How a turn ends: what is said and what the caller stores besides the state. */
export interface TurnEnd {
  state: TurnState;
  /** The reply as said (after output guardrails); stored as the last assistant message unless `clientCalls`. */
  reply: string;
  /** The playbook as it waits for the next turn; null when none runs. */
  playbook: PlaybookState | null;
  /** Tokens of the model requests the turn made (the classification call's are added by ./finish.ts). */
  usage: LlmUsage;
  model: string | null;
  /** Why the model's last answer ended, when the reply is that answer. */
  finishReason?: LlmResponse['finishReason'];
  /** Client tool calls the turn ends with (their assistant message is already the last of `messages`). */
  clientCalls?: LlmToolCall[];
}

/** A stage's outcome: go on with `next`, or end the turn. */
export type Next<S> = { next: S } | { done: TurnEnd };

/** A stage of the pipeline: reads the turn and a state, returns the next state or the end. */
export type Stage<I, O = I> = (turn: Turn, state: I) => Next<O> | Promise<Next<O>>;

export const ZERO_USAGE: LlmUsage = { promptTokens: 0, completionTokens: 0, totalTokens: 0 };

/** The sum of two usages. */
export const addUsage = (a: LlmUsage, b: LlmUsage): LlmUsage => ({
  promptTokens: a.promptTokens + b.promptTokens,
  completionTokens: a.completionTokens + b.completionTokens,
  totalTokens: a.totalTokens + b.totalTokens,
});

/** ms to two decimals, as the receipt's latencies are. */
export const round = (ms: number) => Math.round(ms * 100) / 100;

/** An end where nothing but `reply` was said by the runtime itself (no model request of the turn's own). */
export function scriptedEnd(state: TurnState, reply: string, playbook: PlaybookState | null): { done: TurnEnd } {
  return { done: { state, reply, playbook, usage: ZERO_USAGE, model: null } };
}
