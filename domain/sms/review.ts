/**
 * The free compliance review of a stored 10DLC registration draft (operation `reviewSMSRegistration`,
 * `POST /sms/review`; docs/sms.md "10DLC review, submission and carrier callbacks"). Pure and deterministic: it never contacts a carrier and never
 * charges. The rules follow The Campaign Registry's (TCR) brand and campaign vetting practice and the
 * CTIA Messaging Principles; each finding names the field, a stable `code` and a severity. Any `error`
 * makes the verdict `fail`; `warning`s are advice that carriers commonly flag but do not block submission.
 *
 * Rules (docs/sms.md "10DLC review, submission and carrier callbacks"):
 * - required fields: entityType, country, street, city, state, postalCode, supportEmail, phone, useCase,
 *   optInMethod, description, sample1, sample2, messageFlow, helpMessage; legalName, ein, vertical and
 *   website unless SOLE_PROPRIETOR (which needs displayName or legalName instead)
 * - PUBLIC_PROFIT: stock symbol and exchange are not draft fields; they are sent with `POST /sms/submit`
 *   (`stockSymbol`, `stockExchange`), so the review reports a warning `stock_details_at_submit`
 * - US only (`us_only`); EIN nine digits with an IRS-assigned prefix (`ein_format`, `ein_prefix`)
 * - description 40–4096 chars; messageFlow 40–2048 naming the opt-in method, purpose, frequency,
 *   "Msg & data rates may apply" and the privacy policy
 * - two samples 20–1024 chars; brand name in at least one; opt-out language in at least one; variable
 *   content in [square brackets]; links only when `sendsLinks`; no public URL shorteners
 * - helpMessage 20–320 chars with a contact (email, phone or URL)
 * - use case allowed for the entity type; prohibited content (SHAFT, cannabis, high-risk lending)
 */
import type { EntityType, OptInMethod, SmsRegistration, UseCase } from '../../schemas/types/sms';
import type { SmsReviewFinding, SmsReviewResult } from '../../schemas/types/sms';

/** IRS campus prefixes that have been assigned (first two EIN digits). */
const EIN_PREFIXES = new Set(
  [
    [1, 6], [10, 16], [20, 27], [30, 39], [40, 48], [50, 68], [71, 77], [80, 88], [90, 95], [98, 99],
  ].flatMap(([a, b]) => Array.from({ length: b - a + 1 }, (_, i) => String(a + i).padStart(2, '0'))),
);

/** Use cases limited to some entity types (TCR special use cases); others are open to every type except SOLE_PROPRIETOR. */
export const USE_CASE_ENTITY_TYPES: Partial<Record<UseCase, EntityType[]>> = {
  SOLE_PROPRIETOR: ['SOLE_PROPRIETOR'],
  CHARITY: ['NON_PROFIT'],
  POLITICAL: ['NON_PROFIT'],
  EMERGENCY: ['GOVERNMENT', 'NON_PROFIT'],
  PUBLIC_SERVICE_ANNOUNCEMENT: ['GOVERNMENT', 'NON_PROFIT'],
  AGENTS_FRANCHISES: ['PRIVATE_PROFIT', 'PUBLIC_PROFIT'],
};

/** Words that name each opt-in method in a message-flow description. */
const OPT_IN_METHOD_WORDS: Record<OptInMethod, RegExp> = {
  WEB_FORM: /\b(web ?site|web|online|form|check ?box)\b/i,
  TEXT_KEYWORD: /\b(keyword|text(s|ing)?)\b/i,
  VERBAL: /\b(verbal(ly)?|orally|spoken|phone call|call)\b/i,
  PAPER_FORM: /\b(paper|form|signed|sign-up sheet)\b/i,
  MOBILE_APP: /\b(app|application)\b/i,
  POINT_OF_SALE: /\b(checkout|point of sale|point-of-sale|terminal|in[- ]store|register)\b/i,
  QR_CODE: /\b(qr)\b/i,
};

