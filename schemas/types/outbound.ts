/**
 * Outbound voice request and response types (spec "Outbound": contact lists with import and scrub,
 * campaigns with launch, pause, resume, cancel; payloads "not shown", decided in docs/api-notes.md).
 */

/**
 * Why a campaign calls (TCPA posture). `informational` (appointment reminders, service notices) is the
 * only purpose that is dialed; `marketing` needs prior express written consent for every contact
 * (scrubbed at import); `collections` is accepted and stored but, like marketing, never dialed.
 */
export type CampaignPurpose = 'informational' | 'marketing' | 'collections';

/** Body of `POST /contact-lists`. @additionalProperties false */
export interface ContactListCreate {
  /** @minLength 1 @maxLength 200 */
  name: string;
  /** Purpose the list is scrubbed for (consent rule); default `informational`. */
  purpose?: CampaignPurpose;
}

/**
 * Which CSV header holds which field, when the headers are not the recognised ones (phone, phone_number,
 * number, mobile; first_name, first; last_name, last; time_zone, timezone, tz). Columns not mapped
 * become free variables. @additionalProperties false
 */
export interface ContactColumnMapping {
  /** @minLength 1 @maxLength 200 */
  phone?: string;
  /** @minLength 1 @maxLength 200 */
  firstName?: string;
  /** @minLength 1 @maxLength 200 */
  lastName?: string;
  /** @minLength 1 @maxLength 200 */
  timeZone?: string;
}

/** Body of `POST /contact-lists/{id}/imports`. @additionalProperties false */
export interface ContactImportRequest {
  /** A CSV uploaded with `POST /uploads` (`file_…`, up to 25 MB), with a header row. */
  fileId: string;
  columnMapping?: ContactColumnMapping;
}

/** Progress and outcome of the list's import. */
export interface ContactImportProgress {
  /** empty (never imported) | importing | ready | failed */
  status: 'empty' | 'importing' | 'ready' | 'failed';
  fileId: string | null;
  rowsRead: number;
  accepted: number;
  rejected: number;
  /** Rows by scrub outcome: `accepted`, `invalid_phone`, `not_us`, `duplicate`, `suppressed`, `do_not_call`, `no_consent`, `invalid_time_zone`. */
  counts: Record<string, number>;
  error: string | null;
  startedAt: string | null;
  finishedAt: string | null;
}

/** A contact list. */
export interface ContactList {
  /** `cl_…` */
  id: string;
  name: string;
  purpose: CampaignPurpose;
  import: ContactImportProgress;
  createdAt: string;
  updatedAt: string;
}

/** A page of contact lists. */
export interface ContactListPage {
  items: ContactList[];
  nextCursor: string | null;
  hasMore: boolean;
}

/** One row of an imported list, accepted or rejected with its reason. */
export interface Contact {
  /** `ct_…` */
  id: string;
  /** Data row of the file (1 = first row after the header). */
  row: number;
  /** Phone as written in the file. */
  rawPhone: string | null;
  /** Normalized E.164, null when the phone could not be read. */
  e164: string | null;
  firstName: string | null;
  lastName: string | null;
  timeZone: string | null;
  /** Zones the calling window is computed in: the explicit zone, else the area code's (every one when it spans a zone line), else every US zone. */
  zones: string[];
  variables: Record<string, string>;
  status: 'accepted' | 'rejected';
  /** Scrub outcome (`accepted` or the rejection reason). */
  reason: string;
}

/** A page of contacts. */
export interface ContactPage {
  items: Contact[];
  nextCursor: string | null;
  hasMore: boolean;
}

/** Body of `POST /outbound/do-not-call`. @additionalProperties false */
export interface DoNotCallAdd {
  /**
   * Numbers in E.164 to never call.
   * @minItems 1
   * @maxItems 1000
   */
  numbers: string[];
}

/** Result of `POST /outbound/do-not-call`. */
export interface DoNotCallResult {
  added: number;
}

/** Recipient-local calling window, `HH:MM` 24-hour. Narrowable within 08:00–21:00, never widenable. */
export interface CallingWindow {
  /** @pattern ^([01][0-9]|2[0-3]):[0-5][0-9]$ */
  start: string;
  /** @pattern ^([01][0-9]|2[0-4]):[0-5][0-9]$ */
  end: string;
}

