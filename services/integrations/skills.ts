/**
 * Provisioned skills at run time (docs/api-notes.md "Integrations and records"), called by the conversation
 * runtime's skill runner (services/conversations/skills.ts):
 * - `lookup_record`: with `integration` on a connection made on a CRM's live API (provider `hubspot`), the contacts
 *   the CRM finds at run time (kept as Records: ./crm.ts); otherwise up to `maxResults` Records matching the
 *   conversation's phone, email or name (the
 *   call's arguments, else the conversation's `caller_phone` / `phone` / `email` / `name` variables),
 *   without their sensitive fields; each lookup is an audit entry (actor kind `agent`, actor id the conversation);
 * - `book_appointment` with `integration` (`google_calendar`, `calcom`): an event on the connected calendar; the
 *   request id is the conversation and tool call, so a retried booking finds the same event, and the write goes
 *   through `performOnce` (../conversations/booking.ts `bookOnce`); `check_availability`
 *   with `integration`: the calendar's free slots (../conversations/booking.ts shapes both outputs and failures);
 * - `http_request` with `integration: http`: the connection's Authorization header ({@link integrationHeaders}).
 * A missing connection or a provider refusal is a SkillError the model sees (`integration_not_connected`, …); a
 * connection whose OAuth grant was revoked fails with `integration_needs_reauth` (./connections.ts `connectionSecrets`).
 */
import type { Db } from '../../db';
import { getConnection, setConnectionError, type ConnectionRecord } from '../../db/repositories/integrations';
import { findRecords, type RecordFilter } from '../../db/repositories/records';
import { insertAuditLogs } from '../../db/repositories/auditLogs';
import { SkillError, type SkillCall, type SkillOutcome } from '../../domain/conversations/runtime';
import type { IntegrationKind } from '../../domain/integrations/catalog';
import { integrationsAdapter, IntegrationProviderError, type CalendarEvent, type CalendarEventRequest } from '../../providers/integrations';
import { availabilityFailed, availabilityOutput, availabilityWindowOf, bookingFailed, bookingOutput, bookingPerson, bookingStart, bookOnce, openHoursOf, type Booked } from '../conversations/booking';
import type { FaultHook } from '../effects';
import { ConnectionNeedsReauthError, connectionSecrets, openCredentials } from './connections';
import { crmOf, lookupCrmContacts } from './crm';

async function connectionOf(db: Db, orgId: string, kind: IntegrationKind) {
  const c = await getConnection(db, orgId, kind);
  if (!c) throw new SkillError(`The ${kind} integration is not connected`, 'integration_not_connected');
  return c;
}

/** The `Authorization` header of the organization's `http` connection (none when it has none). @throws SkillError `integration_not_connected` */
export async function integrationHeaders(db: Db, orgId: string): Promise<Record<string, string>> {
  const c = await connectionOf(db, orgId, 'http');
  const secrets = openCredentials(c.credentialsSealed);
  return secrets.authorization ? { authorization: secrets.authorization } : {};
}

/**
 * `lookup_record` on a CRM's live API (./crm.ts): a provider failure or a revoked grant is a failed skill
 * (`integration_<code>`, `integration_needs_reauth`), never an empty or made-up match.
 * @throws SkillError
 */
async function crmMatches(db: Db, orgId: string, c: ConnectionRecord, key: 'phone' | 'email' | 'name', value: string, limit: number) {
  try {
    return await lookupCrmContacts(db, orgId, c, key === 'phone' ? { phone: value } : key === 'email' ? { email: value } : { query: value }, limit);
  } catch (err) {
    if (err instanceof ConnectionNeedsReauthError) throw new SkillError(`The CRM lookup failed: ${err.message}`, 'integration_needs_reauth');
    if (!(err instanceof IntegrationProviderError)) throw err;
    throw new SkillError(`The CRM lookup failed: ${err.message}`, `integration_${err.code}`);
  }
}

const first = (...values: (string | undefined)[]) => values.find((v) => typeof v === 'string' && v.trim() !== '')?.trim();

/**
 * Runs a `lookup_record` or an integration-backed `book_appointment` / `check_availability`.
 * @param fault tests only: crash points of a booking write (../effects.ts)
 * @throws SkillError
 */
