/**
 * The sandbox integrations adapter (docs/api-notes.md "Integrations and records" → magic values), the default. It
 * keeps no state: every answer is a function of its input, as a provider's test mode is.
 *
 * - Credentials: a HubSpot `accessToken` must start with `pat-`; `pat-invalid…` is refused (as an
 *   expired token); `pat-rows-<n>…` makes the CRM hold `n` contacts (default 5). The generic HTTP kind
 *   refuses an `authorization` of `invalid`.
 * - OAuth: the authorization URL is `https://sandbox.integrations.invalid/<kind>/authorize?…`; the
 *   sandbox "consent screen" ({@link sandboxConsent}) answers the redirect with the code
 *   `sbx.<code_challenge>` (or `sbx.none` without PKCE); the token exchange recomputes the S256
 *   challenge from the verifier and refuses a mismatch (`invalid_grant`), as RFC 7636 §4.6 requires.
 * - Spreadsheets: an id starting with `private` is not shared with the account (`not_found`); an id
 *   containing `rows-<n>` holds `n` rows (default 5). Row i (1-based) is `Customer i`,
 *   `+1415555` + i padded to 4 digits, `customer<i>@example.com`, plus a `plan` column.
 * - Cal.com: an `apiKey` must start with `cal_`; `cal_invalid…` is refused (as Cal.com's 401).
 * - Calendar (Google Calendar and Cal.com alike): every booking succeeds with an event id derived from the request id
 *   (a retried booking finds the same event), except a start time on a Sunday, which is refused (`unavailable`);
 *   the free slots are the opening hours' slots with nothing busy. OAuth tokens never expire.
 */
import crypto from 'node:crypto';
import type { IntegrationKind } from '../../domain/integrations/catalog';
import { pkceChallenge } from '../../domain/integrations/oauth';
import { oauthAuthorizationUrl } from './oauthClient';
import { freeSlots, type Interval } from '../../domain/booking/slots';
import type { Lookup } from '../lookup';
import { IntegrationProviderError, type CalendarEvent, type CalendarEventRequest, type ConnectedAccount, type ExternalRecordPage, type FreeSlotsRequest, type IntegrationSecrets, type IntegrationsAdapter } from './index';

const AUTHORIZE_BASE = 'https://sandbox.integrations.invalid';
const PAGE = 100;

function rowsIn(text: string, fallback = 5): number {
  const m = /rows-(\d{1,5})/.exec(text);
  return m ? Number(m[1]) : fallback;
}

function row(i: number, prefix: string): ExternalRecordPage['items'][number] {
  return {
    externalId: `${prefix}${i}`,
    name: `Customer ${i}`,
    phone: `+1415555${String(i).padStart(4, '0')}`,
    email: `customer${i}@example.com`,
    fields: { plan: i % 2 ? 'basic' : 'premium' },
  };
}

/** The sandbox adapter. */
export class SandboxIntegrations implements IntegrationsAdapter {
  readonly provider = 'sandbox';
  /** No CRM operations (a calendar, or the sandbox's synced Records). */
  readonly crm = null;

  async validateCredentials(kind: IntegrationKind, c: Record<string, string>): Promise<ConnectedAccount> {
    if (kind === 'hubspot') {
      const token = c.accessToken ?? '';
      if (!token.startsWith('pat-') || token.startsWith('pat-invalid')) throw new IntegrationProviderError('credentials_rejected', 'HubSpot answered 401: the access token is invalid or expired');
      return { accountLabel: 'Sandbox HubSpot portal 12345', scopes: ['crm.objects.contacts.read'], secrets: { accessToken: token } };
    }
    if (kind === 'calcom') {
      const key = c.apiKey ?? '';
      if (!key.startsWith('cal_') || key.startsWith('cal_invalid')) throw new IntegrationProviderError('credentials_rejected', 'Cal.com answered 401: the API key is invalid');
      return { accountLabel: 'owner@sandbox.example.com', scopes: [], secrets: { apiKey: key } };
    }
    if (kind === 'http') {
      if (c.authorization === 'invalid') throw new IntegrationProviderError('credentials_rejected', 'The API answered 401 to the configured Authorization header');
      const secrets: IntegrationSecrets = { baseUrl: c.baseUrl };
      if (c.authorization) secrets.authorization = c.authorization;
      return { accountLabel: new URL(c.baseUrl).host, scopes: [], secrets };
    }
    throw new IntegrationProviderError('credentials_rejected', `${kind} connects through OAuth, not credentials`);
  }

  authorizationUrl(kind: IntegrationKind, req: { redirectUri: string; state: string; scopes: string[]; codeChallenge: string | null }): string {
    return oauthAuthorizationUrl({ authorizationEndpoint: `${AUTHORIZE_BASE}/${kind}/authorize`, clientId: `sandbox-${kind}`, scopes: req.scopes }, req);
  }

