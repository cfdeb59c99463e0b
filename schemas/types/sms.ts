/**
 * SMS hub request and response types (spec "SMS registration draft", "SMS registration").
 * `npm run schemas` generates one JSON Schema per exported type (schemas/README in generate.ts).
 */

/** Kind of legal entity, as TCR names it (spec "Gaps": values decided in docs/api-notes.md). */
export type EntityType = 'PRIVATE_PROFIT' | 'PUBLIC_PROFIT' | 'NON_PROFIT' | 'GOVERNMENT' | 'SOLE_PROPRIETOR';

/** Industry vertical, from The Campaign Registry's vertical list. */
export type Vertical =
  | 'AGRICULTURE' | 'COMMUNICATION' | 'CONSTRUCTION' | 'EDUCATION' | 'ENERGY' | 'ENTERTAINMENT'
  | 'FINANCIAL' | 'GAMBLING' | 'GOVERNMENT' | 'HEALTHCARE' | 'HOSPITALITY' | 'HUMAN_RESOURCES'
  | 'INSURANCE' | 'LEGAL' | 'MANUFACTURING' | 'NGO' | 'POLITICAL' | 'POSTAL' | 'PROFESSIONAL'
  | 'REAL_ESTATE' | 'RETAIL' | 'TECHNOLOGY' | 'TRANSPORTATION';

/** Campaign use case, from TCR's standard and special use-case lists. */
export type UseCase =
  | '2FA' | 'ACCOUNT_NOTIFICATION' | 'CUSTOMER_CARE' | 'DELIVERY_NOTIFICATION' | 'FRAUD_ALERT'
  | 'HIGHER_EDUCATION' | 'LOW_VOLUME' | 'MARKETING' | 'MIXED' | 'POLLING_VOTING'
  | 'PUBLIC_SERVICE_ANNOUNCEMENT' | 'SECURITY_ALERT' | 'SOLE_PROPRIETOR' | 'AGENTS_FRANCHISES'
  | 'CHARITY' | 'EMERGENCY' | 'K12_EDUCATION' | 'POLITICAL' | 'SOCIAL' | 'SWEEPSTAKE';

/**
 * How recipients opt in: WEB_FORM (online form with an unchecked consent box), TEXT_KEYWORD (texting a
 * keyword to the number), VERBAL (spoken consent on a recorded call), PAPER_FORM (signed form),
 * MOBILE_APP (in-app consent screen), POINT_OF_SALE (consent at checkout), QR_CODE (scan to a keyword text).
 */
export type OptInMethod = 'WEB_FORM' | 'TEXT_KEYWORD' | 'VERBAL' | 'PAPER_FORM' | 'MOBILE_APP' | 'POINT_OF_SALE' | 'QR_CODE';

/**
 * Request body of `PUT /sms` (operation saveSMSRegistration; spec "SMS registration draft").
 * Every field is optional; `null` clears a stored value. Minimum lengths and fields mandatory before
 * submission are checked by the review, not by the save.
 * @additionalProperties false
 */
export interface SmsRegistrationDraft {
  /** Legal name of the brand, as registered with the IRS. @maxLength 255 */
  legalName?: string | null;
  /** Public name of the brand, shown to recipients. @maxLength 255 */
  displayName?: string | null;
  /** Employer identification number: nine digits, `12-3456789` or `123456789`. @maxLength 10 */
  ein?: string | null;
  /** Kind of legal entity. */
  entityType?: EntityType | null;
  /** Industry vertical. */
  vertical?: Vertical | null;
  /** ISO 3166-1 alpha-2 country code of registration, e.g. `US`. @maxLength 2 */
  country?: string | null;
  /** Street address. @maxLength 100 */
  street?: string | null;
  /** @maxLength 100 */
  city?: string | null;
  /** Two-letter state or territory code (USPS) when the country is US. @maxLength 2 */
  state?: string | null;
  /** ZIP or ZIP+4 (`12345` or `12345-6789`) when the country is US. @maxLength 10 */
  postalCode?: string | null;
  /** Brand website, an http(s) URL. @maxLength 255 */
  website?: string | null;
  /** Support email address. @maxLength 100 */
  supportEmail?: string | null;
  /** Support phone number in E.164, e.g. `+14155550100`. @maxLength 20 */
  phone?: string | null;
  /** Whether the website has a published messaging/privacy policy page. */
  usePolicyPage?: boolean | null;
  /** Campaign use case. */
  useCase?: UseCase | null;
  /** How recipients opt in. */
  optInMethod?: OptInMethod | null;
  /** Campaign description. @maxLength 4096 */
  description?: string | null;
  /** First sample message. @maxLength 1024 */
  sample1?: string | null;
  /** Second sample message. @maxLength 1024 */
  sample2?: string | null;
  /** How consent is collected. @maxLength 2048 */
  messageFlow?: string | null;
  /** Reply text for HELP. @maxLength 320 */
  helpMessage?: string | null;
  /** Whether messages contain links. */
  sendsLinks?: boolean | null;
  /** When true, the campaign text is regenerated from brand details plus use case (fields given in the same request win). */
  regenerate?: boolean;
  /** Quiet-hours posture. Omitted: unchanged. true (default): inbound-triggered replies skip quiet hours. false: strict. */
  quietHoursRepliesExempt?: boolean;
}

