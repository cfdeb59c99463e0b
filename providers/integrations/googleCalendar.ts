/**
 * The Google Calendar adapter (docs/going-live.md "Google Calendar"), on the official `@googleapis/calendar` client
 * (Calendar API v3: `freebusy.query`, `calendars.get`, `events.insert`, `events.get`) and Google's OAuth 2.0
 * endpoints through the generic client of ./oauthClient.ts (authorization code with PKCE, `access_type=offline`
 * for a refresh token, refreshed a minute before expiry).
 *
 * - Free slots: the calendar's busy intervals (`freebusy.query`) taken out of the skill's opening hours.
 * - Booking: an event in the calendar's own time zone (`calendars.get` → `timeZone`), the caller in its description
 *   and as an attendee when an email is known (Google requires an attendee's email); the event id is derived from
 *   the request id (base32hex, as `events.insert` accepts a client id), so a retried booking gets 409 and reads the
 *   event it made instead of making a second one.
 * - Errors: 401/403 `credentials_rejected`, 404 `not_found`, 409/other 4xx `refused`, 5xx `unavailable`, no answer
 *   in time `timeout`, an answer without the documented members `bad_answer`.
 */
import crypto from 'node:crypto';
import { auth, calendar, type calendar_v3 } from '@googleapis/calendar';
import type { IntegrationKind } from '../../domain/integrations/catalog';
import type { GoogleSettings } from '../../domain/integrations/settings';
import { freeSlots, localIso, type Interval } from '../../domain/booking/slots';
import type { Lookup } from '../lookup';
import { IntegrationProviderError, type CalendarEvent, type CalendarEventRequest, type ConnectedAccount, type ExternalRecordPage, type FreeSlotsRequest, type IntegrationSecrets, type IntegrationsAdapter } from './index';
import { exchangeAuthorizationCode, needsRefresh, oauthAuthorizationUrl, refreshAccessToken, type OAuthProviderConfig, type OAuthTokens } from './oauthClient';

/** The event id of a request id: 32 base32hex characters (RFC 4648 §7, the alphabet `events.insert` takes for `id`). */
export function googleEventId(requestId: string): string {
  const bytes = crypto.createHash('sha256').update(requestId).digest();
  const alphabet = '0123456789abcdefghijklmnopqrstuv';
  let out = '';
  for (let i = 0; i < 32; i++) out += alphabet[bytes[i] & 31];
  return out;
}

/** Secrets of a Google connection from a grant. */
function secretsOf(t: OAuthTokens, previous?: IntegrationSecrets): IntegrationSecrets {
  const s: IntegrationSecrets = { accessToken: t.accessToken };
  const refresh = t.refreshToken ?? previous?.refreshToken;
  if (refresh) s.refreshToken = refresh;
  if (t.expiresAtMs !== null) s.expiresAt = String(t.expiresAtMs);
  return s;
}

/** The adapter. */
export class GoogleCalendarIntegrations implements IntegrationsAdapter {
  readonly provider = 'google';
  /** No CRM operations (a calendar, or the sandbox's synced Records). */
  readonly crm = null;
  private readonly oauthConfig: OAuthProviderConfig;

  /** @param settings the OAuth client and base URLs; @param timeoutMs cap on one request, ms */
  constructor(
    private readonly settings: GoogleSettings,
    private readonly timeoutMs: number,
  ) {
    this.oauthConfig = {
      name: 'Google',
      authorizationEndpoint: settings.authorizationEndpoint,
      tokenEndpoint: settings.tokenEndpoint,
      clientId: settings.clientId,
      clientSecret: settings.clientSecret,
      scopes: [],
      // A refresh token is issued only for offline access, and again on a reconnect only with consent asked
      // (Google "Using OAuth 2.0 for Web Server Applications": access_type, prompt).
      authorizationParams: { access_type: 'offline', prompt: 'consent', include_granted_scopes: 'true' },
      timeoutMs,
    };
  }

  private api(secrets: IntegrationSecrets): calendar_v3.Calendar {
    const client = new auth.OAuth2(this.settings.clientId, this.settings.clientSecret);
    client.setCredentials({ access_token: secrets.accessToken });
    return calendar({ version: 'v3', auth: client, rootUrl: this.settings.apiRootUrl, timeout: this.timeoutMs, retry: false });
  }

