/**
 * The conversation runtime (docs/api-notes.md "Conversations"; spec "What the service does", "Agent lifecycle" rules
 * 1–2): executes one turn of a conversation against the version it is pinned to. Pure orchestration over
 * ports — the chat model, knowledge retrieval and skill execution are handed in (api/ and activities/
 * wire them to Postgres and the providers), so chat, widget, simulation and voice run the same code and
 * the runtime's own overhead can be measured apart from the model.
 *
 * A turn is a pipeline of named stages over one turn state (./turn/, drawn in docs/architecture.md "A turn"):
 * admit (PII redaction for storage) → duration limit → caller verification by PIN when it is due
 * (docs/api-notes.md "Caller verification") → input guardrails (blocked topics by phrase, escalation, then semantic
 * blocked topics judged by one classification call of the agent's model, fail-closed: ./topicClassifier.ts) → a
 * person leaving a running playbook → a running playbook advances (ask → gather → skill → say → end), or a message
 * naming a playbook or containing one of its trigger phrases starts it → knowledge retrieval → the tools (skills, MCP tools, the playbooks'
 * `start_playbook_<name>` tools, `escalate` when the organization has an escalation destination, the client's
 * function tools) → the model answers, calling tools (at most {@link MAX_TOOL_ROUNDS} rounds) → finish. Any stage
 * before retrieval may end the turn. Output guardrails and {@link speakable} rewrite everything said while it
 * streams (no citation, placeholder, JSON or internal code reaches a person; they stay in the receipt). A protected
 * action the caller is not verified for is not run: the agent asks for the PIN (and runs it once the PIN matched)
 * or declines. A turn that escalates (`escalateOn`, failed PIN attempts, the `escalate` tool, a playbook `escalate`
 * node) ends the conversation `escalated`; in chat, the widget and SMS its reply also says how the person will be
 * reached (./escalation.ts `reachLine`).
 * Everything the turn did is returned as a receipt.
 */
import type { CompiledAgent } from '../agents/compile';
import { renderSpoken } from './playbook';
import { speakable } from './speakable';
import type { TurnContext, TurnEvent, TurnOptions, TurnPorts, TurnResult } from './turn/contract';
import { admit, limitDuration, openTurn } from './turn/admit';
import { verifyCaller } from './turn/verifyCaller';
import { guardInput } from './turn/guardInput';
import { continuePlaybook, leavePlaybook } from './turn/playbooks';
import { retrieve } from './turn/retrieve';
import { offerTools } from './turn/offerTools';
import { converse } from './turn/converse';
import { finish } from './turn/finish';
import { NO_LISTENER } from './turn/guardOutput';
import type { Stage, TurnState } from './turn/state';

export type { ConversationChannel, ReceiptToolCall, TurnReceipt } from '../../schemas/types/chat';
export { SkillError, type EndReason, type SkillCall, type SkillOutcome, type TurnContext, type TurnEvent, type TurnOptions, type TurnPorts, type TurnResult } from './turn/contract';
export { MAX_TOOL_ROUNDS } from './turn/converse';
export { KNOWLEDGE_RESULTS, MIN_KNOWLEDGE_SCORE } from './turn/retrieve';
export { modelHistory, modelRequestSettings } from './turn/model';
export { outputVariables, rawToolArguments, toolArguments } from './turn/tools';

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
 * The stages that may end a turn before the model is asked, in order (docs/architecture.md "A turn"): the
 * duration limit, caller verification, input guardrails, leaving a playbook, a playbook's steps.
 */
const GATES: readonly Stage<TurnState>[] = [limitDuration, verifyCaller, guardInput, leavePlaybook, continuePlaybook];

/**
 * Executes one user turn: the stages of docs/architecture.md "A turn", each over the turn's state (./turn/state.ts);
 * the first that ends the turn hands it to `finish`.
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
  emit: (e: TurnEvent) => void = NO_LISTENER,
  opts: TurnOptions = {},
): Promise<TurnResult> {
  const turn = openTurn(ctx, userText, ports, emit, opts);
  let state = admit(turn);
  for (const stage of GATES) {
    const step = await stage(turn, state);
    if ('done' in step) return finish(turn, step.done);
    state = step.next;
  }
  const retrieved = await retrieve(turn, state);
  const equipped = await offerTools(turn, retrieved);
  return finish(turn, await converse(turn, equipped));
}
