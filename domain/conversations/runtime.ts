/**
 * The conversation runtime (README "Conversations"; spec "What the service does", "Agent lifecycle" rules
 * 1–2): executes one turn of a conversation against the version it is pinned to. Pure orchestration over
 * ports — the chat model, knowledge retrieval and skill execution are handed in (api/ and activities/
 * wire them to Postgres and the providers), so chat, widget, simulation and voice run the same code and
 * the runtime's own overhead can be measured apart from the model.
 *
 * A turn, in order: input guardrails (PII redaction for storage, blocked topics, escalation) → a running
 * or newly started playbook advances (ask → gather → skill → say → end), or else knowledge is retrieved
 * and the model answers, calling skills as tools (at most {@link MAX_TOOL_ROUNDS} rounds) → output
 * guardrails rewrite what is said while it streams. Everything the turn did is returned as a receipt.
 */
import type { CompiledAgent } from '../agents/compile';
import type { ConversationChannel, ReceiptToolCall, TurnReceipt } from '../../schemas/types/chat';

export type { ConversationChannel, ReceiptToolCall, TurnReceipt } from '../../schemas/types/chat';
import { skillInputs, skillType } from '../agents/skillTypes';
import { checkInput, checkOutput, redactPii, type GuardrailDecision } from './guardrails';
import type { LlmMessage, LlmProvider, LlmToolCall, LlmUsage, SandboxHints } from './llm';
import { answerPlaybook, continueAfterSkill, MAX_STEPS_PER_TURN, playbookFor, renderTemplate, startPlaybook, type PlaybookAdvance, type PlaybookState } from './playbook';
import { skillTools, sourceLabel, systemPrompt, type KnowledgeHit } from './prompt';
import { pinDigits, pinPrompt, pinStep, skillAllowed, type VerificationRecord } from './callerVerification';


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
}

/** What a skill returned; `effect` ends or transfers the conversation after this turn's reply. */
export interface SkillOutcome {
  output: unknown;
  effect?: 'end' | 'transfer';
  /** A line the agent says after the skill (e.g. an end_call closing line). */
  say?: string;
}

/** A skill failed; the message is shown to the model and stored in the receipt. */
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
  /** Best chunks of the pinned version's knowledge sources for `query`, best first (already scoped). */
  searchKnowledge(query: string, limit: number): Promise<KnowledgeHit[]>;
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
}

const ZERO_USAGE: LlmUsage = { promptTokens: 0, completionTokens: 0, totalTokens: 0 };
const addUsage = (a: LlmUsage, b: LlmUsage): LlmUsage => ({
  promptTokens: a.promptTokens + b.promptTokens,
  completionTokens: a.completionTokens + b.completionTokens,
  totalTokens: a.totalTokens + b.totalTokens,
});

/** The greeting a new conversation opens with (variables filled), or null when the agent has none. */
export function greetingFor(agent: CompiledAgent, vars: Readonly<Record<string, string>>): string | null {
  return agent.greeting ? renderTemplate(agent.greeting, vars) : null;
}

/**
 * The message a campaign call leaves on an answering machine (README "Voicemail"), variables filled as
 * in the greeting, or null when the version has none (versions published before the field existed too).
 */
