/**
 * The 10DLC registration (spec "SMS"; docs/sms.md "SMS registration draft" and "10DLC review, submission and
 * carrier callbacks"): `GET /sms` and `PUT /sms` (the draft: upsert with generated campaign text, never
 * contacts a carrier, never charges), `POST /sms/review` (the free compliance verdict) and
 * `POST /sms/submit` (starts workflow `sms-registration/{orgId}`).
 */
import { WorkflowExecutionAlreadyStartedError } from '@temporalio/client';
import type { Handler } from '../../context';
import { orgOf, requireTemporal, temporalUnavailable, workflowUiUrl } from '../../http';
import { ApiError, notFound, validationError } from '../../../domain/errors';
import { schemaErrors, validateBody } from '../../../domain/validation';
import { checkDraftFormats } from '../../../domain/sms/draftChecks';
import { CAMPAIGN_TEXT_FIELDS, generateCampaignText } from '../../../domain/sms/campaignText';
import { reviewDraft } from '../../../domain/sms/review';
import { registrationChanged } from '../../../events/sms';
import { markAuditStored, pendingAuditEntry } from '../../middleware/audit';
import { newId } from '../../../db/ids';
import type { Db } from '../../../db';
import {
  getRegistration,
  getRegistrationRecord,
  getSubmissionRecord,
  type RegistrationRecord,
  lockRegistration,
  markSubmitted,
  saveDraftIfVersion,
  saveDraftRecord,
  storeReview,
  transitionSubmission,
} from '../../../db/repositories/smsRegistrations';
import { FEES } from '../../../db/repositories/usage';
import { recordUsage } from '../../../services/billing/usage';
import { startWorkflow, workflowIds } from '../../../temporal.config';
import type { SmsRegistration, SmsRegistrationDraft, SmsReviewFinding, SmsReviewResult, SmsSubmitRequest } from '../../../schemas/types/sms';

/** GET /sms: the registration, or 404 `sms_registration_not_found` before the first save. */
export const getSMSRegistration: Handler = async (ctx, deps) => {
  const { db, caches } = deps;
  const orgId = orgOf(ctx);
  const record = caches.smsRegistrations.peek(orgId) ?? (await caches.smsRegistrations.get(orgId, () => getRegistrationRecord(db, orgId)));
  if (!record) {
    throw new ApiError(404, 'sms_registration_not_found', 'No SMS registration has been saved for this organization yet; save a draft with PUT /sms');
  }
  // A version never changes, and neither does the UI's address while the process runs, so its envelope is
  // serialized once, to the bytes the response sends (no encoding or length scan per request).
  let envelope = envelopes.get(record);
  if (!envelope) {
    envelope = Buffer.from(
      JSON.stringify({
        success: true,
        data: { ...record.registration, temporalUiUrl: record.registration.submittedAt ? workflowUiUrl(deps, workflowIds.smsRegistration(orgId)) : undefined },
      }),
    );
    envelopes.set(record, envelope);
  }
  return { rawJson: envelope };
};

/** The GET /sms envelope of each cached registration record (one per version; dropped with the record). */
const envelopes = new WeakMap<RegistrationRecord, Buffer>();

/**
 * Merges a validated request into the stored registration and fills in campaign text.
 * Missing text fields are generated; with `regenerate: true` all five are regenerated from the merged
 * brand details and use case, except the ones given explicitly in this request.
 * @returns the draft fields to store (API names)
 */
export function mergeDraft(body: SmsRegistrationDraft, current: SmsRegistration | undefined): Partial<SmsRegistrationDraft> {
  const { regenerate, ...fields } = body;
  const out: Record<string, unknown> = { ...fields };
  // The merged draft and its text are made only when a field takes the text: a save over a complete
  // draft keeps every stored text.
  let text: ReturnType<typeof generateCampaignText> | undefined;
  for (const f of CAMPAIGN_TEXT_FIELDS) {
    const given = fields[f] !== undefined && fields[f] !== null && fields[f] !== '';
    const value = fields[f] !== undefined ? fields[f] : current?.[f];
    const missing = value === undefined || value === null || value === '';
    if (!given && (regenerate === true || missing)) out[f] = (text ??= generateCampaignText(mergedDraft(fields, current)))[f];
  }
  if (fields.quietHoursRepliesExempt === undefined && !current) out.quietHoursRepliesExempt = true;
  return out as Partial<SmsRegistrationDraft>;
}

/** The stored registration with the request's given fields over it (undefined leaves a field alone). */
function mergedDraft(fields: Omit<SmsRegistrationDraft, 'regenerate'>, current: SmsRegistration | undefined): SmsRegistrationDraft {
  const merged: Record<string, unknown> = { ...(current ?? {}) };
  for (const [k, v] of Object.entries(fields)) if (v !== undefined) merged[k] = v;
  return merged as SmsRegistrationDraft;
}

