/**
 * What a turn of the conversation runtime takes and gives (docs/api-notes.md "Conversations"; docs/architecture.md
 * "A turn"): the conversation as a turn sees it, the ports the caller wires (api/ and activities/ hand in the chat
 * model, knowledge retrieval and skill execution), the events streamed while it runs and the result stored after
 * it. ../runtime.ts re-exports all of it.
 */
import type { CompiledAgent } from '../../agents/compile';
import type { ConversationChannel, TurnReceipt } from '../../../schemas/types/chat';
import type { RemoteTool } from '../../agents/mcp';
import type { GuardrailDecision } from '../guardrails';
import type { LlmMessage, LlmProvider, LlmRequest, LlmResponse, LlmTool, LlmToolCall, LlmUsage } from '../llm';
import type { PlaybookState } from '../playbook';
import type { KnowledgeHit } from '../prompt';
import type { VerificationRecord } from '../callerVerification';
import type { EscalationReason, EscalationRoute } from '../escalation';

/** Why a conversation ended. */
export type EndReason = 'ended_by_user' | 'end_call' | 'transferred' | 'escalated' | 'max_duration' | 'ended_by_api' | 'idle';

/** A conversation as one turn sees it. */
export interface TurnContext {
  id: string;
  orgId: string;
  agentId: string;
  channel: ConversationChannel;
  /** The pinned version's compiled configuration. */
  agent: CompiledAgent;
  variables: Record<string, string>;
  playbook: PlaybookState | null;
  /** Turns completed before this one. */
  turn: number;
  /** Recent stored messages, oldest first (the greeting included). */
  history: LlmMessage[];
  /** When the conversation started, ms since the epoch (for `maxConversationMinutes`). */
  startedAtMs: number;
}

/** A skill to run with its arguments. */
export interface SkillCall {
  callId: string;
  skill: CompiledAgent['skills'][number];
  args: Record<string, string>;
  conversation: Pick<TurnContext, 'id' | 'orgId' | 'agentId' | 'channel' | 'variables'>;
  /**
   * A tool of the skill's server (`mcp`, {@link TurnPorts.remoteTools}): its name there, the model's arguments as
   * typed JSON, and whether caller verification succeeded in this conversation (the agent verifies callers and
   * `caller_verified` is `true`: with verification off, a session's own variables could claim it).
   */
  tool?: { name: string; arguments: Record<string, unknown>; callerVerified: boolean };
}

/** What a skill returned; `effect` ends or transfers the conversation after this turn's reply. */
export interface SkillOutcome {
  output: unknown;
  effect?: 'end' | 'transfer';
  /** A line the agent says after the skill (e.g. an end_call closing line). */
  say?: string;
}

/** A skill failed; the message is shown to the model and stored in the receipt (never said to the person as is). */
export class SkillError extends Error {
  constructor(
    message: string,
    readonly code: string = 'skill_failed',
  ) {
    super(message);
    this.name = 'SkillError';
  }
}

/** What the runtime needs from the outside. */
export interface TurnPorts {
  llm: LlmProvider;
  /**
   * Best chunks of the pinned version's knowledge sources for `query`, best first (already scoped).
   * @param earlierUserTurns the person's earlier messages, oldest first: the retrieval query reads the last few
   *   turns, the current one weighted most (docs/knowledge.md "Retrieval")
   */
  searchKnowledge(query: string, limit: number, earlierUserTurns?: readonly string[]): Promise<KnowledgeHit[]>;
  /** Runs a skill. @throws SkillError (anything else is treated the same, with its message) */
  runSkill(call: SkillCall): Promise<SkillOutcome>;
  /** Monotonic clock in ms (performance.now) for latency samples. */
  now(): number;
  /** Wall clock in ms since the epoch. */
  wallClock(): number;
  /**
   * Caller verification method `pin`: the caller's record when `pin` matches its PIN field, else null
   * (services/conversations/callerVerification.ts). Absent: PIN answers are not checked.
   */
  checkPin?(pin: string): Promise<VerificationRecord | null>;
  /**
   * Where an escalation of this conversation would go now, and what is known of the person
   * (services/conversations/escalation.ts `escalationRouteFor`; docs/api-notes.md "Conversations": escalation). With a
   * destination the model is offered the `escalate` tool; an escalated text conversation's reply says how the
   * person will be reached. Absent, or failing: no destination.
   */
  escalationRoute?(): Promise<EscalationRoute>;
  /**
   * The tools the agent's `mcp` skills' servers list, allow-listed and namespaced (domain/agents/mcp.ts): offered to
   * the model beside the skills (the `offered: false` ones only recognised, so a call of one is refused), each call
   * run by `runSkill` with its `tool`; and the skills whose server failed (the receipt's `unavailableSkills`).
   * Absent, or failing: none (the turn goes on without them).
   */
  remoteTools?(): Promise<{ tools: RemoteTool[]; unavailable: { skill: string; error: string }[] }>;
}

