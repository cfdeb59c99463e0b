/**
 * The integration providers' interface (DESIGN.md "Providers": one per integration kind — calendar,
 * spreadsheet, CRM, generic HTTP; docs/api-notes.md "Integrations and records"). The adapter is chosen per
 * connection: a connection records the provider that made it (`sandbox`, `google`, `calcom`, `hubspot`), and new connections
 * of a kind use its real adapter only when INTEGRATIONS_LIVE lists the kind (docs/going-live.md). The sandbox is the
 * default; it answers like the real APIs, with outcomes chosen by documented magic values (./sandbox.ts).
 */
import type { IntegrationKind } from '../../domain/integrations/catalog';
import { loadIntegrationSettings } from '../../domain/integrations/settings';
import type { Interval, OpenHours } from '../../domain/booking/slots';
import { SandboxIntegrations } from './sandbox';
import { GoogleCalendarIntegrations } from './googleCalendar';
import { CalcomIntegrations } from './calcom';
import { HubSpotCrm } from './hubspot';
import type { Lookup } from '../lookup';

/** What a connection holds at the provider: stored only sealed (docs/security.md). */
export type IntegrationSecrets = Record<string, string>;

/** What a connect establishes: the account it reached and the scopes granted. */
export interface ConnectedAccount {
  /** Human label of the account (an email, a portal name, a host); never a secret. */
  accountLabel: string;
  scopes: string[];
  /** Tokens or credentials to store sealed. */
  secrets: IntegrationSecrets;
}

/** A record as an outside system holds it (spreadsheet row, CRM contact). */
export interface ExternalRecord {
  /** The provider's stable id of the row/contact. */
  externalId: string;
  name: string | null;
  phone: string | null;
  email: string | null;
  fields: Record<string, string>;
}

/** One page of outside records. */
export interface ExternalRecordPage {
  items: ExternalRecord[];
  /** null: this was the last page. */
  nextCursor: string | null;
  /** Total rows at the provider, when it says (progress). */
  total: number | null;
}

/**
 * A provider refused or failed a request; `code` is stable: `credentials_rejected` (401/403, `invalid_client`),
 * `invalid_grant` (RFC 6749 §5.2: the OAuth grant is revoked or expired), `not_found`, `refused` (another 4xx, e.g.
 * the slot is taken), `unavailable` (429, a 5xx or a connection failure), `timeout`, `bad_answer` (an answer off the
 * provider's documented shape). Only `unavailable` and `timeout` are worth retrying ({@link retryableProviderError}).
 */
export class IntegrationProviderError extends Error {
  constructor(
    readonly code: 'credentials_rejected' | 'invalid_grant' | 'not_found' | 'refused' | 'unavailable' | 'timeout' | 'bad_answer',
    message: string,
  ) {
    super(message);
    this.name = 'IntegrationProviderError';
  }
}

/** Whether a provider failure may pass when asked again (`unavailable`, `timeout`); the others are answers. */
export function retryableProviderError(err: IntegrationProviderError): boolean {
  return err.code === 'unavailable' || err.code === 'timeout';
}

/** What to search a CRM's contacts by: an E.164 phone, an e-mail, or the CRM's text query. */
export type ContactQuery = { phone: string } | { email: string } | { query: string };

/**
 * The CRM operations of an adapter on a CRM's live API (HubSpot: ./hubspot.ts): run-time contact search for
 * `lookup_record` and the conversation note written back after a conversation (services/integrations/crm.ts).
 * Every call takes the connection's bearer access token (a private app's token, or an OAuth access token refreshed
 * before expiry by services/integrations/connections.ts `connectionSecrets`).
 */
export interface CrmOperations {
  /** Contacts matching a phone (exact), an e-mail (exact) or a text query, at most `limit`. @throws IntegrationProviderError */
  searchContacts(accessToken: string, by: ContactQuery, limit: number): Promise<ExternalRecord[]>;
  /** The contact of an e-mail or phone, created when absent. @returns its id @throws IntegrationProviderError */
  upsertContact(accessToken: string, c: { email: string | null; phone: string | null; firstname?: string | null; lastname?: string | null }): Promise<string>;
  /** A note on a contact carrying `reference`. @returns the note's id @throws IntegrationProviderError */
  createNote(accessToken: string, n: { contactId: string; body: string; timestamp: string; reference: string }): Promise<string>;
  /** The note carrying `reference` (the look-up of services/effects.ts `performOnce`). @throws IntegrationProviderError */
  findNote(accessToken: string, reference: string, intentCreatedAt: string): Promise<Lookup<{ noteId: string }>>;
}

/**
 * An integrations adapter: one object serving every kind of its provider. Calendar adapters (Google Calendar,
 * Cal.com) and CRM adapters (HubSpot) implement the same interface; an operation a provider does not offer
 * fails with `refused`.
 */
