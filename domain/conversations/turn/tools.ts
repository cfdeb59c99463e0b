/**
 * Running a skill inside a turn (docs/api-notes.md "Conversations": skills) and reading a model's tool call: the
 * `tool.call` and `tool.result` events, the receipt's tool-call entry and `tool` latency, caller verification's
 * last check and PII redaction of the inputs.
 */
import type { CompiledAgent } from '../../agents/compile';
import type { ReceiptToolCall, TurnReceipt } from '../../../schemas/types/chat';
import { skillInputs, skillType } from '../../agents/skillTypes';
import { skillAllowed } from '../callerVerification';
import { redactPii } from '../guardrails';
import type { LlmToolCall } from '../llm';
import { SkillError, type SkillCall, type SkillOutcome } from './contract';
import { round, type Turn } from './state';

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

/**
 * Output of a skill flattened into conversation variables `<skill>_<key>`, the key as the skill declares it (case
 * kept: `bookingId` of `book_appointment` is `book_appointment_bookingId`; docs/api-notes.md "Agents": playbook
 * graphs); names at most 64 characters, values strings of at most 1,000.
 */
export function outputVariables(skill: string, output: unknown): Record<string, string> {
  const vars: Record<string, string> = {};
  if (output && typeof output === 'object' && !Array.isArray(output)) {
    for (const [k, v] of Object.entries(output as Record<string, unknown>)) {
      if (/^[a-z][a-z0-9_]*$/i.test(k)) vars[`${skill}_${k}`.slice(0, 64)] = (typeof v === 'string' ? v : JSON.stringify(v)).slice(0, 1000);
    }
  } else if (output !== undefined) vars[`${skill}_result`] = (typeof output === 'string' ? output : JSON.stringify(output)).slice(0, 1000);
  return vars;
}

/**
 * Executes one user turn.

/** The names of a skill's inputs (../../agents/skillTypes.ts), which a playbook fills from variables. */
export function skillInputNames(skill: CompiledAgent['skills'][number]): string[] {
  return skillInputs(skill.type, skill.config as Record<string, any>).map((i) => i.name);
}

/**
 * Runs `skill` (undefined: the agent has none of that name — recorded as failed) through `ports.runSkill`,
 * appending its entry and latency to `receipt` and streaming `tool.call` then `tool.result`.
 * @param vars the conversation variables at the call (what the skill sees; the verification check reads them)
 * @param tool an MCP tool call's own name and typed arguments
 * @returns the outcome, or null when the skill failed (the error is in its receipt entry)
 */
export async function callSkill(
  turn: Turn,
  receipt: TurnReceipt,
  skill: CompiledAgent['skills'][number] | undefined,
  name: string,
  callId: string,
  inputs: Record<string, string>,
  source: 'model' | 'playbook',
  vars: Record<string, string>,
  tool?: SkillCall['tool'],
): Promise<SkillOutcome | null> {
  const { ctx, ports, emit } = turn;
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
