/**
 * Escalation destinations (spec "Support": escalation_destinations:read/write; docs/api-notes.md
 * "Variables, escalation, onboarding, meta and settings"): where a conversation is handed to a person. The address
 * must fit the kind: E.164 (phone), a `sip:`/`sips:` URI (RFC 3261 §19.1), an e-mail address, or an HTTPS
 * URL that passes the webhook URL policy (webhook).
 */
import type { FieldError } from '../errors';
import type { EscalationDestinationKind } from '../../schemas/types/settings';

const E164 = /^\+[1-9][0-9]{6,14}$/;
const SIP = /^sips?:[A-Za-z0-9\-_.!~*'()&=+$,;?/%]+@[A-Za-z0-9.-]+(:\d{1,5})?(;[A-Za-z0-9\-_.=;]*)?$/;
const EMAIL = /^[^\s@]{1,64}@[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)+$/;

/**
 * The problem with `address` for `kind`, or null when it fits.
 * @param urlProblem the webhook URL policy (domain/webhooks/urlPolicy.ts) for `webhook` addresses
 */
export function addressProblem(kind: EscalationDestinationKind, address: string, urlProblem: (url: string) => string | null): string | null {
  switch (kind) {
    case 'phone':
      return E164.test(address) ? null : 'must be a phone number in E.164, e.g. +14155550100';
    case 'sip':
      return SIP.test(address) ? null : 'must be a SIP URI such as sip:frontdesk@pbx.example.com';
    case 'email':
      return EMAIL.test(address) ? null : 'must be an e-mail address';
    case 'webhook':
      return urlProblem(address);
  }
}

/** The address field error of a destination, as a list (empty when it fits). */
export function addressErrors(kind: EscalationDestinationKind, address: string, urlProblem: (url: string) => string | null): FieldError[] {
  const p = addressProblem(kind, address, urlProblem);
  return p ? [{ field: 'address', message: p }] : [];
}
