/**
 * Phone settings of the organization's numbers (scopes phone:read/write; paths decided in docs/api-notes.md
 * "Variables, escalation, onboarding, meta and settings"): voicemail, recording consent and business
 * hours with what a call outside them gets (the agent, voicemail, or an escalation destination).
 * `GET` answers the defaults until the first `PUT`.
 */
import type { Handler } from '../context';
import { ApiError, notFound, validationError, type FieldError } from '../../domain/errors';
import { orgOf } from '../http';
import { setAuditResource } from '../middleware/audit';
import { hoursErrors, isOpen } from '../../domain/settings/hours';
import { getNumber } from '../../db/repositories/numbers';
import { getPhoneSettings, putPhoneSettings as storePhoneSettings } from '../../db/repositories/phoneSettings';
import { existingDestinationIds } from '../../db/repositories/escalationDestinations';
import { destinationNotFound } from '../../services/settings/references';
import type { Db } from '../../db';
import { DEFAULT_PHONE_SETTINGS, DEFAULT_RECORDING_ANNOUNCEMENT, effectivePhoneSettings } from '../../domain/settings/phone';
import type { NumberPhoneSettings, PhoneSettings, PhoneSettingsPut } from '../../schemas/types/settings';

export { DEFAULT_PHONE_SETTINGS, DEFAULT_RECORDING_ANNOUNCEMENT } from '../../domain/settings/phone';

/** The number of the path, purchased by the organization. @throws 404 `number_not_found`; 409 `number_not_purchased` */
async function ownedNumber(db: Db, orgId: string, id: string) {
  const n = await getNumber(db, orgId, id);
  if (!n) throw notFound(`Number ${id}`, 'number_not_found');
  if (n.status !== 'purchased') throw new ApiError(409, 'number_not_purchased', `Number ${n.e164} is ${n.status}; purchase it first (POST /numbers/purchase)`);
  return n;
}

function view(n: { id: string; e164: string }, s: PhoneSettings, revision: number, updatedAt: string | null): NumberPhoneSettings {
  return { numberId: n.id, e164: n.e164, ...s, openNow: isOpen(s.businessHours.timeZone, s.businessHours.hours), revision, updatedAt };
}

/** Checks beyond the schema (only on a body whose shapes are right). */
function settingsChecks(b: Record<string, any>): FieldError[] {
  const bh = b.businessHours;
  if (!bh || typeof bh !== 'object') return [];
  const hours = Array.isArray(bh.hours) && bh.hours.every((h: any) => h && typeof h.open === 'string' && typeof h.close === 'string') ? bh.hours : null;
  const errors = hoursErrors(typeof bh.timeZone === 'string' ? bh.timeZone : undefined, hours, 'businessHours.');
  if (bh.afterHours === 'escalation' && !bh.escalationDestinationId) errors.push({ field: 'businessHours.escalationDestinationId', message: 'is required when afterHours is escalation' });
  return errors;
}

/** GET /numbers/{id}/settings (phone:read). */
export const getPhoneSettingsHandler: Handler = async (ctx, { db }) => {
  const orgId = orgOf(ctx);
  const n = await ownedNumber(db, orgId, ctx.params.id);
  const stored = await getPhoneSettings(db, orgId, n.id);
  return { data: stored ? view(n, effectivePhoneSettings(stored.settings), stored.revision, stored.updatedAt) : view(n, DEFAULT_PHONE_SETTINGS, 0, null) };
};

/**
 * PUT /numbers/{id}/settings (phone:write): replaces the settings.
 * @throws 400 naming `businessHours.timeZone`, `businessHours.hours[i].close` or a missing
 *   `businessHours.escalationDestinationId`; 404 `escalation_destination_not_found` naming it when it is
 *   not a destination of the organization
 */
export const putPhoneSettings: Handler = async (ctx, { db }) => {
  const orgId = orgOf(ctx);
  const body = ctx.request.body as unknown as PhoneSettingsPut;
  const errors = settingsChecks(body as unknown as Record<string, any>);
  if (errors.length) throw validationError(errors);
  const n = await ownedNumber(db, orgId, ctx.params.id);
  const dest = body.businessHours.escalationDestinationId;
  if (dest && !(await existingDestinationIds(db, orgId, [dest])).has(dest)) throw destinationNotFound('businessHours.escalationDestinationId', dest);
  const settings: PhoneSettings = {
    voicemail: body.voicemail,
    recordingConsent: { mode: body.recordingConsent.mode, announcement: body.recordingConsent.mode === 'none' ? null : (body.recordingConsent.announcement ?? DEFAULT_RECORDING_ANNOUNCEMENT) },
    businessHours: {
      ...body.businessHours,
      escalationDestinationId: body.businessHours.afterHours === 'escalation' ? dest : null,
      afterHoursMessage: body.businessHours.afterHours === 'message' ? (body.businessHours.afterHoursMessage ?? null) : null,
    },
  };
  const out = await storePhoneSettings(db, orgId, n.id, settings);
  setAuditResource(ctx, 'number', n.id);
  return { data: view(n, settings, out.revision, out.updatedAt) };
};

/** Handlers of this area by operationId. */
export const handlers = { getPhoneSettings: getPhoneSettingsHandler, putPhoneSettings };

/** Schemas of this area's operations (merged into the route table). */
export const routeSchemas = {
  getPhoneSettings: { responseSchema: 'NumberPhoneSettings' },
  putPhoneSettings: { requestSchema: 'PhoneSettingsPut', responseSchema: 'NumberPhoneSettings', bodyChecks: settingsChecks },
};
