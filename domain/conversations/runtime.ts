/**
 * The conversation runtime (docs/api-notes.md "Conversations"; spec "What the service does", "Agent lifecycle" rules
 * 1–2): executes one turn of a conversation against the version it is pinned to. Pure orchestration over
 * ports — the chat model, knowledge retrieval and skill execution are handed in (api/ and activities/
 * wire them to Postgres and the providers), so chat, widget, simulation and voice run the same code and
 * the runtime's own overhead can be measured apart from the model.
 *
 * A turn, in order: caller verification by PIN when it is due (docs/api-notes.md "Caller verification") → input
 * guardrails (PII redaction for storage, blocked topics by phrase, escalation, then semantic blocked topics judged by one
 * classification call of the agent's model, fail-closed: ./topicClassifier.ts) → a person leaving a running playbook
 * ("never mind", "cancel", "stop") → a running playbook advances (ask → gather → skill → say → end), or a
 * message naming a playbook starts it, or else knowledge is retrieved and the model answers, calling skills,
 * the playbooks' `start_playbook_<name>` tools and — when the organization has an escalation destination —
 * `escalate` (at most {@link MAX_TOOL_ROUNDS} rounds) → output
 * guardrails and {@link speakable} rewrite what is said while it streams (no citation, placeholder, JSON or
 * internal code reaches a person; they stay in the receipt). A protected action the caller is not verified
 * for is not run: the agent asks for the PIN (and runs it once the PIN matched) or declines.
 * A turn that escalates (`escalateOn`, failed PIN attempts, the `escalate` tool, a playbook `escalate` node) ends the
 * conversation `escalated`; in chat, the widget and SMS its reply also says how the person will be reached
 * (./escalation.ts `reachLine`).
 * Everything the turn did is returned as a receipt.
 */
import type { CompiledAgent, CompiledPlaybook } from '../agents/compile';
import type { ConversationChannel, ReceiptToolCall, TurnReceipt } from '../../schemas/types/chat';

export type { ConversationChannel, ReceiptToolCall, TurnReceipt } from '../../schemas/types/chat';
import { skillInputs, skillType } from '../agents/skillTypes';
import type { RemoteTool } from '../agents/mcp';
import { checkInput, checkOutput, redactPii, semanticTopics, type GuardrailDecision } from './guardrails';
import type { LlmMessage, LlmProvider, LlmRequest, LlmResponse, LlmTool, LlmToolCall, LlmUsage, SandboxHints } from './llm';
import { checkSemanticTopics } from './topicClassifier';
import {
  answerPlaybook,
  continueAfterSkill,
  leavesPlaybook,
  MAX_STEPS_PER_TURN,
  playbookExitReply,
  playbookFor,
  playbookToolName,
  renderSpoken,
  startPlaybook,
  type PlaybookAdvance,
  type PlaybookState,
} from './playbook';
import { playbookHints, playbookTools, skillTools, sourceLabel, systemPrompt, type KnowledgeHit } from './prompt';
import {
  pinCanVerify,
  pinDigits,
  pinPrompt,
  pinStep,
  protectedPlaybook,
  protectedSkill,
  skillAllowed,
  UNVERIFIED_REFUSAL,
  VERIFICATION_PENDING,
  verificationAsk,
  verificationRequired,
  verifiedThanks,
  type VerificationRecord,
} from './callerVerification';
import { SPEAKABLE_HOLDBACK, speakable } from './speakable';
import { ESCALATE_TOOL, escalateTool, escalationLine, SPOKEN_ESCALATION, type EscalationReason, type EscalationRoute } from './escalation';


/** Why a conversation ended. */
export type EndReason = 'ended_by_user' | 'end_call' | 'transferred' | 'escalated' | 'max_duration' | 'ended_by_api' | 'idle';

/** Model-driven tool-call rounds per turn before the runtime answers without tools. */
export const MAX_TOOL_ROUNDS = 3;
/** Knowledge chunks retrieved per turn. */
export const KNOWLEDGE_RESULTS = 3;
/** Chunks below this normalized score are not offered to the model. */
export const MIN_KNOWLEDGE_SCORE = 0.01;

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
   * answer is not made {@link speakable} (which drops JSON); output guardrails still apply.
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
   * exceeds the agent's ({@link modelRequestSettings}).
   */
  sampling?: Pick<LlmRequest, 'temperature' | 'topP' | 'stop' | 'seed' | 'presencePenalty' | 'frequencyPenalty' | 'logitBias' | 'maxTokens' | 'parallelToolCalls' | 'reasoningEffort'>;
}

