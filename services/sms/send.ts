/**
 * Queueing one outbound text (spec "SMS"; docs/sms.md "Numbers, consent and sending"), shared by
 * `POST /sms/messages` and the `send_sms` skill of the conversation runtime, so every rule applies to
 * both: the sending number is the organization's and SMS-enabled, the 10DLC registration is active, the
 * recipient is a US number that has not opted out, and agent-initiated texts are held to
 * recipient-local quiet hours by workflow `sms-message/{id}`.
 */
import type { Knex } from 'knex';
import { parsePhoneNumberFromString } from 'libphonenumber-js';
import type { Client } from '@temporalio/client';
import { ApiError, temporalUnavailable } from '../../domain/errors';
import { quietHoursDecision } from '../../domain/sms/quietHours';
import { messageChanged } from '../../events/sms';
import type { Db } from '../../db';
import { newId } from '../../db/ids';
import { getRegistration } from '../../db/repositories/smsRegistrations';
import { getContact } from '../../db/repositories/smsContacts';
import { getOwnedNumberByE164 } from '../../db/repositories/numbers';
import { advanceMessage, insertMessage } from '../../db/repositories/smsMessages';
import { attachForMessage } from '../../db/repositories/smsMedia';
import { startWorkflow, workflowIds } from '../../temporal.config';
import type { SmsMessage } from '../../schemas/types/sms';

/** True for a US (or US-territory) number. */
export function isUsNumber(e164: string): boolean {
  const p = parsePhoneNumberFromString(e164);
  return !!p && p.isValid() && ['US', 'PR', 'VI', 'GU', 'MP', 'AS'].includes(p.country ?? '');
}

/** One text to queue; numbers in E.164. */
export interface TextToQueue {
  from: string;
  to: string;
  body: string;
  /** `agent` (held to quiet hours), `reply` (exempt when the registration says so) or `keyword`. */
  trigger: 'agent' | 'reply';
  /** Checks the requested attachments after the number, registration and consent checks (docs/sms.md "Text attachments"); returns their ids. */
  checkMedia?: () => Promise<string[]>;
  /** An agent's reply: the inbound text it answers (one reply per text) and the agent's conversation. */
  replyTo?: { messageId: string; conversationId: string };
  /**
   * The number, registration and recipient the caller read for this send a moment ago (the agent's answer
   * checks them before its model runs): the same rules are applied to them, without reading them again.
   */
  checked?: {
    number: Awaited<ReturnType<typeof getOwnedNumberByE164>>;
    registration: Awaited<ReturnType<typeof getRegistration>>;
    contact: Awaited<ReturnType<typeof getContact>>;
  };
  /**
   * `caller`: the caller's own workflow delivers the text (the agent's `sms-reply/{id}`, which runs the same
   * steps as `sms-message/{id}`), so no workflow is started here. Default `workflow`.
   */
  delivery?: 'workflow' | 'caller';
}

/**
 * Checks the rules, stores the message (`queued`) and starts `sms-message/{id}`.
 * @param inTransaction runs inside the message's transaction (the Idempotency-Key's response is stored there)
 * @returns the stored message and, when quiet hours hold it, the ISO time it will be sent
 * @throws ApiError 404 `number_not_found`, 409 `number_not_sms_enabled`, 409 `registration_not_active`,
 *   422 `recipient_not_us`, 409 `recipient_opted_out`, 404 `media_not_found`, 503 `temporal_unavailable`
 */
export async function queueText(
  db: Db,
  temporal: { client: Client; taskQueue: string } | undefined,
  orgId: string,
  text: TextToQueue,
  inTransaction?: (trx: Knex.Transaction, data: SmsMessage & { heldUntil: string | null }) => Promise<unknown>,
): Promise<SmsMessage & { heldUntil: string | null }> {
  const { requestedMedia, holdUntil } = await checkText(db, temporal, orgId, text);
  const { from, to } = text;
  const id = newId('msg');
  const data = await db.transaction(async (trx) => {
    // `file_…` SMS uploads become attachments (`med_…`) first carried by this message (rolled back with it).
    const attached = await attachForMessage(trx, orgId, id, requestedMedia);
    if ('failedIndex' in attached) {
      throw new ApiError(404, 'media_not_found', `${requestedMedia[attached.failedIndex]} is no longer attachable`, { errors: [{ field: `mediaIds[${attached.failedIndex}]`, message: 'no text attachment or SMS upload with this id' }] });
    }
    const message = await insertMessage(
      trx,
      orgId,
      { id, direction: 'outbound', trigger: text.trigger, from, to, body: text.body, mediaIds: attached.mediaIds, status: 'queued', replyTo: text.replyTo?.messageId, conversationId: text.replyTo?.conversationId },
      messageChanged(orgId),
    );
    const data = { ...message, heldUntil: holdUntil };
    if (inTransaction) await inTransaction(trx, data);
    return data;
  });
  if (text.delivery === 'caller' || !temporal) return data;
  try {
    await startWorkflow(temporal, 'smsMessage', { workflowId: workflowIds.smsMessage(id), args: [{ orgId, messageId: id, holdUntil }], orgId, resourceId: id });
  } catch {
    await advanceMessage(db, orgId, id, { status: 'failed', error: 'workflow_not_started' }, messageChanged(orgId));
    throw temporalUnavailable('The message could not be queued; send it again');
  }
  return data;
}

/**
 * The rules every text is queued under (see {@link queueText}) and the quiet-hours decision.
 * @returns the attachments asked for, checked, and the ISO instant the text is held until (null: send now)
 * @throws ApiError as {@link queueText}
 */
export async function checkText(
  db: Db,
  temporal: { client: Client; taskQueue: string } | undefined,
  orgId: string,
  text: TextToQueue,
): Promise<{ requestedMedia: string[]; holdUntil: string | null }> {
  const { from, to } = text;
  if (!isUsNumber(to)) throw new ApiError(422, 'recipient_not_us', 'Texting is US-only: the recipient is not a US number', { errors: [{ field: 'to', message: 'must be a US number' }] });
  const number = text.checked?.number ?? (await getOwnedNumberByE164(db, orgId, from));
  if (!number) throw new ApiError(404, 'number_not_found', `${from} is not a number of this organization`);
  if (!number.smsEnabled) throw new ApiError(409, 'number_not_sms_enabled', `${from} is not SMS-enabled; enable it with PUT /numbers/${number.id}/sms`);
  const reg = text.checked ? text.checked.registration : await getRegistration(db, orgId);
  if (reg?.status !== 'active') throw new ApiError(409, 'registration_not_active', `The 10DLC registration is ${reg?.status ?? 'not saved'}; texts can be sent once it is active`);
  const contact = text.checked ? text.checked.contact : await getContact(db, orgId, to);
  if (contact?.optedOut) throw new ApiError(409, 'recipient_opted_out', 'The recipient opted out (STOP) or withdrew consent');
  const requestedMedia = text.checkMedia ? await text.checkMedia() : [];
  if (!temporal && text.delivery !== 'caller') throw temporalUnavailable();

  const exempt = text.trigger === 'reply' && reg.quietHoursRepliesExempt;
  const decision = exempt ? null : quietHoursDecision(to, new Date());
  const holdUntil = decision && !decision.allowed ? decision.sendAt.toISOString() : null;
  return { requestedMedia, holdUntil };
}
