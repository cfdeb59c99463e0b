/**
 * The HubSpot CRM adapter on the official `@hubspot/api-client` (docs/going-live.md "HubSpot"; HubSpot CRM API v3:
 * contacts search `POST /crm/v3/objects/contacts/search`, batch upsert `POST /crm/v3/objects/contacts/batch/upsert`
 * by `email`, create `POST /crm/v3/objects/contacts`, notes `POST /crm/v3/objects/notes` associated with the
 * contact by the HUBSPOT_DEFINED note-to-contact association type 202, notes search for the look-up). It implements
 * the integrations adapter interface (./index.ts) with its CRM operations (`crm`), like the calendar adapters.
 *
 * A connection holds a private app's `pat-…` token (credentials), or OAuth tokens from HubSpot's authorization-code
 * grant with PKCE (HubSpot "OAuth": authorize at `app.hubspot.com/oauth/authorize`, tokens from
 * `POST /oauth/v1/token` as a form post with the client id and secret in the body) through the generic client of
 * ./oauthClient.ts; the access token is refreshed a minute before it expires, and HubSpot's refusal of a refresh
 * token (400 `BAD_REFRESH_TOKEN`) is `invalid_grant`. The client's own retries are off (activities retry).
 * Errors: 401/403 → `credentials_rejected`, 404 → `not_found`, other 4xx → `refused`, 429/5xx/network →
 * `unavailable`, no answer within HUBSPOT_TIMEOUT_MS → `timeout`.
 */
import { Client } from '@hubspot/api-client';
import type { Lookup } from '../lookup';
import type { IntegrationKind } from '../../domain/integrations/catalog';
import { loadHubSpotSettings, type HubSpotSettings } from '../../domain/integrations/settings';
import type { Interval } from '../../domain/booking/slots';
import {
  IntegrationProviderError,
  type CalendarEvent,
  type ConnectedAccount,
  type ContactQuery,
  type CrmOperations,
  type ExternalRecord,
  type ExternalRecordPage,
  type IntegrationSecrets,
  type IntegrationsAdapter,
} from './index';
import { exchangeAuthorizationCode, needsRefresh, oauthAuthorizationUrl, refreshAccessToken, type OAuthProviderConfig, type OAuthTokens } from './oauthClient';

export { loadHubSpotSettings, type HubSpotSettings, type ContactQuery };

/** HubSpot's token-endpoint answers (`status`) that mean the code or refresh token is invalid, expired or revoked. */
export const HUBSPOT_GRANT_REFUSALS = ['BAD_REFRESH_TOKEN', 'BAD_AUTH_CODE', 'BAD_GRANT_TYPE'];

/** HubSpot's token-endpoint answers (`status`) that mean this deployment's client id or secret is wrong. */
export const HUBSPOT_CLIENT_REFUSALS = ['BAD_CLIENT_ID', 'BAD_CLIENT_SECRET'];

/** Secrets of an OAuth connection from a grant (the refresh token kept when a refresh issued none). */
function oauthSecrets(t: OAuthTokens, previous?: IntegrationSecrets): IntegrationSecrets {
  const s: IntegrationSecrets = { accessToken: t.accessToken };
  const refresh = t.refreshToken ?? previous?.refreshToken;
  if (refresh) s.refreshToken = refresh;
  if (t.expiresAtMs !== null) s.expiresAt = String(t.expiresAtMs);
  return s;
}

/** The properties read from a contact. */
export const CONTACT_PROPERTIES = ['firstname', 'lastname', 'email', 'phone', 'mobilephone', 'company', 'lifecyclestage'];

/** HubSpot's association type id of a note to a contact (HUBSPOT_DEFINED). */
export const NOTE_TO_CONTACT = 202;

