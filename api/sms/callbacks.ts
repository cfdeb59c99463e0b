/**
 * Provider callbacks (`POST /sms/provider-callbacks/{provider}`, operation receiveSMSProviderCallback,
 * no API key): verified by the provider's HMAC signature over the raw body (callbackSignature.ts),
 * stored once per (provider, external id, status, revision), then turned into a Temporal signal or a
 * direct update:
 * - `brand.status` / `campaign.status` → signal `carrierEvent` on `sms-registration/{orgId}`
 * - `message.status` → the message moves forward (sent → delivered | failed; never backwards), with
 *   `sms.message.updated` in the same transaction as the stored event and the move
 * - `message.inbound` → stored as a received text with `sms.message.received` (one transaction), its
 *   optional `media: [{ contentType, contentBase64 }]` stored as attachments (`med_…`) listed in the
 *   event's `attachmentIds`; STOP/START/HELP keywords are applied and answered through `sms-message/{id}`
 * Store-then-signal: an event is durable before the signal is attempted, and the workflow's hourly
 * poll finds the verdict even if the signal is lost (e.g. the workflow was not reachable).
 */
import crypto from 'node:crypto';
import { WorkflowNotFoundError } from '@temporalio/client';
import type { AppDeps } from '../context';
import { ApiError, validationError } from '../../domain/errors';
import { callbackSecret, verifyCallbackSignature } from '../../domain/sms/callbackSignature';
import { findOrgByCarrierId, findOrgByRegistrationId, getRegistration, getRegistrationRecord } from '../../db/repositories/smsRegistrations';
import { deleteProviderEvent, storeProviderEvent } from '../../db/repositories/smsProviderEvents';
import { advanceMessage, findMessageByProviderId, findOutboundMessageById, insertMessage, storeInboundText, type SmsMessageRecord } from '../../db/repositories/smsMessages';
import { findOwnerOfNumber } from '../../db/repositories/numbers';
import { storableJson } from '../../domain/text';
import { applyKeyword } from '../../db/repositories/smsContacts';
import { storeInboundMedia } from '../../db/repositories/smsMedia';
import { parseInboundMedia, type InboundMediaItem } from './media';
import { newId } from '../../db/ids';
import { startWorkflow, workflowIds } from '../../temporal.config';
import { carrierEventSignal } from '../../workflows/definitions';
import { SANDBOX_PROVIDER, type SandboxCallbackPayload } from '../../providers/carrier/sandbox';
import { optInConfirmation, optOutConfirmation, parseInboundKeyword, type InboundKeyword } from '../../domain/sms/keywords';
import { messageChanged, messageReceived, receivedEventRows } from '../../events/sms';
import { answerAndDeliver, type KnownRecords } from '../../services/sms/answer';
import { createTelephony, type TelephonyAdapter } from '../../providers/telephony';
import type { SmsProviderCallbackResult } from '../../schemas/types/sms';

/** Providers whose callbacks are accepted. */
export const CALLBACK_PROVIDERS = new Set([SANDBOX_PROVIDER]);

/**
 * The parsed callback body: the sandbox's format (which real adapters map to), whose event id and
 * time this endpoint does not need, plus inbound attachments (`[{ contentType, contentBase64 }]`,
 * api/sms/media.ts parseInboundMedia).
 */
export type CallbackBody = Omit<SandboxCallbackPayload, 'eventId' | 'occurredAt'> & { media?: unknown };

function parseBody(raw: string): { body: CallbackBody; media: InboundMediaItem[] } {
  let b: any;
  try {
    // Kept even when it carries text Postgres cannot store (U+FFFD in its place): the event happened.
    b = storableJson(JSON.parse(raw));
  } catch {
    throw new ApiError(400, 'malformed_json', 'The callback body is not JSON');
  }
  const errors: { field: string; message: string }[] = [];
  if (!b || typeof b !== 'object' || Array.isArray(b)) throw validationError([{ field: '(body)', message: 'must be a JSON object' }]);
  if (!['brand.status', 'campaign.status', 'message.status', 'message.inbound'].includes(b.type)) errors.push({ field: 'type', message: 'must be one of: brand.status, campaign.status, message.status, message.inbound' });
  if (typeof b.id !== 'string' || !b.id || b.id.length > 128) errors.push({ field: 'id', message: 'must be a non-empty string' });
  if (b.type !== 'message.inbound' && (typeof b.status !== 'string' || !b.status)) errors.push({ field: 'status', message: 'must be a non-empty string' });
  if (b.revision !== undefined && !(Number.isInteger(b.revision) && b.revision >= 0)) errors.push({ field: 'revision', message: 'must be a non-negative integer' });
  if (b.type === 'message.inbound') {
    for (const f of ['from', 'to', 'text']) if (typeof b[f] !== 'string') errors.push({ field: f, message: 'must be a string' });
  }
  const media = b.type === 'message.inbound' ? parseInboundMedia(b.media, errors) : [];
  if (errors.length) throw validationError(errors);
  return { body: b as CallbackBody, media };
}

