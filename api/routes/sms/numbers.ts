/**
 * The SMS view of the organization's numbers (spec "SMS"; docs/sms.md "Numbers, consent and sending"):
 * `GET /sms/numbers` and the per-number SMS toggle `PUT /numbers/{id}/sms`.
 */
import type { Handler } from '../../context';
import { orgOf, pageParams, paged } from '../../http';
import { notFound } from '../../../domain/errors';
import { validateBody } from '../../../domain/validation';
import { getRegistration } from '../../../db/repositories/smsRegistrations';
import { listOwnedNumbers, setSmsEnabled } from '../../../db/repositories/numbers';
import type { SmsNumber, SmsNumberToggleRequest } from '../../../schemas/types/sms';

/** GET /sms/numbers (listSMSNumbers, sms:read): the organization's numbers with their SMS toggle and the registration status. */
export const listSMSNumbers: Handler = async (ctx, { db }) => {
  const orgId = orgOf(ctx);
  const page = pageParams(ctx);
  const reg = await getRegistration(db, orgId);
  const status = reg?.status ?? 'none';
  const numbers = await paged(() => listOwnedNumbers(db, orgId, page));
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

/** Schemas of these operations (merged into the route table). */
export const routeSchemas = {
  listSMSNumbers: { responseSchema: 'SmsNumberPage' },
  setNumberSMS: { requestSchema: 'SmsNumberToggleRequest', responseSchema: 'SmsNumber' },
};
