/**
 * Format checks of the SMS registration draft that a JSON Schema type cannot express
 * (docs/api-notes.md: formats decided where the spec says "not shown"). Lengths, types, enums and
 * unknown fields are checked first by the generated schema.
 */
import Ajv from 'ajv';
import addFormats from 'ajv-formats';
import { parsePhoneNumberFromString } from 'libphonenumber-js';
import type { FieldError } from '../errors';
import type { SmsRegistrationDraft } from '../../schemas/types/sms';

const formats = addFormats(new Ajv());
const isEmail = formats.compile({ type: 'string', format: 'email' });
const regionNames = new Intl.DisplayNames(['en'], { type: 'region', fallback: 'code' });

/** USPS two-letter codes: 50 states, DC and the inhabited territories. */
export const US_STATE_CODES = new Set(
  ('AL AK AZ AR CA CO CT DE FL GA HI ID IL IN IA KS KY LA ME MD MA MI MN MS MO MT NE NV NH NJ NM NY NC ND OH OK OR PA ' +
    'RI SC SD TN TX UT VT VA WA WV WI WY DC PR VI GU AS MP').split(' '),
);

/** True for an assigned ISO 3166-1 alpha-2 code (checked against the ICU region names Node ships). */
export function isCountryCode(code: string): boolean {
  if (!/^[A-Z]{2}$/.test(code)) return false;
  const name = regionNames.of(code);
  return !!name && name !== code && name !== 'Unknown Region';
}

/** True for an E.164 number that libphonenumber-js considers valid, written exactly in E.164. */
export function isE164(value: string): boolean {
  if (!/^\+[1-9]\d{6,14}$/.test(value)) return false;
  const p = parsePhoneNumberFromString(value);
  return !!p && p.isValid() && p.number === value;
}

function has(v: unknown): v is string {
  return typeof v === 'string';
}

/**
 * Checks formats of the fields present in `body`.
 * @param country the effective country (request value, else stored value, else US): state and postal
 *   code follow USPS/ZIP rules when it is US
 * @returns one entry per offending field (empty when all are well-formed)
 */
export function checkDraftFormats(body: SmsRegistrationDraft, country: string | null | undefined): FieldError[] {
  const errors: FieldError[] = [];
  const us = !country || country === 'US';
  if (has(body.ein) && !/^\d{2}-?\d{7}$/.test(body.ein)) {
    errors.push({ field: 'ein', message: 'must be nine digits, as 12-3456789 or 123456789' });
  }
  if (has(body.country) && !isCountryCode(body.country)) {
    errors.push({ field: 'country', message: 'must be an ISO 3166-1 alpha-2 code in upper case, e.g. US' });
  }
  if (has(body.state)) {
    if (us && !US_STATE_CODES.has(body.state)) errors.push({ field: 'state', message: 'must be a two-letter USPS state or territory code, e.g. CA' });
    if (!us && !/^[A-Z0-9]{1,3}$/.test(body.state)) errors.push({ field: 'state', message: 'must be a region code of one to three upper-case letters or digits' });
  }
  if (has(body.postalCode)) {
    if (us && !/^\d{5}(-\d{4})?$/.test(body.postalCode)) errors.push({ field: 'postalCode', message: 'must be a ZIP code, 12345 or 12345-6789' });
    if (!us && !/^[A-Za-z0-9][A-Za-z0-9 -]{1,9}$/.test(body.postalCode)) errors.push({ field: 'postalCode', message: 'must be a postal code of 2 to 10 letters, digits, spaces or hyphens' });
  }
  if (has(body.website)) {
    let ok = false;
    try {
      const u = new URL(body.website);
      ok = (u.protocol === 'https:' || u.protocol === 'http:') && !!u.hostname && u.hostname.includes('.') && !u.username && !u.password;
    } catch {
      ok = false;
    }
    if (!ok) errors.push({ field: 'website', message: 'must be an http(s) URL with a public host name, e.g. https://example.com' });
  }
  if (has(body.supportEmail) && !isEmail(body.supportEmail)) {
    errors.push({ field: 'supportEmail', message: 'must be an email address' });
  }
  if (has(body.phone) && !isE164(body.phone)) {
    errors.push({ field: 'phone', message: 'must be a valid phone number in E.164, e.g. +14155550100' });
  }
  return errors;
}
