/**
 * Where an escalation goes (docs/voice.md "Escalation"): the escalation destination a conversation is
 * handed to — the one named (a `transfer_call` skill's, a number's after-hours setting), else the
 * organization's first destination open now, in the order they were created; a call can only be
 * transferred to a phone number or a SIP URI. And the few lines that tell the person taking it what the
 * conversation was about.
 */
import type { Db } from '../../db';
import { destinations } from '../../db/repositories/escalationDestinations';
import { allMessages } from '../../db/repositories/conversations';
import { isOpen } from '../../domain/settings/hours';
import type { EscalationDestination } from '../../schemas/types/settings';
import type { ConversationChannel } from '../../schemas/types/chat';
import { contactOf, summarizeForEscalation, type EscalationRoute } from '../../domain/conversations/escalation';

/** Kinds of destination a call can be transferred to. */
const DIALABLE = new Set(['phone', 'sip']);

/**
 * The destination of an escalation.
 * @param opts.destinationId a destination named by the caller of this function (used when it exists)
 * @param opts.dialable only phone numbers and SIP URIs (a call)
 * @returns the destination, or null when the organization has none (open now, when chosen by order)
 */
export async function escalationDestinationFor(db: Db, orgId: string, opts: { destinationId?: string | null; dialable?: boolean; at?: Date } = {}): Promise<EscalationDestination | null> {
  const fits = (d: EscalationDestination) => !opts.dialable || DIALABLE.has(d.kind);
  if (opts.destinationId) {
    const named = await destinations.get(db, orgId, opts.destinationId);
    if (named && fits(named)) return named;
  }
  const all = (await destinations.all(db, orgId)).filter(fits);
  return all.find((d) => isOpen(d.timeZone, d.hours, opts.at ?? new Date())) ?? null;
}

/**
 * What a conversation was about, for the person taking it (domain/conversations/escalation.ts `summarizeForEscalation`):
 * who, and the person's last messages, read from the stored transcript.
 */
export async function escalationSummary(db: Db, orgId: string, conversationId: string, counterpart: string | null): Promise<string> {
  const said = (await allMessages(db, orgId, conversationId)).filter((m) => m.role === 'user' && m.content?.trim()).map((m) => m.content!);
  return summarizeForEscalation(said, counterpart);
}

/** How long a process keeps an organization's destinations for its turns, ms. */
export const DESTINATIONS_CACHE_MS = 5000;
const cached = new Map<string, { at: number; list: Promise<EscalationDestination[]> }>();
const CACHE_MAX = 5000;

/**
 * The organization's escalation destinations in creation order, as a turn reads them: kept
 * {@link DESTINATIONS_CACHE_MS} per process (a turn of every conversation asks), forgotten at once by a change made
 * through this process ({@link forgetEscalationDestinations}); another process sees a change within that time.
 */
function destinationsOf(db: Db, orgId: string, now = Date.now()): Promise<EscalationDestination[]> {
  const hit = cached.get(orgId);
  if (hit && now - hit.at < DESTINATIONS_CACHE_MS) return hit.list;
  if (cached.size >= CACHE_MAX) cached.delete(cached.keys().next().value as string);
  const list = destinations.all(db, orgId);
  cached.set(orgId, { at: now, list });
  list.catch(() => cached.delete(orgId));
  return list;
}

/** Drops this process's copy of the organization's destinations (after a create, update or delete). */
export function forgetEscalationDestinations(orgId: string): void {
  cached.delete(orgId);
}

/**
 * Where an escalation of a conversation goes now (docs/api-notes.md "Conversations": escalation): on a call the first
 * phone number or SIP URI open now (what the relay's end dials: docs/voice.md "Escalation"); in chat, the widget
 * and SMS the first destination open now, else the first one (someone follows up once it opens) — with what the
 * turn knows of the person (their number, their e-mail) to say how they will be reached.
 * @param vars the conversation's variables (`caller_phone`, `phone`, `caller_email`, `email`)
 * @returns the route; its destination is null when the organization has none (on a call: none dialable)
 */
export async function escalationRouteFor(db: Db, orgId: string, channel: ConversationChannel, vars: Readonly<Record<string, string>>, at: Date = new Date()): Promise<EscalationRoute> {
  const all = (await destinationsOf(db, orgId)).filter((d) => channel !== 'voice' || DIALABLE.has(d.kind));
  const d = all.find((x) => isOpen(x.timeZone, x.hours, at)) ?? (channel === 'voice' ? undefined : all[0]);
  return { destination: d ? { id: d.id, kind: d.kind, address: d.address } : null, ...contactOf(vars) };
}
