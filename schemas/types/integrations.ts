/**
 * Wire types of Integrations and Records (spec Integrations rows, scopes `integrations:*` and
 * `records:*`; paths and payloads "not shown": docs/api-notes.md "Integrations and records").
 */

/** One kind of the catalogue (`GET /integrations/catalog`). */
export interface IntegrationCatalogEntry {
  /** e.g. `google_calendar`, `google_sheets`, `hubspot`, `http`. */
  kind: string;
  name: string;
  /** `calendar`, `spreadsheet`, `crm` or `http`. */
  category: string;
  /** `oauth` (authorization URL, then the provider's callback) or `credentials` (validated at connect). */
  connectMethod: 'oauth' | 'credentials';
  /** OAuth kinds: the authorization request carries a PKCE S256 challenge. */
  pkce: boolean;
  /** OAuth kinds: scopes requested from the provider. */
  oauthScopes: string[];
  /** Credentials kinds: the fields `credentials` takes. */
  credentialFields: { name: string; description: string; secret: boolean; required: boolean }[];
  /** Skills provisioning creates or updates. */
  provisions: { skillName: string; skillType: string }[];
  /** Whether records can be synced from it (`POST /integrations/{kind}/sync`). */
  syncsRecords: boolean;
  /** False when this deployment has no OAuth app for the kind (connect answers 400 `integration_unavailable`). */
  available: boolean;
}

/** `GET /integrations/catalog`: the whole catalogue, not paginated (like `GET /skill-types`). */
export interface IntegrationCatalog {
  items: IntegrationCatalogEntry[];
}

/** Progress of the last `records-sync/{connectionId}` run. */
export interface RecordsSyncProgress {
  status: 'running' | 'succeeded' | 'failed';
  /** Records written so far. */
  processed: number;
  /** Rows at the provider, when it says. */
  total: number | null;
  error: string | null;
  /** @format date-time */
  startedAt: string;
  /** @format date-time */
  finishedAt: string | null;
}

/** Status of one kind for the organization (`GET /integrations`): never a token or secret (spec scope rule on `integrations:read`). */
export interface IntegrationStatus {
  kind: string;
  connected: boolean;
  /** `int_…` when connected. */
  connectionId: string | null;
  /** Account reached at the provider (an email, a portal, a host). */
  accountLabel: string | null;
  /** Scopes granted by the provider. */
  scopes: string[];
  /** Last provider error of this connection (sync or skill). */
  lastError: string | null;
  /** `connected`, or `needs_reauth` once the provider revoked the OAuth grant (connect again); null when not connected. */
  status: 'connected' | 'needs_reauth' | null;
  /** The provider the connection was made with: `sandbox`, or the real one (`google`, `calcom`, `hubspot`); null when not connected. */
  provider: string | null;
  /** Non-secret settings set by provisioning (e.g. `spreadsheetId`). */
  config: Record<string, unknown>;
  sync: RecordsSyncProgress | null;
  /** @format date-time */
  connectedAt: string | null;
}

/** `GET /integrations`: one entry per catalogue kind, not paginated. */
export interface IntegrationStatusList {
  items: IntegrationStatus[];
}

/**
 * Body of `POST /integrations/{kind}/connect`: `credentials` for credentials kinds; nothing (or
 * `{}`) for OAuth kinds, which answer an authorization URL.
 * @additionalProperties false
 */
export interface IntegrationConnectRequest {
  /** The kind's `credentialFields` (strings). */
  credentials?: Record<string, string>;
}

/** Answer of connect: the connection (credentials kinds) or where to send the user (OAuth kinds). */
export interface IntegrationConnectResult {
  kind: string;
  /** `connected` (credentials validated and stored) or `authorization_required` (open `authorizationUrl`). */
  status: 'connected' | 'authorization_required';
  /** OAuth: the provider's authorization URL (state and PKCE challenge included). */
  authorizationUrl: string | null;
  /** OAuth: when the authorization must be completed by. @format date-time */
  expiresAt: string | null;
  integration: IntegrationStatus | null;
}

/**
 * Body of `POST /agents/{agentId}/integrations/{kind}/provision`.
 * @additionalProperties false
 */
