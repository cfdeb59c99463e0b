/**
 * SMS hub handlers beyond the draft save (issue 4): review, submit, provider callbacks, consent and
 * opt-out, the SMS view of numbers, and sending. Registered by api/routes/sms.ts.
 */
import { WorkflowExecutionAlreadyStartedError } from '@temporalio/client';
import { parsePhoneNumberFromString } from 'libphonenumber-js';
import type { AppContext, Handler } from '../context';
import { ApiError, notFound, validationError } from '../errors';
import { validateBody } from '../validation';
import { reviewDraft } from './review';
import { processProviderCallback, sha256Hex } from './callbacks';
import { e164Param, pageParams, requireTemporal, withCursor } from './http';
import { quietHoursDecision } from './quietHours';
import { messageChanged, registrationChanged } from './smsEvents';
import { SIGNATURE_HEADER } from './callbackSignature';
import { checkSendAttachments, mediaHandlers, mediaRouteSchemas } from './media';
import { newId } from '../../db/ids';
import { getRegistration, getSubmissionRecord, lockRegistration, markSubmitted, storeReview, transitionSubmission } from '../../db/repositories/smsRegistrations';
import { claimKey, completeKey, getStoredResponse, releaseKey, type StoredResponse } from '../../db/repositories/idempotency';
import { FEES, recordUsage } from '../../db/repositories/usage';
import { getContact, listConsentEvents, listContacts, recordConsent, withdrawConsent } from '../../db/repositories/smsContacts';
import { getOwnedNumberByE164, listOwnedNumbers, setSmsEnabled } from '../../db/repositories/numbers';
import { advanceMessage, insertMessage } from '../../db/repositories/smsMessages';
import { attachForMessage } from '../../db/repositories/smsMedia';
import { workflowIds, workflowSearchAttributes } from '../../temporal.config';
import type { SmsRegistrationInput } from '../../workflows/smsRegistration';
import type { SmsMessageInput } from '../../workflows/smsMessage';
import type {
  SmsConsentRequest,
  SmsNumber,
  SmsRegistration,
  SmsReviewFinding,
  SmsReviewResult,
  SmsSendRequest,
  SmsSubmitRequest,
  SmsNumberToggleRequest,
} from '../../schemas/types/sms';
import type { Db } from '../../db';

/** Search attribute carrying the organization on every SMS workflow (Temporal UI filter). */

const orgOf = (ctx: AppContext) => ctx.state.auth!.orgId;

async function registrationOr404(db: Db, orgId: string): Promise<SmsRegistration> {
  const reg = await getRegistration(db, orgId);
  if (!reg) throw new ApiError(404, 'sms_registration_not_found', 'No SMS registration has been saved for this organization yet; save a draft with PUT /sms');
  return reg;
}

/** The review of `reg`, plus the submit-time stock checks of a PUBLIC_PROFIT brand when `submit` is given. */
function review(reg: SmsRegistration, submit?: SmsSubmitRequest): SmsReviewResult {
  const r = reviewDraft(reg);
  let findings: SmsReviewFinding[] = r.findings;
  if (submit && reg.entityType === 'PUBLIC_PROFIT') {
    findings = findings.filter((f) => f.code !== 'stock_details_at_submit');
    if (!submit.stockSymbol) findings.push({ field: 'stockSymbol', code: 'required', severity: 'error', message: 'a PUBLIC_PROFIT brand must give its stock symbol with the submission' });
    if (!submit.stockExchange || submit.stockExchange === 'NONE') findings.push({ field: 'stockExchange', code: 'required', severity: 'error', message: 'a PUBLIC_PROFIT brand must give its stock exchange with the submission' });
  }
  return { verdict: findings.some((f) => f.severity === 'error') ? 'fail' : 'pass', findings, reviewedAt: new Date().toISOString() };
}

/**
 * POST /sms/review (reviewSMSRegistration, sms:write): the free compliance verdict on the stored draft,
 * also stored as the last verdict. Never contacts a carrier, never charges, never changes the status.
 */
export const reviewSMSRegistration: Handler = async (ctx, { db }) => {
  const orgId = orgOf(ctx);
  const reg = await registrationOr404(db, orgId);
  const result = review(reg);
  await storeReview(db, orgId, result);
  return { data: result };
};

