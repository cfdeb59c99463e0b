/**
 * The booking skills at run time (docs/api-notes.md "Booking skills"): `book_appointment` and `check_availability`
 * with `url`, through the SSRF-guarded skill client (providers/http/request.ts: HTTP_ALLOW_PRIVATE_HOSTS, no
 * redirects, the skill's `timeoutMs`), and what they share with the calendar integrations
 * (services/integrations/skills.ts): the inputs read, the idempotency key, the failure wording and the outputs.
 *
 * The booking contract (`POST {url}`, JSON):
 * - request `{startTime, durationMinutes, timeZone, name, phone, email?, notes?, conversationId}` with an
 *   `Idempotency-Key` header that is the same for a retried turn (the conversation and the tool call), so the
 *   endpoint books once;
 * - answer 2xx `{bookingId, status: "confirmed" | "pending", startTime?, endTime?}`.
 * The availability contract (`POST {url}`): `{from, to, durationMinutes, timeZone, conversationId}` → 2xx
 * `{slots: [{start, end?}]}`.
 * Anything else — a non-2xx, no answer within the timeout, a body off the contract, a status other than
 * confirmed/pending — is a failed skill: the model is told the appointment was not booked and to offer a person,
 * and it never receives a booking to confirm.
 *
 * Every booking write — the endpoint, a Google Calendar event insert, a Cal.com booking — goes through
 * ../effects.ts `performOnce` ({@link bookOnce}, docs/operations.md "Provider calls happen once"): the intent (kind
 * `booking`, reference the Idempotency-Key) is committed before the request and resolved with the booking, so a turn
 * retried after a crash answers the recorded booking without asking again, and one that died between the answer
 * and its record reconciles through the target's look-up: the endpoint is asked again with the same
 * Idempotency-Key (the contract: a repeated key answers the booking it made, never a second one), Google Calendar
 * reads the event of the derived id, Cal.com reads its bookings for the request id. The providers' own
 * idempotency stays as a second guard.
 */
import crypto from 'node:crypto';
import { SkillError, type SkillCall, type SkillOutcome } from '../../domain/conversations/runtime';
import { availabilityWindow, DEFAULT_OPEN_HOURS, localIso, type Interval, type OpenHours } from '../../domain/booking/slots';
import type { SkillHttpClient } from '../../providers/http/request';
import type { Lookup } from '../../providers/lookup';
import type { Db } from '../../db';
import { resolveIntent } from '../../db/repositories/providerIntents';
import { performOnce, type FaultHook } from '../effects';

/** Default cap on one booking or availability request, ms. */
export const BOOKING_TIMEOUT_MS = 10_000;

/** `Idempotency-Key` of a booking: SHA-256 hex of the conversation id and the tool call id (a retried turn repeats both). */
export function bookingIdempotencyKey(conversationId: string, callId: string): string {
  return crypto.createHash('sha256').update(`${conversationId}:${callId}`).digest('hex');
}

/**
 * The failed-booking SkillError. Its message is what the model reads (`{ok: false, error}`): the booking did not
 * happen, say so and offer a person — never a confirmation.
 */
export function bookingFailed(reason: string, code: string): SkillError {
  return new SkillError(`The appointment was NOT booked (${reason}). Tell the person it could not be booked and offer to connect them with a member of the team; do not say it is booked.`, code);
}

/** The failed-availability SkillError (no slots to offer; offer a person). */
export function availabilityFailed(reason: string, code: string): SkillError {
  return new SkillError(`Free times could not be checked (${reason}). Do not offer or promise a time; tell the person and offer to connect them with a member of the team.`, code);
}

/** The SkillError of a booking whose earlier attempt the target cannot account for (the intent is `unknown`). */
export function bookingUnconfirmed(reason: string): SkillError {
  return new SkillError(`Whether the appointment was booked could not be confirmed (${reason}). Do not say it is booked; tell the person a member of the team will confirm it and offer to connect them.`, 'booking_unconfirmed');
}

/** A booking as recorded on its intent: the target's id and status, start and end as ms. */
export interface Booked {
  bookingId: string;
  status: 'confirmed' | 'pending';
  startMs: number;
  endMs: number;
}