export interface IntegrationProvisionRequest {
  /** Spreadsheet kinds: the sheet's link (`https://docs.google.com/spreadsheets/d/…`). @maxLength 2000 */
  spreadsheetUrl?: string;
  /** Calendar kinds: the calendar (default `primary`). @maxLength 200 */
  calendarId?: string;
  /** Cal.com: the event type bookings are made for (required there). @asType integer @minimum 1 */
  eventTypeId?: number;
  /** Calendar kinds: booking length (default 30). @asType integer @minimum 5 @maximum 480 */
  durationMinutes?: number;
  /** Calendar kinds: IANA time zone (default `UTC`). @maxLength 64 */
  timeZone?: string;
  /** HTTP kind: the path under the connection's base URL (default `/`). @maxLength 1000 @pattern ^/ */
  path?: string;
  /** HTTP kind: method (default POST). */
  method?: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  /** Skill name to create or update (default: the catalogue's). @pattern ^[a-z][a-z0-9_]{0,63}$ */
  skillName?: string;
}

/** Answer of provisioning: the skills written into the draft. */
export interface IntegrationProvisionResult {
  kind: string;
  agentId: string;
  connectionId: string;
  /** Skills created or updated (`skl_…`), with their configs. */
  skills: { id: string; name: string; type: string; config: Record<string, unknown>; created: boolean }[];
  /** The agent's draft version after the edit. */
  draftVersion: number;
}

/** A customer record (PII: name, phone, email and every value of `fields`). */
export interface CustomerRecord {
  /** `rec_…` */
  id: string;
  name: string | null;
  /** E.164. */
  phone: string | null;
  email: string | null;
  /**
   * Free string fields (e.g. account number, plan). Sensitive ones (`sensitiveFields`) are write-only: their
   * value is answered masked, `••` and its last two characters (docs/security.md "Sensitive record fields").
   */
  fields: Record<string, string>;
  /** Members of `fields` answered masked: declared sensitive, named like pin/ssn/password/dob, or holding a card number. */
  sensitiveFields: string[];
  /** `api`, `csv`, or the integration kind it was synced from. */
  source: string;
  /** The row/contact id at the source, for synced and imported records. */
  externalId: string | null;
  /** @format date-time */
  createdAt: string;
  /** @format date-time */
  updatedAt: string;
}

/**
 * Body of `POST /records`.
 * @additionalProperties false
 */
export interface CustomerRecordCreate {
  /** @maxLength 200 */
  name?: string | null;
  /** E.164, e.g. +14155550100. @maxLength 16 */
  phone?: string | null;
  /** @format email @maxLength 320 */
  email?: string | null;
  /** At most 50 fields, each value at most 2000 characters. */
  fields?: Record<string, string>;
}

/**
 * Body of `PATCH /records/{id}` (given members replace; `fields` replaces all fields).
 * @additionalProperties false
 */
export interface CustomerRecordPatch {
  /** @maxLength 200 */
  name?: string | null;
  /** @maxLength 16 */
  phone?: string | null;
  /** @format email @maxLength 320 */
  email?: string | null;
  fields?: Record<string, string>;
}

/**
 * One declared field of the organization's records (docs/security.md "Sensitive record fields").
 * @additionalProperties false
 */
export interface RecordFieldSchema {
  /** The member of a record's `fields`. @minLength 1 @maxLength 100 */
  name: string;
  /**
   * Write-only: stored sealed, answered masked, never shown to the model; used only server-side (caller
   * verification, skill inputs filled when a skill runs). `false` also lifts the by-name default (a card
   * number stays sensitive in any field).
   */
  sensitive: boolean;
  /** @maxLength 500 */
  description?: string;
}

/**
 * The organization's record schema (`GET/PUT /record-schema`); also the body of the PUT, which replaces it.
 * @additionalProperties false
 */
export interface RecordSchema {
  /** Declared fields, names unique. @maxItems 200 */
  fields: RecordFieldSchema[];
  /** When it was last saved (null: never; answers only). @format date-time */
  updatedAt?: string | null;
}

/** `GET /records`. */
export interface CustomerRecordPage {
  items: CustomerRecord[];
  nextCursor: string | null;
  hasMore: boolean;
}

/**
 * Body of `POST /records/imports`: a CSV uploaded with `POST /uploads` (header row; a phone column as
 * for contact lists; `name`, `email` and every other column become fields).
 * @additionalProperties false
 */
export interface RecordImportRequest {
  /** `file_…` of the upload. @maxLength 64 */
  fileId: string;
  /** Header names for the phone, first and last name columns when they are not recognised. */
  columnMapping?: { phone?: string; firstName?: string; lastName?: string };
}

/** Answer of a CSV import. */
export interface RecordImportResult {
  rowsRead: number;
  created: number;
  updated: number;
  /** Rows refused (first 100), with the reason. */
  rejected: { row: number; reason: string }[];
  rejectedCount: number;
}
