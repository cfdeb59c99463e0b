/**
 * The Cal.com adapter (docs/going-live.md "Cal.com"), over Cal.com API v2's documented REST endpoints (Cal.com
 * publishes no official Node client for v2): an API key per connection as `Authorization: Bearer cal_…`, and the
 * `cal-api-version` header each endpoint requires.
 *
 * - Connect: `GET /v2/me` (the key's owner is the account label).
 * - Free slots: `GET /v2/slots` (cal-api-version 2024-09-04) for the event type, `format=range`, in the skill's time zone.
 * - Booking: `POST /v2/bookings` (2024-08-13) with the caller as attendee (name, phone, email when known, time zone)
 *   and the request id in `metadata`; before writing, `GET /v2/bookings` of that event type and start is read, so a
 *   retried booking finds the one it made (the API takes no idempotency key).
 * - Errors: 401/403 `credentials_rejected`, 404 `not_found`, other 4xx `refused` (e.g. the slot was taken), 5xx
 *   `unavailable`, no answer in time `timeout`, a body off the documented `{status: "success", data}` `bad_answer`.
 */
import type { IntegrationKind } from '../../domain/integrations/catalog';
import type { Interval } from '../../domain/booking/slots';
import type { Lookup } from '../lookup';
import { IntegrationProviderError, type CalendarEvent, type CalendarEventRequest, type ConnectedAccount, type ExternalRecordPage, type FreeSlotsRequest, type IntegrationSecrets, type IntegrationsAdapter } from './index';

/** The `cal-api-version` of each endpoint family (Cal.com API v2 reference). */
export const CALCOM_API_VERSIONS = { bookings: '2024-08-13', slots: '2024-09-04' } as const;

type CalBooking = { uid?: unknown; id?: unknown; status?: unknown; start?: unknown; end?: unknown; metadata?: Record<string, unknown> };

/** The adapter. */
export class CalcomIntegrations implements IntegrationsAdapter {
  readonly provider = 'calcom';
  /** No CRM operations (a calendar, or the sandbox's synced Records). */
  readonly crm = null;

  /** @param apiUrl Cal.com's API origin (CALCOM_API_URL); @param timeoutMs cap on one request, ms */
  constructor(
    private readonly apiUrl: string,
    private readonly timeoutMs: number,
  ) {}

  private async call(apiKey: string, method: 'GET' | 'POST', path: string, opts: { version?: string; query?: Record<string, string>; body?: unknown } = {}): Promise<any> {
    const url = new URL(`${this.apiUrl}${path}`);
    for (const [k, v] of Object.entries(opts.query ?? {})) url.searchParams.set(k, v);
    const what = `Cal.com ${method} ${path}`;
    let res: Response;
    try {
      res = await fetch(url, {
        method,
        headers: {
          authorization: `Bearer ${apiKey}`,
          accept: 'application/json',
          ...(opts.version ? { 'cal-api-version': opts.version } : {}),
          ...(opts.body !== undefined ? { 'content-type': 'application/json' } : {}),
        },
        body: opts.body !== undefined ? JSON.stringify(opts.body) : undefined,
        signal: AbortSignal.timeout(this.timeoutMs),
      });
    } catch (err) {
      const e = err as Error;
      if (e.name === 'TimeoutError' || e.name === 'AbortError') throw new IntegrationProviderError('timeout', `${what}: no answer within ${this.timeoutMs} ms`);
      throw new IntegrationProviderError('unavailable', `${what}: ${e.message}`);
    }
    let text: string;
    try {
      text = await res.text();
    } catch (err) {
      const e = err as Error;
      throw new IntegrationProviderError(e.name === 'TimeoutError' || e.name === 'AbortError' ? 'timeout' : 'unavailable', `${what}: the answer was cut off`);
    }
    let body: any;
    try {
      body = JSON.parse(text);
    } catch {
      body = undefined;
    }
    if (!res.ok) {
      const reason = typeof body?.error?.message === 'string' ? body.error.message : `HTTP ${res.status}`;
      const detail = `${what} answered ${res.status}: ${String(reason).slice(0, 300)}`;
      if (res.status === 401 || res.status === 403) throw new IntegrationProviderError('credentials_rejected', detail);
      if (res.status === 404) throw new IntegrationProviderError('not_found', detail);
      throw new IntegrationProviderError(res.status < 500 ? 'refused' : 'unavailable', detail);
    }
    if (!body || typeof body !== 'object' || body.status !== 'success' || !('data' in body)) throw new IntegrationProviderError('bad_answer', `${what} answered ${res.status} without the documented {status: "success", data}`);
    return body.data;
  }

  async validateCredentials(kind: IntegrationKind, c: Record<string, string>): Promise<ConnectedAccount> {
    if (kind !== 'calcom') throw new IntegrationProviderError('credentials_rejected', `The Cal.com adapter does not connect ${kind}`);
    const me = await this.call(c.apiKey ?? '', 'GET', '/v2/me');
    if (typeof me?.email !== 'string') throw new IntegrationProviderError('bad_answer', 'Cal.com GET /v2/me answered without the account email');
    return { accountLabel: me.email, scopes: [], secrets: { apiKey: c.apiKey } };
  }

  authorizationUrl(): string {
    throw new IntegrationProviderError('credentials_rejected', 'Cal.com connects with an API key, not OAuth');
  }