/** Status of the 10DLC registration (spec "SMS registration status"). */
export type SmsRegistrationStatus = 'draft' | 'submitted' | 'registered' | 'active' | 'failed';

/** Response data of `GET /sms` and `PUT /sms` (spec "SMS registration (response data)"). Unset values are null. */
export interface SmsRegistration {
  legalName: string | null;
  displayName: string | null;
  ein: string | null;
  entityType: EntityType | null;
  vertical: Vertical | null;
  country: string | null;
  street: string | null;
  city: string | null;
  state: string | null;
  postalCode: string | null;
  website: string | null;
  supportEmail: string | null;
  phone: string | null;
  usePolicyPage: boolean | null;
  useCase: UseCase | null;
  optInMethod: OptInMethod | null;
  description: string | null;
  sample1: string | null;
  sample2: string | null;
  messageFlow: string | null;
  helpMessage: string | null;
  sendsLinks: boolean | null;
  /** Brand identifier assigned by the carrier. */
  brandId: string | null;
  /** Campaign identifier assigned by the carrier. */
  campaignId: string | null;
  status: SmsRegistrationStatus;
  /** Status as reported by the carrier. */
  providerStatus: string | null;
  lastError: string | null;
  /** Effective posture; agent-initiated sends are always held to recipient-local 8am–9pm. */
  quietHoursRepliesExempt: boolean;
  /** ISO 8601. @format date-time */
  submittedAt: string | null;
  /** ISO 8601. @format date-time */
  createdAt: string;
  /** ISO 8601. @format date-time */
  updatedAt: string;
  /**
   * `GET /sms` only: the Temporal Web UI page of workflow `sms-registration/{orgId}` (docs/operations.md
   * "Inspecting workflows"); absent before the first submission and when this API process serves no UI.
   */
  temporalUiUrl?: string;
}


/** One finding of the compliance review (docs/sms.md "10DLC review, submission and carrier callbacks"; rules in api/sms/review.ts). */
export interface SmsReviewFinding {
  /** Draft field the finding is about (API name). */
  field: string;
  /** Stable machine code, e.g. `required`, `sample_opt_out`, `prohibited_content`. */
  code: string;
  /** `error` fails the verdict; `warning` is advice. */
  severity: 'error' | 'warning';
  message: string;
}

/** Response data of `POST /sms/review` (operation reviewSMSRegistration): the verdict, also stored as the last verdict. */
export interface SmsReviewResult {
  verdict: 'pass' | 'fail';
  findings: SmsReviewFinding[];
  /** When the review ran. ISO 8601. @format date-time */
  reviewedAt: string;
}

/** Stock exchanges TCR accepts for PUBLIC_PROFIT brands. */
export type StockExchange =
  | 'NASDAQ' | 'NYSE' | 'AMEX' | 'AMX' | 'ASX' | 'B3' | 'BME' | 'BSE' | 'FRA' | 'ICEX' | 'JPX' | 'JSE' | 'KRX'
  | 'LON' | 'NSE' | 'OMX' | 'SEHK' | 'SGX' | 'SSE' | 'STO' | 'SWX' | 'SZSE' | 'TSX' | 'TWSE' | 'VSE' | 'OTHER' | 'NONE';

/**
 * Optional request body of `POST /sms/submit` (operation submitSMSRegistration). The stock details of a
 * PUBLIC_PROFIT brand travel here because the draft (PUT /sms) has no such fields.
 * @additionalProperties false
 */
export interface SmsSubmitRequest {
  /** Ticker symbol, required when the entity type is PUBLIC_PROFIT. @pattern ^[A-Z0-9.\-]{1,10}$ */
  stockSymbol?: string;
  /** Exchange of the symbol, required when the entity type is PUBLIC_PROFIT. */
  stockExchange?: StockExchange;
}

/** Progress of the registration workflow (query `progress` of workflow `sms-registration/{orgId}`). */
export interface SmsRegistrationProgress {
  /** Where the 10DLC process stands. */
  step: 'brand' | 'campaign' | 'provisioning' | 'done';
  status: SmsRegistrationStatus;
  brandId: string | null;
  campaignId: string | null;
  providerStatus: string | null;
  lastError: string | null;
  /** Carrier status polls made because no callback arrived within the hour. */
  polls: number;
}

/** Where a recorded consent came from. */
export type SmsConsentSource = 'web_form' | 'text_keyword' | 'verbal' | 'paper_form' | 'mobile_app' | 'point_of_sale' | 'qr_code' | 'import' | 'other';

