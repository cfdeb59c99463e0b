/**
 * SMS hub request and response types (spec "SMS registration draft", "SMS registration").
 * `npm run schemas` generates one JSON Schema per exported type (schemas/README in generate.ts).
 */

/** Kind of legal entity, as TCR names it (spec "Gaps": values decided in the README's API notes). */
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
}

