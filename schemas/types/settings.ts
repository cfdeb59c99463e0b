/**
 * Wire types of the organization settings the spec names without paths or payloads (Variables, Support's
 * escalation destinations, Onboarding, Meta, and the scopes dashboards, reports, phone and presence);
 * decided in docs/api-notes.md "Variables, escalation, onboarding, meta and settings".
 */

/**
 * Name of an organization variable, referenced as `{{vars.<name>}}`.
 * @pattern ^[a-z][a-z0-9_]{0,63}$
 */
export type VariableName = string;

/**
 * Request body of `POST /variables` (createVariable).
 * @additionalProperties false
 */
export interface VariableCreate {
  name: VariableName;
  /** @maxLength 500 */
  description?: string | null;
  /** A secret's value is write-only: sealed at rest, never returned, never copied into a version. */
  secret?: boolean;
  /**
   * The value (1–4000 characters).
   * @minLength 1
   * @maxLength 4000
   */
  value: string;
}

/**
 * Request body of `PATCH /variables/{id}` (updateVariable): fields to change. `secret` cannot change
 * (delete and create again).
 * @additionalProperties false
 */
export interface VariableUpdate {
  /** @maxLength 500 */
  description?: string | null;
  /**
   * @minLength 1
   * @maxLength 4000
   */
  value?: string;
}

/** An organization variable; a secret one shows no value. */
export interface Variable {
  /** `var_…` */
  id: string;
  name: string;
  description: string | null;
  secret: boolean;
  /** The value; null for a secret (write-only). */
  value: string | null;
  /** The reference to write in instructions and skill configs, e.g. `{{vars.support_email}}`. */
  reference: string;
  /** +1 on every change of the value. */
  revision: number;
  createdAt: string;
  updatedAt: string;
}

/** A page of variables. */
export interface VariableList {
  items: Variable[];
  nextCursor: string | null;
  hasMore: boolean;
}

/** Where an escalation destination hands a conversation to a person. */
export type EscalationDestinationKind = 'phone' | 'sip' | 'email' | 'webhook';

/** Day of the week of opening hours. */
export type Weekday = 'mon' | 'tue' | 'wed' | 'thu' | 'fri' | 'sat' | 'sun';

/** One opening interval, local time of the destination's time zone. */
export interface HoursInterval {
  day: Weekday;
  /**
   * Opening time `HH:MM` (24 h).
   * @pattern ^([01][0-9]|2[0-3]):[0-5][0-9]$
   */
  open: string;
  /**
   * Closing time `HH:MM` (24 h; `24:00` = midnight), after `open`.
   * @pattern ^(([01][0-9]|2[0-3]):[0-5][0-9]|24:00)$
   */
  close: string;
}

/**
 * Request body of `POST /escalation-destinations` (createEscalationDestination).
 * @additionalProperties false
 */
export interface EscalationDestinationCreate {
  /**
   * @minLength 1
   * @maxLength 100
   */
  name: string;
  kind: EscalationDestinationKind;
  /**
   * E.164 number (phone), `sip:`/`sips:` URI (sip), e-mail address (email) or HTTPS URL (webhook).
   * @minLength 1
   * @maxLength 2000
   */
  address: string;
  /**
   * IANA time zone of `hours`, e.g. America/Chicago.
   * @minLength 1
   * @maxLength 64
   */
  timeZone: string;
  /**
   * Opening hours; null or omitted = always open.
   * @maxItems 50
   */
  hours?: HoursInterval[] | null;
  /**
   * The teammate who answers here (e-mail), whose presence (`PUT /presence/{teammate}`) is shown.
   * @format email
   * @maxLength 254
   */
  teammate?: string | null;
}

/**
 * Request body of `PATCH /escalation-destinations/{id}`: fields to change.
 * @additionalProperties false
 */
export interface EscalationDestinationUpdate {
  /**
   * @minLength 1
   * @maxLength 100
   */
  name?: string;
  kind?: EscalationDestinationKind;
  /**
   * @minLength 1
   * @maxLength 2000
   */
  address?: string;
  /**
   * @minLength 1
   * @maxLength 64
   */
  timeZone?: string;
  /** @maxItems 50 */
  hours?: HoursInterval[] | null;
  /**
   * @format email
   * @maxLength 254
   */
  teammate?: string | null;
}

/** Presence of a teammate who takes escalations. */
export type PresenceStatus = 'available' | 'busy' | 'away' | 'offline';

/** An escalation destination. */
export interface EscalationDestination {
  /** `esc_…` */
  id: string;
  name: string;
  kind: EscalationDestinationKind;
  address: string;
  timeZone: string;
  /** null = always open. */
  hours: HoursInterval[] | null;
  teammate: string | null;
  /** Whether `hours` are open at the time of the answer. */
  openNow: boolean;
  /** The teammate's presence (null without a teammate or before their first presence update). */
  presence: PresenceStatus | null;
  createdAt: string;
  updatedAt: string;
}