const ZERO_USAGE: LlmUsage = { promptTokens: 0, completionTokens: 0, totalTokens: 0 };
const addUsage = (a: LlmUsage, b: LlmUsage): LlmUsage => ({
  promptTokens: a.promptTokens + b.promptTokens,
  completionTokens: a.completionTokens + b.completionTokens,
  totalTokens: a.totalTokens + b.totalTokens,
});

/**
 * The greeting a new conversation opens with (variables filled, unfilled placeholders dropped, made
 * {@link speakable}), or null when the agent has none.
 */
export function greetingFor(agent: CompiledAgent, vars: Readonly<Record<string, string>>): string | null {
  return agent.greeting ? speakable(renderSpoken(agent.greeting, vars)) || null : null;
}

/**
 * The message a campaign call leaves on an answering machine (docs/voice.md "Voicemail"), variables filled as
 * in the greeting, or null when the version has none (versions published before the field existed too).
 */
export function voicemailMessageFor(agent: CompiledAgent, vars: Readonly<Record<string, string>>): string | null {
  return agent.voicemailMessage ? speakable(renderSpoken(agent.voicemailMessage, vars)) || null : null;
}

/**
 * Messages the model sees from stored history: plain assistant lines before the first user message (the
 * greeting), then everything from that user message on, so a window cut mid tool exchange stays valid.
 */
export function modelHistory(history: readonly LlmMessage[]): LlmMessage[] {
  const plain = (m: LlmMessage) => m.role === 'assistant' && !m.toolCalls?.length;
  const first = history.findIndex((m) => m.role === 'user');
  if (first < 0) return history.filter(plain);
  return [...history.slice(0, first).filter(plain), ...history.slice(first)];
}

/**
 * Streams text through {@link speakable} and the output guardrails: what is emitted is always a prefix of the
 * final filtered text, holding back as many characters as the longest forbidden phrase (at least the longest
 * opening speakable decides on) so a phrase split across deltas is still caught.
 */
class GuardedStream {
  private raw = '';
  private emitted = 0;
  private readonly holdback: number;
  readonly decisions: GuardrailDecision[] = [];

  constructor(
    private readonly agent: CompiledAgent,
    private readonly emit: (e: TurnEvent) => void,
    /** Structured output (JSON): not made speakable. */
    private readonly structured = false,
  ) {
    this.holdback = Math.max(12, SPEAKABLE_HOLDBACK + 2, ...agent.guardrails.forbiddenPhrases.map((p) => p.length + 1));
  }

  push(delta: string): void {
    this.raw += delta;
    const safe = checkOutput(this.shape(this.raw), this.agent.guardrails).text;
    const upTo = Math.max(this.emitted, safe.length - this.holdback);
    if (upTo > this.emitted) {
      this.emit({ type: 'message.delta', data: { content: safe.slice(this.emitted, upTo) } });
      this.emitted = upTo;
    }
  }

  private shape(text: string): string {
    return this.structured ? text : speakable(text);
  }

  /** Flushes the rest and returns the whole filtered text. */
  finish(): string {
    const { text, decisions } = checkOutput(this.shape(this.raw), this.agent.guardrails);
    if (text.length > this.emitted) this.emit({ type: 'message.delta', data: { content: text.slice(this.emitted) } });
    this.emitted = text.length;
    this.decisions.push(...decisions);
    return text;
  }
}

/** Parses a model's tool-call arguments into string inputs (non-strings are JSON-encoded; bad JSON is no input). */
export function toolArguments(call: LlmToolCall): Record<string, string> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(call.arguments || '{}');
  } catch {
    return {};
  }
  if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) return {};
  return Object.fromEntries(Object.entries(parsed).map(([k, v]) => [k, typeof v === 'string' ? v : JSON.stringify(v)]));
}

/** A model's tool-call arguments as typed JSON (an MCP tool's own schema types them); bad JSON is no argument. */
export function rawToolArguments(call: LlmToolCall): Record<string, unknown> {
  try {
    const parsed = JSON.parse(call.arguments || '{}');
    return parsed && typeof parsed === 'object' && !Array.isArray(parsed) ? parsed : {};
  } catch {
    return {};
  }
}

