/**
 * The integration providers' interface (DESIGN.md "Providers": one per integration kind — calendar,
 * spreadsheet, CRM, generic HTTP; docs/api-notes.md "Integrations and records"). The sandbox is the default and the
 * only adapter built in (INTEGRATIONS_PROVIDER); it answers like the real APIs, with outcomes chosen by
 * documented magic values (providers/integrations/sandbox.ts).
 */
import type { IntegrationKind } from '../../domain/integrations/catalog';
import { loadIntegrationSettings } from '../../domain/integrations/settings';
import { SandboxIntegrations } from './sandbox';

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
 * A provider refused or failed a request; `code` is stable (`credentials_rejected`, `invalid_grant`, `not_found`,
 * `rejected`: another 4xx, `unavailable`: 429, 5xx, a timeout or no answer).
 */
export class IntegrationProviderError extends Error {
  constructor(
    readonly code: 'credentials_rejected' | 'invalid_grant' | 'not_found' | 'rejected' | 'unavailable',
    message: string,
  ) {
    super(message);
    this.name = 'IntegrationProviderError';
  }
}

/** An integrations adapter: one object serving every kind. */
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
  /** Books an event on the connected calendar. @throws IntegrationProviderError */
  createCalendarEvent(
    secrets: IntegrationSecrets,
    req: { calendarId: string; start: string; durationMinutes: number; timeZone: string; summary: string; attendee: { name: string | null; phone: string | null }; requestId: string },
  ): Promise<{ eventId: string; start: string; end: string }>;
}

let shared: IntegrationsAdapter | undefined;

/** The configured integrations adapter (INTEGRATIONS_PROVIDER, default `sandbox`). @throws Error for another name */
export function integrationsAdapter(env: NodeJS.ProcessEnv = process.env): IntegrationsAdapter {
  loadIntegrationSettings(env);
  shared ??= new SandboxIntegrations();
  return shared;
}