/** A page of escalation destinations. */
export interface EscalationDestinationList {
  items: EscalationDestination[];
  nextCursor: string | null;
  hasMore: boolean;
}

/**
 * Request body of `PUT /presence/{teammate}` (setPresence).
 * @additionalProperties false
 */
export interface PresenceUpdate {
  status: PresenceStatus;
  /** @maxLength 200 */
  note?: string | null;
  /**
   * When the status lapses to `offline` (future); omitted = until changed.
   * @format date-time
   */
  until?: string | null;
}

/** A teammate's presence. */
export interface Presence {
  /** `prs_…` */
  id: string;
  teammate: string;
  /** The status now (`offline` once `until` has passed). */
  status: PresenceStatus;
  note: string | null;
  until: string | null;
  updatedAt: string;
}

/** A page of presences. */
export interface PresenceList {
  items: Presence[];
  nextCursor: string | null;
  hasMore: boolean;
}

/** One step of the setup checklist. */
export interface OnboardingStep {
  /** Stable key, e.g. `first_agent`. */
  key: 'first_agent' | 'knowledge_ready' | 'first_publish' | 'number_purchased' | 'sms_registration_active' | 'webhook_verified' | 'first_conversation';
  title: string;
  done: boolean;
  /** When it was done (the earliest proof found), null when not done. */
  completedAt: string | null;
  /** The operation that completes it. */
  link: { method: string; href: string; operationId: string; docs: string };
}

/** `GET /onboarding`: the organization's setup checklist, computed from its state. */
export interface Onboarding {
  steps: OnboardingStep[];
  completed: number;
  total: number;
  /** The first step not done, null when all are. */
  next: string | null;
}

/** One scope of the catalogue. */
export interface MetaScope {
  name: string;
  description: string;
  reserved: boolean;
  /** Whether the calling credential holds it. */
  granted: boolean;
}

/** `GET /meta`: the service, its limits and the caller. */
export interface Meta {
  service: { name: string; version: string };
  api: { version: string; basePath: string; openapi: string };
  scopes: MetaScope[];
  limits: {
    uploadMaxBytes: number;
    bodyMaxBytes: number;
    pageSize: { default: number; max: number };
    /**
     * The calling key's rate limit: requests per window, and the burst limit beside it (at most `points` within
     * any `windowSeconds` of that length; null when none applies), as the `RateLimit-Policy` header states them
     * (docs/api-notes.md "Rate limits").
     */
    rateLimit: { points: number; windowSeconds: number; burst: { points: number; windowSeconds: number } | null };
  };
  caller: {
    organization: { id: string; name: string };
    /** The credential (never its secret). */
    key: { id: string; kind: string; prefix: string | null; name: string | null; scopes: string[]; expiresAt: string | null };
  };
  serverTime: string;
}

/** What a dashboard widget shows: one figure of the analytics queries (schemas/types/observe.ts AnalyticsFigures). */
export type DashboardMetric =
  | 'conversations'
  | 'messages'
  | 'averageDurationSeconds'
  | 'p95DurationSeconds'
  | 'containmentRate'
  | 'toolCalls'
  | 'toolCallSuccessRate'
  | 'guardrailTriggers'
  | 'knowledgeHitRate'
  | 'llmTokens'
  | 'costCents';

/** One widget of a dashboard. */
export interface DashboardWidget {
  /**
   * @minLength 1
   * @maxLength 100
   */
  title: string;
  metric: DashboardMetric;
  /** One agent (`agt_…`); omitted or null = every agent. */
  agentId?: string | null;
  /**
   * Range ending now, in days.
   * @minimum 1
   * @maximum 366
   */
  rangeDays: number;
  /**
   * IANA time zone of the buckets (default UTC).
   * @maxLength 64
   */
  timeZone?: string;
}

/**
 * Request body of `POST /dashboards`.
 * @additionalProperties false
 */
export interface DashboardCreate {
  /**
   * @minLength 1
   * @maxLength 100
   */
  name: string;
  /** @maxLength 500 */
  description?: string | null;
  /**
   * @minItems 1
   * @maxItems 24
   */
  widgets: DashboardWidget[];
}

/**
 * Request body of `PATCH /dashboards/{id}`.
 * @additionalProperties false
 */
export interface DashboardUpdate {
  /**
   * @minLength 1
   * @maxLength 100
   */
  name?: string;
  /** @maxLength 500 */
  description?: string | null;
  /**
   * @minItems 1
   * @maxItems 24
   */
  widgets?: DashboardWidget[];
}