/**
 * Books at most once per (organization, reference) through ../effects.ts `performOnce` (see the module comment):
 * records the intent, books (`perform`) or reconciles (`lookup`), records the answer.
 * @param spec.reference the booking's Idempotency-Key ({@link bookingIdempotencyKey})
 * @param spec.fault tests only: crash points of the write
 * @throws SkillError from `perform`/`lookup` (the intent stays pending), `booking_unconfirmed` when the target cannot tell
 */
export async function bookOnce(
  db: Db,
  call: SkillCall,
  spec: { provider: string; target: string; startMs: number; perform: () => Promise<Booked>; lookup: () => Promise<Lookup<Booked>>; fault?: FaultHook },
): Promise<Booked> {
  const { orgId, id: conversationId } = call.conversation;
  const reference = bookingIdempotencyKey(conversationId, call.callId);
  const outcome = await performOnce(db, orgId, {
    kind: 'booking',
    reference,
    subjectId: conversationId,
    provider: spec.provider,
    // What is asked, without the person's details (they stay in the conversation).
    request: { skill: call.skill.name, callId: call.callId, target: spec.target, startTime: new Date(spec.startMs).toISOString() },
    perform: spec.perform,
    lookup: () => spec.lookup(),
    fault: spec.fault,
  });
  if (outcome.state === 'unknown') throw bookingUnconfirmed(outcome.reason);
  await resolveIntent(db, orgId, outcome.intent.id, outcome.result);
  await spec.fault?.('after_record', 'booking', reference);
  return outcome.result;
}

const first = (...values: (string | undefined)[]) => values.find((v) => typeof v === 'string' && v.trim() !== '')?.trim();

/** What a booking carries about the person, from the call's arguments, else the conversation's variables. */
export function bookingPerson(call: SkillCall): { name: string | null; phone: string | null; email: string | null; notes: string | null } {
  const v = call.conversation.variables;
  return {
    name: first(call.args.name, v.name) ?? null,
    phone: first(call.args.phone, v.caller_phone, v.phone) ?? null,
    email: first(call.args.email, v.email) ?? null,
    notes: first(call.args.notes) ?? null,
  };
}

/** The call's `start_time` as ms. @throws SkillError `invalid_input` when it is not an ISO 8601 date and time */
export function bookingStart(call: SkillCall): number {
  const raw = call.args.start_time;
  const ms = raw ? Date.parse(raw) : NaN;
  if (!raw || Number.isNaN(ms) || !/\d{2}:\d{2}/.test(raw)) throw new SkillError('start_time must be a date and time (ISO 8601), e.g. 2026-12-03T10:00:00-06:00', 'invalid_input');
  return ms;
}

/** The output a successful booking gives the model: times in the skill's time zone. */
export function bookingOutput(b: { bookingId: string; status: 'confirmed' | 'pending'; startMs: number; endMs: number }, config: Record<string, any>): Record<string, unknown> {
  return { bookingId: b.bookingId, status: b.status, startTime: localIso(b.startMs, config.timeZone), endTime: localIso(b.endMs, config.timeZone), durationMinutes: config.durationMinutes, timeZone: config.timeZone };
}

/** The opening hours of a skill config (default 09:00–17:00, Monday to Friday). */
export function openHoursOf(config: Record<string, any>): OpenHours {
  const o = config.openHours ?? {};
  return { from: o.from ?? DEFAULT_OPEN_HOURS.from, until: o.until ?? DEFAULT_OPEN_HOURS.until, days: o.days ?? DEFAULT_OPEN_HOURS.days };
}

/** The window a `check_availability` call looks at. @throws SkillError `invalid_input` for a `date` that is not `YYYY-MM-DD` */
export function availabilityWindowOf(call: SkillCall, config: Record<string, any>, nowMs: number): { fromMs: number; toMs: number } {
  const w = availabilityWindow(first(call.args.date), config.timeZone, nowMs, config.windowDays ?? 7);
  if (!w) throw new SkillError('date must be a calendar date, YYYY-MM-DD', 'invalid_input');
  return w;
}

/**
 * The output of `check_availability`: up to `maxSlots` slots in the skill's time zone, with the first one and the
 * count up front (what a model offers first).
 */
