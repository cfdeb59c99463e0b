/**
 * SMS hub handlers. `PUT /sms` (saveSMSRegistration) and `GET /sms` (spec "Save the SMS registration
 * draft"): upsert of the organization's draft with generated campaign text; never contacts a carrier,
 * never charges.
 */
import { getRegistrationRecord, saveDraftIfVersion, saveDraftRecord } from '../../db/repositories/smsRegistrations';
import type { SmsRegistration, SmsRegistrationDraft } from '../../schemas/types/sms';
import { ApiError, validationError } from '../errors';
import type { Handler } from '../context';
import { mergeFieldErrors, schemaErrors } from '../validation';
import { checkDraftFormats } from '../sms/draftChecks';
import { CAMPAIGN_TEXT_FIELDS, generateCampaignText } from '../sms/campaignText';
import { hubHandlers, hubRouteSchemas } from '../sms/hubHandlers';
import { registrationChanged } from '../sms/smsEvents';

/** GET /sms: the registration, or 404 `sms_registration_not_found` before the first save. */
export const getSMSRegistration: Handler = async (ctx, { db, caches }) => {
  const orgId = ctx.state.auth!.orgId;
  const record = await caches.smsRegistrations.get(orgId, () => getRegistrationRecord(db, orgId));
  if (!record) {
    throw new ApiError(404, 'sms_registration_not_found', 'No SMS registration has been saved for this organization yet; save a draft with PUT /sms');
  }
  // A version never changes, so its envelope is serialized once.
  record.envelopeJson ??= JSON.stringify({ success: true, data: record.registration });
  return { rawJson: record.envelopeJson };
};

/**
 * Merges a validated request into the stored registration and fills in campaign text.
 * Missing text fields are generated; with `regenerate: true` all five are regenerated from the merged
 * brand details and use case, except the ones given explicitly in this request.
 * @returns the draft fields to store (API names)
 */
export function mergeDraft(body: SmsRegistrationDraft, current: SmsRegistration | undefined): Partial<SmsRegistrationDraft> {
  const { regenerate, ...fields } = body;
  const merged: Record<string, unknown> = { ...(current ?? {}) };
  for (const [k, v] of Object.entries(fields)) if (v !== undefined) merged[k] = v;
  const out: Record<string, unknown> = { ...fields };
  const text = generateCampaignText(merged as SmsRegistrationDraft);
  for (const f of CAMPAIGN_TEXT_FIELDS) {
    const given = fields[f] !== undefined && fields[f] !== null && fields[f] !== '';
    const missing = merged[f] === undefined || merged[f] === null || merged[f] === '';
    if (!given && (regenerate === true || missing)) out[f] = text[f];
  }
  if (fields.quietHoursRepliesExempt === undefined && !current) out.quietHoursRepliesExempt = true;
  return out as Partial<SmsRegistrationDraft>;
}

/**
 * PUT /sms: validates, then saves. The common path merges against the cached registration and joins
 * a batched update that writes only rows still at the cached version (group commit, one statement for
 * all saves in flight); a stale or missing copy falls back to the locking upsert. Either way a refused request writes nothing.
 */
export const saveSMSRegistration: Handler = async (ctx, { db, caches }) => {
  const orgId = ctx.state.auth!.orgId;
  const raw = ctx.request.body as unknown;
  const shapeErrors = schemaErrors('SmsRegistrationDraft', raw);
  if (shapeErrors.some((e) => e.field === '(body)')) throw validationError(shapeErrors);
  const body = raw as SmsRegistrationDraft;
  const compute = (current: SmsRegistration | undefined) => {
    const country = typeof body.country === 'string' ? body.country : body.country === null ? null : current?.country;
    const errors = mergeFieldErrors(shapeErrors, checkDraftFormats(body, country));
    if (errors.length) throw validationError(errors);
    return mergeDraft(body, current);
  };
  const cached = await caches.smsRegistrations.get(orgId, () => getRegistrationRecord(db, orgId));
  let record = cached ? await saveDraftIfVersion(db, orgId, cached.version, compute(cached.registration), cached.registration) : undefined;
  // Formats that depend on the stored country are re-checked under the row lock. A save that creates
  // the registration or returns it to draft emits `sms.registration.updated` there.
  record ??= await saveDraftRecord(db, orgId, compute, registrationChanged(orgId));
  caches.smsRegistrations.set(orgId, record);
  const saved = record.registration;
  return { data: saved };
};

/** Handlers of this area by operationId (api/routes/index.ts). */
export const handlers = { getSMSRegistration, saveSMSRegistration, ...hubHandlers };

/** Schemas of this area's operations (merged into the route table). */
export const routeSchemas = {
  getSMSRegistration: { responseSchema: 'SmsRegistration' },
  saveSMSRegistration: { requestSchema: 'SmsRegistrationDraft', responseSchema: 'SmsRegistration' },
  ...hubRouteSchemas,
};
