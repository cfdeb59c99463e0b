/**
 * Which members of a customer record's `fields` are sensitive (docs/security.md "Sensitive record fields";
 * OWASP ASVS V8.3 "Sensitive Private Data", PCI DSS 3.4 for card numbers): such a value
 * is write-only — stored sealed, answered masked by every read, never shown to the model — and used only
 * server-side (caller verification's PIN comparison, a skill input filled when the skill runs).
 *
 * A field is sensitive when the organization's record schema declares it `sensitive: true`; a field the
 * schema does not declare is sensitive when its name reads like a secret or a date of birth
 * ({@link sensitiveByName}); and any value that is a card number (13–19 digits passing the Luhn check) is
 * sensitive whatever its field, even one the schema declares `sensitive: false`. Pure functions.
 */
import { luhn } from '../conversations/guardrails';

/** A field of the organization's record schema, as classification reads it. */
export interface RecordFieldRule {
  name: string;
  sensitive: boolean;
}

/** The organization's declared rules by field name (empty: no schema saved). */
export type RecordRules = ReadonlyMap<string, boolean>;

/** Rules from the schema's field list. */
export function recordRules(fields: readonly RecordFieldRule[]): RecordRules {
  return new Map(fields.map((f) => [f.name, f.sensitive]));
}

/** Words that make an undeclared field sensitive by its name (whole words of the name). */
export const SENSITIVE_NAME_WORDS: readonly string[] = ['pin', 'ssn', 'password', 'passwd', 'passcode', 'dob', 'cvv', 'cvc', 'otp'];
/** Word pairs that do the same (`date_of_birth`, `birth_date`, `social_security_number`). */
const SENSITIVE_NAME_PHRASES: readonly RegExp[] = [/\bdate of birth\b/, /\bbirth ?date\b/, /\bbirthday\b/, /\bsocial security\b/, /\bcard number\b/, /\bsecurity code\b/];

/** The words of a field name: split at `_`, `-`, `.`, spaces and camelCase humps, lower-cased. */
function words(name: string): string {
  return name
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter(Boolean)
    .join(' ');
}

/** Whether a field's name alone makes it sensitive: `pin`, `account_pin`, `SSN`, `password`, `dob`, `dateOfBirth`, … */
export function sensitiveByName(name: string): boolean {
  const w = words(name);
  const list = w.split(' ');
  return SENSITIVE_NAME_WORDS.some((s) => list.includes(s)) || SENSITIVE_NAME_PHRASES.some((re) => re.test(w));
}

/** Whether a value is a payment card number: 13–19 digits (spaces or dashes between them allowed) passing the Luhn check (ISO/IEC 7812-1). */
export function holdsCardNumber(value: string): boolean {
  if (!/^[0-9][0-9 -]{11,30}[0-9]$/.test(value.trim())) return false;
  const digits = value.replace(/[ -]/g, '');
  return digits.length >= 13 && digits.length <= 19 && luhn(digits);
}

/** Whether a field name is sensitive whatever its value: declared so, or (undeclared) named like a secret. */
export function sensitiveName(rules: RecordRules, name: string): boolean {
  const declared = rules.get(name);
  return declared ?? sensitiveByName(name);
}

/** Whether a field's value is sensitive: a sensitive name, or a card number in any field. */
export function isSensitiveField(rules: RecordRules, name: string, value: string): boolean {
  return sensitiveName(rules, name) || holdsCardNumber(value);
}

/** What a read shows instead of a sensitive value: `••` and its last two characters (`••21`); just `••` below 4 characters. */
export function maskValue(value: string): string {
  const v = value.trim();
  return v.length >= 4 ? `••${v.slice(-2)}` : '••';
}

/** The plain members of `fields` and the sensitive ones, by {@link isSensitiveField}; empty values are never sensitive. */
export function splitSensitive(rules: RecordRules, fields: Readonly<Record<string, string>>): { plain: Record<string, string>; sensitive: Record<string, string> } {
  const plain: Record<string, string> = {};
  const sensitive: Record<string, string> = {};
  for (const [k, v] of Object.entries(fields)) {
    if (typeof v === 'string' && v.trim() !== '' && isSensitiveField(rules, k, v)) sensitive[k] = v;
    else plain[k] = v;
  }
  return { plain, sensitive };
}