export function voicemailMessageFor(agent: CompiledAgent, vars: Readonly<Record<string, string>>): string | null {
  return agent.voicemailMessage ? renderTemplate(agent.voicemailMessage, vars) : null;
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
 * Streams text through the output guardrails: what is emitted is always a prefix of the final filtered
 * text, holding back as many characters as the longest forbidden phrase so a phrase split across deltas
 * is still caught.
 */
class GuardedStream {
  private raw = '';
  private emitted = 0;
  private readonly holdback: number;
  readonly decisions: GuardrailDecision[] = [];

  constructor(
    private readonly agent: CompiledAgent,
    private readonly emit: (e: TurnEvent) => void,
  ) {
    this.holdback = Math.max(12, ...agent.guardrails.forbiddenPhrases.map((p) => p.length + 1));
  }

  push(delta: string): void {
    this.raw += delta;
    const safe = checkOutput(this.raw, this.agent.guardrails).text;
    const upTo = Math.max(this.emitted, safe.length - this.holdback);
    if (upTo > this.emitted) {
      this.emit({ type: 'message.delta', data: { content: safe.slice(this.emitted, upTo) } });
      this.emitted = upTo;
    }
  }

  /** Flushes the rest and returns the whole filtered text. */
  finish(): string {
    const { text, decisions } = checkOutput(this.raw, this.agent.guardrails);
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
 * @param userText the user's message (1..10,000 characters, already validated)
 * @param emit receives streamed events in order (deltas, tool calls and results, guardrail decisions)
 * @returns what to store; nothing is stored here
 * @throws LlmProviderError from the model (the caller answers 502/503 and stores nothing)
 */
export async function runTurn(ctx: TurnContext, userText: string, ports: TurnPorts, emit: (e: TurnEvent) => void = () => undefined): Promise<TurnResult> {
  const t0 = ports.now();
  const agent = ctx.agent;
  const g = agent.guardrails;
  const receipt: TurnReceipt = { turn: ctx.turn + 1, toolCalls: [], knowledge: [], guardrails: [], latency: [], playbook: null };
  const decide = (d: GuardrailDecision) => {
    receipt.guardrails.push(d);
    emit({ type: 'guardrail', data: d });
  };
  let vars = { ...ctx.variables };
  let end: EndReason | null = null;

  let stored = userText;
  if (g.redactPii) {
    const r = redactPii(userText);
    if (r.kinds.length) {
      stored = r.text;
      decide({ rule: 'redactPii', action: 'redacted', excerpt: [...new Set(r.kinds)].join(', '), stage: 'input' });
    }
  }
  const messages: LlmMessage[] = [{ role: 'user', content: stored }];
  const finish = (reply: string, usage: LlmUsage, model: string | null, playbook: PlaybookState | null): TurnResult => {
    if (reply) messages.push({ role: 'assistant', content: reply });
    receipt.latency.push({ stage: 'turn', ms: round(ports.now() - t0) });
    return { messages, reply, receipt, usage, model, variables: vars, playbook, end };
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

  // Caller verification by PIN (README "Caller verification"): while a PIN is due, every answer is a PIN attempt.
  if (agent.callerVerification?.enabled && vars.caller_verification === 'pin_required' && ports.checkPin) {
    const pin = pinDigits(userText);
    if (!pin) return finish(sayScripted(pinPrompt(ctx.channel)), ZERO_USAGE, null, ctx.playbook);
    messages[0] = { role: 'user', content: '[PIN entered]' };
    const step = pinStep(agent.callerVerification, ctx.channel, vars, await ports.checkPin(pin));
    vars = { ...vars, ...step.variables };
    if (step.escalate) end = 'escalated';
    return finish(sayScripted(step.reply), ZERO_USAGE, null, ctx.playbook);
  }

  const verdict = checkInput(userText, g);
  verdict.decisions.forEach(decide);
  if (verdict.refusal) {
    if (verdict.escalate) end = 'escalated';
    return finish(sayScripted(verdict.refusal), ZERO_USAGE, null, ctx.playbook);
  }

  // Playbooks: a running one takes the answer; otherwise a message naming one starts it.
  let advance: PlaybookAdvance | null = null;
  let pb = ctx.playbook ? agent.playbooks.find((p) => p.name === ctx.playbook!.playbook) : undefined;
  if (pb && ctx.playbook) advance = answerPlaybook(pb.graph, ctx.playbook, stored, vars);
  else {
    const name = playbookFor(userText, agent.playbooks);
    pb = name ? agent.playbooks.find((p) => p.name === name) : undefined;
    if (pb) advance = startPlaybook(pb.graph, pb.name, vars);
  }
  if (advance && pb) {
    // The node answered this turn comes first, then every node walked.
    const nodes: string[] = ctx.playbook && ctx.playbook.playbook === pb.name && ctx.playbook.node ? [ctx.playbook.node] : [];
    receipt.playbook = { name: pb.name, nodes };
    vars = { ...vars, ...advance.gathered };
    const said: string[] = [];
    let state = advance.state;
    let steps = advance.steps;
    while (steps.length) {
      let next: PlaybookAdvance | null = null;
      for (const step of steps) {
        nodes.push(step.node);
        if (step.type === 'say' || step.type === 'ask') said.push(step.text);
        if (step.type !== 'skill') continue;
        const skill = agent.skills.find((s) => s.name === step.skill);
        const inputs: Record<string, string> = { ...step.inputs };
        for (const name of skill ? skillInputNames(skill) : []) if (inputs[name] === undefined && vars[name] !== undefined) inputs[name] = vars[name];
        const outcome = await callSkill(ctx, skill, step.skill, `pb_${receipt.turn}_${step.node}`, inputs, 'playbook', vars, ports, emit, receipt);
        if (outcome?.say) said.push(outcome.say);
        if (outcome?.effect === 'end') end = 'end_call';
        if (outcome?.effect === 'transfer') end = 'transferred';
        vars = { ...vars, ...outputVariables(step.skill, outcome ? outcome.output : { error: receipt.toolCalls[receipt.toolCalls.length - 1]?.error }) };
        if (state && !end) next = continueAfterSkill(pb.graph, state, vars);
      }
      if (!next || nodes.length > MAX_STEPS_PER_TURN) break;
      state = next.state;
      steps = next.steps;
    }
    return finish(sayScripted(said.join(' ')), ZERO_USAGE, null, end ? null : state);
  }

  // A free turn: retrieval, then the model with the skills as tools.
  const tr = ports.now();
  const hits = agent.knowledge.length ? (await ports.searchKnowledge(userText, KNOWLEDGE_RESULTS)).filter((h) => h.score >= MIN_KNOWLEDGE_SCORE) : [];
  if (agent.knowledge.length) {
    const ms = round(ports.now() - tr);
    receipt.knowledge.push({
      query: stored.slice(0, 500),
      results: hits.map((h) => ({ chunkId: h.chunkId, score: h.score, sourceId: h.source.id, source: sourceLabel(h) })),
      durationMs: ms,
    });
    receipt.latency.push({ stage: 'retrieval', ms });
  }
  const tools = skillTools(agent);
  const convo: LlmMessage[] = [{ role: 'system', content: systemPrompt(agent, vars, hits) }, ...modelHistory(ctx.history), { role: 'user', content: stored }];
  const hints: SandboxHints = hits.length ? { knowledge: hits.map((h) => ({ text: h.content, source: sourceLabel(h), score: h.score })) } : {};
  let usage = ZERO_USAGE;
  let model: string | null = null;
  for (let pass = 0; ; pass++) {
    const offerTools = tools.length > 0 && pass < MAX_TOOL_ROUNDS;
    const out = new GuardedStream(agent, emit);
    const tl = ports.now();
    let first: number | null = null;
    let calls: LlmToolCall[] = [];
    for await (const ev of ports.llm.stream({ messages: convo, tools: offerTools ? tools : undefined, hints })) {
      if (ev.type === 'delta') {
        if (first === null) first = ports.now();
        out.push(ev.content);
      } else if (ev.type === 'done') {
        usage = addUsage(usage, ev.response.usage);
        model = ev.response.model;
        calls = ev.response.toolCalls;
      }
    }
    if (first !== null) receipt.latency.push({ stage: 'llm_first_token', ms: round(first - tl) });
    receipt.latency.push({ stage: 'llm_total', ms: round(ports.now() - tl) });
    const text = out.finish();
    out.decisions.forEach(decide);
    if (!calls.length || !offerTools) return finish(text, usage, model, null);

    const assistant: LlmMessage = { role: 'assistant', content: text || null, toolCalls: calls };
    messages.push(assistant);
    convo.push(assistant);
    const closing: string[] = [];
    for (const call of calls) {
      const skill = agent.skills.find((s) => s.name === call.name);
      const outcome = await callSkill(ctx, skill, call.name, call.id, toolArguments(call), 'model', vars, ports, emit, receipt);
      const content = JSON.stringify(outcome ? { ok: true, output: outcome.output } : { ok: false, error: receipt.toolCalls[receipt.toolCalls.length - 1]?.error });
      const toolMsg: LlmMessage = { role: 'tool', toolCallId: call.id, name: call.name, content };
      messages.push(toolMsg);
      convo.push(toolMsg);
      if (outcome?.say) closing.push(outcome.say);
      if (outcome?.effect === 'end') end = 'end_call';
      if (outcome?.effect === 'transfer') end = 'transferred';
    }
    if (end) return finish(sayScripted(closing.join(' ') || (end === 'transferred' ? 'Transferring you now.' : 'Goodbye.')), usage, model, null);
  }
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
): Promise<SkillOutcome | null> {
  emit({ type: 'tool.call', data: { id: callId, skill: name, arguments: inputs } });
  const t = ports.now();
  const entry: ReceiptToolCall = { id: callId, skill: name, type: skill?.type ?? 'unknown', source, inputs, durationMs: 0 };
  receipt.toolCalls.push(entry);
  let outcome: SkillOutcome | null = null;
  try {
    if (!skill || !skillType(skill.type)) throw new SkillError(`The agent has no skill "${name}"`, 'unknown_skill');
    if (!skillAllowed(ctx.agent.callerVerification, name, vars)) {
      throw new SkillError(`Skill "${name}" runs only for a verified caller; the caller is not verified`, 'caller_not_verified');
    }
    if (ctx.agent.guardrails.redactPii) {
      for (const [k, v] of Object.entries(inputs)) inputs[k] = redactPii(v).text;
    }
    outcome = await ports.runSkill({ callId, skill, args: inputs, conversation: { id: ctx.id, orgId: ctx.orgId, agentId: ctx.agentId, channel: ctx.channel, variables: vars } });
    entry.output = outcome.output;
  } catch (err) {
    entry.error = (err as Error).message?.slice(0, 1000) || 'skill failed';
  }
  entry.durationMs = round(ports.now() - t);
  receipt.latency.push({ stage: 'tool', ms: entry.durationMs, detail: name });
  emit({ type: 'tool.result', data: { id: callId, skill: name, ok: !entry.error, output: entry.output, error: entry.error, durationMs: entry.durationMs } });
  return outcome;
}
