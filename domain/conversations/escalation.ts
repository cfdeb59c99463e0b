/**
 * Escalation inside a conversation (docs/api-notes.md "Conversations": escalation; docs/voice.md "Escalation"): the
 * `escalate` tool the model is offered when the organization has an escalation destination, the line that tells
 * the person how a member of the team will reach them, and the summary handed to that person. Pure: the service
 * finds the destination (services/conversations/escalation.ts) and hands it to the turn.
 */
import type { ConversationChannel } from '../../schemas/types/chat';
import type { LlmTool } from './llm';

/** Name of the tool that hands the conversation to a person. */
export const ESCALATE_TOOL = 'escalate';

/** Why a conversation was escalated (`conversation.escalated` `reason`). */
export type EscalationReason = 'escalateOn' | 'caller_verification' | 'escalate_tool' | 'playbook_node';

/** Where an escalation of this conversation would go now, as the turn sees it. */
export interface EscalationRoute {
  /** The destination (`esc_…`, its kind and address), or null when the organization has none. */
  destination: { id: string; kind: string; address: string } | null;
  /** The person's own number (E.164: the caller, the texter, or a chat's `caller_phone`/`phone` variable), if known. */
  phone: string | null;
  /** The person's e-mail (a chat's `caller_email`/`email` variable), if known. */
  email: string | null;
}

/** What the agent says on a call when it hands the caller to a person (the tool, a playbook node). */
export const SPOKEN_ESCALATION = "I'll connect you with a member of our team.";

/**
 * The `escalate` tool: no required argument; `reason` lets the model say why (stored in the receipt).
 * @param channel on a call it transfers; elsewhere a member of the team follows up
 */
export function escalateTool(channel: ConversationChannel): LlmTool {
  const what =
    channel === 'voice'
      ? 'Transfers the call to a member of the team.'
      : 'Hands the conversation to a member of the team, who will follow up with the person; the conversation then ends.';
  return {
    name: ESCALATE_TOOL,
    description: `${what} Call it when the person asks for a human, a person, a representative or a manager, when it is an emergency, or when you cannot help and they want someone who can.`,
    parameters: { type: 'object', properties: { reason: { type: 'string', description: 'Why the person needs a member of the team, in a few words.' } }, required: [] },
  };
}

const E164 = /^\+[1-9][0-9]{6,14}$/;
const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

/** The person's number and e-mail from a conversation's variables (`caller_phone`/`phone`, `caller_email`/`email`), when well-formed. */
export function contactOf(vars: Readonly<Record<string, string>>): { phone: string | null; email: string | null } {
  const phone = [vars.caller_phone, vars.phone].map((v) => v?.trim()).find((v) => v && E164.test(v)) ?? null;
  const email = [vars.caller_email, vars.email].map((v) => v?.trim()).find((v) => v && EMAIL.test(v)) ?? null;
  return { phone, email };
}

/**
 * How a member of the team will reach the person, said at the end of an escalated text conversation (chat, widget,
 * SMS) in the same reply; null on a call (the caller is transferred) and when there is no destination (nobody is
 * named to follow up, so nothing is promised):
 * - SMS: "A member of our team will reply by text at this number.";
 * - a phone or SIP destination and the person's number known: "A member of our team will call you at +1…";
 * - an e-mail destination: "A member of our team will follow up by e-mail" (at the person's address when known);
 * - otherwise (a webhook destination, or no number to call): a member of the team will follow up here.
 */
export function reachLine(channel: ConversationChannel, route: EscalationRoute | null): string | null {
  if (channel === 'voice' || !route?.destination) return null;
  const kind = route.destination.kind;
  if (channel === 'sms') return 'A member of our team will reply by text at this number.';
  if ((kind === 'phone' || kind === 'sip') && route.phone) return `A member of our team will call you at ${route.phone}.`;
  if (kind === 'email') return `A member of our team will follow up by e-mail${route.email ? ` at ${route.email}` : ''}.`;
  return 'A member of our team will follow up with you as soon as possible.';
}

/** `line`, then how the person will be reached ({@link reachLine}) when there is a way to say. */
export function escalationLine(line: string, channel: ConversationChannel, route: EscalationRoute | null): string {
  const reach = reachLine(channel, route);
  return reach ? `${line.trim()} ${reach}` : line;
}

/** Longest summary handed to the person taking an escalation, characters. */
export const SUMMARY_MAX_CHARS = 400;

/**
 * What a conversation was about, for the person taking it: who, and the person's last three messages (most
 * recent last), in at most {@link SUMMARY_MAX_CHARS} characters. No tool output or internal data.
 * @param userLines the person's messages, oldest first
 * @param counterpart the person's number, when known
 */
export function summarizeForEscalation(userLines: readonly string[], counterpart: string | null): string {
  const said = userLines.map((l) => l.trim()).filter(Boolean);
  const who = counterpart ? `A caller at ${counterpart}` : 'A customer';
  if (!said.length) return `${who} asked to speak with a person.`;
  const text = `${who} asked for help: "${said.slice(-3).join(' / ')}"`;
  return text.length > SUMMARY_MAX_CHARS ? `${text.slice(0, SUMMARY_MAX_CHARS - 4)}..."` : text;
}