  private failure(err: unknown, what: string): IntegrationProviderError {
    if (err instanceof IntegrationProviderError) return err;
    const e = err as { status?: number; response?: { status?: number }; message?: string; code?: string; name?: string };
    const status = e.status ?? e.response?.status;
    const text = `Google Calendar ${what}: ${status ? `HTTP ${status} ` : ''}${(e.message ?? String(err)).slice(0, 300)}`;
    if (status === 401 || status === 403) return new IntegrationProviderError('credentials_rejected', text);
    if (status === 404) return new IntegrationProviderError('not_found', text);
    if (status && status >= 400 && status < 500) return new IntegrationProviderError('refused', text);
    if (status) return new IntegrationProviderError('unavailable', text);
    if (/timeout|timed out|aborted/i.test(`${e.name} ${e.code} ${e.message}`)) return new IntegrationProviderError('timeout', `Google Calendar ${what}: no answer within ${this.timeoutMs} ms`);
    if (err instanceof SyntaxError) return new IntegrationProviderError('bad_answer', text);
    return new IntegrationProviderError('unavailable', text);
  }

  async validateCredentials(kind: IntegrationKind): Promise<ConnectedAccount> {
    throw new IntegrationProviderError('credentials_rejected', `${kind} connects through OAuth, not credentials`);
  }

  authorizationUrl(_kind: IntegrationKind, req: { redirectUri: string; state: string; scopes: string[]; codeChallenge: string | null }): string {
    return oauthAuthorizationUrl({ ...this.oauthConfig, scopes: req.scopes }, req);
  }

  async exchangeCode(_kind: IntegrationKind, req: { code: string; redirectUri: string; codeVerifier: string | null }): Promise<ConnectedAccount> {
    const t = await exchangeAuthorizationCode(this.oauthConfig, req);
    if (!t.refreshToken) throw new IntegrationProviderError('bad_answer', 'Google issued no refresh token (offline access was not granted); connect again');
    const secrets = secretsOf(t);
    // The account is the primary calendar's id: its owner's email.
    let label = 'Google account';
    try {
      const primary = await this.api(secrets).calendars.get({ calendarId: 'primary' });
      if (typeof primary.data.id === 'string') label = primary.data.id;
    } catch (err) {
      throw this.failure(err, 'calendars.get');
    }
    return { accountLabel: label, scopes: t.scopes, secrets };
  }

  async refreshSecrets(_kind: IntegrationKind, secrets: IntegrationSecrets, nowMs: number): Promise<IntegrationSecrets | null> {
    const expiresAt = secrets.expiresAt ? Number(secrets.expiresAt) : null;
    if (!needsRefresh(expiresAt, nowMs)) return null;
    if (!secrets.refreshToken) throw new IntegrationProviderError('invalid_grant', 'The connection holds no refresh token; connect again');
    return secretsOf(await refreshAccessToken(this.oauthConfig, secrets.refreshToken, nowMs), secrets);
  }

  async openSpreadsheet(): Promise<{ spreadsheetId: string; title: string }> {
    throw new IntegrationProviderError('not_found', 'Google Calendar holds no spreadsheets');
  }

  async listRecords(kind: IntegrationKind): Promise<ExternalRecordPage> {
    throw new IntegrationProviderError('not_found', `${kind} holds no records`);
  }

  async findFreeSlots(secrets: IntegrationSecrets, req: FreeSlotsRequest): Promise<Interval[]> {
    let busy: Interval[];
    try {
      const res = await this.api(secrets).freebusy.query({ requestBody: { timeMin: req.from, timeMax: req.to, timeZone: req.timeZone, items: [{ id: req.calendarId }] } });
      const cal = res.data.calendars?.[req.calendarId];
      if (!cal || typeof cal !== 'object') throw new IntegrationProviderError('bad_answer', `Google Calendar freebusy.query answered without the calendar ${req.calendarId}`);
      if (cal.errors?.length) throw new IntegrationProviderError(cal.errors[0].reason === 'notFound' ? 'not_found' : 'refused', `Google Calendar freebusy.query: ${cal.errors.map((e) => e.reason).join(', ')}`);
      if (!Array.isArray(cal.busy)) throw new IntegrationProviderError('bad_answer', 'Google Calendar freebusy.query answered without busy intervals');
      busy = cal.busy.map((b) => ({ start: String(b.start), end: String(b.end) }));
      if (busy.some((b) => Number.isNaN(Date.parse(b.start)) || Number.isNaN(Date.parse(b.end)))) throw new IntegrationProviderError('bad_answer', 'Google Calendar freebusy.query answered busy intervals without times');
    } catch (err) {
      throw this.failure(err, 'freebusy.query');
    }
    return freeSlots(Date.parse(req.from), Date.parse(req.to), req.timeZone, req.durationMinutes, req.open, busy, req.max);
  }

