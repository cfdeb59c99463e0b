/**
 * The HubSpot CRM adapter on the official `@hubspot/api-client` (docs/going-live.md "HubSpot"; HubSpot CRM API v3:
 * contacts search `POST /crm/v3/objects/contacts/search`, batch upsert `POST /crm/v3/objects/contacts/batch/upsert`
 * by `email`, create `POST /crm/v3/objects/contacts`, notes `POST /crm/v3/objects/notes` associated with the
 * contact by the HUBSPOT_DEFINED note-to-contact association type 202, notes search for the look-up).
 *
 * Every call takes the access token (a private app's `pat-…` token, or an OAuth access token): the caller gets it
 * from the connection (services/integrations/crm.ts `hubspotAccessToken`). The client's own retries are off
 * (activities retry); a call that takes longer than HUBSPOT_TIMEOUT_MS is `unavailable`. Errors: 401/403 →
 * `credentials_rejected`, 404 → `not_found`, other 4xx → `rejected`, 429/5xx/timeout/network → `unavailable`.
 */
import { Client } from '@hubspot/api-client';
import type { Lookup } from '../lookup';
import { IntegrationProviderError, type ExternalRecord, type ExternalRecordPage } from './index';

/** HubSpot's settings (docs/configuration.md). */
export interface HubSpotSettings {
  /** HUBSPOT_API_BASE: another origin for the API (a loopback stub in tests); default `https://api.hubapi.com`. */
  apiBase: string | null;
  /** HUBSPOT_TIMEOUT_MS: a call's timeout, ms (default 10,000). */
  timeoutMs: number;
}

/** The properties read from a contact. */
export const CONTACT_PROPERTIES = ['firstname', 'lastname', 'email', 'phone', 'mobilephone', 'company', 'lifecyclestage'];

/** HubSpot's association type id of a note to a contact (HUBSPOT_DEFINED). */
export const NOTE_TO_CONTACT = 202;

/** Reads the HubSpot settings. @throws Error naming HUBSPOT_API_BASE or HUBSPOT_TIMEOUT_MS when malformed */
export function loadHubSpotSettings(env: NodeJS.ProcessEnv = process.env): HubSpotSettings {
  const apiBase = env.HUBSPOT_API_BASE || null;
  if (apiBase && !/^https?:\/\/[^/]+\/?$/.test(apiBase)) throw new Error('HUBSPOT_API_BASE must be an origin, e.g. http://127.0.0.1:12112');
  const timeoutMs = env.HUBSPOT_TIMEOUT_MS ? Number(env.HUBSPOT_TIMEOUT_MS) : 10_000;
  if (!Number.isInteger(timeoutMs) || timeoutMs < 100 || timeoutMs > 120_000) throw new Error('HUBSPOT_TIMEOUT_MS must be an integer from 100 to 120000');
  return { apiBase: apiBase?.replace(/\/$/, '') ?? null, timeoutMs };
}

/** A HubSpot failure as an IntegrationProviderError. */
function providerError(err: unknown, what: string): IntegrationProviderError {
  const status = typeof (err as { code?: unknown })?.code === 'number' ? (err as { code: number }).code : null;
  const body = (err as { body?: { message?: string; category?: string } })?.body;
  const detail = body?.message ? `: ${String(body.message).slice(0, 200)}` : '';
  if (status === 401 || status === 403) return new IntegrationProviderError('credentials_rejected', `HubSpot answered ${status} to ${what}${detail}`);
  if (status === 404) return new IntegrationProviderError('not_found', `HubSpot answered 404 to ${what}${detail}`);
  if (status !== null && status >= 400 && status < 500 && status !== 429) return new IntegrationProviderError('rejected', `HubSpot refused ${what} (${status})${detail}`);
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

/** What to search contacts by: an E.164 phone (`phone` or `mobilephone`), an e-mail, or HubSpot's text query. */
export type ContactQuery = { phone: string } | { email: string } | { query: string };

/** The HubSpot CRM adapter. */
export class HubSpotCrm {
  readonly provider = 'hubspot';

  constructor(private readonly settings: HubSpotSettings = loadHubSpotSettings()) {}

  private client(accessToken: string): Client {
    return new Client({ accessToken, numberOfApiCallRetries: 0, ...(this.settings.apiBase ? { basePath: this.settings.apiBase } : {}) });
  }

  /** Runs one call with the timeout, mapping its failure. */
  private async call<T>(what: string, run: () => Promise<T>): Promise<T> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new IntegrationProviderError('unavailable', `HubSpot did not answer ${what} within ${this.settings.timeoutMs} ms`)), this.settings.timeoutMs);
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
    if (!c.phone) throw new IntegrationProviderError('rejected', 'A contact needs an e-mail or a phone');
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