/** Output of a skill flattened into conversation variables `<skill>_<key>` (strings, at most 1,000 characters). */
export function outputVariables(skill: string, output: unknown): Record<string, string> {
  const vars: Record<string, string> = {};
  if (output && typeof output === 'object' && !Array.isArray(output)) {
    for (const [k, v] of Object.entries(output as Record<string, unknown>)) {
      if (/^[a-z][a-z0-9_]*$/i.test(k)) vars[`${skill}_${k}`.toLowerCase().slice(0, 64)] = (typeof v === 'string' ? v : JSON.stringify(v)).slice(0, 1000);
    }
  } else if (output !== undefined) vars[`${skill}_result`] = (typeof output === 'string' ? output : JSON.stringify(output)).slice(0, 1000);
  return vars;
}

/**
 * Executes one user turn.
 * @param ctx the conversation as stored before the turn
 * @param userText the user's message (1..10,000 characters, already validated); null: none, the turn answers
 *   `opts.toolOutputs` (Responses API)
 * @param emit receives streamed events in order (deltas, tool calls and results, guardrail decisions)
 * @param opts client tools, their outputs and a response format (Responses API: {@link TurnOptions})
 * @returns what to store; nothing is stored here
 * @throws LlmProviderError from the model (the caller answers 502/503 and stores nothing)
 */