/** What the callback processing needs (keyword replies are started on Temporal when the API has it). */
export type CallbackDeps = Pick<AppDeps, 'db' | 'config' | 'logger' | 'temporal' | 'providers'> & Partial<Pick<AppDeps, 'caches'>>;

/**
 * Verifies, stores and applies one provider callback.
 * @param rawBody the exact bytes the provider signed
 * @throws ApiError 404 `unknown_provider`; 401 `invalid_signature` (nothing is stored or changed);
 *   400 for a malformed body; 404 `unknown_external_id` when no organization knows the id
 */
export async function processProviderCallback(deps: CallbackDeps, provider: string, rawBody: string, signature: string | undefined): Promise<SmsProviderCallbackResult> {
  if (!CALLBACK_PROVIDERS.has(provider)) throw new ApiError(404, 'unknown_provider', `No provider "${provider}" sends callbacks here`);
  const problem = verifyCallbackSignature(callbackSecret(provider), signature, rawBody);
  if (problem) {
    throw new ApiError(401, 'invalid_signature', `The callback signature is ${problem === 'missing' ? 'missing (X-Carrier-Signature)' : problem === 'expired' ? 'outside the accepted time window' : problem === 'malformed' ? 'malformed' : 'wrong'}`);
  }
  const { body, media } = parseBody(rawBody);
  return applyProviderCallback(deps, provider, body, media);
}

/**
 * Applies one verified callback in the sandbox's format (what the real providers' webhooks are mapped
 * to, api/sms/providerWebhooks.ts): store once, then signal or update (see the module comment).
 * @throws ApiError 404 `unknown_external_id` when no organization knows the id
 */
