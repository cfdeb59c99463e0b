/**
 * Agents answer texts (spec Scope rules 1: conversations are "voice, chat and SMS"; docs/sms.md "Agents
 * answer texts"). An inbound text to a number assigned to an agent runs one turn of the agent's published
 * version in the agent's `sms` conversation with the sender — one conversation per agent and counterpart,
 * resumed while open, ended `idle` once the agent's SMS idle timeout passed — and the reply goes out
 * through {@link queueText}, the path every text takes, with every SMS rule (delivered by the `sms-reply/{id}`
 * workflow itself, with the steps of `sms-message/{id}`):
 * - a STOP/START/HELP keyword is never answered by the model (the keyword handler answers it, CTIA);
 * - nothing is sent to a sender who opted out; the number must be SMS-enabled and the 10DLC registration
 *   active (checked before the model runs, so a text that cannot be answered costs no turn);
 * - quiet hours apply to the reply unless the registration exempts replies (`quietHoursRepliesExempt`);
 * - the reply is cut at a sentence boundary to the agent's `smsMaxSegments` (default 3; 3GPP TS 23.040
 *   segments), and its segments are charged as usage `sms_segments`.
 * Idempotent for Temporal's retries: the inbound text records its conversation and the reply its turn
 * produced before the reply is queued, and the reply names the text it answers (unique), so a retry
 * neither runs a second turn nor sends a second reply.
 */
import type { Client } from '@temporalio/client';
import type { Db } from '../../db';
import { isUniqueViolation } from '../../db/repositories/agents';
import { findOpenSmsConversation, getConversation, recentMessages, type ConversationRecord } from '../../db/repositories/conversations';
import { findOpenSmsConversationAndContact, type SenderState } from '../../db/repositories/smsConversations';
import type { ConversationMessage } from '../../schemas/types/chat';
import { getOwnedNumberByE164 } from '../../db/repositories/numbers';
import type { PhoneNumber } from '../../schemas/types/numbers';
import type { SmsRegistration } from '../../schemas/types/sms';
import { getContact } from '../../db/repositories/smsContacts';
import { findReplyTo, getMessageRecord, pendingAnswers, setInboundAnswer, settleInboundAnswer, settleInboundAnswers, type SmsMessageRecord } from '../../db/repositories/smsMessages';
import type { TelephonyAdapter } from '../../providers/telephony';
import { startWorkflow, workflowIds } from '../../temporal.config';
import { deliverQueuedReply, deliverText, type DeliveryResult } from './deliver';
import { getRegistration } from '../../db/repositories/smsRegistrations';
import { ApiError } from '../../domain/errors';
import { parseInboundKeyword } from '../../domain/sms/keywords';
import { countSegments, fitToSegments } from '../../domain/sms/segments';
import { feeOf, PRICES } from '../../domain/billing/prices';
import type { CompiledAgent } from '../../domain/agents/compile';
import { conversationLimits, DEFAULT_CONVERSATION_LIMITS } from '../../domain/conversations/limits';
import { recordUsage } from '../billing/usage';
import { settleSoon } from '../billing/settle';
import { finishConversation, HISTORY_MESSAGES, pinnedAgent, sendMessage, startConversation, type ConversationDeps } from '../conversations/service';
import { checkText, queueText } from './send';
import { newId } from '../../db/ids';
import { updatedEventRows } from '../../events/sms';
import { queueReplyWithIntent } from '../../db/repositories/smsReplies';
import type { ProviderIntent } from '../../db/repositories/providerIntents';

/** Segments of an agent's SMS reply when the agent names none (domain/conversations/limits.ts). */
export const DEFAULT_SMS_MAX_SEGMENTS = DEFAULT_CONVERSATION_LIMITS.smsMaxSegments;

/** Seconds of silence after which an agent's SMS conversation ends (`idle`) when the agent names none. */
export const DEFAULT_SMS_IDLE_TIMEOUT_SECONDS = DEFAULT_CONVERSATION_LIMITS.smsIdleTimeoutSeconds;

/** Usage kind and price of the segments of an agent's reply. */
const SEGMENT_FEE = feeOf(PRICES.smsSegments);

/** What became of an inbound text. */
export type InboundAnswer =
  | { answered: true; replyMessageId: string; conversationId: string; segments: number; heldUntil: string | null; reply?: SmsMessageRecord; intent?: ProviderIntent }
  | { answered: false; reason: 'not_found' | 'keyword' | 'no_agent' | 'agent_not_published' | 'recipient_opted_out' | 'number_not_sms_enabled' | 'registration_not_active' | 'no_reply' | 'already_answered' | string };

