/**
 * Scrub rules of an imported contact row (docs/voice.md "Outbound voice campaigns"), applied in this order, the first that
 * fails being the row's reason:
 *   invalid_phone → not_us → invalid_time_zone → duplicate (same E.164 earlier in the file) →
 *   suppressed (the organization's SMS opt-outs / withdrawn consent) → do_not_call (the organization's
 *   do-not-call list) → no_consent (purpose `marketing` only: no express consent on record) → accepted.
 * Phone normalization is libphonenumber-js (default region US, so 10-digit national numbers are read).
 */
import { parsePhoneNumberFromString } from 'libphonenumber-js';
import type { CampaignPurpose } from '../../schemas/types/outbound';
import { isKnownZone } from './callingWindow';

/** Every scrub outcome (also the keys of a list's `counts`). */
export const SCRUB_OUTCOMES = ['accepted', 'invalid_phone', 'not_us', 'invalid_time_zone', 'duplicate', 'suppressed', 'do_not_call', 'no_consent'] as const;
export type ScrubOutcome = (typeof SCRUB_OUTCOMES)[number];

/** Countries of the +1 plan that are the United States (states, DC and inhabited territories). */
const US_COUNTRIES = new Set(['US', 'PR', 'VI', 'GU', 'MP', 'AS']);

/** Purposes whose calls need the recipient's prior express (written) consent on record (TCPA, 47 CFR 64.1200(a)(2)). */
export function purposeNeedsConsent(purpose: CampaignPurpose): boolean {
  return purpose === 'marketing';
}

/** Only informational campaigns are dialed (spec "Outbound"). */
export function purposeIsDialable(purpose: CampaignPurpose): boolean {
  return purpose === 'informational';
}

/** Normalizes a phone as written. @returns the E.164 or the rejection reason */
export function normalizeUsPhone(raw: string): { e164: string } | { reason: 'invalid_phone' | 'not_us' } {
  const p = raw ? parsePhoneNumberFromString(raw, 'US') : undefined;
  if (!p || !p.isValid()) return { reason: 'invalid_phone' };
  if (p.countryCallingCode !== '1' || !US_COUNTRIES.has(p.country ?? '')) return { reason: 'not_us' };
  return { e164: p.number };
}

/** What the scrub of one chunk needs to know about the organization (looked up per chunk). */
export interface ScrubLookups {
  suppressed: Set<string>;
  doNotCall: Set<string>;
  /** Numbers with granted consent (only consulted when the purpose needs consent). */
  consented: Set<string>;
}

/**
 * Decides one row (`normalized`: normalizeUsPhone(row.phone) when the caller already has it). `seen` holds the E.164s accepted or seen earlier in the file and is updated.
 * @returns the outcome and the normalized number when it could be read
 */
export function scrubRow(
  row: { phone: string; timeZone: string | null },
  purpose: CampaignPurpose,
  seen: Set<string>,
  lookups: ScrubLookups,
  normalized: ReturnType<typeof normalizeUsPhone> = normalizeUsPhone(row.phone),
): { outcome: ScrubOutcome; e164: string | null } {
  const n = normalized;
  if ('reason' in n) return { outcome: n.reason, e164: null };
  const e164 = n.e164;
  if (row.timeZone && !isKnownZone(row.timeZone)) return { outcome: 'invalid_time_zone', e164 };
  if (seen.has(e164)) return { outcome: 'duplicate', e164 };
  seen.add(e164);
  if (lookups.suppressed.has(e164)) return { outcome: 'suppressed', e164 };
  if (lookups.doNotCall.has(e164)) return { outcome: 'do_not_call', e164 };
  if (purposeNeedsConsent(purpose) && !lookups.consented.has(e164)) return { outcome: 'no_consent', e164 };
  return { outcome: 'accepted', e164 };
}