export async function applyProviderCallback(deps: CallbackDeps, provider: string, body: CallbackBody, media: InboundMediaItem[] = []): Promise<SmsProviderCallbackResult> {
  const { db } = deps;

  if (body.type === 'brand.status' || body.type === 'campaign.status') {
    const kind = body.type === 'brand.status' ? 'brand' : 'campaign';
    const orgId = (await findOrgByCarrierId(db, kind, body.id)) ?? (body.reference ? await findOrgByRegistrationId(db, body.reference) : undefined);
    if (!orgId) throw new ApiError(404, 'unknown_external_id', `No registration knows ${kind} ${body.id}`);
    const revision = body.revision ?? 0;
    const stored = await storeProviderEvent(db, orgId, { provider, objectType: kind, externalId: body.id, status: body.status!, revision, payload: body as unknown as Record<string, unknown> });
    if (stored) {
      try {
        await signalRegistration(deps, orgId, { kind, id: body.id, revision, status: body.status!, reason: body.reason ?? null });
      } catch (err) {
        // Not signalled: forget the event so the provider's retry is processed again, not deduplicated.
        await deleteProviderEvent(db, orgId, { provider, externalId: body.id, status: body.status!, revision });
        throw err;
      }
    }
    return { received: true, duplicate: !stored };
  }

  if (body.type === 'message.status') {
    // A receipt can overtake our write of the provider's id (the provider answered the send and reported
    // delivery at once): then the reference it echoes (our message id) finds the message.
    const msg = (await findMessageByProviderId(db, body.id)) ?? (body.reference ? await findOutboundMessageById(db, body.reference) : undefined);
    if (!msg) throw new ApiError(404, 'unknown_external_id', `No message has provider id ${body.id}`);
    // Stored event, status move and its webhook event commit together: a failure leaves nothing stored,
    // so the provider's retry is processed rather than deduplicated.
    const stored = await db.transaction(async (trx) => {
      if (!(await storeProviderEvent(trx, msg.orgId, { provider, objectType: 'message', externalId: body.id, status: body.status!, revision: 0, payload: body as unknown as Record<string, unknown> }))) return false;
      const s = body.status!.toUpperCase();
      if (s === 'DELIVERED') await advanceMessage(trx, msg.orgId, msg.id, { status: 'delivered', providerMessageId: body.id }, messageChanged(msg.orgId));
      else if (s === 'FAILED' || s === 'UNDELIVERED') await advanceMessage(trx, msg.orgId, msg.id, { status: 'failed', providerMessageId: body.id, error: body.reason ?? 'delivery failed' }, messageChanged(msg.orgId));
      return true;
    });
    return { received: true, duplicate: !stored };
  }

  // message.inbound
  // Through the process's read cache, kept coherent by the change feed (migration 20261129001600).
  const owners = deps.caches?.numberOwners;
  const owner = owners ? await owners.get(body.to!, () => findOwnerOfNumber(db, body.to!)) : await findOwnerOfNumber(db, body.to!);
  if (!owner) throw new ApiError(404, 'unknown_external_id', `No organization owns ${body.to}`);
  // The stored event keeps the attachments' types and sizes, not their bytes (those go to sms_media).
  const inboundPayload = { ...body, media: media.map((m) => ({ contentType: m.contentType, sizeBytes: m.data.length })) } as unknown as Record<string, unknown>;
  const messageId = newId('msg');
  // Parsed once here: the number's agent owes an answer to a text that is no STOP/START/HELP keyword (CTIA: those
  // are the keyword handler's), and the handler below applies it.
  const keyword = parseInboundKeyword(body.text!);
  const owed = !!owner.number.agentId && !keyword;
  const orgOwner = owner;
  const stored = media.length ? await storeWithMedia() : await storeText();
  async function storeText(): Promise<SmsMessageRecord | null> {
    // Event, text and `sms.message.received` in one statement (no attachments to store first).
    const at = new Date().toISOString();
    const events = receivedEventRows({ messageId, direction: 'inbound', status: 'received', previousStatus: null, from: body.from!, to: body.to!, body: body.text!, attachmentIds: [], error: null, at });
    const text = await storeInboundText(db, orgOwner.orgId, { id: messageId, provider, externalId: body.id, payload: inboundPayload, from: body.from!, to: body.to!, body: body.text!, answerState: owed ? 'pending' : null, at }, events);
    return text && { ...text, body: body.text!, mediaIds: [], providerMessageId: body.id!, conversationId: null, agentReply: null, replyTo: null };
  }
  function storeWithMedia(): Promise<SmsMessageRecord | null> {
    return db.transaction(async (trx): Promise<SmsMessageRecord | null> => {
      if (!(await storeProviderEvent(trx, orgOwner.orgId, { provider, objectType: 'inbound', externalId: body.id, status: 'RECEIVED', revision: 0, payload: inboundPayload }))) return null;
      // Attachments are stored first, in the same transaction, so `sms.message.received` lists their ids.
      const mediaIds = await storeInboundMedia(trx, orgOwner.orgId, messageId, media);
      const text = await insertMessage(trx, orgOwner.orgId, { id: messageId, direction: 'inbound', trigger: null, from: body.from!, to: body.to!, body: body.text!, mediaIds, status: 'received', providerMessageId: body.id, answerState: owed ? 'pending' : null }, messageReceived(orgOwner.orgId));
      return { ...text, body: body.text!, mediaIds, providerMessageId: body.id!, conversationId: null, agentReply: null, replyTo: null };
    });
  }
  if (!stored) return { received: true, duplicate: true };
  await handleInboundKeyword(deps, owner.orgId, { from: body.from!, to: body.to!, text: body.text!, keyword });
  // The answer starts from the text and number just stored and read (not read again).
  // The registration through the process's read cache, kept coherent by the change feed (docs/operations.md "Scaling out").
  const registrations = deps.caches?.smsRegistrations;
  const registration = registrations ? async () => (await registrations.get(owner.orgId, () => getRegistrationRecord(db, owner.orgId)))?.registration : undefined;
  if (owed) answerSoon(deps, owner.orgId, messageId, { message: stored, number: owner.number, registration });
  return { received: true, duplicate: false };
}

/** Telephony adapters of this process, per database handle (the carrier the replies go out through). */
const telephonyByDb = new WeakMap<object, TelephonyAdapter>();

/**
 * The answers this process is composing, by organization, number and sender: the tail of each sender's queue.
 * Texts of one sender share one conversation, whose turns are stored one at a time (a turn stored meanwhile makes
 * the other's store conflict and run again, services/sms/answer.ts); answering them in the order they were stored runs
 * each turn once. Other processes' answers still meet that check.
 */
const answering = new Map<string, Promise<void>>();

/**
 * The number's agent answers the text in this process, right after the callback is acknowledged
 * (services/sms/answer.ts `answerAndDeliver`: the turn, then the reply handed to the carrier). A failure hands
 * the text to `sms-reply/{messageId}`, which retries durably; a process that dies meanwhile leaves the text
 * `pending`, for the housekeeping sweep to hand over.
 */