/**
 * The agent's SMS settings: its compiled `smsMaxSegments` and `smsIdleTimeoutSeconds` (domain/conversations/limits.ts;
 * the defaults in a version published before they existed).
 */
export function smsSettingsOf(agent: Partial<CompiledAgent>): { maxSegments: number; idleTimeoutSeconds: number } {
  const limits = conversationLimits(agent);
  return { maxSegments: limits.smsMaxSegments, idleTimeoutSeconds: limits.smsIdleTimeoutSeconds };
}

/**
 * What the caller read or wrote a moment ago and need not be read again: the inbound text as stored (its callback's
 * transaction) and the number it was sent to (the callback's lookup of its owner).
 */
export interface KnownRecords {
  message?: SmsMessageRecord;
  number?: PhoneNumber;
  /** The organization's registration through a read cache the change feed keeps coherent (api/app.ts). */
  registration?: () => Promise<SmsRegistration | undefined>;
}

/**
 * Answers one inbound text with the agent of the number it was sent to.
 * @param deps the conversation runtime's ports and a Temporal client (the reply starts `sms-message/{id}`)
 * @param now the current time (idle timeouts), ms since the epoch
 * @returns the reply queued, or why there is none
 * @throws LLM failures (502/503 ApiError) and database errors: the caller retries
 */
export async function answerInboundText(
  deps: ConversationDeps & { temporal?: { client: Client; taskQueue: string } },
  orgId: string,
  messageId: string,
  now = Date.now(),
  opts: { settleAnswered?: boolean; known?: KnownRecords; sendVia?: string } = {},
): Promise<InboundAnswer> {
  const answer = await composeAnswer(deps, orgId, messageId, now, opts.known, opts.sendVia);
  // The owed answer ends here when there is none, or (the workflow, which delivers durably) when it is queued.
  if (!answer.answered && answer.reason !== 'not_found') await settleInboundAnswer(deps.db, orgId, messageId, 'declined', answer.reason);
  else if (answer.answered && opts.settleAnswered) await settleInboundAnswer(deps.db, orgId, messageId, 'answered');
  return answer;
}

/**
 * Answers an inbound text in the process that received it (the API, right after the provider's callback
 * was stored): the turn, then the reply handed to the carrier at once — or, held to quiet hours, to
 * `sms-message/{id}`'s durable timer. The text stays `pending` until then, so a process that dies midway
 * leaves it to {@link recoverPendingAnswers}.
 * @returns the answer and, when the reply went out now, its delivery
 * @throws what the turn or the delivery threw (the caller hands the text to the workflow)
 */
export async function answerAndDeliver(
  deps: ConversationDeps & { temporal?: { client: Client; taskQueue: string }; telephony: TelephonyAdapter },
  orgId: string,
  messageId: string,
  known?: KnownRecords,
): Promise<{ answer: InboundAnswer; delivery?: DeliveryResult }> {
  // A reply sent now is stored with its send's intent (db/repositories/smsReplies.ts); a held one is not.
  const answer = await answerInboundText(deps, orgId, messageId, Date.now(), { known, sendVia: deps.telephony.provider });
  if (!answer.answered) return { answer };
  if (answer.intent && answer.reply && !answer.heldUntil) {
    return { answer, delivery: await deliverQueuedReply(deps.db, deps.telephony, orgId, answer.reply, answer.intent, messageId) };
  }
  if (answer.heldUntil) {
    if (!deps.temporal) return { answer }; // stays pending: the recovery sweep's workflow holds it once Temporal is back
    await startWorkflow(deps.temporal, 'smsMessage', { workflowId: workflowIds.smsMessage(answer.replyMessageId), args: [{ orgId, messageId: answer.replyMessageId, holdUntil: answer.heldUntil }], orgId, resourceId: answer.replyMessageId });
    await settleInboundAnswer(deps.db, orgId, messageId, 'answered');
    return { answer };
  }
  // Queued a moment ago under every rule: handed to the carrier without reading the rules again.
  const delivery = await deliverText(deps.db, deps.telephony, orgId, answer.replyMessageId, undefined, { checkedNow: true, message: answer.reply });
  await settleInboundAnswer(deps.db, orgId, messageId, 'answered');
  return { answer, delivery };
}