export async function runTurn(
  ctx: TurnContext,
  userText: string | null,
  ports: TurnPorts,
  emit: (e: TurnEvent) => void = () => undefined,
  opts: TurnOptions = {},
): Promise<TurnResult> {
  const t0 = ports.now();
  const agent = ctx.agent;
  const g = agent.guardrails;
  const cv = agent.callerVerification;
  const receipt: TurnReceipt = { turn: ctx.turn + 1, toolCalls: [], knowledge: [], guardrails: [], latency: [], playbook: null };
  const decide = (d: GuardrailDecision) => {
    receipt.guardrails.push(d);
    emit({ type: 'guardrail', data: d });
  };
  let vars = { ...ctx.variables };
  let end: EndReason | null = null;
  let escalation: TurnResult['escalation'];
  // Looked up at once, beside the rest of the turn: the tools and an escalation's reply need it.
  const route: Promise<EscalationRoute | null> = ports.escalationRoute ? ports.escalationRoute().catch(() => null) : Promise.resolve(null);
  // Listed beside the rest of the turn too (an unreachable server costs no more than its timeout, and no tools).
  const listed = ports.remoteTools ? ports.remoteTools().catch(() => ({ tools: [], unavailable: [] })) : Promise.resolve({ tools: [] as RemoteTool[], unavailable: [] });
  /** Ends the conversation `escalated` for `reason`; `line` said, then how the person will be reached (text channels). */
  const escalate = async (reason: EscalationReason, line: string): Promise<string> => {
    end = 'escalated';
    const r = await route;
    escalation = { reason, route: r };
    return escalationLine(line, ctx.channel, r);
  };

  let stored = userText ?? '';
  if (g.redactPii && userText !== null) {
    const r = redactPii(userText);
    if (r.kinds.length) {
      stored = r.text;
      decide({ rule: 'redactPii', action: 'redacted', excerpt: [...new Set(r.kinds)].join(', '), stage: 'input' });
    }
  }
  // Outputs of the client's function calls come first: they answer the previous turn's last assistant message.
  const prior: LlmMessage[] = (opts.toolOutputs ?? []).map((o) => ({ role: 'tool', toolCallId: o.callId, name: o.name, content: o.output }));
  const messages: LlmMessage[] = [...prior, ...(userText !== null ? [{ role: 'user' as const, content: stored }] : [])];
  // Tokens and model of a semantic guardrail's classification call, added to whatever the turn does next.
  let guardUsage = ZERO_USAGE;
  let guardModel: string | null = null;
  const finish = (reply: string, usage: LlmUsage, model: string | null, playbook: PlaybookState | null): TurnResult => {
    if (reply) messages.push({ role: 'assistant', content: reply });
    receipt.latency.push({ stage: 'turn', ms: round(ports.now() - t0) });
    return { messages, reply, receipt, usage: addUsage(usage, guardUsage), model: model ?? guardModel, variables: vars, playbook, end, ...(end === 'escalated' && escalation ? { escalation } : {}) };
  };
  const sayScripted = (text: string) => {
    const out = new GuardedStream(agent, emit);
    out.push(text);
    const said = out.finish();
    out.decisions.forEach(decide);
    return said;
  };

  if (g.maxConversationMinutes !== null && ports.wallClock() - ctx.startedAtMs > g.maxConversationMinutes * 60_000) {
    decide({ rule: 'maxConversationMinutes', action: 'ended', excerpt: `${g.maxConversationMinutes} minutes`, stage: 'input' });
    end = 'max_duration';
    return finish(sayScripted('We have reached the time limit for this conversation. Thank you, goodbye.'), ZERO_USAGE, null, null);
  }

  // Caller verification by PIN (docs/api-notes.md "Caller verification"). `always`: while the PIN is due every answer is
  // taken as one (an answer that is not PIN-shaped repeats the request, uncounted). `for_protected_actions`: only
  // a PIN-shaped answer right after the agent asked for it is an attempt; anything else is answered as usual and
  // the protected action waits until it is asked for again.
  let resume: string | null = null;
  let lead: string | null = null;
  if (cv?.enabled && vars.caller_verification === 'pin_required' && ports.checkPin && userText !== null) {
    const always = verificationRequired(cv) === 'always';
    const pending = vars[VERIFICATION_PENDING];
    const pin = pinDigits(userText);
    if (always && !pin) return finish(sayScripted(pinPrompt(ctx.channel)), ZERO_USAGE, null, ctx.playbook);
    if (pin && (always || pending)) {
      messages[prior.length] = { role: 'user', content: '[PIN entered]' };
      const match = await ports.checkPin(pin);
      const step = pinStep(cv, ctx.channel, vars, match);
      vars = { ...vars, ...step.variables };
      if (step.escalate) {
        end = 'escalated';
        delete vars[VERIFICATION_PENDING];
      }
      if (!match || !pending) return finish(sayScripted(step.escalate ? await escalate('caller_verification', step.reply) : step.reply), ZERO_USAGE, null, ctx.playbook);
      // Verified: the protected action asked for runs now.
      delete vars[VERIFICATION_PENDING];
      resume = pending;
      lead = verifiedThanks(match.name);
    } else if (pending) {
      delete vars[VERIFICATION_PENDING];
    }
  }

  if (!resume && userText !== null) {
    const verdict = checkInput(userText, g);
    verdict.decisions.forEach(decide);
    if (verdict.refusal) {
      return finish(sayScripted(verdict.escalate ? await escalate('escalateOn', verdict.refusal) : verdict.refusal), ZERO_USAGE, null, ctx.playbook);
    }
    // Semantic topics: one classification call by the agent's model, fail-closed (./topicClassifier.ts).
    const topics = semanticTopics(g);
    if (topics.length) {
      const tc = ports.now();
      const judged = await checkSemanticTopics(userText, topics, ports.llm, { model: agent.model, fallbackModel: agent.fallbackModel, cacheScope: ctx.orgId });
      if (judged.called) receipt.latency.push({ stage: 'llm_classification', ms: round(ports.now() - tc) });
      guardUsage = judged.usage;
      guardModel = judged.model;
      judged.decisions.forEach(decide);
      if (judged.refusal) return finish(sayScripted(judged.refusal), ZERO_USAGE, null, ctx.playbook);
    }
  }

  // A person leaving a running playbook hears what was not done.
  if (!resume && ctx.playbook && userText !== null && leavesPlaybook(userText)) {
    receipt.playbook = { name: ctx.playbook.playbook, nodes: ctx.playbook.node ? [ctx.playbook.node] : [], exited: true };
    return finish(sayScripted(playbookExitReply(ctx.playbook.playbook)), ZERO_USAGE, null, null);
  }

  /**
   * Null when `pb` may start now; otherwise the line said instead: the PIN request (the playbook then waits in
   * VERIFICATION_PENDING) or a refusal when the caller cannot be verified here.
   */
  const holdPlaybook = (pb: CompiledPlaybook): string | null => {
    if (vars.caller_verified === 'true' || !protectedPlaybook(cv, pb, agent.skills)) return null;
    if (pinCanVerify(cv, vars) && ports.checkPin) {
      vars = { ...vars, [VERIFICATION_PENDING]: `playbook:${pb.name}` };
      return verificationAsk(ctx.channel);
    }
    return UNVERIFIED_REFUSAL;
  };

  /** Executes playbook steps until it waits for an answer or ends; `waitingOn` is the node this turn answered. */
  const runPlaybook = async (pb: CompiledPlaybook, advance: PlaybookAdvance, waitingOn: string | null): Promise<{ said: string[]; state: PlaybookState | null }> => {
    const nodes: string[] = waitingOn ? [waitingOn] : [];
    const skipped: string[] = [];
    const trace: NonNullable<TurnReceipt['playbook']> = { name: pb.name, nodes };
    receipt.playbook = trace;
    vars = { ...vars, ...advance.gathered };
    const said: string[] = [];
    let state = advance.state;
    let steps = advance.steps;
    let succeeded = false;
    while (steps.length) {
      let next: PlaybookAdvance | null = null;
      for (const step of steps) {
        nodes.push(step.node);
        if (step.type === 'skip') {
          skipped.push(step.node);
          continue;
        }
        if (step.type === 'say' || step.type === 'ask') said.push(step.text);
        // An `escalate` node hands the person to the team and ends the playbook and the conversation.
        if (step.type === 'escalate') said.push(await escalate('playbook_node', step.text));
        if (step.type !== 'skill') continue;
        const skill = agent.skills.find((s) => s.name === step.skill);
        const inputs: Record<string, string> = { ...step.inputs };
        for (const name of skill ? skillInputNames(skill) : []) if (inputs[name] === undefined && vars[name] !== undefined) inputs[name] = vars[name];
        const outcome = await callSkill(ctx, skill, step.skill, `pb_${receipt.turn}_${step.node}`, inputs, 'playbook', vars, ports, emit, receipt);
        if (outcome?.say) said.push(outcome.say);
        if (outcome?.effect === 'end') end = 'end_call';
        if (outcome?.effect === 'transfer') end = 'transferred';
        // A failure is `<skill>_failed: true`; its message stays in the receipt (it is not for the person).
        const failedVar = `${step.skill}_failed`.slice(0, 64);
        if (outcome) {
          succeeded = true;
          vars = { ...vars, ...outputVariables(step.skill, outcome.output) };
          delete vars[failedVar];
        } else vars = { ...vars, [failedVar]: 'true' };
        if (state && !end) next = continueAfterSkill(pb.graph, state, vars, !outcome);
      }
      if (!next || nodes.length > MAX_STEPS_PER_TURN) break;
      state = next.state;
      steps = next.steps;
    }
    if (skipped.length) trace.skipped = skipped;
    if (!said.length && succeeded && !end) said.push(DONE_REPLY);
    return { said, state: end ? null : state };
  };

  // Playbooks: a running one takes the answer; otherwise a message naming one starts it (other ways to start
  // one are its tool, below); a playbook that waited for the PIN starts once it matched.
  let pb: CompiledPlaybook | undefined;
  let advance: PlaybookAdvance | null = null;
  let waitingOn: string | null = null;
  if (resume?.startsWith('playbook:')) {
    pb = agent.playbooks.find((p) => p.name === resume!.slice('playbook:'.length));
    if (pb) advance = startPlaybook(pb.graph, pb.name, vars);
  } else if (!resume && ctx.playbook && userText !== null) {
    pb = agent.playbooks.find((p) => p.name === ctx.playbook!.playbook);
    if (pb) {
      advance = answerPlaybook(pb.graph, ctx.playbook, stored, vars);
      waitingOn = ctx.playbook.node;
    }
  } else if (!resume && userText !== null) {
    const name = playbookFor(userText, agent.playbooks);
    pb = name ? agent.playbooks.find((p) => p.name === name) : undefined;
    if (pb) {
      const hold = holdPlaybook(pb);
      if (hold) return finish(sayScripted(hold), ZERO_USAGE, null, null);
      advance = startPlaybook(pb.graph, pb.name, vars);
    }
  }
  if (advance && pb) {
    const run = await runPlaybook(pb, advance, waitingOn);
    return finish(sayScripted([lead, ...run.said].filter(Boolean).join(' ')), ZERO_USAGE, null, run.state);
  }

  // A free turn: retrieval, then the model with the skills and the playbooks as tools. A skill that waited for
  // the PIN is asked for again with the message that asked for it.
  const request = resume?.startsWith('skill:') ? (lastUserContent(ctx.history) ?? stored) : userText !== null ? stored : null;
  const leadSaid = lead ? sayScripted(`${lead} `) : '';
  const withLead = (text: string) => (leadSaid ? `${leadSaid}${text}`.trim() : text);
  const tr = ports.now();
  const hits = agent.knowledge.length && request !== null ? (await ports.searchKnowledge(request, KNOWLEDGE_RESULTS, earlierUserTurns(ctx.history))).filter((h) => h.score >= MIN_KNOWLEDGE_SCORE) : [];
  if (agent.knowledge.length && request !== null) {
    const ms = round(ports.now() - tr);
    receipt.knowledge.push({
      query: request.slice(0, 500),
      results: hits.map((h) => ({ chunkId: h.chunkId, score: h.score, sourceId: h.source.id, source: sourceLabel(h) })),
      durationMs: ms,
    });
    receipt.latency.push({ stage: 'retrieval', ms });
  }
  const ownTools = [...skillTools(agent), ...playbookTools(agent)];
  const { tools: listedTools, unavailable } = await listed;
  if (unavailable.length) receipt.unavailableSkills = unavailable;
  // A server's tool whose namespaced name another tool of the agent has is left out (the agent's own wins).
  const remote = listedTools.filter((r) => !ownTools.some((t) => t.name === r.tool.name));
  const tools = [...skillTools(agent), ...remote.filter((r) => r.offered).map((r) => r.tool), ...playbookTools(agent)];
  // With somewhere to hand the person to, the model may escalate (a skill or playbook tool of that name keeps it).
  const escalateOffered = !!(await route)?.destination && !tools.some((t) => t.name === ESCALATE_TOOL);
  if (escalateOffered) tools.push(escalateTool(ctx.channel));
  // The client's function tools, unless the agent has a tool of that name (the agent's own stay server-side).
  const clientTools = (opts.clientTools ?? []).filter((t) => !tools.some((x) => x.name === t.name));
  tools.push(...clientTools);
  const isClientCall = (call: LlmToolCall) => clientTools.some((t) => t.name === call.name);
  const convo: LlmMessage[] = [
    { role: 'system', content: systemPrompt(agent, vars, hits, { nowMs: ports.wallClock(), channel: ctx.channel }) },
    ...modelHistory([...ctx.history, ...prior]),
    ...(request !== null ? [{ role: 'user' as const, content: request }] : []),
  ];
  const hints: SandboxHints = hits.length ? { knowledge: hits.map((h) => ({ text: h.content, source: sourceLabel(h), score: h.score })) } : {};
  const starts = playbookHints(agent, tools);
  if (starts.length) hints.playbooks = starts;
  let usage = ZERO_USAGE;
  let model: string | null = null;
  for (let pass = 0; ; pass++) {
    const offerTools = tools.length > 0 && pass < MAX_TOOL_ROUNDS;
    const out = new GuardedStream(agent, emit, !!opts.responseFormat);
    const tl = ports.now();
    let first: number | null = null;
    let calls: LlmToolCall[] = [];
    let finishReason: LlmResponse['finishReason'] = 'stop';
    const shaped: Partial<LlmRequest> = {};
    if (opts.responseFormat) shaped.responseFormat = opts.responseFormat;
    if (opts.toolChoice && offerTools && pass === 0) shaped.toolChoice = opts.toolChoice;
    for await (const ev of ports.llm.stream({ messages: convo, tools: offerTools ? tools : undefined, hints, ...modelRequestSettings(agent, opts.sampling), ...shaped })) {
      if (ev.type === 'delta') {
        if (first === null) first = ports.now();
        out.push(ev.content);
      } else if (ev.type === 'done') {
        usage = addUsage(usage, ev.response.usage);
        model = ev.response.model;
        calls = ev.response.toolCalls;
        finishReason = ev.response.finishReason;
      }
    }
    if (first !== null) receipt.latency.push({ stage: 'llm_first_token', ms: round(first - tl) });
    receipt.latency.push({ stage: 'llm_total', ms: round(ports.now() - tl) });
    const text = out.finish();
    out.decisions.forEach(decide);
    if (!calls.length || !offerTools) return { ...finish(withLead(text), usage, model, null), finishReason };

    const assistant: LlmMessage = { role: 'assistant', content: text || null, toolCalls: calls };
    messages.push(assistant);
    convo.push(assistant);
    const closing: string[] = [];
    let start: CompiledPlaybook | undefined;
    // Said instead of asking the model again: the PIN request or a refusal for a protected action.
    let instead: string | null = null;
    // Calls of the client's tools: not run here; the turn ends with them unless something else ends it.
    const pending: LlmToolCall[] = [];
    const answerCall = (call: LlmToolCall, content: Record<string, unknown>) => {
      const toolMsg: LlmMessage = { role: 'tool', toolCallId: call.id, name: call.name, content: JSON.stringify(content) };
      messages.push(toolMsg);
      convo.push(toolMsg);
    };
    for (const call of calls) {
      const answer = (content: Record<string, unknown>) => answerCall(call, content);
      if (isClientCall(call)) {
        if (start || instead) answer({ ok: false, error: 'Not run: another action is under way.' });
        else pending.push(call);
        continue;
      }
      if (escalateOffered && call.name === ESCALATE_TOOL) {
        if (start || instead) {
          answer({ ok: false, error: 'Not run: another action is under way.' });
          continue;
        }
        const inputs = toolArguments(call);
        emit({ type: 'tool.call', data: { id: call.id, skill: ESCALATE_TOOL, arguments: inputs } });
        closing.push(await escalate('escalate_tool', SPOKEN_ESCALATION));
        const output = { escalated: true, destinationId: (await route)?.destination?.id ?? null };
        receipt.toolCalls.push({ id: call.id, skill: ESCALATE_TOOL, type: ESCALATE_TOOL, source: 'model', inputs, output, durationMs: 0 });
        emit({ type: 'tool.result', data: { id: call.id, skill: ESCALATE_TOOL, ok: true, output, durationMs: 0 } });
        answer({ ok: true, output });
        continue;
      }
      const remoteCall = remote.find((r) => r.tool.name === call.name);
      const skill = agent.skills.find((s) => s.name === (remoteCall ? remoteCall.skill : call.name));
      const playbook = skill ? undefined : agent.playbooks.find((p) => playbookToolName(p.name) === call.name);
      if (playbook) {
        if (start || instead) {
          answer({ ok: false, error: 'Not started: another action is under way.' });
          continue;
        }
        const hold = holdPlaybook(playbook);
        if (hold) {
          instead = hold;
          answer({ ok: false, error: 'Not started: it runs only for a verified caller; the agent told the caller.' });
          continue;
        }
        start = playbook;
        answer({ ok: true, started: playbook.name });
        continue;
      }
      if (start || instead) {
        answer({ ok: false, error: 'Not run: another action is under way.' });
        continue;
      }
      if (skill && vars.caller_verified !== 'true' && protectedSkill(cv, skill) && pinCanVerify(cv, vars) && ports.checkPin) {
        // Held until the PIN matched (docs/api-notes.md "Caller verification"), then asked for again.
        instead = verificationAsk(ctx.channel);
        vars = { ...vars, [VERIFICATION_PENDING]: `skill:${skill.name}` };
        receipt.toolCalls.push({
          id: call.id,
          skill: skill.name,
          type: skill.type,
          source: 'model',
          inputs: toolArguments(call),
          error: 'Held: runs only for a verified caller; the caller was asked for their PIN',
          durationMs: 0,
        });
        answer({ ok: false, error: 'The caller must verify with their PIN first; the agent asked for it.' });
        continue;
      }
      const remoteArgs = remoteCall ? { name: remoteCall.remoteName, arguments: rawToolArguments(call), callerVerified: !!cv?.enabled && vars.caller_verified === 'true' } : undefined;
      const outcome = await callSkill(ctx, skill, skill?.name ?? call.name, call.id, toolArguments(call), 'model', vars, ports, emit, receipt, remoteArgs);
      answer(outcome ? { ok: true, output: outcome.output } : { ok: false, error: receipt.toolCalls[receipt.toolCalls.length - 1]?.error });
      if (outcome?.say) closing.push(outcome.say);
      if (outcome?.effect === 'end') end = 'end_call';
      if (outcome?.effect === 'transfer') end = 'transferred';
    }
    if (pending.length && !end && !instead && !start) {
      // The client runs its functions; the text said with the calls is in their assistant message.
      return { ...finish('', usage, model, null), reply: withLead(text), clientCalls: pending };
    }
    for (const call of pending) answerCall(call, { ok: false, error: 'Not run: the conversation moved on.' });
    if (end) return finish(withLead(sayScripted(closing.join(' ') || (end === 'transferred' ? 'Transferring you now.' : 'Goodbye.'))), usage, model, null);
    if (instead) return finish(withLead(sayScripted(instead)), usage, model, null);
    if (start) {
      const run = await runPlaybook(start, startPlaybook(start.graph, start.name, vars), null);
      return finish(withLead(sayScripted(run.said.join(' '))), usage, model, run.state);
    }
  }
}

