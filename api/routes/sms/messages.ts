/**
 * Sending texts (spec "SMS"; docs/sms.md "Numbers, consent and sending"): `POST /sms/messages` checks the
 * number, the registration, the recipient's consent and the attachments, then hands the text to
 * workflow `sms-message/{id}`, which holds agent-initiated texts to recipient-local quiet hours.
 */
import type { Handler } from '../../context';
import { e164Param, orgOf } from '../../http';
import { checkSendAttachments } from '../../sms/media';
import { ApiError } from '../../../domain/errors';
import { validateBody } from '../../../domain/validation';
import { queueText } from '../../../services/sms/send';
import type { SmsSendRequest } from '../../../schemas/types/sms';

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
  const orgId = orgOf(ctx);
  const body = validateBody<SmsSendRequest>('SmsSendRequest', ctx.request.body);
  const from = e164Param(body.from, 'from');
  let to: string;
  try {
    to = e164Param(body.to, 'to');
  } catch {
    throw new ApiError(422, 'recipient_not_us', 'The recipient must be a valid US number in E.164 (texting is US-only)', { errors: [{ field: 'to', message: 'must be a US number in E.164' }] });
  }
  try {
    const data = await queueText(deps.db, deps.temporal, orgId, { from, to, body: body.body, trigger: body.trigger ?? 'agent', checkMedia: () => checkSendAttachments(deps.db, orgId, body.mediaIds) }, (trx, data) =>
      ctx.state.idempotency?.complete(trx, 202, data) ?? Promise.resolve(),
    );
    return { data, status: 202 };
  } catch (err) {
    if ((err as ApiError).code === 'temporal_unavailable') ctx.state.log.error({ err, orgId }, 'starting sms-message workflow failed');
    throw err;
  }
};

/** Schemas of these operations (merged into the route table). */
export const routeSchemas = {
  sendSMSMessage: { requestSchema: 'SmsSendRequest', responseSchema: 'SmsMessage' },
};