/** Seconds after which a text still owed an answer is handed to the workflow (its process died). */
export const PENDING_ANSWER_GRACE_SECONDS = 30;
/** Texts older than this are no longer answered by the recovery sweep, seconds (a day, the SMS idle timeout's default). */
export const PENDING_ANSWER_MAX_AGE_SECONDS = 86_400;

/**
 * Hands texts still owed an answer {@link PENDING_ANSWER_GRACE_SECONDS} after they arrived (the process that
 * received them died before answering) to `sms-reply/{id}`, which answers them durably; a running one is
 * kept. Run by housekeeping in every process with a Temporal client.
 * @returns how many were handed over
 */
export async function recoverPendingAnswers(db: Db, temporal: { client: Client; taskQueue: string }, now = new Date(), limit = 100): Promise<number> {
  // One read for the sweep (arrival times included), then one write per organization for the texts too old to answer.
  const pending = await pendingAnswers(db, new Date(now.getTime() - PENDING_ANSWER_GRACE_SECONDS * 1000), limit);
  const tooOld = new Map<string, string[]>();
  const due: typeof pending = [];
  for (const t of pending) {
    if (now.getTime() - t.createdAt.getTime() > PENDING_ANSWER_MAX_AGE_SECONDS * 1000) tooOld.set(t.orgId, [...(tooOld.get(t.orgId) ?? []), t.id]);
    else due.push(t);
  }
  for (const [orgId, ids] of tooOld) await settleInboundAnswers(db, orgId, ids, 'declined', 'too_old');
  let started = 0;
  for (const t of due) {
    await startWorkflow(temporal, 'smsReply', { workflowId: workflowIds.smsReply(t.id), args: [{ orgId: t.orgId, messageId: t.id }], orgId: t.orgId, resourceId: t.id, workflowIdConflictPolicy: 'USE_EXISTING' });
    started++;
  }
  return started;
}