/** Day of the week, recipient-local. */
export type DayOfWeek = 'mon' | 'tue' | 'wed' | 'thu' | 'fri' | 'sat' | 'sun';

/** Body of `POST /campaigns`. @additionalProperties false */
export interface CampaignCreate {
  /** @minLength 1 @maxLength 200 */
  name: string;
  /** An agent with a published version (`agt_…`). */
  agentId: string;
  /** The organization's purchased number used as caller id (`num_…`). */
  callerIdNumberId: string;
  /** `cl_…`, imported (status ready). */
  contactListId: string;
  purpose: CampaignPurpose;
  /** Default recipient-local 08:00–21:00. */
  callingWindow?: CallingWindow;
  /**
   * Days dialed, recipient-local; default every day.
   * @minItems 1
   * @maxItems 7
   * @uniqueItems true
   */
  daysOfWeek?: DayOfWeek[];
  /**
   * Calls in flight at once; default 10.
   * @minimum 1
   * @maximum 500
   * @asType integer
   */
  maxConcurrentCalls?: number;
  /**
   * Dials per contact including retries of busy and no-answer; default 3.
   * @minimum 1
   * @maximum 10
   * @asType integer
   */
  maxAttempts?: number;
  /**
   * Wait before a busy or no-answer contact is dialed again, minutes; default 60.
   * @minimum 1
   * @maximum 10080
   * @asType integer
   */
  retryDelayMinutes?: number;
}

/** Live counters of a campaign's call attempts by status. */
export interface CampaignCounters {
  total: number;
  pending: number;
  dialing: number;
  answered: number;
  voicemail: number;
  busy: number;
  noAnswer: number;
  failed: number;
  cancelled: number;
  /** Dials placed, retries included. */
  dials: number;
}

/** A campaign. */
export interface Campaign {
  /** `cmp_…` */
  id: string;
  name: string;
  /** draft → running ⇄ paused → completed | cancelled (draft → cancelled too). */
  status: 'draft' | 'running' | 'paused' | 'completed' | 'cancelled';
  purpose: CampaignPurpose;
  agentId: string;
  /** Published version frozen at launch. */
  agentVersionId: string | null;
  callerIdNumberId: string;
  callerId: string;
  contactListId: string;
  callingWindow: CallingWindow;
  daysOfWeek: DayOfWeek[];
  maxConcurrentCalls: number;
  maxAttempts: number;
  retryDelayMinutes: number;
  counters: CampaignCounters;
  launchedAt: string | null;
  /**
   * `GET /campaigns/{id}` only: the Temporal Web UI page of workflow `campaign/{id}` (docs/operations.md
   * "Inspecting workflows"); absent before the launch and when this API process serves no UI.
   */
  temporalUiUrl?: string;
  finishedAt: string | null;
  createdAt: string;
  updatedAt: string;
}

/** A page of campaigns (counters included). */
export interface CampaignPage {
  items: Campaign[];
  nextCursor: string | null;
  hasMore: boolean;
}

/** One call attempt of a campaign. */
export interface CallAttempt {
  /** `att_…` */
  id: string;
  contactId: string;
  e164: string;
  status: 'pending' | 'dialing' | 'answered' | 'voicemail' | 'busy' | 'no_answer' | 'failed' | 'cancelled';
  dials: number;
  lastOutcome: string | null;
  lastDurationSeconds: number | null;
  lastDialedAt: string | null;
  /** Earliest time of the next dial (calling window, retry delay). */
  notBefore: string;
  /** Whether the last dial left the agent's voicemail message on an answering machine (docs/voice.md "Voicemail"). */
  voicemailLeft: boolean;
  /** The call of the last dial (`call_…`, `GET /calls/{id}`) once the carrier connected it; else null. */
  callId: string | null;
  /** The conversation the last dial held (`cnv_…`: its transcript and analysis), or null when it held none. */
  conversationId: string | null;
}

/** A page of call attempts. */
export interface CallAttemptPage {
  items: CallAttempt[];
  nextCursor: string | null;
  hasMore: boolean;
}
