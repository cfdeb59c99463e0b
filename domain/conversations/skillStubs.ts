/**
 * Skill stubs of simulated conversations (docs/evals.md "Skill stubs"): a simulation or an evaluation never runs a
 * skill that reaches outside the conversation. A stubbed skill answers with its canned output; the skills that
 * only act on the conversation itself run as usual; every other skill needs a stub. Pure functions.
 */
import type { FieldError } from '../errors';

/** A skill as compiled into an agent (name, type, config). */
export interface StubbableSkill {
  name: string;
  type: string;
  config: Record<string, unknown>;
}

/**
 * Whether a skill reaches outside the conversation when it runs, so a simulated conversation must stub it:
 * `http_request` (an HTTP endpoint), `send_sms` (a text to a real number), `lookup_record` (the organization's
 * records, audited), `book_appointment` and `check_availability` (a booking endpoint or a connected calendar).
 * `end_call` and `transfer_call` only change the conversation and run unstubbed.
 */
export function skillNeedsStub(skill: Pick<StubbableSkill, 'type' | 'config'>): boolean {
  switch (skill.type) {
    case 'end_call':
    case 'transfer_call':
      return false;
    default:
      return true;
  }
}

/**
 * The skills of an agent that reach outside and have no stub, each as a field error
 * `skillStubs.<name>` saying so (400 `validation_error` of `POST /agents/{id}/simulate` and of an evaluation run).
 * @param at the field prefix, e.g. `skillStubs` or `scenarios[2].skillStubs`
 */
export function missingStubErrors(skills: readonly StubbableSkill[], stubs: Record<string, unknown> | undefined, at = 'skillStubs'): FieldError[] {
  return skills
    .filter((s) => skillNeedsStub(s) && !(stubs && Object.prototype.hasOwnProperty.call(stubs, s.name)))
    .map((s) => ({
      field: `${at}.${s.name}`,
      message: `skill "${s.name}" (${s.type}) would reach a real endpoint; give its canned output here (simulations and evaluations never call real skills)`,
    }));
}