/** Composes the answer (see {@link answerInboundText}). */
async function composeAnswer(deps: ConversationDeps & { temporal?: { client: Client; taskQueue: string } }, orgId: string, messageId: string, now: number, known: KnownRecords = {}, sendVia?: string): Promise<InboundAnswer> {
  const { db } = deps;
  // The callback's own first attempt (the text as it stored it a moment ago): no earlier attempt ran a turn for it.
  const firstAttempt = known.message?.id === messageId;
  const m = firstAttempt ? known.message! : await getMessageRecord(db, orgId, messageId);
  if (!m || m.direction !== 'inbound') return { answered: false, reason: 'not_found' };
  // Answered before (a retried activity): the same reply, which the workflow delivers once (its delivery is
  // idempotent). A reply is stored only after the turn's text was recorded on the inbound text.
  const already = m.agentReply !== null ? await replied(db, orgId, m) : null;
  if (already) return already;
  if (parseInboundKeyword(m.body)) return { answered: false, reason: 'keyword' };
  const number = known.number?.e164 === m.to ? known.number : await getOwnedNumberByE164(db, orgId, m.to);
  if (!number?.agentId) return { answered: false, reason: 'no_agent' };
  // The sender's open conversation, unless the text names its own (a retry), is read with the sender's consent.
  const pre = m.conversationId ? undefined : await findOpenSmsConversationAndContact(db, orgId, number.agentId, m.from, HISTORY_MESSAGES);
  // Rules that would refuse the reply are checked before the model runs (docs/sms.md).
  const contact = pre ? pre.contact : await getContact(db, orgId, m.from);
  if (contact?.optedOut) return { answered: false, reason: 'recipient_opted_out' };
  if (!number.smsEnabled) return { answered: false, reason: 'number_not_sms_enabled' };
  const registration = await (known.registration ? known.registration() : getRegistration(db, orgId));
  if (registration?.status !== 'active') return { answered: false, reason: 'registration_not_active' };

  // The callback's first attempt records the conversation with the reply (below); a retry records it at once.
  const conversation = await conversationFor(deps, orgId, number.agentId, m, now, !firstAttempt, pre && { open: pre.conversation, traffic: pre.traffic });
  if (!conversation) return { answered: false, reason: 'agent_not_published' };
  const agent = await pinnedAgent(db, conversation);
  let reply = m.agentReply;
  let recorded = reply !== null;
  if (reply === null) {
    // Any attempt but the callback's first may find a turn an earlier one stored for this text.
    reply = m.conversationId || !firstAttempt ? await earlierReply(db, conversation, m) : null;
    if (reply === null) {
      const outcome = await turnWhenFree(deps, conversation, turnText(m));
      reply = outcome.reply?.content ?? '';
    }
  }
  const record = async () => {
    if (!recorded) await setInboundAnswer(db, orgId, m.id, { conversationId: conversation.id, agentReply: reply! });
    recorded = true;
  };
  if (!reply.trim()) {
    await record();
    return { answered: false, reason: 'no_reply' };
  }
  const body = fitToSegments(reply, smsSettingsOf(agent).maxSegments);
  const segments = countSegments(body).segments;
  const usage = (replyId: string) => ({
    ...SEGMENT_FEE,
    amountCents: SEGMENT_FEE.amountCents * segments,
    quantity: segments,
    dedupeKey: `sms-reply:${replyId}:segments`,
    details: { messageId: replyId, inReplyTo: m.id, conversationId: conversation.id, agentId: conversation.agentId, segments, encoding: countSegments(body).encoding },
  });
  const text = { from: m.to, to: m.from, body, trigger: 'reply' as const, replyTo: { messageId: m.id, conversationId: conversation.id }, delivery: 'caller' as const, checked: { number, registration, contact } };
  try {
    if (sendVia && !(await checkText(db, deps.temporal, orgId, text)).holdUntil) {
      // Sent now: the reply recorded on the text, the reply, its charge, its event and its send's intent in one statement.
      const id = newId('msg');
      const at = new Date().toISOString();
      const events = updatedEventRows([{ messageId: id, direction: 'outbound', status: 'queued', previousStatus: null, from: m.to, to: m.from, body, attachmentIds: [], error: null, at }]);
      const { reply: queued, intent } = await queueReplyWithIntent(
        db,
        orgId,
        { id, from: m.to, to: m.from, body, inboundId: m.id, conversationId: conversation.id, agentReply: reply, at },
        usage(id),
        { provider: sendVia, request: { from: m.to, to: m.from, length: body.length } },
        events,
      );
      void settleSoon(db, orgId, deps.log); // the charge was recorded pending: folded into the wallet with the others of these milliseconds
      const stored: SmsMessageRecord = { ...queued, body, mediaIds: [], providerMessageId: null, conversationId: conversation.id, agentReply: null, replyTo: m.id };
      return { answered: true, replyMessageId: id, conversationId: conversation.id, segments, heldUntil: null, reply: stored, intent };
    }
    await record();
    const queued = await queueText(db, deps.temporal, orgId, text, (trx, data) => recordUsage(trx, orgId, usage(data.id)));
    // The reply as stored, for its delivery in this process (deliverText need not read it again).
    const stored: SmsMessageRecord = { ...queued, body, mediaIds: [], providerMessageId: null, conversationId: conversation.id, agentReply: null, replyTo: m.id };
    return { answered: true, replyMessageId: queued.id, conversationId: conversation.id, segments, heldUntil: queued.heldUntil, reply: stored };
  } catch (err) {
    if (isUniqueViolation(err)) return (await replied(db, orgId, m)) ?? { answered: false, reason: 'already_answered' };
    // A rule that changed since the checks above (an opt-out, a disabled number): the text stays unanswered.
    if (err instanceof ApiError && err.status < 500) return { answered: false, reason: err.code };
    throw err;
  }
}

/** The reply already stored for an inbound text, as {@link answerInboundText} answers it, or null. */
async function replied(db: Db, orgId: string, m: SmsMessageRecord): Promise<InboundAnswer | null> {
  const reply = await findReplyTo(db, orgId, m.id);
  if (!reply) return null;
  const body = (await getMessageRecord(db, orgId, reply.id))?.body ?? '';
  return { answered: true, replyMessageId: reply.id, conversationId: m.conversationId ?? '', segments: countSegments(body).segments, heldUntil: reply.heldUntil };
}

/** Attempts, and ms between them, at a turn while another text of the same sender is being answered. */
const BUSY_ATTEMPTS = 40;
const BUSY_WAIT_MS = 50;

/**
 * One turn, waiting briefly while another turn of the conversation is stored (texts of one sender arriving
 * together are answered in turn, in this activity rather than by Temporal's backoff of seconds).
 * @throws ApiError 409 `conversation_busy` after {@link BUSY_ATTEMPTS}; what sendMessage throws
 */
async function turnWhenFree(deps: ConversationDeps, conversation: ConversationRecord, text: string) {
  for (let attempt = 1; ; attempt++) {
    try {
      const fresh = attempt === 1 ? conversation : ((await getConversation(deps.db, conversation.orgId, conversation.id)) ?? conversation);
      return await sendMessage(deps, fresh, text);
    } catch (err) {
      if (!(err instanceof ApiError && err.code === 'conversation_busy') || attempt >= BUSY_ATTEMPTS) throw err;
      await new Promise((r) => setTimeout(r, BUSY_WAIT_MS * (1 + Math.random())));
    }
  }
}