function answerSoon(deps: CallbackDeps, orgId: string, messageId: string, known: KnownRecords & { message: SmsMessageRecord }): void {
  let telephony = telephonyByDb.get(deps.db);
  if (!telephony) telephonyByDb.set(deps.db, (telephony = createTelephony({ db: deps.db, config: deps.config })));
  const conversationDeps = { db: deps.db, llm: deps.providers.llm, http: deps.providers.skillHttp, temporal: deps.temporal, telephony, indexes: deps.caches?.knowledge };
  const answer = async (): Promise<void> => {
    await answerAndDeliver(conversationDeps, orgId, messageId, known).catch(async (err) => {
      deps.logger.warn({ err, orgId, messageId }, 'answering the text failed; the sms-reply workflow retries it');
      try {
        if (!deps.temporal) return;
        await startWorkflow(deps.temporal, 'smsReply', { workflowId: workflowIds.smsReply(messageId), args: [{ orgId, messageId }], orgId, resourceId: messageId, workflowIdConflictPolicy: 'USE_EXISTING' });
      } catch (startErr) {
        deps.logger.warn({ err: startErr, orgId, messageId }, 'the sms-reply workflow could not be started; the housekeeping sweep will');
      }
    });
  };
  // After the sender's earlier text in this process, whatever became of it (`answer` never rejects).
  const key = `${orgId} ${known.message.to} ${known.message.from}`;
  const earlier = answering.get(key);
  const done: Promise<void> = (earlier ?? new Promise<void>((resolve) => setImmediate(resolve))).then(answer).finally(() => {
    if (answering.get(key) === done) answering.delete(key);
  });
  answering.set(key, done);
}

/**
 * Applies STOP/START/HELP from an inbound text and queues the one confirmation or the HELP answer as
 * an outgoing text on workflow `sms-message/{id}`, the path every send takes (delivery status, events).
 * The reply is never held for quiet hours (CTIA: keyword responses answer the recipient at once), and
 * the delivery activity lets exactly this confirmation through to a number that has just opted out.
 * Without Temporal the reply is recorded as failed; the keyword itself is applied either way.
 * @param msg the text and its keyword as the caller parsed it (domain/sms/keywords.ts `parseInboundKeyword`; null
 *   for ordinary text), so a callback parses it once
 * @returns the keyword handled, or null for ordinary text
 */
export async function handleInboundKeyword(deps: CallbackDeps, orgId: string, msg: { from: string; to: string; text: string; keyword: InboundKeyword | null }): Promise<InboundKeyword | null> {
  const { keyword } = msg;
  if (!keyword) return null;
  const reg = await getRegistration(deps.db, orgId);
  const brand = reg?.displayName || reg?.legalName || 'This number';
  let reply: string | null = null;
  if (keyword === 'HELP') {
    reply = reg?.helpMessage || `${brand}: reply STOP to opt out.`;
  } else {
    const { changed } = await applyKeyword(deps.db, orgId, msg.from, keyword, msg.text);
    if (changed) reply = keyword === 'STOP' ? optOutConfirmation(brand) : optInConfirmation(brand);
  }
  if (reply) {
    const id = newId('msg');
    await insertMessage(deps.db, orgId, { id, direction: 'outbound', trigger: 'keyword', from: msg.to, to: msg.from, body: reply, status: 'queued' }, messageChanged(orgId));
    try {
      if (!deps.temporal) throw new Error('this API process runs without Temporal');
      await startWorkflow(deps.temporal, 'smsMessage', { workflowId: workflowIds.smsMessage(id), args: [{ orgId, messageId: id, holdUntil: null }], orgId, resourceId: id });
    } catch (err) {
      await advanceMessage(deps.db, orgId, id, { status: 'failed', error: 'workflow_not_started' }, messageChanged(orgId));
      deps.logger.warn({ err, orgId }, 'keyword reply could not be queued');
    }
  }
  return keyword;
}

/** Signals the registration workflow; a missing workflow or Temporal is logged, not fatal (the event is stored and polling finds the verdict). */
async function signalRegistration(deps: CallbackDeps, orgId: string, event: { kind: 'brand' | 'campaign'; id: string; revision: number; status: string; reason: string | null }): Promise<void> {
  if (!deps.temporal) {
    deps.logger.warn({ orgId, event }, 'carrier callback stored; Temporal unavailable, the workflow will find it by polling');
    return;
  }
  try {
    await deps.temporal.client.workflow.getHandle(workflowIds.smsRegistration(orgId)).signal(carrierEventSignal, event);
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) {
      deps.logger.info({ orgId, event }, 'carrier callback for a registration without a running workflow');
      return;
    }
    throw err;
  }
}

/** SHA-256 hex of a text (request fingerprints). */
export function sha256Hex(text: string): string {
  return crypto.createHash('sha256').update(text).digest('hex');
}
