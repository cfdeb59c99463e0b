/**
 * One round of the model's tool calls in a free turn (docs/api-notes.md "Conversations": skills, playbooks,
 * escalation, caller verification; "Responses API": function tools). Each call, in the model's order, is answered
 * with a `tool` message: a skill or MCP tool runs; a playbook's tool starts it after the round (unless held for the
 * PIN); `escalate` escalates; a client's call is kept for the client. Once a playbook is to start or something is
 * said instead, every later call of the round is declined.
 */
import type { CompiledPlaybook } from '../../agents/compile';
import { pinCanVerify, protectedSkill, VERIFICATION_PENDING, verificationAsk } from '../callerVerification';
import { ESCALATE_TOOL, SPOKEN_ESCALATION } from '../escalation';
import type { LlmMessage, LlmToolCall } from '../llm';
import { playbookToolName } from '../playbook';
import { escalate } from './escalate';
import type { Equipped } from './offerTools';
import { holdPlaybook } from './playbooks';
import { callSkill, rawToolArguments, toolArguments } from './tools';
import type { Turn } from './state';

/** What a round of tool calls leaves. */
export interface RoundOutcome {
  state: Equipped;
  /** Lines the skills (or `escalate`) asked to say when the conversation ends with the round. */
  closing: string[];
  /** A playbook the model started (its tool answered `started`). */
  start?: CompiledPlaybook;
  /** Said instead of asking the model again: the PIN request or a refusal for a protected action. */
  instead: string | null;
  /** Calls of the client's tools, not run: the turn ends with them unless something else ends it. */
  pending: LlmToolCall[];
}

/** Appends a `tool` message answering `call` to the stored messages and to what the model sees next. */
export function answerCall(messages: LlmMessage[], convo: LlmMessage[], call: LlmToolCall, content: Record<string, unknown>): void {
  const toolMsg: LlmMessage = { role: 'tool', toolCallId: call.id, name: call.name, content: JSON.stringify(content) };
  messages.push(toolMsg);
  convo.push(toolMsg);
}

/**
 * Answers the model's `calls` of one round, in order, appending each answer to the state's messages and to `convo`
 * (what the model sees next), and each run to the receipt with its `tool.call` and `tool.result` events.
 */
export async function toolRound(turn: Turn, state: Equipped, calls: readonly LlmToolCall[], convo: LlmMessage[]): Promise<RoundOutcome> {
  const { ctx, ports, emit } = turn;
  const { agent } = ctx;
  const cv = agent.callerVerification;
  const { receipt } = state;
  let s = state;
  const closing: string[] = [];
  let start: CompiledPlaybook | undefined;
  let instead: string | null = null;
  const pending: LlmToolCall[] = [];
  for (const call of calls) {
    const answer = (content: Record<string, unknown>) => answerCall(s.messages, convo, call, content);
    if (s.clientTools.some((t) => t.name === call.name)) {
      if (start || instead) answer({ ok: false, error: 'Not run: another action is under way.' });
      else pending.push(call);
      continue;
    }
    if (s.escalateOffered && call.name === ESCALATE_TOOL) {
      if (start || instead) {
        answer({ ok: false, error: 'Not run: another action is under way.' });
        continue;
      }
      const inputs = toolArguments(call);
      emit({ type: 'tool.call', data: { id: call.id, skill: ESCALATE_TOOL, arguments: inputs } });
      const escalated = await escalate(turn, s, 'escalate_tool', SPOKEN_ESCALATION);
      s = { ...s, ...escalated.state };
      closing.push(escalated.said);
      const output = { escalated: true, destinationId: (await turn.route)?.destination?.id ?? null };
      receipt.toolCalls.push({ id: call.id, skill: ESCALATE_TOOL, type: ESCALATE_TOOL, source: 'model', inputs, output, durationMs: 0 });
      emit({ type: 'tool.result', data: { id: call.id, skill: ESCALATE_TOOL, ok: true, output, durationMs: 0 } });
      answer({ ok: true, output });
      continue;
    }
    const remoteCall = s.remote.find((r) => r.tool.name === call.name);
    const skill = agent.skills.find((k) => k.name === (remoteCall ? remoteCall.skill : call.name));
    const playbook = skill ? undefined : agent.playbooks.find((p) => playbookToolName(p.name) === call.name);
    if (playbook) {
      if (start || instead) {
        answer({ ok: false, error: 'Not started: another action is under way.' });
        continue;
      }
      const held = holdPlaybook(turn, s, playbook);
      s = { ...s, ...held.state };
      if (held.hold) {
        instead = held.hold;
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
    if (skill && s.vars.caller_verified !== 'true' && protectedSkill(cv, skill) && pinCanVerify(cv, s.vars) && ports.checkPin) {
      // Held until the PIN matched (docs/api-notes.md "Caller verification"), then asked for again.
      instead = verificationAsk(ctx.channel);
      s = { ...s, vars: { ...s.vars, [VERIFICATION_PENDING]: `skill:${skill.name}` } };
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
    const remoteArgs = remoteCall ? { name: remoteCall.remoteName, arguments: rawToolArguments(call), callerVerified: !!cv?.enabled && s.vars.caller_verified === 'true' } : undefined;
    const outcome = await callSkill(turn, receipt, skill, skill?.name ?? call.name, call.id, toolArguments(call), 'model', s.vars, remoteArgs);
    answer(outcome ? { ok: true, output: outcome.output } : { ok: false, error: receipt.toolCalls[receipt.toolCalls.length - 1]?.error });
    if (outcome?.say) closing.push(outcome.say);
    if (outcome?.effect === 'end') s = { ...s, end: 'end_call' };
    if (outcome?.effect === 'transfer') s = { ...s, end: 'transferred' };
  }
  return { state: s, closing, start, instead, pending };
}
