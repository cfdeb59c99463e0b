/**
 * The campaign rules that apply to one call placed on demand (docs/api-notes.md "Calls on demand";
 * docs/voice.md "Outbound voice campaigns"): the recipient is a valid US number (scrub `invalid_phone`,
 * `not_us`), an explicit time zone is a known one (`invalid_time_zone`), the number is neither opted out
 * (`suppressed`) nor on the organization's do-not-call list (`do_not_call`), and the recipient-local
 * calling window (08:00–21:00 in every zone of the recipient, callingWindow.ts) is open now. Pure:
 * the caller looks up the opt-out and do-not-call facts and the instant.
 */
import { ApiError } from '../errors';
import { DEFAULT_WINDOW, isKnownZone, nextDialTime, zonesFor, type WindowSpec } from './callingWindow';
import { normalizeUsPhone } from './scrub';

/** What the organization's lists say about the recipient. */
export interface RecipientFacts {
  /** Opted out of texts (STOP) or withdrew consent: the campaign scrub's `suppressed`. */
  suppressed: boolean;
  /** On the organization's do-not-call list. */
  doNotCall: boolean;
}

/** Why a single call is refused (also the failure reason of a call refused when its dial is due). */
export type SingleCallRefusal = 'invalid_phone' | 'recipient_not_us' | 'invalid_time_zone' | 'recipient_opted_out' | 'recipient_do_not_call' | 'outside_calling_window';

/**
 * The recipient's number checked as a campaign's scrub reads it (libphonenumber-js, US states and territories).
 * @returns the E.164 or the refusal: 400 `validation_error` / 422 `recipient_not_us`, each naming `to`
 */
export function recipientOrProblem(to: string): { e164: string } | { problem: ApiError } {
  const n = normalizeUsPhone(to);
  if ('e164' in n) return n;
  if (n.reason === 'not_us') {
    return { problem: new ApiError(422, 'recipient_not_us', 'Calls go to US numbers only', { errors: [{ field: 'to', message: 'must be a US number' }] }) };
  }
  return { problem: new ApiError(400, 'validation_error', 'The recipient is not a valid phone number', { errors: [{ field: 'to', message: 'must be a valid phone number in E.164, e.g. +14155550100' }] }) };
}

/**
 * The first rule a single call breaks at instant `at`, as the problem to answer, or null when it may be
 * dialed now. Order: number, time zone, opt-out, do-not-call, calling window.
 * - 400 `validation_error` naming `to` (not a phone number) or `timeZone` (not an IANA zone);
 * - 422 `recipient_not_us` naming `to`;
 * - 409 `recipient_opted_out` / `recipient_do_not_call` naming `to`;
 * - 409 `outside_calling_window` naming `to`, with `nextAllowedAt` (ISO 8601, null when no window opens
 *   within 8 days) and the recipient's `zones` in the problem body.
 */
export function singleCallProblem(call: { to: string; timeZone: string | null }, facts: RecipientFacts, at: Date, window: WindowSpec = DEFAULT_WINDOW): ApiError | null {
  const recipient = recipientOrProblem(call.to);
  if ('problem' in recipient) return recipient.problem;
  if (call.timeZone !== null && !isKnownZone(call.timeZone)) {
    return new ApiError(400, 'validation_error', 'The time zone is not an IANA time zone', { errors: [{ field: 'timeZone', message: 'must be an IANA time zone, e.g. America/Chicago' }] });
  }
  if (facts.suppressed) return new ApiError(409, 'recipient_opted_out', 'The recipient opted out (STOP) or withdrew consent; they are not called', { errors: [{ field: 'to', message: 'opted out' }] });
  if (facts.doNotCall) return new ApiError(409, 'recipient_do_not_call', "The recipient is on the organization's do-not-call list", { errors: [{ field: 'to', message: 'is on the do-not-call list' }] });
  const zones = zonesFor(recipient.e164, call.timeZone);
  const next = nextDialTime(zones, at, window);
  if (next && next.getTime() === at.getTime()) return null;
  return new ApiError(409, 'outside_calling_window', `The recipient's local time is outside the calling window (08:00–21:00 in ${zones.join(', ')})`, {
    errors: [{ field: 'to', message: next ? `may be called from ${next.toISOString()}` : 'no calling window opens in the next 8 days' }],
    extra: { nextAllowedAt: next ? next.toISOString() : null, zones },
  });
}

/** The refusal code of a problem {@link singleCallProblem} answered (a call refused when its dial is due stores it as its failure reason). */
export function refusalOf(problem: ApiError): SingleCallRefusal {
  if (problem.code === 'validation_error') return problem.errors?.[0]?.field === 'timeZone' ? 'invalid_time_zone' : 'invalid_phone';
  return problem.code as SingleCallRefusal;
}