/**
 * The text a turn reads: the message, and a line per attachment the sender sent (their ids, which the
 * agent's skills can fetch with `GET /sms/media/{id}`).
 */
function turnText(m: SmsMessageRecord): string {
  if (!m.mediaIds.length) return m.body;
  const note = `[${m.mediaIds.length === 1 ? 'an attachment' : `${m.mediaIds.length} attachments`} sent with this text: ${m.mediaIds.join(', ')}]`;
  return m.body.trim() ? `${m.body}\n${note}` : note;
}

/**
 * The reply a turn already stored for this text (a retry after the turn but before the reply was recorded):
 * the conversation's last user message is this text, sent after it arrived, followed by the agent's answer.
 */
async function earlierReply(db: Db, c: ConversationRecord, m: SmsMessageRecord): Promise<string | null> {
  const recent = await recentMessages(db, c.orgId, c.id, 8);
  const lastUser = [...recent].reverse().findIndex((x) => x.role === 'user');
  if (lastUser < 0) return null;
  const i = recent.length - 1 - lastUser;
  if (recent[i].content !== turnText(m) || Date.parse(recent[i].createdAt) < Date.parse(m.createdAt)) return null;
  const answer = recent.slice(i + 1).reverse().find((x) => x.role === 'assistant' && x.content !== null && !x.toolCalls);
  return answer?.content ?? null;
}

/**
 * The agent's open `sms` conversation with the sender, resumed while its idle timeout has not passed;
 * otherwise it ends `idle` (with its analysis) and a new one starts, pinned to the published version the
 * agent's traffic split picks for the sender (services/agents/traffic.ts), with no greeting (the person wrote
 * first). Concurrent texts of one sender share one conversation
 * (a partial unique index; the loser reads the winner's).
 * @param read the open conversation as the caller read it a moment ago (undefined: none), else it is read here
 * @returns null when the agent is not published
 */
async function conversationFor(
  deps: ConversationDeps,
  orgId: string,
  agentId: string,
  m: SmsMessageRecord,
  now: number,
  recordNow = true,
  read?: Pick<SenderState, 'traffic'> & { open: (ConversationRecord & { lastActivityAt: string; recent: ConversationMessage[] }) | undefined },
): Promise<(ConversationRecord & { recent?: ConversationMessage[] }) | null> {
  const { db } = deps;
  if (m.conversationId) {
    const known = await getConversation(db, orgId, m.conversationId);
    if (known) return known;
  }
  // With the history its turn reads (one round trip instead of two), read by the caller when it passes `read`.
  const sender = read ? { conversation: read.open, traffic: read.traffic } : await findOpenSmsConversationAndContact(db, orgId, agentId, m.from, HISTORY_MESSAGES);
  const open = sender.conversation;
  if (open) {
    const agent = await pinnedAgent(db, open);
    if (now - Date.parse(open.lastActivityAt) < smsSettingsOf(agent).idleTimeoutSeconds * 1000) {
      if (recordNow) await setInboundAnswer(db, orgId, m.id, { conversationId: open.id });
      return open;
    }
    await finishConversation(db, open, 'idle', { db, llm: deps.llm, temporal: deps.temporal });
  }
  let started: ConversationRecord & { recent?: ConversationMessage[] };
  try {
    // Started here with no message (no greeting: the person wrote first), so its turn reads no history.
    // The agent's published version and split as the sender read found them when no conversation was open (else read now).
    const traffic = open ? undefined : sender.traffic;
    const { conversation } = await startConversation(db, orgId, { agentId, channel: 'sms', keyId: null, counterpart: m.from, metadata: { from: m.from, to: m.to, firstMessageId: m.id }, seed: [], traffic });
    started = conversation.messageCount === 0 ? { ...conversation, recent: [] } : conversation;
  } catch (err) {
    // An agent gone or never published (startConversation reads it): no conversation.
    if (err instanceof ApiError && (err.code === 'agent_not_found' || err.code === 'no_published_version')) return null;
    if (!isUniqueViolation(err)) throw err;
    const winner = await findOpenSmsConversation(db, orgId, agentId, m.from);
    if (!winner) throw err;
    started = winner;
  }
  if (recordNow) await setInboundAnswer(db, orgId, m.id, { conversationId: started.id });
  return started;
}