export async function runIntegrationSkill(db: Db, call: SkillCall, fault?: FaultHook): Promise<SkillOutcome> {
  const config = call.skill.config as Record<string, any>;
  const { orgId } = call.conversation;
  const vars = { ...call.conversation.variables, ...call.args };
  if (call.skill.type === 'lookup_record') {
    const on: string[] = Array.isArray(config.matchOn) ? config.matchOn : ['phone', 'email', 'name'];
    const filter: RecordFilter = {};
    if (on.includes('phone')) filter.phone = first(call.args.phone, vars.caller_phone, vars.phone);
    if (on.includes('email')) filter.email = first(call.args.email, vars.email);
    if (on.includes('name')) filter.name = first(call.args.name, vars.name);
    // Match on the most specific key given: phone, then email, then name.
    const key = (['phone', 'email', 'name'] as const).find((k) => filter[k]);
    if (!key) throw new SkillError('Give a phone number, email or name to look up', 'invalid_input');
    const connection = config.integration ? await connectionOf(db, orgId, config.integration) : null;
    const found = connection && crmOf(connection) ? await crmMatches(db, orgId, connection, key, filter[key]!, config.maxResults ?? 3) : await findRecords(db, orgId, { [key]: filter[key], source: config.integration }, config.maxResults ?? 3);
    await insertAuditLogs(db, [
      {
        orgId,
        rec: {
          actorId: call.conversation.id,
          actorKind: 'agent',
          operationId: 'lookupRecordSkill',
          method: 'SKILL',
          path: `/conversations/${call.conversation.id}/skills/${call.skill.name}`,
          resourceType: 'record',
          resourceId: found[0]?.id ?? null,
          requestId: call.callId,
          sourceIp: null,
          statusCode: found.length ? 200 : 404,
        },
      },
    ]);
    // Sensitive fields are write-only (docs/security.md "Sensitive record fields"): left out, not even masked, so neither the
    // model nor the receipt ever holds them.
    const visible = (r: (typeof found)[number]) => Object.fromEntries(Object.entries(r.fields).filter(([k]) => !r.sensitiveFields.includes(k)));
    return { output: { matches: found.map((r) => ({ id: r.id, name: r.name, phone: r.phone, email: r.email, fields: visible(r) })), matchedOn: key } };
  }
  return runCalendarSkill(db, call, config, fault);
}

/** `book_appointment` or `check_availability` on the connected calendar. @throws SkillError (a failed booking never reads as one) */
async function runCalendarSkill(db: Db, call: SkillCall, config: Record<string, any>, fault?: FaultHook): Promise<SkillOutcome> {
  const { orgId } = call.conversation;
  const booking = call.skill.type === 'book_appointment';
  const fail = booking ? bookingFailed : availabilityFailed;
  const startMs = booking ? bookingStart(call) : 0;
  const c = await getConnection(db, orgId, config.integration);
  if (!c) throw fail(`the ${config.integration} integration is not connected`, 'integration_not_connected');
  const adapter = integrationsAdapter(process.env, c.provider);
  try {
    if (!booking) {
      const secrets = await connectionSecrets(db, c);
      const { fromMs, toMs } = availabilityWindowOf(call, config, Date.now());
      const slots = await adapter.findFreeSlots(secrets, {
        calendarId: config.calendarId ?? 'primary',
        eventTypeId: config.eventTypeId ?? null,
        from: new Date(fromMs).toISOString(),
        to: new Date(toMs).toISOString(),
        durationMinutes: config.durationMinutes,
        timeZone: config.timeZone,
        open: openHoursOf(config),
        max: config.maxSlots ?? 5,
      });
      return { output: availabilityOutput(slots, config) };
    }
    const person = bookingPerson(call);
    const req: CalendarEventRequest = {
      calendarId: config.calendarId ?? 'primary',
      eventTypeId: config.eventTypeId ?? null,
      start: new Date(startMs).toISOString(),
      durationMinutes: config.durationMinutes,
      timeZone: config.timeZone,
      summary: `Appointment: ${person.name ?? 'caller'}`,
      attendee: { name: person.name, phone: person.phone, email: person.email },
      notes: config.collectNotes ? person.notes : null,
      requestId: `${call.conversation.id}:${call.callId}`,
    };
    // Read (and refreshed) only when the calendar is asked: a booking already recorded answers without a request.
    const secrets = () => connectionSecrets(db, c);
    const booked = (ev: CalendarEvent): Booked => ({ bookingId: ev.eventId, status: ev.status, startMs: Date.parse(ev.start), endMs: Date.parse(ev.end) });
    // Once per tool call (../conversations/booking.ts `bookOnce`): the calendar's look-up reconciles a retried attempt.
    const b = await bookOnce(db, call, {
      provider: c.provider,
      target: `integration:${config.integration}${req.eventTypeId ? ` event type ${req.eventTypeId}` : ` calendar ${req.calendarId}`}`,
      startMs,
      perform: async () => booked(await adapter.createCalendarEvent(await secrets(), req)),
      lookup: async () => {
        const seen = await adapter.findCalendarEvent(await secrets(), req);
        return 'found' in seen ? { found: booked(seen.found) } : seen;
      },
      fault,
    });
    return { output: bookingOutput(b, config) };
  } catch (err) {
    if (err instanceof ConnectionNeedsReauthError) throw fail(err.message, 'integration_needs_reauth');
    if (!(err instanceof IntegrationProviderError)) throw err;
    await setConnectionError(db, orgId, c.id, err.message);
    throw fail(err.message, `integration_${err.code}`);
  }
}