/**
 * The version's model settings as request fields (docs/api-notes.md "Agents": model settings): `model`,
 * `temperature`, `maxTokens` and `fallbackModel` when set; unset ones are left to the adapter (LLM_MODEL, the
 * model's own defaults, no fallback). `asked` (a caller's {@link TurnOptions}`.sampling`) overrides them, except that
 * its `maxTokens` is capped by the agent's.
 */
export function modelRequestSettings(agent: CompiledAgent, asked: TurnOptions['sampling'] = {}): Omit<LlmRequest, 'messages' | 'tools' | 'hints' | 'signal'> {
  const out: Omit<LlmRequest, 'messages' | 'tools' | 'hints' | 'signal'> = {};
  if (agent.model) out.model = agent.model;
  if (agent.temperature !== undefined) out.temperature = agent.temperature;
  if (agent.maxTokens !== undefined) out.maxTokens = agent.maxTokens;
  if (agent.fallbackModel) out.fallbackModel = agent.fallbackModel;
  for (const [k, v] of Object.entries(asked)) if (v !== undefined && k !== 'maxTokens') (out as Record<string, unknown>)[k] = v;
  if (asked.maxTokens !== undefined) out.maxTokens = out.maxTokens !== undefined ? Math.min(out.maxTokens, asked.maxTokens) : asked.maxTokens;
  return out;
}