/** Streamed while a turn runs (spec "Events": `event:<type>`); `message.completed` is sent by the caller after the turn is stored. */
export type TurnEvent =
  | { type: 'message.delta'; data: { content: string } }
  | { type: 'tool.call'; data: { id: string; skill: string; arguments: Record<string, string> } }
  | { type: 'tool.result'; data: { id: string; skill: string; ok: boolean; output?: unknown; error?: string; durationMs: number } }
  | { type: 'guardrail'; data: GuardrailDecision };

/** The outcome of a turn, for the caller to store in one transaction. */
export interface TurnResult {
  /** Messages to append, in order: the user's (redacted when `redactPii`), tool exchanges, the reply. */
  messages: LlmMessage[];
  /** The reply as said (after output guardrails). */
  reply: string;
  receipt: TurnReceipt;
  usage: LlmUsage;
  model: string | null;
  variables: Record<string, string>;
  playbook: PlaybookState | null;
  /** Set when the conversation ends with this turn. */
  end: EndReason | null;
  /**
   * Set when the turn escalated (`end: escalated`): why, and where the escalation goes (null: no destination), for
   * the `conversation.escalated` event.
   */
  escalation?: { reason: EscalationReason; route: EscalationRoute | null };
  /**
   * Calls of client tools (`TurnOptions.clientTools`) the model made: not run, the turn ends with them (their
   * assistant message is the last of `messages`); the next turn brings their outputs (`TurnOptions.toolOutputs`).
   */
  clientCalls?: LlmToolCall[];
  /** Why the model's last answer of the turn ended, when the reply is that answer (`length`: cut by the token limit). */
  finishReason?: LlmResponse['finishReason'];
}

/**
 * What a turn of the Responses API or of `/chat/completions` adds (docs/api-notes.md "Responses API", "OpenAI
 * compatibility"); other channels give none.
 */
export interface TurnOptions {
  /**
   * Function tools of the client, offered to the model beside the agent's own (a skill, playbook or `escalate` tool
   * of the same name wins, and the client's is not offered). A call of one is not run here: the turn ends with it
   * in `TurnResult.clientCalls`, any other call of that round answered or run as usual.
   */
  clientTools?: LlmTool[];
  /**
   * Outputs of the client calls the previous turn ended with: stored as `tool` messages before the user's message.
   * With no user message (`userText` null) the model answers from them — no guardrail, playbook or PIN step runs.
   */
  toolOutputs?: { callId: string; name: string; output: string }[];
  /**
   * The model's answer must be JSON matching a schema (`LlmRequest.responseFormat`): passed to the model, and the
   * answer is not made speakable (../speakable.ts, which drops JSON); output guardrails still apply.
   */
  responseFormat?: LlmRequest['responseFormat'];
  /**
   * How the model may call tools in the turn's first model request (`LlmRequest.toolChoice`; later rounds are
   * `auto`, so a forced call is made once). A named function must be one of `clientTools`.
   */
  toolChoice?: LlmRequest['toolChoice'];
  /**
   * Sampling and limits the caller asks for its turn (`/chat/completions` parameters, OpenAI API reference "Chat
   * Completions"), sent with every model request of the turn over the agent's own settings; `maxTokens` never
   * exceeds the agent's (./model.ts `modelRequestSettings`).
   */
  sampling?: Pick<LlmRequest, 'temperature' | 'topP' | 'stop' | 'seed' | 'presencePenalty' | 'frequencyPenalty' | 'logitBias' | 'maxTokens' | 'parallelToolCalls' | 'reasoningEffort'>;
}