/**
 * Request body of `PUT /sms/contacts/{e164}/consent` (operation recordSMSConsent): express consent
 * with its source, time and proof (TCPA: keep proof of prior express written consent).
 * @additionalProperties false
 */
export interface SmsConsentRequest {
  source: SmsConsentSource;
  /** When the recipient consented; default now. Not in the future. @format date-time */
  consentedAt?: string;
  /** What the recipient agreed to, verbatim (form text, keyword message, call transcript excerpt). @minLength 1 @maxLength 4000 */
  proofText: string;
}

/** A contact of the SMS roster with its consent and opt-out state (scope rule 2: sms:read). */
export interface SmsContact {
  /** E.164 number, e.g. `+14155550100`. */
  e164: string;
  consentStatus: 'none' | 'granted' | 'withdrawn';
  consentSource: string | null;
  /** @format date-time */
  consentedAt: string | null;
  proofText: string | null;
  /** @format date-time */
  withdrawnAt: string | null;
  /** True after STOP (or an equivalent keyword) until START/UNSTOP. */
  optedOut: boolean;
  /** @format date-time */
  optedOutAt: string | null;
  /** `keyword` (inbound STOP …) or `api` (consent withdrawn). */
  optOutSource: string | null;
  /** @format date-time */
  updatedAt: string;
}

/** A page of contacts (`GET /sms/contacts`, `GET /sms/opt-outs`). */
export interface SmsContactPage {
  items: SmsContact[];
  nextCursor: string | null;
  hasMore: boolean;
}

/** A number with its SMS toggle and the organization's registration status (`GET /sms/numbers`, sms:read). */
export interface SmsNumber {
  /** Number id, `num_…`. */
  id: string;
  e164: string;
  smsEnabled: boolean;
  /** Status of the organization's 10DLC registration, `none` before the first save. */
  registrationStatus: SmsRegistrationStatus | 'none';
  /** True when the number is SMS-enabled and the registration is active. */
  canSend: boolean;
}

/** A page of SMS numbers. */
export interface SmsNumberPage {
  items: SmsNumber[];
  nextCursor: string | null;
  hasMore: boolean;
}

/**
 * Request body of `PUT /numbers/{id}/sms` (operation setNumberSMS, sms:write): the per-number SMS toggle.
 * @additionalProperties false
 */
export interface SmsNumberToggleRequest {
  enabled: boolean;
}

/** Result of a provider callback (`POST /sms/provider-callbacks/{provider}`). */
export interface SmsProviderCallbackResult {
  received: boolean;
  /** True when this (external id, status, revision) had been received before; nothing changed. */
  duplicate: boolean;
}

/**
 * Request body of `POST /sms/messages` (operation sendSMSMessage, sms:send).
 * @additionalProperties false
 */
export interface SmsSendRequest {
  /** Sending number of the organization (E.164), SMS-enabled. @maxLength 20 */
  from: string;
  /** Recipient, a US number in E.164. @maxLength 20 */
  to: string;
  /** Message text. @minLength 1 @maxLength 1600 */
  body: string;
  /** `agent` (default): held to the recipient-local 8am–9pm window. `reply`: answers an inbound text. */
  trigger?: 'agent' | 'reply';
  /**
   * Attachments (spec "Scope rules" 3): ids of the organization's text attachments (`med_…`, including
   * ones a customer sent) or of uploads made for SMS (`file_…` from `POST /uploads` with
   * `purpose=sms`). Uploads made in a web chat are not reachable. At most 5 MB in total.
   * @maxItems 10
   */
  mediaIds?: string[];
}

/** A text message. */
export interface SmsMessage {
  /** `msg_…` */
  id: string;
  direction: 'outbound' | 'inbound';
  trigger: 'agent' | 'reply' | 'keyword' | null;
  from: string;
  to: string;
  status: 'queued' | 'held' | 'sent' | 'delivered' | 'failed' | 'received';
  /** When a held message will be sent (recipient-local 8am). @format date-time */
  heldUntil: string | null;
  error: string | null;
  /** Attachment ids (`med_…`) carried by the message; an upload given as `file_…` appears as its attachment id. */
  mediaIds: string[];
  /** @format date-time */
  createdAt: string;
}

/**
 * Answer of `GET /sms/media/{id}` (operation getSMSMedia, sms:read; spec "Scope rules" 2): a
 * short-lived signed link to the attachment's bytes. The link needs no API key: its signature is the
 * credential, valid until `expiresAt` (5 minutes).
 */
export interface SmsMediaLink {
  /** `med_…` */
  id: string;
  /** `GET /sms/media/{id}/content?expires=…&signature=…`, absolute. @format uri */
  url: string;
  /** @format date-time */
  expiresAt: string;
  /** Media type of the attachment, e.g. `image/jpeg`. */
  contentType: string;
  /** Size in bytes. */
  size: number;
  /** `inbound`: sent by a customer; `outbound`: sent by the organization. */
  direction: 'inbound' | 'outbound';
}
