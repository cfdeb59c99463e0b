/**
 * Inbound keyword handling (CTIA Messaging Principles; docs/sms.md "Numbers, consent and sending"). A keyword counts
 * only when it is alone in the message; case, whitespace (also inside, so "opt out" = OPTOUT) and
 * trailing "." or "!" are ignored.
 */

/** What an inbound text asks for. */
export type InboundKeyword = 'STOP' | 'START' | 'HELP';

const STOP_WORDS = new Set(['STOP', 'STOPALL', 'UNSUBSCRIBE', 'CANCEL', 'END', 'QUIT', 'REVOKE', 'OPTOUT']);
const START_WORDS = new Set(['START', 'UNSTOP']);
const HELP_WORDS = new Set(['HELP', 'INFO']);

/**
 * Classifies an inbound text.
 * @returns STOP (opt out), START (opt back in), HELP (answer with helpMessage), or null for any other text
 */
export function parseInboundKeyword(text: string): InboundKeyword | null {
  const key = text.normalize('NFKC').replace(/\s+/g, '').replace(/[.!]+$/, '').toUpperCase();
  if (STOP_WORDS.has(key)) return 'STOP';
  if (START_WORDS.has(key)) return 'START';
  if (HELP_WORDS.has(key)) return 'HELP';
  return null;
}

/** The one confirmation sent after an opt-out (CTIA: a single message, no marketing). */
export function optOutConfirmation(brand: string): string {
  return `${brand}: You are unsubscribed and will receive no further messages. Reply START to resubscribe.`;
}

/** The confirmation sent after START/UNSTOP. */
export function optInConfirmation(brand: string): string {
  return `${brand}: You are resubscribed. Msg & data rates may apply. Reply HELP for help, STOP to opt out.`;
}
