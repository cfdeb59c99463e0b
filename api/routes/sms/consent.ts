/**
 * Consent and opt-out (spec "SMS"; docs/sms.md "Numbers, consent and sending"; TCPA express consent, CTIA
 * opt-out): record and withdraw consent, the contact roster, the suppression list and the
 * proof-of-consent CSV export.
 */
import type { Handler } from '../../context';
import { e164Param, listHandler, orgOf } from '../../http';
import { notFound, validationError } from '../../../domain/errors';
import { validateBody } from '../../../domain/validation';
import { consentCsv } from '../../../domain/sms/consentCsv';
import { listConsentEvents, listContacts, recordConsent, withdrawConsent } from '../../../db/repositories/smsContacts';
import type { SmsConsentRequest } from '../../../schemas/types/sms';

/** PUT /sms/contacts/{e164}/consent (recordSMSConsent, sms:write): records express consent with source, time and proof. */
export const recordSMSConsent: Handler = async (ctx, { db }) => {
  const e164 = e164Param(ctx.params.e164);
  const body = validateBody<SmsConsentRequest>('SmsConsentRequest', ctx.request.body);
  const consentedAt = body.consentedAt ? new Date(body.consentedAt) : new Date();
  if (consentedAt.getTime() > Date.now() + 60_000) throw validationError([{ field: 'consentedAt', message: 'must not be in the future' }]);
  if (body.proofText.trim() === '') throw validationError([{ field: 'proofText', message: 'must not be blank' }]);
  const contact = await recordConsent(db, orgOf(ctx), e164, { source: body.source, consentedAt: consentedAt.toISOString(), proofText: body.proofText });
  return { data: contact };
};

/** DELETE /sms/contacts/{e164}/consent (withdrawSMSConsent, sms:write): withdraws consent; the contact is then suppressed. 404 for an unknown contact. */
export const withdrawSMSConsent: Handler = async (ctx, { db }) => {
  const e164 = e164Param(ctx.params.e164);
  const contact = await withdrawConsent(db, orgOf(ctx), e164);
  if (!contact) throw notFound('SMS contact', 'sms_contact_not_found');
  return { data: contact };
};

/** GET /sms/contacts (listSMSContacts, sms:read): the contact roster with consent and opt-out state. */
export const listSMSContacts: Handler = listHandler(listContacts);

/** GET /sms/opt-outs (listSMSOptOuts, sms:read): the suppression list (opted out by keyword or withdrawn consent). */
export const listSMSOptOuts: Handler = listHandler((db, orgId, page) => listContacts(db, orgId, { ...page, optedOutOnly: true }));

/**
 * GET /sms/consent-export (exportSMSConsent, sms:read): the proof-of-consent history as CSV
 * (`text/csv`, one row per consent event: e164, event, source, occurredAt, recordedAt, proofText).
 * Answers the CSV itself, not the JSON envelope.
 */
export const exportSMSConsent: Handler = async (ctx, { db }) => {
  const events = await listConsentEvents(db, orgOf(ctx));
  const csv = consentCsv(events);
  // Koa's documented escape hatch: write the response ourselves; the envelope step is then a no-op.
  ctx.respond = false;
  ctx.res.statusCode = 200;
  ctx.res.setHeader('Content-Type', 'text/csv; charset=utf-8');
  ctx.res.setHeader('Content-Disposition', 'attachment; filename="sms-consent.csv"');
  ctx.res.setHeader('Content-Length', Buffer.byteLength(csv));
  ctx.res.end(csv);
  return { data: null };
};

/** Schemas of these operations (merged into the route table). */
export const routeSchemas = {
  recordSMSConsent: { requestSchema: 'SmsConsentRequest', responseSchema: 'SmsContact' },
  withdrawSMSConsent: { responseSchema: 'SmsContact' },
  listSMSContacts: { responseSchema: 'SmsContactPage' },
  listSMSOptOuts: { responseSchema: 'SmsContactPage' },
};
