/**
 * Caller verification by PIN, when it is due (docs/api-notes.md "Caller verification"). `always`: while the PIN is
 * due every answer is taken as one (an answer that is not PIN-shaped repeats the request, uncounted).
 * `for_protected_actions`: only a PIN-shaped answer right after the agent asked for it is an attempt; anything else
 * is answered as usual and the protected action waits until it is asked for again.
 */
import { pinDigits, pinPrompt, pinStep, VERIFICATION_PENDING, verificationRequired, verifiedThanks } from '../callerVerification';
import { escalate } from './escalate';
import { sayScripted } from './guardOutput';
import { scriptedEnd, type Next, type Turn, type TurnState } from './state';

/** Stored in place of the person's message when it was a PIN (the digits are never stored). */
export const PIN_ENTERED = '[PIN entered]';

/** `vars` without `key`. */
export function without(vars: Readonly<Record<string, string>>, key: string): Record<string, string> {
  const { [key]: _dropped, ...rest } = vars;
  return rest;
}

/**
 * Checks a PIN answer with `ports.checkPin`. Ends the turn with the PIN request, a failed attempt's reply or, at
 * the last attempt, an escalation; a match with a protected action waiting goes on with `resume` set to that
 * action and `lead` to the thanks (a match with nothing waiting ends with the thanks).
 */
export async function verifyCaller(turn: Turn, state: TurnState): Promise<Next<TurnState>> {
  const { ctx, ports, userText } = turn;
  const cv = ctx.agent.callerVerification;
  let vars = state.vars;
  if (!(cv?.enabled && vars.caller_verification === 'pin_required' && ports.checkPin && userText !== null)) return { next: state };
  const always = verificationRequired(cv) === 'always';
  const pending = vars[VERIFICATION_PENDING];
  const pin = pinDigits(userText);
  if (always && !pin) return scriptedEnd(state, sayScripted(turn, state, pinPrompt(ctx.channel)), ctx.playbook);
  if (!(pin && (always || pending))) return { next: pending ? { ...state, vars: without(vars, VERIFICATION_PENDING) } : state };
  const messages = state.messages.map((m, i) => (i === turn.prior.length ? { role: 'user' as const, content: PIN_ENTERED } : m));
  const match = await ports.checkPin(pin);
  const step = pinStep(cv, ctx.channel, vars, match);
  vars = { ...vars, ...step.variables };
  if (step.escalate) vars = without(vars, VERIFICATION_PENDING);
  let next: TurnState = { ...state, messages, vars, ...(step.escalate ? { end: 'escalated' as const } : {}) };
  if (!match || !pending) {
    let said = step.reply;
    if (step.escalate) ({ state: next, said } = await escalate(turn, next, 'caller_verification', step.reply));
    return scriptedEnd(next, sayScripted(turn, next, said), ctx.playbook);
  }
  // Verified: the protected action asked for runs now.
  return { next: { ...next, vars: without(vars, VERIFICATION_PENDING), resume: pending, lead: verifiedThanks(match.name) } };
}