export interface IntegrationsAdapter {
  readonly provider: string;
  /** Validates credentials by one authenticated read at the provider. @throws IntegrationProviderError `credentials_rejected` */
  validateCredentials(kind: IntegrationKind, credentials: Record<string, string>): Promise<ConnectedAccount>;
  /** The provider's authorization URL (RFC 6749 §4.1.1) with state and, when given, the S256 challenge. */
  authorizationUrl(kind: IntegrationKind, req: { redirectUri: string; state: string; scopes: string[]; codeChallenge: string | null }): string;
  /** Exchanges an authorization code (RFC 6749 §4.1.3, with the PKCE verifier). @throws IntegrationProviderError `invalid_grant` */
  exchangeCode(kind: IntegrationKind, req: { code: string; redirectUri: string; codeVerifier: string | null }): Promise<ConnectedAccount>;
  /** The spreadsheet's title when the connected account can read it. @throws IntegrationProviderError `not_found` (wrong link or not shared) */
  openSpreadsheet(secrets: IntegrationSecrets, spreadsheetId: string): Promise<{ spreadsheetId: string; title: string }>;
  /** One page of records from a spreadsheet (`source.spreadsheetId`) or a CRM. @throws IntegrationProviderError */
  listRecords(kind: IntegrationKind, secrets: IntegrationSecrets, source: { spreadsheetId?: string }, cursor: string | null): Promise<ExternalRecordPage>;
  /**
   * Books an event on the connected calendar (Google Calendar: `calendarId`; Cal.com: `eventTypeId`). `requestId`
   * (the conversation and tool call) makes a retried booking find the event it made instead of making another.
   * @throws IntegrationProviderError
   */
  createCalendarEvent(secrets: IntegrationSecrets, req: CalendarEventRequest): Promise<CalendarEvent>;
  /**
   * The event an earlier `createCalendarEvent` of `req.requestId` made, read without writing (the look-up of
   * services/effects.ts `performOnce`): found, absent, or the provider cannot tell. @throws IntegrationProviderError
   */
  findCalendarEvent(secrets: IntegrationSecrets, req: CalendarEventRequest): Promise<Lookup<CalendarEvent>>;
  /**
   * Free slots of `durationMinutes` in [`from`, `to`) (Google Calendar: free/busy inside `open`; Cal.com: the event
   * type's own slots), at most `max`, earliest first, as UTC instants. @throws IntegrationProviderError
   */
  findFreeSlots(secrets: IntegrationSecrets, req: FreeSlotsRequest): Promise<Interval[]>;
  /**
   * The secrets with a fresh access token when the stored one expires within a minute (OAuth kinds), else null.
   * @throws IntegrationProviderError `invalid_grant` when the grant was revoked
   */
  refreshSecrets(kind: IntegrationKind, secrets: IntegrationSecrets, nowMs: number): Promise<IntegrationSecrets | null>;
  /** The CRM operations when this adapter serves a CRM on its live API (`lookup_record` at run time, note write-back); else null. */
  readonly crm: CrmOperations | null;
}

/** What a booking on a connected calendar asks for. */
export interface CalendarEventRequest {
  calendarId: string;
  /** Cal.com event type (required there); null elsewhere. */
  eventTypeId: number | null;
  /** ISO 8601 instant. */
  start: string;
  durationMinutes: number;
  /** IANA time zone of the skill (the person's). */
  timeZone: string;
  summary: string;
  attendee: { name: string | null; phone: string | null; email: string | null };
  notes: string | null;
  requestId: string;
}

/** A booked event as the calendar answers it: ids, ISO 8601 instants, and whether it is confirmed or awaits the host. */
export interface CalendarEvent {
  eventId: string;
  start: string;
  end: string;
  status: 'confirmed' | 'pending';
}

/** What a free-slot search asks for. */
export interface FreeSlotsRequest {
  calendarId: string;
  eventTypeId: number | null;
  /** ISO 8601 instants. */
  from: string;
  to: string;
  durationMinutes: number;
  timeZone: string;
  open: OpenHours;
  max: number;
}

/** The providers a connection may record. */
export type IntegrationProviderName = 'sandbox' | 'google' | 'calcom' | 'hubspot';

let sandbox: SandboxIntegrations | undefined;

/**
 * The adapter of `provider` (default `sandbox`). Real adapters are built from the settings of the call (base URLs,
 * OAuth client; cheap: they hold no connection pool of their own), so a changed environment applies at once.
 * @throws Error for an unknown provider, or a real one whose settings are missing (a Google connection without GOOGLE_OAUTH_CLIENT_ID)
 */
export function integrationsAdapter(env: NodeJS.ProcessEnv = process.env, provider: string = 'sandbox'): IntegrationsAdapter {
  const settings = loadIntegrationSettings(env);
  if (provider === 'sandbox') return (sandbox ??= new SandboxIntegrations());
  if (provider === 'google') {
    if (!settings.google) throw new Error('Google Calendar connections need GOOGLE_OAUTH_CLIENT_ID and GOOGLE_OAUTH_CLIENT_SECRET (docs/going-live.md "Google Calendar")');
    return new GoogleCalendarIntegrations(settings.google, settings.timeoutMs);
  }
  if (provider === 'calcom') return new CalcomIntegrations(settings.calcomApiUrl, settings.timeoutMs);
  if (provider === 'hubspot') return new HubSpotCrm(settings.hubspot);
  throw new Error(`No integrations adapter "${provider}" (sandbox, google, calcom, hubspot)`);
}

/** The provider new connections of `kind` are made with: its real one when INTEGRATIONS_LIVE lists the kind, else `sandbox`. */
export function connectProvider(kind: IntegrationKind, env: NodeJS.ProcessEnv = process.env): IntegrationProviderName {
  if (!loadIntegrationSettings(env).live.has(kind)) return 'sandbox';
  if (kind === 'google_calendar') return 'google';
  if (kind === 'calcom') return 'calcom';
  if (kind === 'hubspot') return 'hubspot';
  return 'sandbox';
}