/** A HubSpot failure as an IntegrationProviderError. */
function providerError(err: unknown, what: string): IntegrationProviderError {
  const status = typeof (err as { code?: unknown })?.code === 'number' ? (err as { code: number }).code : null;
  const body = (err as { body?: { message?: string; category?: string } })?.body;
  const detail = body?.message ? `: ${String(body.message).slice(0, 200)}` : '';
  if (status === 401 || status === 403) return new IntegrationProviderError('credentials_rejected', `HubSpot answered ${status} to ${what}${detail}`);
  if (status === 404) return new IntegrationProviderError('not_found', `HubSpot answered 404 to ${what}${detail}`);
  if (status !== null && status >= 400 && status < 500 && status !== 429) return new IntegrationProviderError('refused', `HubSpot refused ${what} (${status})${detail}`);
  if (status !== null) return new IntegrationProviderError('unavailable', `HubSpot answered ${status} to ${what}${detail}`);
  return new IntegrationProviderError('unavailable', `HubSpot could not be reached for ${what}: ${err instanceof Error ? err.message : String(err)}`);
}

/** A HubSpot contact as an outside record. */
function contactRecord(c: { id: string; properties: Record<string, string | null | undefined> }): ExternalRecord {
  const p = c.properties ?? {};
  const name = [p.firstname, p.lastname].filter((x) => x && x.trim()).join(' ') || null;
  const fields: Record<string, string> = {};
  for (const k of ['company', 'lifecyclestage']) if (p[k]) fields[k] = String(p[k]);
  return { externalId: c.id, name, phone: p.phone || p.mobilephone || null, email: p.email || null, fields };
}

/** The HubSpot CRM adapter. */
export class HubSpotCrm implements IntegrationsAdapter, CrmOperations {
  readonly provider = 'hubspot';
  readonly crm: CrmOperations = this;

  constructor(private readonly settings: HubSpotSettings = loadHubSpotSettings()) {}

  /** HubSpot's OAuth app as the generic client's provider data. @throws IntegrationProviderError `credentials_rejected` when no OAuth app is configured */
  private oauthConfig(scopes: string[] = []): OAuthProviderConfig {
    const o = this.settings.oauth;
    if (!o) throw new IntegrationProviderError('credentials_rejected', 'HubSpot OAuth needs HUBSPOT_OAUTH_CLIENT_ID and HUBSPOT_OAUTH_CLIENT_SECRET (docs/going-live.md "HubSpot")');
    return {
      name: 'HubSpot',
      authorizationEndpoint: o.authorizationEndpoint,
      tokenEndpoint: o.tokenEndpoint,
      clientId: o.clientId,
      clientSecret: o.clientSecret,
      scopes,
      clientAuth: 'post',
      grantRefusals: HUBSPOT_GRANT_REFUSALS,
      clientRefusals: HUBSPOT_CLIENT_REFUSALS,
      timeoutMs: this.settings.timeoutMs,
    };
  }

  /** A private app's token, checked by one contacts read. @throws IntegrationProviderError `credentials_rejected` */
  async validateCredentials(_kind: IntegrationKind, credentials: Record<string, string>): Promise<ConnectedAccount> {
    const token = credentials.accessToken ?? '';
    return { accountLabel: await this.validateToken(token), scopes: ['crm.objects.contacts.read', 'crm.objects.contacts.write'], secrets: { accessToken: token } };
  }

  /** HubSpot's authorization URL (RFC 6749 §4.1.1, PKCE S256). @throws IntegrationProviderError when no OAuth app is configured */
  authorizationUrl(_kind: IntegrationKind, req: { redirectUri: string; state: string; scopes: string[]; codeChallenge: string | null }): string {
    return oauthAuthorizationUrl(this.oauthConfig(req.scopes), req);
  }

  /**
   * Exchanges the code with the PKCE verifier at `/oauth/v1/token`, then checks the access token by one contacts read.
   * @throws IntegrationProviderError `invalid_grant` (a bad or used code), `bad_answer` (no refresh token), …
   */
  async exchangeCode(_kind: IntegrationKind, req: { code: string; redirectUri: string; codeVerifier: string | null }): Promise<ConnectedAccount> {
    const t = await exchangeAuthorizationCode(this.oauthConfig(), req);
    if (!t.refreshToken) throw new IntegrationProviderError('bad_answer', 'HubSpot issued no refresh token; connect again');
    await this.call('the token check', () => this.client(t.accessToken).crm.contacts.basicApi.getPage(1, undefined, ['email']));
    return { accountLabel: 'HubSpot portal (OAuth)', scopes: t.scopes, secrets: oauthSecrets(t) };
  }

