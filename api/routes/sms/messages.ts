/**
 * Sending texts (spec "SMS"; README "Numbers, consent and sending"): `POST /sms/messages` checks the
 * number, the registration, the recipient's consent and the attachments, then hands the text to
 * workflow `sms-message/{id}`, which holds agent-initiated texts to recipient-local quiet hours.
 */
import { parsePhoneNumberFromString } from 'libphonenumber-js';
import type { Handler } from '../../context';
import { e164Param, orgOf, requireTemporal, temporalUnavailable } from '../../http';
import { checkSendAttachments } from '../../sms/media';
import { ApiError } from '../../../domain/errors';
import { validateBody } from '../../../domain/validation';
import { quietHoursDecision } from '../../../domain/sms/quietHours';
import { messageChanged } from '../../../events/sms';
import { newId } from '../../../db/ids';
import { getRegistration } from '../../../db/repositories/smsRegistrations';
import { getContact } from '../../../db/repositories/smsContacts';
import { getOwnedNumberByE164 } from '../../../db/repositories/numbers';
import { advanceMessage, insertMessage } from '../../../db/repositories/smsMessages';
import { attachForMessage } from '../../../db/repositories/smsMedia';
import { startWorkflow, workflowIds } from '../../../temporal.config';
import type { SmsSendRequest } from '../../../schemas/types/sms';

/** True for a US (or US-territory) number. */
export function isUsNumber(e164: string): boolean {
  const p = parsePhoneNumberFromString(e164);
  return !!p && p.isValid() && ['US', 'PR', 'VI', 'GU', 'MP', 'AS'].includes(p.country ?? '');
}

/**
 * POST /sms/messages (sendSMSMessage, sms:send; Idempotency-Key honoured by api/middleware/idempotency.ts,
 * the response stored in the message's transaction): accepts one text (202) and starts `sms-message/{id}`.
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

  const trigger = body.trigger ?? 'agent';
  const exempt = trigger === 'reply' && reg.quietHoursRepliesExempt;
  const decision = exempt ? null : quietHoursDecision(to, new Date());
  const holdUntil = decision && !decision.allowed ? decision.sendAt.toISOString() : null;
  const id = newId('msg');
  const data = await db.transaction(async (trx) => {
    // `file_…` SMS uploads become attachments (`med_…`) first carried by this message (rolled back with it).
    const attached = await attachForMessage(trx, orgId, id, requestedMedia);
    if ('failedIndex' in attached) {
      throw new ApiError(404, 'media_not_found', `${requestedMedia[attached.failedIndex]} is no longer attachable`, { errors: [{ field: `mediaIds[${attached.failedIndex}]`, message: 'no text attachment or SMS upload with this id' }] });
    }
    const message = await insertMessage(trx, orgId, { id, direction: 'outbound', trigger, from, to, body: body.body, mediaIds: attached.mediaIds, status: 'queued' }, messageChanged(orgId));
    const data = { ...message, heldUntil: holdUntil };
    await ctx.state.idempotency?.complete(trx, 202, data);
    return data;
  });
  try {
    await startWorkflow(temporal, 'smsMessage', { workflowId: workflowIds.smsMessage(id), args: [{ orgId, messageId: id, holdUntil }], orgId, resourceId: id });
  } catch (err) {
    await advanceMessage(db, orgId, id, { status: 'failed', error: 'workflow_not_started' }, messageChanged(orgId));
    ctx.state.log.error({ err, orgId, messageId: id }, 'starting sms-message workflow failed');
    throw temporalUnavailable('The message could not be queued; send it again');
  }
  return { data, status: 202 };
};

/** Schemas of these operations (merged into the route table). */
export const routeSchemas = {
  sendSMSMessage: { requestSchema: 'SmsSendRequest', responseSchema: 'SmsMessage' },
};
