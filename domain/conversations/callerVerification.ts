/**
 * Caller verification at run time (docs/api-notes.md "Caller verification"): who the
 * caller is (the caller ID of a call, the counterpart of a text, or the phone/email a chat session was
 * given), what a lookup in the organization's Records made of it, and the PIN step of method `pin`. Pure:
 * the record lookup and the PIN comparison are done by services/conversations/callerVerification.ts.
 *
 * The outcome lives in the conversation's variables (so the prompt, templates and skills see it):
 * - `caller_phone` / `caller_email`: the identity looked up;
 * - `caller_verified`: `true` or `false`;
 * - `caller_verification`: `verified`, `pin_required`, `not_found`, `ambiguous`, `no_pin`, `no_identity`,
 *   `failed` (PIN attempts used up) or `unsupported_method`;
 * - `caller_record_id`, `caller_name`, `caller_email`: the record's, once verified;
 * - `caller_pin_attempts`: failed PIN attempts so far (method `pin`);
 * - `caller_verification_pending`: with `required: for_protected_actions`, the protected action the caller
 *   asked for while the agent asks for the PIN (`playbook:<name>` or `skill:<name>`), run once the PIN matched.
 *
 * `required` (docs/api-notes.md "Caller verification"): `always` asks for the PIN after the greeting and takes every
 * answer as an attempt until it matched; `for_protected_actions` answers everything before, and asks only when
 * the caller asks for a protected action ({@link protectedSkill}, {@link protectedPlaybook}). Either way only a
 * PIN-shaped answer ({@link pinDigits}) counts as an attempt. Versions compiled before `required` existed run
 * as `always` ({@link verificationRequired}).
 */
import type { CallerVerification, CallerVerificationRequired } from '../../schemas/types/guardrails';
import type { PlaybookGraph } from '../../schemas/types/playbooks';
import type { ConversationChannel } from '../../schemas/types/chat';

/** Outcome of the verification, as stored in `caller_verification`. */
export type VerificationStatus = 'verified' | 'pin_required' | 'not_found' | 'ambiguous' | 'no_pin' | 'no_identity' | 'failed' | 'unsupported_method';

/** The variable holding the protected action that waits for the PIN (module docstring). */
export const VERIFICATION_PENDING = 'caller_verification_pending';

/** The variables verification owns: a session cannot supply them while verification is enabled. */
export const VERIFICATION_VARIABLES = ['caller_verified', 'caller_verification', 'caller_record_id', 'caller_name', 'caller_pin_attempts', VERIFICATION_PENDING] as const;

/** Member of a record's `fields` holding the PIN when the configuration names none. */
export const DEFAULT_PIN_FIELD = 'pin';

/** How the caller identifies themselves; at most one lookup key is used (phone first). */
export interface CallerIdentity {
  /** E.164. */
  phone?: string;
  email?: string;
}

/** A record as verification sees it (the PIN never leaves the service). */
export interface VerificationRecord {
  id: string;
  name: string | null;
  email: string | null;
  phone: string | null;
  /** Whether the record has a non-empty PIN field. */
  hasPin: boolean;
}

const E164 = /^\+[1-9][0-9]{6,14}$/;
const EMAIL = /^[^\s@]{1,64}@[^\s@]{1,255}$/;

/**
 * The identity of a new conversation's caller: the number given for `voice`/`sms` (a call's caller, or
 * the callee of an outbound call), else the session's `phone` or `email` variable. Malformed values are
 * no identity.
 */
export function callerIdentity(channel: ConversationChannel, counterpart: string | undefined, supplied: Readonly<Record<string, string>>): CallerIdentity {
  const phone = (channel === 'voice' || channel === 'sms') && counterpart ? counterpart : supplied.phone;
  if (phone && E164.test(phone.trim())) return { phone: phone.trim() };
  if (supplied.email && EMAIL.test(supplied.email.trim())) return { email: supplied.email.trim() };
  return {};
}

/** The identity's own variables (`caller_phone`, `caller_email`). */
export function identityVariables(id: CallerIdentity): Record<string, string> {
  return { ...(id.phone ? { caller_phone: id.phone } : {}), ...(id.email ? { caller_email: id.email } : {}) };
}

/** Variables of a verified caller. */
export function verifiedVariables(r: VerificationRecord): Record<string, string> {
  return {
    caller_verified: 'true',
    caller_verification: 'verified',
    caller_record_id: r.id,
    ...(r.name ? { caller_name: r.name } : {}),
    ...(r.email ? { caller_email: r.email } : {}),
  };
}

/**
 * The verification variables at the start of a conversation, from the records matching the identity
 * (at most two are asked for: two mean the identity is shared and proves nothing). With method `pin`
 * nothing of the record is revealed before the PIN matched.
 */
export function startVariables(cv: CallerVerification, id: CallerIdentity, matches: readonly VerificationRecord[]): Record<string, string> {
  const status = (s: VerificationStatus) => ({ caller_verified: 'false', caller_verification: s });
  if (cv.method !== 'caller_id' && cv.method !== 'pin') return status('unsupported_method');
  if (!id.phone && !id.email) return status('no_identity');
  if (!matches.length) return status('not_found');
  if (matches.length > 1) return status('ambiguous');
  if (cv.method === 'caller_id') return verifiedVariables(matches[0]);
  if (!matches[0].hasPin) return status('no_pin');
  return { ...status('pin_required'), caller_pin_attempts: '0' };
}