/** Prohibited-content categories (CTIA / carrier codes of conduct) and their keyword screens. */
export const PROHIBITED_CONTENT: { category: string; pattern: RegExp }[] = [
  { category: 'sex (SHAFT)', pattern: /\b(porn\w*|xxx|escort services?|adult (content|entertainment)|sexting|nude\w*)\b/i },
  { category: 'hate (SHAFT)', pattern: /\b(hate speech|white power|racial slurs?)\b/i },
  { category: 'alcohol (SHAFT)', pattern: /\b(alcohol\w*|liquor|beer|wine|vodka|whiske?y|tequila|happy hour)\b/i },
  { category: 'firearms (SHAFT)', pattern: /\b(firearms?|guns?|rifles?|pistols?|ammo|ammunition|handguns?)\b/i },
  { category: 'tobacco (SHAFT)', pattern: /\b(tobacco|cigarettes?|cigars?|vap(e|es|ing)|e-?cig\w*|nicotine)\b/i },
  { category: 'cannabis', pattern: /\b(cannabis|marijuana|cbd|thc|dispensary|edibles)\b/i },
  { category: 'high-risk lending', pattern: /\b(payday loans?|cash advances?|debt (relief|consolidation|settlement|forgiveness)|credit repair|loan forgiveness|no credit check|student loan forgiveness)\b/i },
];

