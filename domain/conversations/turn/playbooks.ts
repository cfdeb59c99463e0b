/**
 * Playbooks in a turn (docs/api-notes.md "Conversations": playbooks; ../playbook.ts is the state machine): a person
 * leaving a running playbook ("never mind", "cancel", "stop") hears what was not done; a running playbook takes the
 * answer, a message naming a playbook or containing one of its trigger phrases starts it (before the model), a
 * playbook that waited for the PIN starts once it matched — and its steps run (ask → gather → skill → say → end)
 * until it waits for an answer or ends. A protected playbook waits for the PIN, or is declined when the caller
 * cannot be verified here (docs/api-notes.md "Caller verification").
 */
import type { CompiledPlaybook } from '../../agents/compile';
import type { TurnReceipt } from '../../../schemas/types/chat';
import { pinCanVerify, protectedPlaybook, UNVERIFIED_REFUSAL, VERIFICATION_PENDING, verificationAsk } from '../callerVerification';
import { answerPlaybook, continueAfterSkill, leavesPlaybook, MAX_STEPS_PER_TURN, playbookExitReply, playbookFor, startPlaybook, type PlaybookAdvance, type PlaybookState } from '../playbook';
import { escalate } from './escalate';
import { sayScripted } from './guardOutput';
import { scriptedEnd, type Next, type Turn, type TurnState } from './state';
import { callSkill, outputVariables, skillInputNames } from './tools';

/** Said when a playbook's skill succeeded and nothing else is left to say. */
export const DONE_REPLY = "That's done. Is there anything else I can help with?";

/** Ends the turn when the person leaves the running playbook (the receipt's playbook marked `exited`). */
export function leavePlaybook(turn: Turn, state: TurnState): Next<TurnState> {
  const { ctx, userText } = turn;
  if (state.resume || !ctx.playbook || userText === null || !leavesPlaybook(userText)) return { next: state };
  state.receipt.playbook = { name: ctx.playbook.playbook, nodes: ctx.playbook.node ? [ctx.playbook.node] : [], exited: true };
  return scriptedEnd(state, sayScripted(turn, state, playbookExitReply(ctx.playbook.playbook)), null);
}

/**
 * Whether `pb` may start now. @returns `hold` null when it may; otherwise the line said instead: the PIN request
 * (the state's variables then note the playbook in VERIFICATION_PENDING) or a refusal when the caller cannot be
 * verified here.
 */
export function holdPlaybook(turn: Turn, state: TurnState, pb: CompiledPlaybook): { state: TurnState; hold: string | null } {
  const { agent } = turn.ctx;
  const cv = agent.callerVerification;
  if (state.vars.caller_verified === 'true' || !protectedPlaybook(cv, pb, agent.skills)) return { state, hold: null };
  if (pinCanVerify(cv, state.vars) && turn.ports.checkPin) {
    return { state: { ...state, vars: { ...state.vars, [VERIFICATION_PENDING]: `playbook:${pb.name}` } }, hold: verificationAsk(turn.ctx.channel) };
  }
  return { state, hold: UNVERIFIED_REFUSAL };
}

/**
 * Runs the playbook the turn is in, if any: the one resumed after a matching PIN, the running one with the person's
 * answer, or one the message names or has a trigger phrase of (held for the PIN first when protected). Ends the
 * turn with what its steps said (after the `lead`); goes on when no playbook runs.
 */