  /**
   * Fresh OAuth tokens when the access token expires within a minute; null for a private app's token (no expiry).
   * @throws IntegrationProviderError `invalid_grant` when HubSpot refuses the refresh token (revoked, uninstalled)
   */
  async refreshSecrets(_kind: IntegrationKind, secrets: IntegrationSecrets, nowMs: number): Promise<IntegrationSecrets | null> {
    const expiresAt = secrets.expiresAt ? Number(secrets.expiresAt) : null;
    if (!secrets.refreshToken || !needsRefresh(expiresAt, nowMs)) return null;
    return oauthSecrets(await refreshAccessToken(this.oauthConfig(), secrets.refreshToken, nowMs), secrets);
  }

  /** HubSpot serves no spreadsheets. @throws IntegrationProviderError `refused` */
  async openSpreadsheet(): Promise<{ spreadsheetId: string; title: string }> {
    throw new IntegrationProviderError('refused', 'HubSpot serves no spreadsheets');
  }

  /** The records sync: one page of contacts ({@link listContacts}). @throws IntegrationProviderError */
  async listRecords(_kind: IntegrationKind, secrets: IntegrationSecrets, _source: { spreadsheetId?: string }, cursor: string | null): Promise<ExternalRecordPage> {
    return this.listContacts(secrets.accessToken ?? '', cursor);
  }

  /** HubSpot is no calendar. @throws IntegrationProviderError `refused` */
  async createCalendarEvent(): Promise<CalendarEvent> {
    throw new IntegrationProviderError('refused', 'HubSpot is not a calendar: book with google_calendar or calcom');
  }

  async findCalendarEvent(): Promise<Lookup<CalendarEvent>> {
    throw new IntegrationProviderError('refused', 'HubSpot is not a calendar: book with google_calendar or calcom');
  }

  /** HubSpot is no calendar. @throws IntegrationProviderError `refused` */
  async findFreeSlots(): Promise<Interval[]> {
    throw new IntegrationProviderError('refused', 'HubSpot is not a calendar: check availability with google_calendar or calcom');
  }

  private client(accessToken: string): Client {
    return new Client({ accessToken, numberOfApiCallRetries: 0, ...(this.settings.apiBase ? { basePath: this.settings.apiBase } : {}) });
  }

