/**
 * Handing one queued text to the carrier (spec "SMS"; docs/sms.md "Numbers, consent and sending"), shared by
 * the `sms-message/{id}` workflow's delivery activity and the in-process answer to an inbound text: the send
 * is re-checked right before it goes out (the recipient may have opted out, the number may have been
 * disabled while the text was held) and handed to the provider once — the intent is recorded first
 * (services/effects.ts `performOnce`), and a retry looks the text up by our message id instead of sending it
 * again. When the provider cannot tell, the message is `failed` with error `provider_outcome_unknown`.
 */
import type { Db } from '../../db';
import { advanceMessage, getMessageRecord } from '../../db/repositories/smsMessages'
import type { SmsMessageRecord } from '../../db/repositories/smsMessages';
import { getContact } from '../../db/repositories/smsContacts';
import { getOwnedNumberByE164 } from '../../db/repositories/numbers';
import { getRegistration } from '../../db/repositories/smsRegistrations';
import { resolveIntent } from '../../db/repositories/providerIntents';
import { messageChanged, updatedEventRows } from '../../events/sms';
import { markReplySent } from '../../db/repositories/smsReplies';
import type { ProviderIntent } from '../../db/repositories/providerIntents';
import type { TelephonyAdapter } from '../../providers/telephony';
import { performOnce, type FaultHook } from '../effects';

/** How a delivery ended: `sent`, or `failed` with the reason. */
export interface DeliveryResult {
  status: 'sent' | 'failed';
  error: string | null;
}

/**
 * Delivers a queued (or held) text once. Idempotent: a sent or failed text answers its state.
 * @param telephony the carrier adapter (its `provider` names the intent's provider)
 * @param faults tests only: crash points of the provider write
 * @param opts.checkedNow the text was queued a moment ago by this process under every rule (an agent's
 *   answer delivered at once): the rules are not read again
 * @param opts.message the text as this process stored it a moment ago (not read again)
 */
export async function deliverText(db: Db, telephony: TelephonyAdapter, orgId: string, messageId: string, faults?: FaultHook, opts: { checkedNow?: boolean; message?: SmsMessageRecord } = {}): Promise<DeliveryResult> {
  const m = opts.message?.id === messageId ? opts.message : await getMessageRecord(db, orgId, messageId);
  if (!m) return { status: 'failed', error: 'message not found' };
  if (m.status === 'sent' || m.status === 'delivered') return { status: 'sent', error: null };
  if (m.status === 'failed') return { status: 'failed', error: m.error };
  const refuse = async (error: string) => {
    await advanceMessage(db, orgId, messageId, { status: 'failed', error }, messageChanged(orgId));
    return { status: 'failed' as const, error };
  };
  if (!opts.checkedNow) {
    const problem = await sendProblem(db, orgId, m);
    if (problem) return refuse(problem);
  }
  const effect = await sendOnce(db, telephony, orgId, m, faults);
  if (effect.state === 'unknown') return refuse('provider_outcome_unknown');
  await db.transaction(async (trx) => {
    await resolveIntent(trx, orgId, effect.intent.id, effect.result);
    await advanceMessage(trx, orgId, messageId, { status: 'sent', providerMessageId: effect.result.providerMessageId }, messageChanged(orgId));
  });
  await faults?.('after_record', 'sms_send', m.id);
  return { status: 'sent', error: null };
}

/**
 * Text `m` handed to the carrier once (services/effects.ts `performOnce`, kind `sms_send`, referenced by the message
 * id; the carrier's look-up by that id reconciles a retry after a crash).
 * @param recorded the send's intent when it was stored with the message
 */
function sendOnce(db: Db, telephony: TelephonyAdapter, orgId: string, m: SmsMessageRecord, faults?: FaultHook, recorded?: ProviderIntent) {
  return performOnce(db, orgId, {
    kind: 'sms_send',
    reference: m.id,
    subjectId: m.id,
    provider: telephony.provider,
    request: { from: m.from, to: m.to, length: m.body.length },
    perform: () => telephony.sendMessage(orgId, { from: m.from, to: m.to, body: m.body, mediaIds: m.mediaIds, reference: m.id }),
    lookup: () => telephony.findMessage(orgId, m.id),
    fault: faults,
    recorded,
  });
}

/**
 * Hands an agent's reply to the carrier right after {@link queueReplyWithIntent} stored it with its send's
 * intent (services/sms/answer.ts, in the process that received the text): asked once, then the intent, the
 * reply's `sent` and the inbound text's `answered` recorded in one statement (db/repositories/smsReplies.ts).
 * @param intent the pending intent stored with the reply (its reference is the reply's id)
 * @param faults tests only: crash points of the provider write
 * @throws what the carrier throws (the text stays `pending`; the caller hands it to `sms-reply/{id}`, whose
 *   delivery finds the intent and asks the carrier's look-up before sending again)
 */
export async function deliverQueuedReply(db: Db, telephony: TelephonyAdapter, orgId: string, reply: SmsMessageRecord, intent: ProviderIntent, inboundId: string, faults?: FaultHook): Promise<DeliveryResult> {
  const m = reply;
  const effect = await sendOnce(db, telephony, orgId, m, faults, intent);
  if (effect.state === 'unknown') {
    await advanceMessage(db, orgId, m.id, { status: 'failed', error: 'provider_outcome_unknown' }, messageChanged(orgId));
    return { status: 'failed', error: 'provider_outcome_unknown' };
  }
  const at = new Date().toISOString();
  const events = updatedEventRows([{ messageId: m.id, direction: 'outbound', status: 'sent', previousStatus: 'queued', from: m.from, to: m.to, body: m.body, attachmentIds: m.mediaIds, error: null, at }]);
  await markReplySent(db, orgId, { replyId: m.id, inboundId, intentId: effect.intent.id, providerMessageId: effect.result.providerMessageId, result: effect.result, at }, events);
  await faults?.('after_record', 'sms_send', m.id);
  return { status: 'sent', error: null };
}

/**
 * Why a queued text may not go out now, or null: the recipient opted out, the number is not SMS-enabled or
 * the registration is not active. A keyword reply (the one STOP/START confirmation, the HELP answer) always
 * answers the texter from the number they wrote to (CTIA): it goes to a number that has just opted out, from a
 * number whose SMS toggle is off, before the registration is active. Nothing else does.
 */
async function sendProblem(db: Db, orgId: string, m: { from: string; to: string; trigger: string | null }): Promise<string | null> {
  const keywordReply = m.trigger === 'keyword';
  if (keywordReply) return (await getOwnedNumberByE164(db, orgId, m.from)) ? null : 'number_not_sms_enabled';
  if ((await getContact(db, orgId, m.to))?.optedOut) return 'recipient_opted_out';
  const number = await getOwnedNumberByE164(db, orgId, m.from);
  if (!number || !number.smsEnabled) return 'number_not_sms_enabled';
  if ((await getRegistration(db, orgId))?.status !== 'active') return 'registration_not_active';
  return null;
}