/**
 * PUT /sms: validates, then saves. The body's shape was checked against `SmsRegistrationDraft` before
 * the handler (api/middleware/validate.ts); the formats that depend on the effective country are
 * checked here. The common path merges against the cached registration and joins a batched update
 * that writes only rows still at the cached version (group commit, one statement for all saves in
 * flight, each with its audit entry); a stale or missing copy falls back to the locking upsert. Either way a refused request writes nothing.
 */
export const saveSMSRegistration: Handler = async (ctx, { db, caches }) => {
  const orgId = orgOf(ctx);
  const raw = ctx.request.body as unknown;
  // Only a body no request schema checked (a direct call) can still be something other than an object.
  if (!raw || typeof raw !== 'object' || Array.isArray(raw)) throw validationError(schemaErrors('SmsRegistrationDraft', raw));
  const body = raw as SmsRegistrationDraft;
  const cached = caches.smsRegistrations.peek(orgId) ?? (await caches.smsRegistrations.get(orgId, () => getRegistrationRecord(db, orgId)));
  // The common path stores the request's audit entry in the save's own statement (one commit; api/middleware/audit.ts).
  const audit = cached && pendingAuditEntry(ctx, 200, cached.registration);
  let record = cached ? await saveDraftIfVersion(db, orgId, cached.version, checkedDraft(body, cached.registration), cached.registration, audit?.rec) : undefined;
  if (record && audit) markAuditStored(ctx, 200);
  // Formats that depend on the stored country are re-checked under the row lock. A save that creates
  // the registration or returns it to draft emits `sms.registration.updated` there.
  record ??= await saveDraftRecord(db, orgId, (current) => checkedDraft(body, current), registrationChanged(orgId));
  caches.smsRegistrations.set(orgId, record);
  const saved = record.registration;
  return { data: saved };
};

/**
 * The draft fields to store for `body` over `current`, after the format checks that depend on the
 * effective country (the request's, else the stored one).
 * @throws ApiError 400 validation_error naming each offending field
 */
function checkedDraft(body: SmsRegistrationDraft, current: SmsRegistration | undefined): Partial<SmsRegistrationDraft> {
  const country = typeof body.country === 'string' ? body.country : body.country === null ? null : current?.country;
  const errors = checkDraftFormats(body, country);
  if (errors.length) throw validationError(errors);
  return mergeDraft(body, current);
}

/** Search attribute carrying the organization on every SMS workflow (Temporal UI filter). */


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
 * POST /sms/submit (submitSMSRegistration, sms:write; Idempotency-Key honoured by
 * api/middleware/idempotency.ts, the response stored in the submission's transaction): reviews the
 * stored draft (422 `review_failed` with the findings), then marks it `submitted`, records the
 * registration fees once each, and starts workflow `sms-registration/{orgId}`.
 * Errors: 404 before the first save; 409 `registration_in_progress` when submitted/registered/active
 * (save the draft again to change it); 503 `temporal_unavailable` (nothing changed).
 */
export const submitSMSRegistration: Handler = async (ctx, deps) => {
  const { db } = deps;
  const orgId = orgOf(ctx);
  const body = validateBody<SmsSubmitRequest>('SmsSubmitRequest', ctx.request.body ?? {});
  // Review outside the transaction so a failing verdict is stored as the last one.
  const first = review(await registrationOr404(db, orgId), body);
  await storeReview(db, orgId, first);
  if (first.verdict === 'fail') throw reviewFailed(first);
  const temporal = requireTemporal(deps);

  const submissionId = newId('smssub');
  const saved = await db.transaction(async (trx) => {
    const reg = await lockRegistration(trx, orgId); // serializes submissions of the organization
    if (!reg) throw notFound('SMS registration', 'sms_registration_not_found');
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
    await ctx.state.idempotency?.complete(trx, 200, saved);
    return saved;
  });

  const workflowId = workflowIds.smsRegistration(orgId);
  const start = () => startWorkflow(temporal, 'smsRegistration', { workflowId, args: [{ orgId, submissionId }], orgId });
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
    ctx.state.log.error({ err, orgId }, 'starting sms-registration workflow failed');
    throw temporalUnavailable('The registration workflow could not be started; submit again');
  }
  return { data: saved };
};

/** Schemas of these operations (merged into the route table). */
export const routeSchemas = {
  getSMSRegistration: { responseSchema: 'SmsRegistration' },
  // Without the stored country, state and postal code are only checked when the body names the country.
  saveSMSRegistration: {
    requestSchema: 'SmsRegistrationDraft',
    responseSchema: 'SmsRegistration',
    bodyChecks: (b: Record<string, any>) => {
      const { state, postalCode, ...rest } = b;
      const country = typeof b.country === 'string' ? b.country : undefined;
      return checkDraftFormats((country ? b : rest) as SmsRegistrationDraft, country);
    },
  },
  reviewSMSRegistration: { responseSchema: 'SmsReviewResult' },
  submitSMSRegistration: { requestSchema: 'SmsSubmitRequest', responseSchema: 'SmsRegistration' },
};