const URL_RE = /\b(?:https?:\/\/|www\.)[^\s<>"']+|\b[a-z0-9-]+(?:\.[a-z0-9-]+)*\.(?:com|net|org|io|co|us|info|biz|app|ly|gl|me)(?:\/[^\s<>"']*)?/gi;
const SHORTENERS = /\b(bit\.ly|tinyurl\.com|goo\.gl|t\.co|ow\.ly|is\.gd|buff\.ly|rebrand\.ly|cutt\.ly|shorturl\.at)\b/i;
const EMAIL_RE = /[^\s@]+@[^\s@]+\.[a-z]{2,}/i;
const PHONE_RE = /(\+?1[\s.-]?)?\(?\d{3}\)?[\s.-]?\d{3}[\s.-]?\d{4}/;
const OPT_OUT_RE = /\b(stop|opt[- ]?out|unsubscribe)\b/i;
// Variable markers other than [square brackets]: {{x}}, {x}, <x>, %x%, ${x}, $x
const OTHER_TEMPLATE_RE = /\{\{?\s*[A-Za-z_][\w .-]*\}\}?|<\s*[A-Za-z_][\w .-]*\s*>|%[A-Za-z_]\w*%|\$\{?[A-Za-z_][A-Za-z0-9_]*\}?/;
const PUBLIC_EMAIL_DOMAINS = new Set(['gmail.com', 'yahoo.com', 'hotmail.com', 'outlook.com', 'aol.com', 'icloud.com', 'proton.me', 'protonmail.com']);

const blank = (v: string | null | undefined): boolean => v === null || v === undefined || v.trim() === '';

/** Links (URLs or bare domains) found in a text, in order. */
export function findLinks(text: string): string[] {
  const withoutEmails = text.replace(/[^\s@]+@[^\s@]+\.[a-z]{2,}/gi, ' ');
  return [...withoutEmails.matchAll(URL_RE)].map((m) => m[0]).filter((l) => !/^\d/.test(l));
}

/**
 * Reviews a stored registration draft.
 * @param reg the organization's registration as GET /sms returns it
 * @returns verdict `pass` when there is no finding of severity `error`, and every finding in field order
 */
export function reviewDraft(reg: SmsRegistration): Omit<SmsReviewResult, 'reviewedAt'> {
  const findings: SmsReviewFinding[] = [];
  const error = (field: string, code: string, message: string) => findings.push({ field, code, severity: 'error', message });
  const warning = (field: string, code: string, message: string) => findings.push({ field, code, severity: 'warning', message });
  const sole = reg.entityType === 'SOLE_PROPRIETOR';

  // Brand: mandatory fields per entity type.
  const required: (keyof SmsRegistration)[] = ['entityType'];
  if (!sole) required.push('legalName', 'ein', 'vertical', 'website');
  required.push('country', 'street', 'city', 'state', 'postalCode', 'supportEmail', 'phone', 'useCase', 'optInMethod', 'description', 'sample1', 'sample2', 'messageFlow', 'helpMessage');
  for (const f of required) {
    const v = reg[f];
    if (v === null || v === undefined || (typeof v === 'string' && v.trim() === '')) {
      error(f, 'required', sole && f === 'entityType' ? 'is required' : `is required before submission${f === 'ein' ? ' unless the entity type is SOLE_PROPRIETOR' : ''}`);
    }
  }
  if (sole && blank(reg.displayName) && blank(reg.legalName)) {
    error('displayName', 'required', 'a sole proprietor needs a display name (or legal name) recipients recognize');
  }
  if (reg.entityType === 'PUBLIC_PROFIT') {
    warning('entityType', 'stock_details_at_submit', 'a PUBLIC_PROFIT brand needs its stock symbol and exchange: send stockSymbol and stockExchange with POST /sms/submit');
  }
  if (!blank(reg.country) && reg.country !== 'US') {
    error('country', 'us_only', 'texting is US-only (spec "Limits"): the brand must be registered in the US');
  }
  if (!blank(reg.ein)) {
    const digits = reg.ein!.replace('-', '');
    if (!/^\d{9}$/.test(digits)) error('ein', 'ein_format', 'must be nine digits, as 12-3456789');
    else if (!EIN_PREFIXES.has(digits.slice(0, 2))) error('ein', 'ein_prefix', `prefix ${digits.slice(0, 2)} has never been assigned by the IRS`);
  }
  if (!blank(reg.supportEmail) && !blank(reg.website)) {
    const domain = reg.supportEmail!.split('@')[1]?.toLowerCase() ?? '';
    let host = '';
    try {
      host = new URL(reg.website!).hostname.toLowerCase().replace(/^www\./, '');
    } catch {
      host = '';
    }
    if (PUBLIC_EMAIL_DOMAINS.has(domain)) warning('supportEmail', 'public_email_domain', 'carriers prefer a support address on the brand\'s own domain');
    else if (host && domain && !(domain === host || domain.endsWith(`.${host}`) || host.endsWith(`.${domain}`))) {
      warning('supportEmail', 'email_domain_mismatch', `the email domain ${domain} differs from the website ${host}`);
    }
  }
  if (reg.usePolicyPage === false) {
    warning('usePolicyPage', 'privacy_policy_page', 'carriers expect a published privacy policy page that covers text messaging');
  }

  // Use case allowed for the entity type.
  if (reg.useCase && reg.entityType) {
    const allowed = USE_CASE_ENTITY_TYPES[reg.useCase];
    if (allowed && !allowed.includes(reg.entityType)) {
      error('useCase', 'use_case_entity_type', `${reg.useCase} is only available to ${allowed.join(', ')} brands`);
    } else if (!allowed && sole) {
      error('useCase', 'use_case_entity_type', 'a SOLE_PROPRIETOR brand must use the SOLE_PROPRIETOR use case');
    }
    if (reg.useCase === 'POLITICAL') warning('useCase', 'political_vetting', 'political campaigns also need a Campaign Verify token at submission');
    if (reg.useCase === 'SWEEPSTAKE') warning('useCase', 'special_vetting', 'sweepstakes campaigns go through carrier special review');
  }
  if (reg.vertical === 'GAMBLING') warning('vertical', 'restricted_vertical', 'gambling is restricted by most carriers and is often rejected');

  // Campaign text.
  const lengthCheck = (field: keyof SmsRegistration, min: number, max: number) => {
    const v = reg[field];
    if (typeof v !== 'string' || blank(v)) return false;
    if (v.trim().length < min) error(field, 'too_short', `must be at least ${min} characters (is ${v.trim().length})`);
    else if (v.length > max) error(field, 'too_long', `must be at most ${max} characters (is ${v.length})`);
    else return true;
    return false; // content checks of a text of the wrong length would only repeat the problem
  };
  lengthCheck('description', 40, 4096);
  if (lengthCheck('messageFlow', 40, 2048)) {
    const flow = reg.messageFlow!;
    const methodWords = reg.optInMethod ? OPT_IN_METHOD_WORDS[reg.optInMethod] : null;
    if (!/\b(opt(s|ed|ing)?[- ]?in|consent\w*|sign(s|ed)? up|subscribe\w*|enroll\w*)\b/i.test(flow) || (methodWords && !methodWords.test(flow))) {
      error('messageFlow', 'opt_in_method', `must say how recipients opt in${reg.optInMethod ? ` (${reg.optInMethod.toLowerCase().replace(/_/g, ' ')})` : ''}`);
    }
    if (!/\b(purpose|notifications?|alerts?|reminders?|updates?|offers?|promotions?|codes?|messages (about|regarding|for))\b/i.test(flow)) {
      error('messageFlow', 'purpose', 'must state the purpose of the messages recipients agree to');
    }
    if (!/\b(frequency|per (day|week|month|year)|a (day|week|month)|recurring|varies|one-time)\b/i.test(flow)) {
      error('messageFlow', 'frequency', 'must state the message frequency, e.g. "Message frequency varies"');
    }
    if (!/(msg|message)\s*(&|and)\s*data rates may apply/i.test(flow)) {
      error('messageFlow', 'rates_disclosure', 'must include "Msg & data rates may apply"');
    }
    if (!/\bprivacy\b/i.test(flow)) error('messageFlow', 'privacy_policy', 'must name (and link) the privacy policy');
  }
  const samples: [keyof SmsRegistration, string][] = [];
  for (const f of ['sample1', 'sample2'] as const) {
    if (lengthCheck(f, 20, 1024)) samples.push([f, reg[f]!]);
  }
  if (samples.length) {
    const names = [reg.displayName, reg.legalName].filter((n): n is string => !blank(n)).map((n) => n.trim().toLowerCase());
    if (names.length && !samples.some(([, s]) => names.some((n) => s.toLowerCase().includes(n)))) {
      error('sample1', 'sample_brand_name', 'at least one sample must name the brand');
    }
    if (!samples.some(([, s]) => OPT_OUT_RE.test(s))) {
      error('sample1', 'sample_opt_out', 'at least one sample must carry opt-out language, e.g. "Reply STOP to opt out"');
    }
    for (const [f, s] of samples) {
      const other = OTHER_TEMPLATE_RE.exec(s);
      if (other) error(f, 'template_field_format', `mark variable content in [square brackets], not ${other[0]}`);
      if (/\[\s*\]/.test(s)) error(f, 'template_field_format', 'a template field [..] must be named');
      const links = findLinks(s);
      if (links.length && reg.sendsLinks !== true) error(f, 'links_not_declared', `contains a link (${links[0]}) but sendsLinks is not true`);
      if (links.some((l) => SHORTENERS.test(l))) error(f, 'public_url_shortener', 'public URL shorteners are blocked by carriers; use a branded domain');
    }
    if (reg.sendsLinks === true && !samples.some(([, s]) => findLinks(s).length || /\[[^\]]*(link|url|website)[^\]]*\]/i.test(s))) {
      warning('sample2', 'link_sample_missing', 'sendsLinks is true: show a link in a sample so vetting sees it');
    }
  }
  if (lengthCheck('helpMessage', 20, 320)) {
    const h = reg.helpMessage!;
    if (!EMAIL_RE.test(h) && !PHONE_RE.test(h) && findLinks(h).length === 0) {
      error('helpMessage', 'help_contact', 'must give a contact: an email address, phone number or website');
    }
  }

  // Prohibited content anywhere recipients or vetting will read.
  for (const f of ['legalName', 'displayName', 'description', 'sample1', 'sample2', 'messageFlow', 'helpMessage'] as const) {
    const v = reg[f];
    if (typeof v !== 'string') continue;
    for (const { category, pattern } of PROHIBITED_CONTENT) {
      const m = pattern.exec(v);
      if (m) error(f, 'prohibited_content', `mentions "${m[0]}": ${category} content is not allowed on 10DLC`);
    }
  }

  return { verdict: findings.some((f) => f.severity === 'error') ? 'fail' : 'pass', findings };
}