function reviewFailed(result: SmsReviewResult): ApiError {
  const errors = result.findings.filter((f) => f.severity === 'error');
  return new ApiError(422, 'review_failed', `The draft fails the compliance review (${errors.length} error${errors.length === 1 ? '' : 's'}); fix them with PUT /sms and submit again`, {
    errors: errors.map((f) => ({ field: f.field, message: `${f.code}: ${f.message}` })),
    extra: { findings: result.findings, verdict: result.verdict },
  });
}

/**
 * POST /sms/submit (submitSMSRegistration, sms:write; Idempotency-Key honoured): reviews the stored
 * draft (422 `review_failed` with the findings), then marks it `submitted`, records the registration
 * fees once each, and starts workflow `sms-registration/{orgId}`.
 * Errors: 404 before the first save; 409 `registration_in_progress` when submitted/registered/active
 * (save the draft again to change it); 422 `idempotency_key_reused` for a key sent with another body;
 * 503 `temporal_unavailable` (nothing changed).
 */
export const submitSMSRegistration: Handler = async (ctx, deps) => {
  const { db } = deps;
  const orgId = orgOf(ctx);
  const body = validateBody<SmsSubmitRequest>('SmsSubmitRequest', ctx.request.body ?? {});
  const key = idempotencyKey(ctx);
  const requestHash = sha256Hex(JSON.stringify(body));
  if (key) {
    const prior = await getStoredResponse(db, orgId, 'submit', key);
    if (prior) return replay(prior, requestHash);
  }
  // Review outside the transaction so a failing verdict is stored as the last one.
  const first = review(await registrationOr404(db, orgId), body);
  await storeReview(db, orgId, first);
  if (first.verdict === 'fail') throw reviewFailed(first);
  const temporal = requireTemporal(deps);

  const submissionId = newId('smssub');
  const outcome = await db.transaction(async (trx) => {
    const reg = await lockRegistration(trx, orgId); // serializes submissions of the organization
    if (!reg) throw notFound('SMS registration', 'sms_registration_not_found');
    if (key && !(await claimKey(trx, orgId, 'submit', key, requestHash))) {
      return { replayed: (await getStoredResponse(trx, orgId, 'submit', key))! };
    }
    const again = review(reg, body); // the draft may have been saved since the first review
    if (again.verdict === 'fail') throw reviewFailed(again);
    if (reg.status === 'submitted' || reg.status === 'registered' || reg.status === 'active') {
      throw new ApiError(409, 'registration_in_progress', `The registration is already ${reg.status}; save the draft (PUT /sms) to change it, then submit again`, { extra: { status: reg.status } });
    }
    const saved = await markSubmitted(trx, orgId, { submissionId, stockSymbol: body.stockSymbol ?? null, stockExchange: body.stockExchange ?? null }, registrationChanged(orgId));
    const rec = await getSubmissionRecord(trx, orgId);
    for (const fee of [FEES.brandRegistration, FEES.campaignVetting]) {
      await recordUsage(trx, orgId, { kind: fee.kind, amountCents: fee.amountCents, dedupeKey: `${fee.kind}:${rec!.registrationId}`, details: { registrationId: rec!.registrationId, submissionId } });
    }
    if (key) await completeKey(trx, orgId, 'submit', key, 200, saved);
    return { saved };
  });
  if ('replayed' in outcome) return replay(outcome.replayed!, requestHash);

  const input: SmsRegistrationInput = { orgId, submissionId };
  const workflowId = workflowIds.smsRegistration(orgId);
  const start = () =>
    temporal.client.workflow.start('smsRegistration', {
      taskQueue: temporal.taskQueue,
      workflowId,
      args: [input],
      typedSearchAttributes: workflowSearchAttributes(orgId),
    });
  try {
    try {
      await start();
    } catch (err) {
      if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
      // A run of an earlier submission is still waiting: this submission replaces it.
      await temporal.client.workflow.getHandle(workflowId).terminate('resubmitted');
      await start();
    }
  } catch (err) {
    await transitionSubmission(db, orgId, submissionId, { status: 'failed', lastError: 'The registration workflow could not be started; submit again' }, registrationChanged(orgId));
    if (key) await releaseKey(db, orgId, 'submit', key);
    ctx.state.log.error({ err, orgId }, 'starting sms-registration workflow failed');
    throw new ApiError(503, 'temporal_unavailable', 'The registration workflow could not be started; submit again', { headers: { 'Retry-After': '30' } });
  }
  return { data: outcome.saved };
};