  async exchangeCode(): Promise<ConnectedAccount> {
    throw new IntegrationProviderError('credentials_rejected', 'Cal.com connects with an API key, not OAuth');
  }

  async refreshSecrets(): Promise<IntegrationSecrets | null> {
    return null;
  }

  async openSpreadsheet(): Promise<{ spreadsheetId: string; title: string }> {
    throw new IntegrationProviderError('not_found', 'Cal.com holds no spreadsheets');
  }

  async listRecords(kind: IntegrationKind): Promise<ExternalRecordPage> {
    throw new IntegrationProviderError('not_found', `${kind} holds no records`);
  }

  async findFreeSlots(secrets: IntegrationSecrets, req: FreeSlotsRequest): Promise<Interval[]> {
    if (!req.eventTypeId) throw new IntegrationProviderError('refused', 'A Cal.com skill needs eventTypeId');
    const data = await this.call(secrets.apiKey, 'GET', '/v2/slots', {
      version: CALCOM_API_VERSIONS.slots,
      query: { eventTypeId: String(req.eventTypeId), start: req.from, end: req.to, timeZone: req.timeZone, format: 'range' },
    });
    if (!data || typeof data !== 'object' || Array.isArray(data)) throw new IntegrationProviderError('bad_answer', 'Cal.com GET /v2/slots answered data that is not a map of days');
    const out: Interval[] = [];
    for (const day of Object.keys(data).sort()) {
      const list = data[day];
      if (!Array.isArray(list)) throw new IntegrationProviderError('bad_answer', `Cal.com GET /v2/slots answered ${day} without a list of slots`);
      for (const s of list) {
        const start = Date.parse(typeof s === 'string' ? s : s?.start);
        if (Number.isNaN(start)) throw new IntegrationProviderError('bad_answer', 'Cal.com GET /v2/slots answered a slot without a start time');
        const end = typeof s?.end === 'string' && !Number.isNaN(Date.parse(s.end)) ? Date.parse(s.end) : start + req.durationMinutes * 60_000;
        out.push({ start: new Date(start).toISOString(), end: new Date(end).toISOString() });
      }
    }
    return out.sort((a, b) => a.start.localeCompare(b.start)).slice(0, req.max);
  }

  private result(b: CalBooking): CalendarEvent {
    const id = typeof b?.uid === 'string' ? b.uid : null;
    if (!id || typeof b.start !== 'string' || typeof b.end !== 'string' || Number.isNaN(Date.parse(b.start))) throw new IntegrationProviderError('bad_answer', 'Cal.com answered a booking without uid, start or end');
    if (b.status === 'accepted') return { eventId: id, start: new Date(b.start).toISOString(), end: new Date(b.end).toISOString(), status: 'confirmed' };
    if (b.status === 'pending') return { eventId: id, start: new Date(b.start).toISOString(), end: new Date(b.end).toISOString(), status: 'pending' };
    throw new IntegrationProviderError('refused', `Cal.com answered the booking as ${String(b.status)}`);
  }

  /** Bookings of the event type at the requested start carrying `req.requestId` in their metadata (not cancelled or rejected). */
  private async earlierBooking(secrets: IntegrationSecrets, req: CalendarEventRequest): Promise<CalBooking | undefined> {
    if (!req.eventTypeId) throw new IntegrationProviderError('refused', 'A Cal.com skill needs eventTypeId');
    const start = new Date(req.start).toISOString();
    const end = new Date(Date.parse(req.start) + req.durationMinutes * 60_000).toISOString();
    const earlier = await this.call(secrets.apiKey, 'GET', '/v2/bookings', {
      version: CALCOM_API_VERSIONS.bookings,
      query: { eventTypeId: String(req.eventTypeId), afterStart: start, beforeEnd: end, take: '100' },
    });
    if (!Array.isArray(earlier)) throw new IntegrationProviderError('bad_answer', 'Cal.com GET /v2/bookings answered data that is not a list');
    return (earlier as CalBooking[]).find((b) => b?.metadata?.requestId === req.requestId.slice(0, 500) && b.status !== 'cancelled' && b.status !== 'rejected');
  }

  async findCalendarEvent(secrets: IntegrationSecrets, req: CalendarEventRequest): Promise<Lookup<CalendarEvent>> {
    const mine = await this.earlierBooking(secrets, req);
    return mine ? { found: this.result(mine) } : { absent: true };
  }

  async createCalendarEvent(secrets: IntegrationSecrets, req: CalendarEventRequest): Promise<CalendarEvent> {
    const mine = await this.earlierBooking(secrets, req);
    if (mine) return this.result(mine);
    const start = new Date(req.start).toISOString();
    const attendee: Record<string, string> = { name: req.attendee.name ?? 'Caller', timeZone: req.timeZone };
    if (req.attendee.phone) attendee.phoneNumber = req.attendee.phone;
    if (req.attendee.email) attendee.email = req.attendee.email;
    const made = await this.call(secrets.apiKey, 'POST', '/v2/bookings', {
      version: CALCOM_API_VERSIONS.bookings,
      body: { start, eventTypeId: req.eventTypeId, attendee, metadata: { requestId: req.requestId.slice(0, 500), ...(req.notes ? { notes: req.notes.slice(0, 500) } : {}) } },
    });
    return this.result(made as CalBooking);
  }
}
