/**
 * Input guardrails (docs/api-notes.md "Conversations": guardrails): blocked topics by phrase and `escalateOn`
 * (../guardrails.ts `checkInput`), then semantic blocked topics judged by one classification call of the agent's
 * model, fail-closed (../topicClassifier.ts). Skipped for an action resumed after a matching PIN and for a turn
 * with no message of the person.
 */
import { checkInput, semanticTopics } from '../guardrails';
import { checkSemanticTopics } from '../topicClassifier';
import { escalate } from './escalate';
import { decide, sayScripted } from './guardOutput';
import { round, scriptedEnd, type Next, type Turn, type TurnState } from './state';

/**
 * Ends the turn with the refusal of a blocked topic (escalating for an `escalateOn` phrase); otherwise goes on,
 * with the classification call's tokens and model in `guardUsage` and `guardModel`.
 */
export async function guardInput(turn: Turn, state: TurnState): Promise<Next<TurnState>> {
  const { ctx, ports, userText } = turn;
  if (state.resume || userText === null) return { next: state };
  const g = ctx.agent.guardrails;
  const verdict = checkInput(userText, g);
  for (const d of verdict.decisions) decide(turn, state, d);
  if (verdict.refusal) {
    if (!verdict.escalate) return scriptedEnd(state, sayScripted(turn, state, verdict.refusal), ctx.playbook);
    const escalated = await escalate(turn, state, 'escalateOn', verdict.refusal);
    return scriptedEnd(escalated.state, sayScripted(turn, escalated.state, escalated.said), ctx.playbook);
  }
  const topics = semanticTopics(g);
  if (!topics.length) return { next: state };
  const tc = ports.now();
  const judged = await checkSemanticTopics(userText, topics, ports.llm, { model: ctx.agent.model, fallbackModel: ctx.agent.fallbackModel, cacheScope: ctx.orgId });
  if (judged.called) state.receipt.latency.push({ stage: 'llm_classification', ms: round(ports.now() - tc) });
  const next: TurnState = { ...state, guardUsage: judged.usage, guardModel: judged.model };
  for (const d of judged.decisions) decide(turn, next, d);
  return judged.refusal ? scriptedEnd(next, sayScripted(turn, next, judged.refusal), ctx.playbook) : { next };
}