/** Said when a playbook's skill succeeded and nothing else is left to say. */
const DONE_REPLY = "That's done. Is there anything else I can help with?";

/** The person's last messages before this turn, oldest first (what retrieval reads besides the current one). */
function earlierUserTurns(history: readonly LlmMessage[]): string[] {
  const out: string[] = [];
  for (let i = history.length - 1; i >= 0 && out.length < 2; i--) if (history[i].role === 'user' && history[i].content) out.unshift(history[i].content!);
  return out;
}

/** The content of the last user message of `history`, if any. */
function lastUserContent(history: readonly LlmMessage[]): string | undefined {
  for (let i = history.length - 1; i >= 0; i--) if (history[i].role === 'user' && history[i].content) return history[i].content!;
  return undefined;
}

const round = (ms: number) => Math.round(ms * 100) / 100;

function skillInputNames(skill: CompiledAgent['skills'][number]): string[] {
  return skillInputs(skill.type, skill.config as Record<string, any>).map((i) => i.name);
}

async function callSkill(
  ctx: TurnContext,
  skill: CompiledAgent['skills'][number] | undefined,
  name: string,
  callId: string,
  inputs: Record<string, string>,
  source: 'model' | 'playbook',
  vars: Record<string, string>,
  ports: TurnPorts,
  emit: (e: TurnEvent) => void,
  receipt: TurnReceipt,
  tool?: SkillCall['tool'],
): Promise<SkillOutcome | null> {
  emit({ type: 'tool.call', data: { id: callId, skill: name, arguments: inputs } });
  const t = ports.now();
  const entry: ReceiptToolCall = { id: callId, skill: name, type: skill?.type ?? 'unknown', ...(tool ? { tool: tool.name } : {}), source, inputs, durationMs: 0 };
  receipt.toolCalls.push(entry);
  let outcome: SkillOutcome | null = null;
  try {
    if (!skill || !skillType(skill.type)) throw new SkillError(`The agent has no skill "${name}"`, 'unknown_skill');
    if (!skillAllowed(ctx.agent.callerVerification, name, vars, skill.type)) {
      throw new SkillError(`Skill "${name}" runs only for a verified caller; the caller is not verified`, 'caller_not_verified');
    }
    if (ctx.agent.guardrails.redactPii) {
      for (const [k, v] of Object.entries(inputs)) inputs[k] = redactPii(v).text;
    }
    // An MCP tool's typed arguments carry the redacted text of their string members.
    const remoteTool = tool && { ...tool, arguments: Object.fromEntries(Object.entries(tool.arguments).map(([k, v]) => [k, typeof v === 'string' ? (inputs[k] ?? v) : v])) };
    outcome = await ports.runSkill({ callId, skill, args: inputs, conversation: { id: ctx.id, orgId: ctx.orgId, agentId: ctx.agentId, channel: ctx.channel, variables: vars }, ...(remoteTool ? { tool: remoteTool } : {}) });
    entry.output = outcome.output;
  } catch (err) {
    entry.error = (err as Error).message?.slice(0, 1000) || 'skill failed';
  }
  entry.durationMs = round(ports.now() - t);
  receipt.latency.push({ stage: 'tool', ms: entry.durationMs, detail: name });
  emit({ type: 'tool.result', data: { id: callId, skill: name, ok: !entry.error, output: entry.output, error: entry.error, durationMs: entry.durationMs } });
  return outcome;
}