/** The line asking for the PIN, per channel (keypad on calls). */
export function pinPrompt(channel: ConversationChannel): string {
  return channel === 'voice'
    ? 'For your security, please enter your PIN on the keypad, then press pound.'
    : 'For your security, please type your PIN.';
}

/** The digits of a PIN answer (spaces, dashes and a trailing `#` allowed), or null when it is not one. */
export function pinDigits(text: string): string | null {
  const t = text.trim().replace(/[\s-]/g, '').replace(/#$/, '');
  return /^[0-9]{3,12}$/.test(t) ? t : null;
}

/** What the agent says when a caller asks for a protected action and the PIN is due. */
export function verificationAsk(channel: ConversationChannel): string {
  return `Before I can help with that, I need to confirm who you are. ${pinPrompt(channel)}`;
}

/** What the agent says when a caller asks for a protected action and cannot be verified in this conversation. */
export const UNVERIFIED_REFUSAL =
  "I'm sorry, I can only help with that once I've confirmed who you are, and I couldn't do that here. Would you like me to connect you with a member of our team?";

/** The first sentence said once a PIN matched. */
export function verifiedThanks(name: string | null): string {
  return `Thank you${name ? `, ${name}` : ''}, you are verified.`;
}

/** What a PIN answer does to the conversation. */
export interface PinStep {
  /** Variables to merge. */
  variables: Record<string, string>;
  /** The agent's reply. */
  reply: string;
  /** Whether the conversation is handed off (attempts used up). */
  escalate: boolean;
}

/**
 * The step after a PIN answer: verified on a match; otherwise one more failed attempt, and after
 * `maxAttempts` failures the conversation is handed off (docs/api-notes.md "Caller verification").
 * @param match the record when the PIN matched, else null
 */
export function pinStep(cv: CallerVerification, channel: ConversationChannel, vars: Readonly<Record<string, string>>, match: VerificationRecord | null): PinStep {
  if (match) {
    const v = verifiedVariables(match);
    return { variables: v, reply: `${verifiedThanks(match.name)} How can I help?`, escalate: false };
  }
  const attempts = (Number.parseInt(vars.caller_pin_attempts ?? '0', 10) || 0) + 1;
  if (attempts >= cv.maxAttempts) {
    return {
      variables: { caller_verified: 'false', caller_verification: 'failed', caller_pin_attempts: String(attempts) },
      reply: 'Sorry, that PIN is not correct and I could not verify you. Let me hand you over to a member of our team.',
      escalate: true,
    };
  }
  const left = cv.maxAttempts - attempts;
  return {
    variables: { caller_pin_attempts: String(attempts) },
    reply: `Sorry, that PIN is not correct. You have ${left} attempt${left === 1 ? '' : 's'} left. ${pinPrompt(channel)}`,
    escalate: false,
  };
}

/** When verification happens; `always` for configurations (and versions) stored before `required` existed. */
export function verificationRequired(cv: Pick<CallerVerification, 'required'> | undefined): CallerVerificationRequired {
  return cv?.required ?? 'always';
}

/**
 * Why a skill runs only for a verified caller, or null when it does not: verification on and the skill in
 * `requiredForSkills`, or — with `required: for_protected_actions` — a `lookup_record` skill (it reads customer
 * records).
 */
export function protectedSkill(cv: CallerVerification | undefined, skill: { name: string; type: string }): string | null {
  if (!cv?.enabled) return null;
  if (cv.requiredForSkills.includes(skill.name)) return 'listed in requiredForSkills';
  if (verificationRequired(cv) === 'for_protected_actions' && skill.type === 'lookup_record') return 'looks up customer records';
  return null;
}

/**
 * Why a playbook runs only for a verified caller, or null: verification on and the playbook marked
 * `requiresVerifiedCaller`, or one of its skill nodes runs a protected skill (so the caller is verified before
 * its questions, not turned away after them).
 */
export function protectedPlaybook(
  cv: CallerVerification | undefined,
  playbook: { requiresVerifiedCaller?: boolean; graph: PlaybookGraph },
  skills: readonly { name: string; type: string }[],
): string | null {
  if (!cv?.enabled) return null;
  if (playbook.requiresVerifiedCaller) return 'marked requiresVerifiedCaller';
  for (const n of playbook.graph.nodes) {
    const skill = n.type === 'skill' ? skills.find((s) => s.name === n.skill) : undefined;
    if (skill && protectedSkill(cv, skill)) return `runs the protected skill ${skill.name}`;
  }
  return null;
}

/** Whether a PIN answer can still verify the caller now (method `pin`, the PIN due). */
export function pinCanVerify(cv: CallerVerification | undefined, vars: Readonly<Record<string, string>>): boolean {
  return !!cv?.enabled && cv.method === 'pin' && vars.caller_verification === 'pin_required';
}

/** Whether a skill may run: a protected skill ({@link protectedSkill}) runs only for a verified caller. */
export function skillAllowed(cv: CallerVerification | undefined, skill: string, vars: Readonly<Record<string, string>>, type = ''): boolean {
  if (!protectedSkill(cv, { name: skill, type })) return true;
  return vars.caller_verified === 'true';
}