export function availabilityOutput(slots: readonly Interval[], config: Record<string, any>): Record<string, unknown> {
  const list = slots.slice(0, config.maxSlots ?? 5).map((s) => ({ start: localIso(Date.parse(s.start), config.timeZone), end: localIso(Date.parse(s.end), config.timeZone) }));
  return { available: list.length > 0, slotCount: list.length, nextSlot: list[0]?.start ?? null, timeZone: config.timeZone, slots: list };
}

/** A URL without its query and fragment (which may carry a secret reference's value). */
const urlWithoutQuery = (url: string) => {
  const u = new URL(url);
  return `${u.origin}${u.pathname}`;
};

function failureReason(err: Error & { code?: string }, url: string, timeoutMs: number): { reason: string; code: string } {
  const host = new URL(url).host;
  if (err.code === 'timeout') return { reason: `${host} did not answer within ${timeoutMs} ms`, code: 'timeout' };
  return { reason: `${host} could not be reached: ${err.message}`, code: err.code ?? 'http_failed' };
}

/**
 * Books through the skill's `url` (the booking contract above), once ({@link bookOnce}; the look-up asks again with
 * the same Idempotency-Key). @throws SkillError (never a confirmation)
 */
export async function bookThroughUrl(db: Db, http: SkillHttpClient, call: SkillCall, config: Record<string, any>, fault?: FaultHook): Promise<SkillOutcome> {
  const startMs = bookingStart(call);
  const person = bookingPerson(call);
  const timeoutMs = config.timeoutMs ?? BOOKING_TIMEOUT_MS;
  const json: Record<string, unknown> = {
    startTime: new Date(startMs).toISOString(),
    durationMinutes: config.durationMinutes,
    timeZone: config.timeZone,
    name: person.name,
    phone: person.phone,
    conversationId: call.conversation.id,
  };
  if (person.email) json.email = person.email;
  if (config.collectNotes && person.notes) json.notes = person.notes;
  const host = new URL(config.url).host;
  const ask = async (): Promise<Booked> => {
    const res = await http
      .send({ method: 'POST', url: config.url, headers: { 'idempotency-key': bookingIdempotencyKey(call.conversation.id, call.callId) }, json, timeoutMs })
      .catch((err: Error & { code?: string }) => {
        const f = failureReason(err, config.url, timeoutMs);
        throw bookingFailed(f.reason, f.code);
      });
    if (res.status < 200 || res.status >= 300) throw bookingFailed(`${host} answered HTTP ${res.status}`, 'http_status');
    const body = res.body as Record<string, unknown> | null;
    if (!body || typeof body !== 'object' || Array.isArray(body)) throw bookingFailed(`${host} answered something other than the booking JSON`, 'booking_bad_answer');
    if (typeof body.status === 'string' && body.status !== 'confirmed' && body.status !== 'pending') throw bookingFailed(`${host} answered status "${body.status.slice(0, 40)}"`, 'booking_not_confirmed');
    if (typeof body.bookingId !== 'string' || !body.bookingId.trim() || body.bookingId.length > 200 || (body.status !== 'confirmed' && body.status !== 'pending')) {
      throw bookingFailed(`${host} answered without a bookingId and a status of confirmed or pending`, 'booking_bad_answer');
    }
    const answeredStart = typeof body.startTime === 'string' ? Date.parse(body.startTime) : NaN;
    const s = Number.isNaN(answeredStart) ? startMs : answeredStart;
    const answeredEnd = typeof body.endTime === 'string' ? Date.parse(body.endTime) : NaN;
    const e = Number.isNaN(answeredEnd) ? s + config.durationMinutes * 60_000 : answeredEnd;
    return { bookingId: body.bookingId, status: body.status, startMs: s, endMs: e };
  };
  const booked = await bookOnce(db, call, { provider: 'url', target: `POST ${urlWithoutQuery(config.url)}`, startMs, perform: ask, lookup: async () => ({ found: await ask() }), fault });
  return { output: bookingOutput(booked, config) };
}