/** A saved dashboard. */
export interface Dashboard {
  /** `dsh_…` */
  id: string;
  name: string;
  description: string | null;
  widgets: DashboardWidget[];
  createdAt: string;
  updatedAt: string;
}

/** A page of dashboards. */
export interface DashboardList {
  items: Dashboard[];
  nextCursor: string | null;
  hasMore: boolean;
}

/** `GET /dashboards/{id}/data`: each widget's figures now. */
export interface DashboardData {
  dashboardId: string;
  generatedAt: string;
  widgets: {
    title: string;
    metric: DashboardMetric;
    from: string;
    to: string;
    /** The figure over the whole range. */
    total: number | null;
    series: { start: string; value: number | null }[];
  }[];
}

/** What a report exports. */
export type ReportKind = 'conversations' | 'usage' | 'consent';

/** How often a scheduled report runs (each period is one file). */
export type ReportSchedule = 'daily' | 'weekly' | 'monthly';

/**
 * Request body of `POST /reports` (createReport): one on-demand export over `from`/`to`, or a schedule.
 * @additionalProperties false
 */
export interface ReportCreate {
  kind: ReportKind;
  /** Only CSV (RFC 4180) so far. */
  format?: 'csv';
  /**
   * Start of an on-demand export (default: 30 days before `to`).
   * @format date-time
   */
  from?: string;
  /**
   * End (exclusive) of an on-demand export (default: now).
   * @format date-time
   */
  to?: string;
  /** Set: a scheduled report, one file per period (UTC days, ISO weeks, months), the first for the period that just ended. */
  schedule?: ReportSchedule | null;
  /**
   * IANA time zone of the timestamps' local column (default UTC).
   * @maxLength 64
   */
  timeZone?: string;
}

/** One produced file of a report. */
export interface ReportFile {
  /** `rpf_…` */
  id: string;
  periodFrom: string;
  periodTo: string;
  rowCount: number;
  byteSize: number;
  contentType: string;
  /** Relative link of the download (`reports:read`). */
  downloadUrl: string;
  createdAt: string;
}

/** State of a report. */
export type ReportStatus = 'queued' | 'running' | 'ready' | 'scheduled' | 'failed' | 'cancelled';

/** A report and its files. */
export interface Report {
  /** `rpt_…` */
  id: string;
  kind: ReportKind;
  format: 'csv';
  schedule: ReportSchedule | null;
  timeZone: string;
  from: string | null;
  to: string | null;
  status: ReportStatus;
  error: string | null;
  files: ReportFile[];
  createdAt: string;
  updatedAt: string;
}

/** A page of reports. */
export interface ReportList {
  items: Report[];
  nextCursor: string | null;
  hasMore: boolean;
}

/** Phone settings of one owned number. */
export interface PhoneSettings {
  voicemail: {
    enabled: boolean;
    /** @maxLength 1000 */
    greeting: string | null;
    transcribe: boolean;
    /**
     * @minimum 10
     * @maximum 600
     */
    maxSeconds: number;
  };
  recordingConsent: {
    /** `none`: no recording; `announce`: record after a notice; `opt_in`: record only after the caller agrees (two-party consent states). */
    mode: 'none' | 'announce' | 'opt_in';
    /** @maxLength 500 */
    announcement: string | null;
  };
  businessHours: {
    /**
     * @minLength 1
     * @maxLength 64
     */
    timeZone: string;
    /**
     * Opening hours; null = always open.
     * @maxItems 50
     */
    hours: HoursInterval[] | null;
    /**
     * What a call outside the hours gets: the agent anyway, a voicemail (recorded; `voicemail.received`),
     * a spoken message and the hang-up (`message`), or a transfer to an escalation destination.
     */
    afterHours: 'agent' | 'voicemail' | 'message' | 'escalation';
    /** The escalation destination (`esc_…`) of `afterHours: escalation`. */
    escalationDestinationId: string | null;
    /**
     * What `afterHours: message` says before hanging up (default: a closed-now notice).
     * @maxLength 500
     */
    afterHoursMessage?: string | null;
  };
}

/**
 * Request body of `PUT /numbers/{id}/settings` (putPhoneSettings): the whole settings.
 * @additionalProperties false
 */
export interface PhoneSettingsPut {
  voicemail: PhoneSettings['voicemail'];
  recordingConsent: PhoneSettings['recordingConsent'];
  businessHours: PhoneSettings['businessHours'];
}

/** `GET /numbers/{id}/settings`. */
export interface NumberPhoneSettings extends PhoneSettings {
  numberId: string;
  e164: string;
  /** Whether the business hours are open at the time of the answer. */
  openNow: boolean;
  /** +1 on every PUT (0: the defaults, never saved). */
  revision: number;
  updatedAt: string | null;
}
