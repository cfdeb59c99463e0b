/**
 * The model answers a free turn (docs/api-notes.md "Conversations"): the system prompt with the retrieved knowledge,
 * the history and the request go to the agent's model with the tools; its answer streams through the output
 * guardrails (./guardOutput.ts). While it calls tools (at most {@link MAX_TOOL_ROUNDS} rounds, ./toolRound.ts) their
 * answers go back to it; the turn ends with its answer, with the client's calls, or with what a round decided
 * (the conversation ends, a line is said instead, a playbook starts).
 */
import type { LlmMessage, LlmRequest, LlmResponse, LlmToolCall, LlmUsage, SandboxHints } from '../llm';
import { startPlaybook } from '../playbook';
import { DEFAULT_TIME_ZONE, playbookHints, sourceLabel, systemPrompt } from '../prompt';
import { GuardedStream, decide, sayScripted } from './guardOutput';
import { modelHistory, modelRequestSettings } from './model';
import type { Equipped } from './offerTools';
import { runPlaybook } from './playbooks';
import { addUsage, round, ZERO_USAGE, type Turn, type TurnEnd } from './state';
import { answerCall, toolRound } from './toolRound';

/** Model-driven tool-call rounds per turn before the runtime answers without tools. */
export const MAX_TOOL_ROUNDS = 3;

/** One model request's answer. */
export interface ModelAnswer {
  /** The answer as said (output guardrails applied). */
  text: string;
  calls: LlmToolCall[];
  finishReason: LlmResponse['finishReason'];
  usage: LlmUsage;
  model: string | null;
}

/** The messages the model reads first: the system prompt (with the knowledge), the history, the request. */
export function modelMessages(turn: Turn, state: Equipped): LlmMessage[] {
  const { ctx, ports } = turn;
  return [
    { role: 'system', content: systemPrompt(ctx.agent, state.vars, state.hits, { nowMs: ports.wallClock(), channel: ctx.channel }) },
    ...modelHistory([...ctx.history, ...turn.prior]),
    ...(state.request !== null ? [{ role: 'user' as const, content: state.request }] : []),
  ];
}

/**
 * Streams one model request: deltas through the output guardrails (`message.delta` events), its decisions recorded
 * after it, and the `llm_first_token` and `llm_total` latencies in the receipt.
 * @throws LlmProviderError from the model
 */
export async function askModel(turn: Turn, state: Equipped, request: LlmRequest): Promise<ModelAnswer> {
  const { ports } = turn;
  const out = new GuardedStream(turn.ctx.agent, turn.emit, !!turn.opts.responseFormat);
  const tl = ports.now();
  let first: number | null = null;
  const answer: ModelAnswer = { text: '', calls: [], finishReason: 'stop', usage: ZERO_USAGE, model: null };
  for await (const ev of ports.llm.stream(request)) {
    if (ev.type === 'delta') {
      if (first === null) first = ports.now();
      out.push(ev.content);
    } else if (ev.type === 'done') {
      answer.usage = addUsage(answer.usage, ev.response.usage);
      answer.model = ev.response.model;
      answer.calls = ev.response.toolCalls;
      answer.finishReason = ev.response.finishReason;
    }
  }
  if (first !== null) state.receipt.latency.push({ stage: 'llm_first_token', ms: round(first - tl) });
  state.receipt.latency.push({ stage: 'llm_total', ms: round(ports.now() - tl) });
  answer.text = out.finish();
  for (const d of out.decisions) decide(turn, state, d);
  return answer;
}

/** Asks the model, runs the tool rounds it calls for, and ends the turn. @throws LlmProviderError from the model */
export async function converse(turn: Turn, equipped: Equipped): Promise<TurnEnd> {
  const { ctx, opts } = turn;
  let s = equipped;
  const { leadSaid } = equipped;
  const withLead = (text: string) => (leadSaid ? `${leadSaid}${text}`.trim() : text);
  const convo = modelMessages(turn, s);
  const hints: SandboxHints = { timeZone: ctx.agent.timeZone ?? DEFAULT_TIME_ZONE };
  if (s.hits.length) hints.knowledge = s.hits.map((h) => ({ text: h.content, source: sourceLabel(h), score: h.score }));
  const starts = playbookHints(ctx.agent, s.tools);
  if (starts.length) hints.playbooks = starts;
  let usage = ZERO_USAGE;
  let model: string | null = null;
  for (let pass = 0; ; pass++) {
    const offerTools = s.tools.length > 0 && pass < MAX_TOOL_ROUNDS;
    const shaped: Partial<LlmRequest> = {};
    if (opts.responseFormat) shaped.responseFormat = opts.responseFormat;
    if (opts.toolChoice && offerTools && pass === 0) shaped.toolChoice = opts.toolChoice;
    const answer = await askModel(turn, s, { messages: convo, tools: offerTools ? s.tools : undefined, hints, ...modelRequestSettings(ctx.agent, opts.sampling), ...shaped });
    usage = addUsage(usage, answer.usage);
    model = answer.model ?? model;
    if (!answer.calls.length || !offerTools) return { state: s, reply: withLead(answer.text), playbook: null, usage, model, finishReason: answer.finishReason };

    const assistant: LlmMessage = { role: 'assistant', content: answer.text || null, toolCalls: answer.calls };
    s.messages.push(assistant);
    convo.push(assistant);
    const round = await toolRound(turn, s, answer.calls, convo);
    s = round.state;
    // The client runs its functions; the text said with the calls is in their assistant message.
    if (round.pending.length && !s.end && !round.instead && !round.start) return { state: s, reply: withLead(answer.text), playbook: null, usage, model, clientCalls: round.pending };
    for (const call of round.pending) answerCall(s.messages, convo, call, { ok: false, error: 'Not run: the conversation moved on.' });
    if (s.end) {
      const closing = round.closing.join(' ') || (s.end === 'transferred' ? 'Transferring you now.' : 'Goodbye.');
      return { state: s, reply: withLead(sayScripted(turn, s, closing)), playbook: null, usage, model };
    }
    if (round.instead) return { state: s, reply: withLead(sayScripted(turn, s, round.instead)), playbook: null, usage, model };
    if (round.start) {
      const run = await runPlaybook(turn, s, round.start, startPlaybook(round.start.graph, round.start.name, s.vars), null);
      return { state: run.state, reply: withLead(sayScripted(turn, run.state, run.said.join(' '))), playbook: run.playbook, usage, model };
    }
  }
}