/** Free slots through the skill's `url` (the availability contract above). @throws SkillError */
export async function availabilityThroughUrl(http: SkillHttpClient, call: SkillCall, config: Record<string, any>, nowMs: number): Promise<SkillOutcome> {
  const { fromMs, toMs } = availabilityWindowOf(call, config, nowMs);
  const timeoutMs = config.timeoutMs ?? BOOKING_TIMEOUT_MS;
  const json = { from: new Date(fromMs).toISOString(), to: new Date(toMs).toISOString(), durationMinutes: config.durationMinutes, timeZone: config.timeZone, conversationId: call.conversation.id };
  const res = await http.send({ method: 'POST', url: config.url, json, timeoutMs }).catch((err: Error & { code?: string }) => {
    const f = failureReason(err, config.url, timeoutMs);
    throw availabilityFailed(f.reason, f.code);
  });
  const host = new URL(config.url).host;
  if (res.status < 200 || res.status >= 300) throw availabilityFailed(`${host} answered HTTP ${res.status}`, 'http_status');
  const slots = (res.body as { slots?: unknown } | null)?.slots;
  if (!Array.isArray(slots)) throw availabilityFailed(`${host} answered without a slots list`, 'availability_bad_answer');
  const parsed: Interval[] = [];
  for (const s of slots) {
    const start = Date.parse((s as { start?: string })?.start ?? '');
    if (Number.isNaN(start)) throw availabilityFailed(`${host} answered a slot without a start time`, 'availability_bad_answer');
    const endText = (s as { end?: string }).end;
    const end = endText && !Number.isNaN(Date.parse(endText)) ? Date.parse(endText) : start + config.durationMinutes * 60_000;
    parsed.push({ start: new Date(start).toISOString(), end: new Date(end).toISOString() });
  }
  parsed.sort((a, b) => a.start.localeCompare(b.start));
  return { output: availabilityOutput(parsed, config) };
}

/** What the pre-publish report learns about one booking skill's target (domain/agents/bookingReport.ts). */
export interface BookingTargetProbe {
  skill: string;
  /** The endpoint URL, or `integration:<kind>`. */
  target: string;
  reachable: boolean;
  /** Why not, or who answers (the connected account); null when nothing to add. */
  detail: string | null;
}

/** How long the pre-publish report waits for a booking endpoint, ms. */
export const PROBE_TIMEOUT_MS = 3_000;

/**
 * Probes the target of every `book_appointment` and `check_availability` skill for the pre-publish report: a url is
 * asked a bodiless GET through the skill client (any HTTP answer means reachable — a GET never books; no answer, a
 * refused address or an unknown host does not); an integration must be connected and not `needs_reauth`.
 * @param connection the organization's connection of a kind (status and account), or undefined
 */
export async function probeBookingTargets(
  http: SkillHttpClient,
  skills: readonly { name: string; type: string; config: Record<string, unknown> }[],
  connection: (kind: string) => Promise<{ status: string; accountLabel: string | null; provider: string; lastError: string | null } | undefined>,
): Promise<BookingTargetProbe[]> {
  const booking = skills.filter((s) => s.type === 'book_appointment' || s.type === 'check_availability');
  return Promise.all(
    booking.map(async (s): Promise<BookingTargetProbe> => {
      const c = s.config as Record<string, any>;
      if (c.integration) {
        const conn = await connection(String(c.integration));
        const target = `integration:${c.integration}`;
        if (!conn) return { skill: s.name, target, reachable: false, detail: `${c.integration} is not connected` };
        if (conn.status === 'needs_reauth') return { skill: s.name, target, reachable: false, detail: `${c.integration} needs a new consent: ${conn.lastError ?? 'the grant was revoked'}` };
        return { skill: s.name, target, reachable: true, detail: `connected as ${conn.accountLabel ?? 'an account'} (${conn.provider})` };
      }
      const url = String(c.url ?? '');
      try {
        const res = await http.send({ method: 'GET', url, timeoutMs: PROBE_TIMEOUT_MS });
        return { skill: s.name, target: url, reachable: true, detail: `answered HTTP ${res.status} to a GET` };
      } catch (err) {
        const e = err as { code?: string; message?: string };
        return { skill: s.name, target: url, reachable: false, detail: `${e.code ?? 'error'}: ${e.message ?? String(err)}`.slice(0, 300) };
      }
    }),
  );
}