/** The request's Idempotency-Key, if any. @throws 400 validation_error for a malformed key */
function idempotencyKey(ctx: AppContext): string | undefined {
  const key = ctx.get('idempotency-key') || undefined;
  if (key !== undefined && (key.length > 255 || !/^[\x21-\x7e]+$/.test(key))) {
    throw validationError([{ field: 'Idempotency-Key', message: 'must be 1 to 255 visible ASCII characters' }]);
  }
  return key;
}

/**
 * The stored first response for a retried key.
 * @throws 422 `idempotency_key_reused` for another body; 409 `idempotency_key_in_progress` while the first request runs
 */
function replay(prior: StoredResponse, requestHash: string) {
  if (prior.requestHash !== requestHash) {
    throw new ApiError(422, 'idempotency_key_reused', 'This Idempotency-Key was used with a different request body');
  }
  if (prior.status === 0) throw new ApiError(409, 'idempotency_key_in_progress', 'A request with this Idempotency-Key is still being processed; retry shortly');
  return { data: prior.response, status: prior.status, headers: { 'Idempotent-Replayed': 'true' } };
}

/**
 * POST /sms/provider-callbacks/{provider} (receiveSMSProviderCallback, no API key): see
 * api/sms/callbacks.ts. Verifies the HMAC over the raw body (`ctx.request.rawBody`, set by koa-body's
 * `includeUnparsed`); without it, over the canonical re-serialization of the parsed JSON.
 */
export const receiveSMSProviderCallback: Handler = async (ctx, deps) => {
  const req = ctx.request as unknown as { rawBody?: string; body?: unknown };
  // The route is declared with auth 'none', so api/app.ts keeps the exact bytes the provider signed.
  const raw = typeof req.rawBody === 'string' ? req.rawBody : '';
  const result = await processProviderCallback(deps, ctx.params.provider, raw, ctx.get(SIGNATURE_HEADER) || undefined);
  return { data: result };
};

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
export const listSMSContacts: Handler = async (ctx, { db }) => {
  const page = pageParams(ctx);
  return { data: await withCursor(() => listContacts(db, orgOf(ctx), page)) };
};

/** GET /sms/opt-outs (listSMSOptOuts, sms:read): the suppression list (opted out by keyword or withdrawn consent). */
export const listSMSOptOuts: Handler = async (ctx, { db }) => {
  const page = pageParams(ctx);
  return { data: await withCursor(() => listContacts(db, orgOf(ctx), { ...page, optedOutOnly: true })) };
};

/**
 * One CSV field (RFC 4180). Free text (`freeText` true) that a spreadsheet would run as a formula
 * (leading = + - @ tab CR) is prefixed with `'` (OWASP CSV injection); validated values such as
 * E.164 numbers and timestamps are written as they are.
 */
