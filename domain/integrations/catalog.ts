/**
 * The integration catalogue (spec Integrations rows; docs/api-notes.md "Integrations and records"): the kinds this
 * service offers, how each connects (OAuth 2.0 authorization-code grant, RFC 6749 §4.1, with PKCE,
 * RFC 7636, where the provider supports it; or credentials validated against the provider), what each
 * provisions into an agent's draft skills, and whether it feeds Records. Availability depends on the
 * deployment (domain/integrations/settings.ts).
 */
import { plainHttpPolicy, plainHttpProblem, type PlainHttpPolicy } from '../net/plainHttp';
import type { FieldError } from '../errors';

/** One integration kind. */
export type IntegrationKind = 'google_calendar' | 'calcom' | 'google_sheets' | 'hubspot' | 'http';

/** What a kind is for. */
export type IntegrationCategory = 'calendar' | 'spreadsheet' | 'crm' | 'http';

/** A credential field a `credentials` kind asks for. */
export interface CredentialField {
  name: string;
  description: string;
  /** Secret fields are sealed at rest and never returned. */
  secret: boolean;
  required: boolean;
}

/** A catalogue entry. */
export interface IntegrationKindDef {
  kind: IntegrationKind;
  name: string;
  category: IntegrationCategory;
  connectMethod: 'oauth' | 'credentials';
  /** OAuth kinds: whether the authorization request carries a PKCE S256 challenge (RFC 7636). */
  pkce: boolean;
  /** OAuth kinds: the scopes requested from the provider. */
  oauthScopes: string[];
  /** Credentials kinds: the fields of `credentials` in `POST /integrations/{kind}/connect`. */
  credentialFields: CredentialField[];
  /** Skill types `POST /agents/{agentId}/integrations/{kind}/provision` creates or updates (by skill name). */
  provisions: { skillName: string; skillType: string }[];
  /** Whether `records-sync/{connectionId}` can pull records from it. */
  syncsRecords: boolean;
}

/** Every kind, in catalogue order. */
export const INTEGRATION_KINDS: readonly IntegrationKindDef[] = [
  {
    kind: 'google_calendar',
    name: 'Google Calendar',
    category: 'calendar',
    connectMethod: 'oauth',
    pkce: true,
    // Least privilege (Calendar v3 discovery document, each method's `scopes`): events.insert/get, freebusy.query,
    // calendars.get (the calendar's time zone).
    oauthScopes: ['https://www.googleapis.com/auth/calendar.events', 'https://www.googleapis.com/auth/calendar.freebusy', 'https://www.googleapis.com/auth/calendar.calendars.readonly'],
    credentialFields: [],
    provisions: [{ skillName: 'book_appointment', skillType: 'book_appointment' }],
    syncsRecords: false,
  },
  {
    kind: 'calcom',
    name: 'Cal.com',
    category: 'calendar',
    connectMethod: 'credentials',
    pkce: false,
    oauthScopes: [],
    credentialFields: [{ name: 'apiKey', description: 'Cal.com API key (cal_live_… or cal_test_…; Settings → Developer → API keys)', secret: true, required: true }],
    provisions: [{ skillName: 'book_appointment', skillType: 'book_appointment' }],
    syncsRecords: false,
  },
  {
    kind: 'google_sheets',
    name: 'Google Sheets',
    category: 'spreadsheet',
    connectMethod: 'oauth',
    pkce: true,
    oauthScopes: ['https://www.googleapis.com/auth/spreadsheets.readonly'],
    credentialFields: [],
    provisions: [{ skillName: 'lookup_record', skillType: 'lookup_record' }],
    syncsRecords: true,
  },
  {
    kind: 'hubspot',
    name: 'HubSpot CRM',
    category: 'crm',
    // A private app's token; or, where HubSpot's OAuth app is configured (services/integrations/connections.ts
    // `connectMethodOf`), OAuth with PKCE and these scopes (HubSpot "Scopes": contacts read, and write for the notes).
    connectMethod: 'credentials',
    pkce: true,
    oauthScopes: ['crm.objects.contacts.read', 'crm.objects.contacts.write'],
    credentialFields: [{ name: 'accessToken', description: 'Private app access token (pat-…) with crm.objects.contacts.read (and crm.objects.contacts.write for the notes written back on the HubSpot API)', secret: true, required: true }],
    provisions: [{ skillName: 'lookup_record', skillType: 'lookup_record' }],
    syncsRecords: true,
  },
  {
    kind: 'http',
    name: 'HTTP API (generic webhook)',
    category: 'http',
    connectMethod: 'credentials',
    pkce: false,
    oauthScopes: [],
    credentialFields: [
      { name: 'baseUrl', description: 'HTTPS base URL of the API; provisioned skills call paths under it', secret: false, required: true },
      { name: 'authorization', description: 'Value of the Authorization header sent with every call (e.g. `Bearer …`)', secret: true, required: false },
    ],
    provisions: [{ skillName: 'call_api', skillType: 'http_request' }],
    syncsRecords: false,
  },
];

const BY_KIND = new Map(INTEGRATION_KINDS.map((k) => [k.kind, k]));

/** The catalogue entry of `kind`, or undefined for a kind this service does not know. */
export function integrationKind(kind: string): IntegrationKindDef | undefined {
  return BY_KIND.get(kind as IntegrationKind);
}

/**
 * Field errors of the `credentials` of a credentials kind: required fields present, strings of at most
 * 4096 characters, no unknown fields; `baseUrl` must be an https URL, or plain http to a host of
 * HTTP_ALLOW_PRIVATE_HOSTS outside production, as an HTTP skill's `url` (../net/plainHttp.ts).
 * @param policy who plain http may reach (default: the environment's)
 */
export function credentialErrors(def: IntegrationKindDef, credentials: unknown, policy: PlainHttpPolicy = plainHttpPolicy()): FieldError[] {
  if (!credentials || typeof credentials !== 'object' || Array.isArray(credentials)) return [{ field: 'credentials', message: 'must be an object' }];
  const c = credentials as Record<string, unknown>;
  const errors: FieldError[] = [];
  const known = new Set(def.credentialFields.map((f) => f.name));
  for (const k of Object.keys(c)) if (!known.has(k)) errors.push({ field: `credentials.${k}`, message: `is not a credential of ${def.kind}; expected: ${[...known].join(', ')}` });
  for (const f of def.credentialFields) {
    const v = c[f.name];
    if (v === undefined || v === null || v === '') {
      if (f.required) errors.push({ field: `credentials.${f.name}`, message: 'is required' });
      continue;
    }
    if (typeof v !== 'string' || v.length > 4096) errors.push({ field: `credentials.${f.name}`, message: 'must be a string of at most 4096 characters' });
  }
  if (typeof c.baseUrl === 'string' && c.baseUrl) {
    const problem = /^https?:\/\/[^/\s]+/.test(c.baseUrl) ? plainHttpProblem(c.baseUrl, policy) : 'must be an https:// URL';
    if (problem) errors.push({ field: 'credentials.baseUrl', message: problem });
  }
  return errors;
}

/** A spreadsheet link's id: `https://docs.google.com/spreadsheets/d/{id}/…` → id; null when the link is not one. */
export function spreadsheetIdOf(link: string): string | null {
  const m = /^https:\/\/docs\.google\.com\/spreadsheets\/d\/([A-Za-z0-9_-]{10,200})(?:[/?#].*)?$/.exec(link.trim());
  return m ? m[1] : null;
}