export async function continuePlaybook(turn: Turn, state: TurnState): Promise<Next<TurnState>> {
  const { ctx, userText } = turn;
  const { playbooks } = ctx.agent;
  let pb: CompiledPlaybook | undefined;
  let advance: PlaybookAdvance | null = null;
  let waitingOn: string | null = null;
  if (state.resume?.startsWith('playbook:')) {
    const name = state.resume.slice('playbook:'.length);
    pb = playbooks.find((p) => p.name === name);
    if (pb) advance = startPlaybook(pb.graph, pb.name, state.vars);
  } else if (!state.resume && ctx.playbook && userText !== null) {
    const running = ctx.playbook;
    pb = playbooks.find((p) => p.name === running.playbook);
    if (pb) {
      advance = answerPlaybook(pb.graph, running, state.stored, state.vars);
      waitingOn = running.node;
    }
  } else if (!state.resume && userText !== null) {
    const name = playbookFor(userText, playbooks);
    pb = name ? playbooks.find((p) => p.name === name) : undefined;
    if (pb) {
      const held = holdPlaybook(turn, state, pb);
      if (held.hold) return scriptedEnd(held.state, sayScripted(turn, held.state, held.hold), null);
      advance = startPlaybook(pb.graph, pb.name, state.vars);
    }
  }
  if (!advance || !pb) return { next: state };
  const run = await runPlaybook(turn, state, pb, advance, waitingOn);
  return scriptedEnd(run.state, sayScripted(turn, run.state, [state.lead, ...run.said].filter(Boolean).join(' ')), run.playbook);
}

/**
 * Executes playbook steps until the playbook waits for an answer or ends (at most MAX_STEPS_PER_TURN nodes): says
 * its `say` and `ask` lines, runs its skills (their outputs become `<skill>_<key>` variables, a failure
 * `<skill>_failed`), escalates at an `escalate` node; traced in the receipt's `playbook`.
 * @param waitingOn the node this turn answered, if any
 * @returns the state after it, the lines to say and the playbook as it waits (null: it ended, or the conversation does)
 */
export async function runPlaybook(
  turn: Turn,
  state: TurnState,
  pb: CompiledPlaybook,
  advance: PlaybookAdvance,
  waitingOn: string | null,
): Promise<{ state: TurnState; said: string[]; playbook: PlaybookState | null }> {
  const { receipt } = state;
  const nodes: string[] = waitingOn ? [waitingOn] : [];
  const skipped: string[] = [];
  const trace: NonNullable<TurnReceipt['playbook']> = { name: pb.name, nodes };
  receipt.playbook = trace;
  let s: TurnState = { ...state, vars: { ...state.vars, ...advance.gathered } };
  const said: string[] = [];
  let at = advance.state;
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
      if (step.type === 'escalate') {
        const escalated = await escalate(turn, s, 'playbook_node', step.text);
        s = escalated.state;
        said.push(escalated.said);
      }
      if (step.type !== 'skill') continue;
      const skill = turn.ctx.agent.skills.find((k) => k.name === step.skill);
      const inputs: Record<string, string> = { ...step.inputs };
      for (const name of skill ? skillInputNames(skill) : []) if (inputs[name] === undefined && s.vars[name] !== undefined) inputs[name] = s.vars[name];
      const outcome = await callSkill(turn, receipt, skill, step.skill, `pb_${receipt.turn}_${step.node}`, inputs, 'playbook', s.vars);
      if (outcome?.say) said.push(outcome.say);
      if (outcome?.effect === 'end') s = { ...s, end: 'end_call' };
      if (outcome?.effect === 'transfer') s = { ...s, end: 'transferred' };
      // A failure is `<skill>_failed: true`; its message stays in the receipt (it is not for the person).
      const failedVar = `${step.skill}_failed`.slice(0, 64);
      if (outcome) {
        succeeded = true;
        const vars = { ...s.vars, ...outputVariables(step.skill, outcome.output) };
        delete vars[failedVar];
        s = { ...s, vars };
      } else s = { ...s, vars: { ...s.vars, [failedVar]: 'true' } };
      if (at && !s.end) next = continueAfterSkill(pb.graph, at, s.vars, !outcome);
    }
    if (!next || nodes.length > MAX_STEPS_PER_TURN) break;
    at = next.state;
    steps = next.steps;
  }
  if (skipped.length) trace.skipped = skipped;
  if (!said.length && succeeded && !s.end) said.push(DONE_REPLY);
  return { state: s, said, playbook: s.end ? null : at };
}