export function csvField(v: string | null, freeText = true): string {
  if (v === null) return '';
  const safe = freeText && /^[=+\-@\t\r]/.test(v) ? `'${v}` : v;
  return /[",\r\n]/.test(safe) ? `"${safe.replace(/"/g, '""')}"` : safe;
}

/**
 * GET /sms/consent-export (exportSMSConsent, sms:read): the proof-of-consent history as CSV
 * (`text/csv`, one row per consent event: e164, event, source, occurredAt, recordedAt, proofText).
 * Answers the CSV itself, not the JSON envelope.
 */
export const exportSMSConsent: Handler = async (ctx, { db }) => {
  const events = await listConsentEvents(db, orgOf(ctx));
  const lines = ['e164,event,source,occurredAt,recordedAt,proofText'];
  for (const e of events) {
    lines.push([csvField(e.e164, false), csvField(e.event, false), csvField(e.source), csvField(e.occurredAt, false), csvField(e.recordedAt, false), csvField(e.proofText)].join(','));
  }
  const csv = lines.join('\r\n') + '\r\n';
  // Koa's documented escape hatch: write the response ourselves; the envelope step is then a no-op.
  ctx.respond = false;
  ctx.res.statusCode = 200;
  ctx.res.setHeader('Content-Type', 'text/csv; charset=utf-8');
  ctx.res.setHeader('Content-Disposition', 'attachment; filename="sms-consent.csv"');
  ctx.res.setHeader('Content-Length', Buffer.byteLength(csv));
  ctx.res.end(csv);
  return { data: null };
};

/** GET /sms/numbers (listSMSNumbers, sms:read): the organization's numbers with their SMS toggle and the registration status. */
export const listSMSNumbers: Handler = async (ctx, { db }) => {
  const orgId = orgOf(ctx);
  const page = pageParams(ctx);
  const reg = await getRegistration(db, orgId);
  const status = reg?.status ?? 'none';
  const numbers = await withCursor(() => listOwnedNumbers(db, orgId, page));
  const items: SmsNumber[] = numbers.items.map((n) => ({ id: n.id, e164: n.e164, smsEnabled: n.smsEnabled, registrationStatus: status, canSend: n.smsEnabled && status === 'active' }));
  return { data: { ...numbers, items } };
};

/** PUT /numbers/{id}/sms (setNumberSMS, sms:write): turns SMS on or off for a purchased number. 404 for another organization's or an unpurchased number. */
export const setNumberSMS: Handler = async (ctx, { db }) => {
  const orgId = orgOf(ctx);
  const body = validateBody<SmsNumberToggleRequest>('SmsNumberToggleRequest', ctx.request.body);
  const n = await setSmsEnabled(db, orgId, ctx.params.id, body.enabled);
  if (!n) throw notFound('Number', 'number_not_found');
  const reg = await getRegistration(db, orgId);
  const status = reg?.status ?? 'none';
  const data: SmsNumber = { id: n.id, e164: n.e164, smsEnabled: n.smsEnabled, registrationStatus: status, canSend: n.smsEnabled && status === 'active' };
  return { data };
};

/** True for a US (or US-territory) number. */
export function isUsNumber(e164: string): boolean {
  const p = parsePhoneNumberFromString(e164);
  return !!p && p.isValid() && ['US', 'PR', 'VI', 'GU', 'MP', 'AS'].includes(p.country ?? '');
}

/**
 * POST /sms/messages (sendSMSMessage, sms:send; Idempotency-Key honoured): accepts one text (202) and
 * starts `sms-message/{id}`.
 * Refusals: 404 `number_not_found` (not the organization's purchased number); 409
 * `number_not_sms_enabled`; 409 `registration_not_active`; 422 `recipient_not_us`; 409
 * `recipient_opted_out`; attachments (`mediaIds`, spec "Scope rules" 3) as api/sms/media.ts
 * checkSendAttachments says (400 / 404 `media_not_found` / 404 `file_expired` / 422). Agent-initiated
 * texts are held to recipient-local 8am–9pm; replies skip the window unless the registration's
 * `quietHoursRepliesExempt` is false.
 */
export const sendSMSMessage: Handler = async (ctx, deps) => {
  const { db } = deps;
  const orgId = orgOf(ctx);
  const body = validateBody<SmsSendRequest>('SmsSendRequest', ctx.request.body);
  const from = e164Param(body.from, 'from');
  let to: string;
  try {
    to = e164Param(body.to, 'to');
  } catch {
    throw new ApiError(422, 'recipient_not_us', 'The recipient must be a valid US number in E.164 (texting is US-only)', { errors: [{ field: 'to', message: 'must be a US number in E.164' }] });
  }
  if (!isUsNumber(to)) throw new ApiError(422, 'recipient_not_us', 'Texting is US-only: the recipient is not a US number', { errors: [{ field: 'to', message: 'must be a US number' }] });
  const number = await getOwnedNumberByE164(db, orgId, from);
  if (!number) throw new ApiError(404, 'number_not_found', `${from} is not a number of this organization`);
  if (!number.smsEnabled) throw new ApiError(409, 'number_not_sms_enabled', `${from} is not SMS-enabled; enable it with PUT /numbers/${number.id}/sms`);
  const reg = await getRegistration(db, orgId);
  if (reg?.status !== 'active') throw new ApiError(409, 'registration_not_active', `The 10DLC registration is ${reg?.status ?? 'not saved'}; texts can be sent once it is active`);
  const contact = await getContact(db, orgId, to);
  if (contact?.optedOut) throw new ApiError(409, 'recipient_opted_out', 'The recipient opted out (STOP) or withdrew consent');
  const requestedMedia = await checkSendAttachments(db, orgId, body.mediaIds);
  const temporal = requireTemporal(deps);
  const key = idempotencyKey(ctx);
  const requestHash = sha256Hex(JSON.stringify(body));
  if (key) {
    const prior = await getStoredResponse(db, orgId, 'message', key);
    if (prior) return replay(prior, requestHash);
  }

  const trigger = body.trigger ?? 'agent';
  const exempt = trigger === 'reply' && reg.quietHoursRepliesExempt;
  const decision = exempt ? null : quietHoursDecision(to, new Date());
  const holdUntil = decision && !decision.allowed ? decision.sendAt.toISOString() : null;
  const id = newId('msg');
  const created = await db.transaction(async (trx) => {
    if (key && !(await claimKey(trx, orgId, 'message', key, requestHash))) return { replayed: (await getStoredResponse(trx, orgId, 'message', key))! };
    // `file_…` SMS uploads become attachments (`med_…`) first carried by this message (rolled back with it).
    const attached = await attachForMessage(trx, orgId, id, requestedMedia);
    if ('failedIndex' in attached) {
      throw new ApiError(404, 'media_not_found', `${requestedMedia[attached.failedIndex]} is no longer attachable`, { errors: [{ field: `mediaIds[${attached.failedIndex}]`, message: 'no text attachment or SMS upload with this id' }] });
    }
    return { message: await insertMessage(trx, orgId, { id, direction: 'outbound', trigger, from, to, body: body.body, mediaIds: attached.mediaIds, status: 'queued' }, messageChanged(orgId)) };
  });
  if ('replayed' in created) return replay(created.replayed!, requestHash);
  const input: SmsMessageInput = { orgId, messageId: id, holdUntil };
  try {
    await temporal.client.workflow.start('smsMessage', {
      taskQueue: temporal.taskQueue,
      workflowId: workflowIds.smsMessage(id),
      args: [input],
      typedSearchAttributes: workflowSearchAttributes(orgId),
    });
  } catch (err) {
    await advanceMessage(db, orgId, id, { status: 'failed', error: 'workflow_not_started' }, messageChanged(orgId));
    if (key) await releaseKey(db, orgId, 'message', key);
    ctx.state.log.error({ err, orgId, messageId: id }, 'starting sms-message workflow failed');
    throw new ApiError(503, 'temporal_unavailable', 'The message could not be queued; send it again', { headers: { 'Retry-After': '30' } });
  }
  const data = { ...created.message, heldUntil: holdUntil };
  if (key) await completeKey(db, orgId, 'message', key, 202, data);
  return { data, status: 202 };
};

/** Handlers of the SMS hub by operationId. */
export const hubHandlers = {
  reviewSMSRegistration,
  submitSMSRegistration,
  receiveSMSProviderCallback,
  recordSMSConsent,
  withdrawSMSConsent,
  listSMSContacts,
  listSMSOptOuts,
  exportSMSConsent,
  listSMSNumbers,
  setNumberSMS,
  sendSMSMessage,
  ...mediaHandlers,
};

/** Schemas of the SMS hub operations. */
export const hubRouteSchemas = {
  reviewSMSRegistration: { responseSchema: 'SmsReviewResult' },
  submitSMSRegistration: { requestSchema: 'SmsSubmitRequest', responseSchema: 'SmsRegistration' },
  receiveSMSProviderCallback: { responseSchema: 'SmsProviderCallbackResult' },
  recordSMSConsent: { requestSchema: 'SmsConsentRequest', responseSchema: 'SmsContact' },
  withdrawSMSConsent: { responseSchema: 'SmsContact' },
  listSMSContacts: { responseSchema: 'SmsContactPage' },
  listSMSOptOuts: { responseSchema: 'SmsContactPage' },
  listSMSNumbers: { responseSchema: 'SmsNumberPage' },
  setNumberSMS: { requestSchema: 'SmsNumberToggleRequest', responseSchema: 'SmsNumber' },
  sendSMSMessage: { requestSchema: 'SmsSendRequest', responseSchema: 'SmsMessage' },
  ...mediaRouteSchemas,
};