  async exchangeCode(kind: IntegrationKind, req: { code: string; redirectUri: string; codeVerifier: string | null }): Promise<ConnectedAccount> {
    if (!req.code.startsWith('sbx.')) throw new IntegrationProviderError('invalid_grant', 'The authorization code is not valid');
    const challenge = req.code.slice(4);
    const expected = req.codeVerifier ? pkceChallenge(req.codeVerifier) : 'none';
    if (challenge !== expected) throw new IntegrationProviderError('invalid_grant', 'The code_verifier does not match the code_challenge (RFC 7636 §4.6)');
    const token = crypto.createHash('sha256').update(`${kind}:${req.code}`).digest('base64url');
    return {
      accountLabel: 'owner@sandbox.example.com',
      scopes: kind === 'google_calendar' ? ['https://www.googleapis.com/auth/calendar.events'] : ['https://www.googleapis.com/auth/spreadsheets.readonly'],
      secrets: { accessToken: `ya29.sbx-${token}`, refreshToken: `1//sbx-${token}` },
    };
  }

  async openSpreadsheet(_secrets: IntegrationSecrets, spreadsheetId: string): Promise<{ spreadsheetId: string; title: string }> {
    if (spreadsheetId.startsWith('private')) throw new IntegrationProviderError('not_found', 'Requested entity was not found (the sheet is not shared with the connected account)');
    return { spreadsheetId, title: `Sandbox sheet ${spreadsheetId.slice(0, 8)}` };
  }

  async listRecords(kind: IntegrationKind, secrets: IntegrationSecrets, source: { spreadsheetId?: string }, cursor: string | null): Promise<ExternalRecordPage> {
    let total: number;
    let prefix: string;
    if (kind === 'google_sheets') {
      if (!source.spreadsheetId) throw new IntegrationProviderError('not_found', 'No spreadsheet is provisioned for this connection');
      await this.openSpreadsheet(secrets, source.spreadsheetId);
      total = rowsIn(source.spreadsheetId);
      prefix = 'row-';
    } else if (kind === 'hubspot') {
      total = rowsIn(secrets.accessToken ?? '');
      prefix = 'contact-';
    } else {
      throw new IntegrationProviderError('not_found', `${kind} holds no records`);
    }
    const start = cursor ? Number(cursor) : 0;
    const end = Math.min(total, start + PAGE);
    const items = [];
    for (let i = start + 1; i <= end; i++) items.push(row(i, prefix));
    return { items, nextCursor: end < total ? String(end) : null, total };
  }

  async createCalendarEvent(_secrets: IntegrationSecrets, req: CalendarEventRequest): Promise<CalendarEvent> {
    const start = new Date(req.start);
    if (start.getUTCDay() === 0) throw new IntegrationProviderError('unavailable', 'The calendar is closed on Sundays');
    return sandboxEvent(req);
  }

  /** The sandbox keeps no events: a booking it would accept is found (its id is derived from the request), a Sunday is absent. */
  async findCalendarEvent(_secrets: IntegrationSecrets, req: CalendarEventRequest): Promise<Lookup<CalendarEvent>> {
    return new Date(req.start).getUTCDay() === 0 ? { absent: true } : { found: sandboxEvent(req) };
  }

  async findFreeSlots(_secrets: IntegrationSecrets, req: FreeSlotsRequest): Promise<Interval[]> {
    return freeSlots(Date.parse(req.from), Date.parse(req.to), req.timeZone, req.durationMinutes, req.open, [], req.max);
  }

  async refreshSecrets(): Promise<IntegrationSecrets | null> {
    return null;
  }
}

/**
 * What the sandbox consent screen does with an authorization URL: the callback URL the browser is sent
 * to, with `code` and `state` (or `error=access_denied` when `deny`). Tests use it (docs/api-notes.md "Integrations and records").
 */
export function sandboxConsent(authorizationUrl: string, opts: { deny?: boolean } = {}): string {
  const u = new URL(authorizationUrl);
  const back = new URL(u.searchParams.get('redirect_uri')!);
  back.searchParams.set('state', u.searchParams.get('state') ?? '');
  if (opts.deny) back.searchParams.set('error', 'access_denied');
  else back.searchParams.set('code', `sbx.${u.searchParams.get('code_challenge') ?? 'none'}`);
  return back.toString();
}

/** The sandbox's event of a booking request: its id derived from the calendar and request id. */
function sandboxEvent(req: CalendarEventRequest): CalendarEvent {
  const start = new Date(req.start);
  const eventId = `evt_${crypto.createHash('sha256').update(`${req.calendarId}:${req.requestId}`).digest('hex').slice(0, 20)}`;
  return { eventId, start: start.toISOString(), end: new Date(start.getTime() + req.durationMinutes * 60_000).toISOString(), status: 'confirmed' };
}