  async createCalendarEvent(secrets: IntegrationSecrets, req: CalendarEventRequest): Promise<CalendarEvent> {
    const api = this.api(secrets);
    let timeZone: string;
    try {
      const cal = await api.calendars.get({ calendarId: req.calendarId });
      if (typeof cal.data.timeZone !== 'string') throw new IntegrationProviderError('bad_answer', 'Google Calendar calendars.get answered without timeZone');
      timeZone = cal.data.timeZone;
    } catch (err) {
      throw this.failure(err, 'calendars.get');
    }
    const startMs = Date.parse(req.start);
    const endMs = startMs + req.durationMinutes * 60_000;
    const id = googleEventId(req.requestId);
    const caller = [req.attendee.name, req.attendee.phone].filter(Boolean).join(', ');
    const body: calendar_v3.Schema$Event = {
      id,
      summary: req.summary,
      description: [`Booked by phone/chat agent for ${caller || 'a caller'}.`, req.notes ? `Notes: ${req.notes}` : ''].filter(Boolean).join('\n'),
      start: { dateTime: localIso(startMs, timeZone), timeZone },
      end: { dateTime: localIso(endMs, timeZone), timeZone },
      ...(req.attendee.email ? { attendees: [{ email: req.attendee.email, ...(req.attendee.name ? { displayName: req.attendee.name } : {}) }] } : {}),
      extendedProperties: { private: { requestId: req.requestId } },
    };
    let event: calendar_v3.Schema$Event;
    try {
      event = (await api.events.insert({ calendarId: req.calendarId, requestBody: body, sendUpdates: req.attendee.email ? 'all' : 'none' })).data;
    } catch (err) {
      const status = (err as { status?: number; response?: { status?: number } }).status ?? (err as { response?: { status?: number } }).response?.status;
      if (status !== 409) throw this.failure(err, 'events.insert');
      // The id exists: an earlier attempt of this booking made it (the id is the request's).
      try {
        event = (await api.events.get({ calendarId: req.calendarId, eventId: id })).data;
      } catch (again) {
        throw this.failure(again, 'events.get');
      }
      if (event.extendedProperties?.private?.requestId !== req.requestId) throw new IntegrationProviderError('refused', 'Google Calendar already holds another event with this id');
    }
    return eventOf(event);
  }

  async findCalendarEvent(secrets: IntegrationSecrets, req: CalendarEventRequest): Promise<Lookup<CalendarEvent>> {
    let event: calendar_v3.Schema$Event;
    try {
      event = (await this.api(secrets).events.get({ calendarId: req.calendarId, eventId: googleEventId(req.requestId) })).data;
    } catch (err) {
      const status = (err as { status?: number; response?: { status?: number } }).status ?? (err as { response?: { status?: number } }).response?.status;
      if (status === 404 || status === 410) return { absent: true };
      throw this.failure(err, 'events.get');
    }
    if (event.extendedProperties?.private?.requestId !== req.requestId) return { cannotTell: 'Google Calendar holds another event with the id of this booking' };
    return { found: eventOf(event) };
  }
}

/** The booking of a Calendar event. @throws IntegrationProviderError `bad_answer` (no id, start or end), `refused` (cancelled) */
function eventOf(event: calendar_v3.Schema$Event): CalendarEvent {
  const start = event.start?.dateTime;
  const end = event.end?.dateTime;
  if (typeof event.id !== 'string' || typeof start !== 'string' || typeof end !== 'string' || Number.isNaN(Date.parse(start))) {
    throw new IntegrationProviderError('bad_answer', 'Google Calendar answered an event without id, start or end');
  }
  if (event.status === 'cancelled') throw new IntegrationProviderError('refused', 'Google Calendar answered a cancelled event');
  return { eventId: event.id, start: new Date(start).toISOString(), end: new Date(end).toISOString(), status: event.status === 'tentative' ? 'pending' : 'confirmed' };
}