  /** Runs one call with the timeout, mapping its failure. */
  private async call<T>(what: string, run: () => Promise<T>): Promise<T> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new IntegrationProviderError('timeout', `HubSpot did not answer ${what} within ${this.settings.timeoutMs} ms`)), this.settings.timeoutMs);
    });
    try {
      return await Promise.race([run(), timeout]);
    } catch (err) {
      throw err instanceof IntegrationProviderError ? err : providerError(err, what);
    } finally {
      clearTimeout(timer);
    }
  }

  /** Checks a token by reading one contact. @returns the account label @throws IntegrationProviderError `credentials_rejected` */
  async validateToken(accessToken: string): Promise<string> {
    await this.call('the token check', () => this.client(accessToken).crm.contacts.basicApi.getPage(1, undefined, ['email']));
    return 'HubSpot portal (private app token)';
  }

  /**
   * One page of contacts (`GET /crm/v3/objects/contacts`, 100 per page, HubSpot's `after` cursor): the records sync.
   * @throws IntegrationProviderError
   */
  async listContacts(accessToken: string, cursor: string | null): Promise<ExternalRecordPage> {
    const res = await this.call('the contacts page', () => this.client(accessToken).crm.contacts.basicApi.getPage(100, cursor ?? undefined, CONTACT_PROPERTIES));
    return { items: res.results.map(contactRecord), nextCursor: res.paging?.next?.after ?? null, total: null };
  }

  /**
   * Contacts matching a phone (either phone property, exact), an e-mail (exact) or a text query, at most `limit`.
   * @throws IntegrationProviderError
   */
  async searchContacts(accessToken: string, by: ContactQuery, limit: number): Promise<ExternalRecord[]> {
    const filterGroups =
      'phone' in by
        ? ['phone', 'mobilephone'].map((propertyName) => ({ filters: [{ propertyName, operator: 'EQ' as never, value: by.phone }] }))
        : 'email' in by
          ? [{ filters: [{ propertyName: 'email', operator: 'EQ' as never, value: by.email }] }]
          : [];
    const res = await this.call('the contact search', () =>
      this.client(accessToken).crm.contacts.searchApi.doSearch({ filterGroups, ...('query' in by ? { query: by.query } : {}), properties: CONTACT_PROPERTIES, limit, sorts: [] }),
    );
    return res.results.map(contactRecord);
  }

  /**
   * The contact of an e-mail or phone, created when absent: by e-mail through the batch upsert (`idProperty:
   * email`, which creates or updates atomically); by phone only, the contact the search finds, else a new one.
   * @returns the contact's id @throws IntegrationProviderError
   */
  async upsertContact(accessToken: string, c: { email: string | null; phone: string | null; firstname?: string | null; lastname?: string | null }): Promise<string> {
    const properties: Record<string, string> = {};
    if (c.email) properties.email = c.email;
    if (c.phone) properties.phone = c.phone;
    if (c.firstname) properties.firstname = c.firstname;
    if (c.lastname) properties.lastname = c.lastname;
    if (c.email) {
      const email = c.email;
      const res = await this.call('the contact upsert', () => this.client(accessToken).crm.contacts.batchApi.upsert({ inputs: [{ id: email, idProperty: 'email', properties }] }));
      if (!res.results[0]) throw new IntegrationProviderError('unavailable', 'HubSpot answered the contact upsert without a result');
      return res.results[0].id;
    }
    if (!c.phone) throw new IntegrationProviderError('refused', 'A contact needs an e-mail or a phone');
    const found = await this.searchContacts(accessToken, { phone: c.phone }, 1);
    if (found[0]) return found[0].externalId;
    const created = await this.call('the contact create', () => this.client(accessToken).crm.contacts.basicApi.create({ properties, associations: [] }));
    return created.id;
  }

  /**
   * A note on a contact (`hs_note_body`, `hs_timestamp`). The body carries `reference` so {@link findNote} finds it.
   * @returns the note's id @throws IntegrationProviderError
   */
  async createNote(accessToken: string, n: { contactId: string; body: string; timestamp: string; reference: string }): Promise<string> {
    const res = await this.call('the note create', () =>
      this.client(accessToken).crm.objects.notes.basicApi.create({
        properties: { hs_note_body: `${n.body}\n\nReference: ${n.reference}`, hs_timestamp: n.timestamp },
        associations: [{ to: { id: n.contactId }, types: [{ associationCategory: 'HUBSPOT_DEFINED' as never, associationTypeId: NOTE_TO_CONTACT }] }],
      }),
    );
    return res.id;
  }

  /**
   * The note whose body carries `reference` (the look-up of services/effects.ts `performOnce`). HubSpot's search
   * index lags writes by a few seconds, so a note not found is proof of absence only once the intent is older
   * than `settledAfterMs`; before that the look-up fails and the activity asks again later.
   * @throws IntegrationProviderError `unavailable` while the search cannot yet tell
   */
  async findNote(accessToken: string, reference: string, intentCreatedAt: string, settledAfterMs = 120_000): Promise<Lookup<{ noteId: string }>> {
    const res = await this.call('the note search', () =>
      this.client(accessToken).crm.objects.notes.searchApi.doSearch({ filterGroups: [{ filters: [{ propertyName: 'hs_note_body', operator: 'CONTAINS_TOKEN' as never, value: reference }] }], properties: ['hs_note_body'], limit: 1, sorts: [] }),
    );
    if (res.results[0]) return { found: { noteId: res.results[0].id } };
    if (Date.now() - Date.parse(intentCreatedAt) < settledAfterMs) throw new IntegrationProviderError('unavailable', "HubSpot's search does not show the note yet; asking again later");
    return { absent: true };
  }
}
