/**
 * Real providers' webhooks at `POST /sms/provider-callbacks/{telnyx|twilio}` (docs/going-live.md):
 * verified by the provider's own signature, deduplicated by event id, then mapped onto the sandbox's
 * callback format and applied by `applyProviderCallback` (api/sms/callbacks.ts), the path sandbox
 * callbacks take: 10DLC status → signal on `sms-registration/{orgId}`, message status → the message,
 * inbound texts (STOP/START/HELP honoured), call status → `provider_calls`, which the dial activity reads.
 *
 * - Telnyx: Ed25519 over `{telnyx-timestamp}|{raw body}` (headers `telnyx-signature-ed25519`,
 *   `telnyx-timestamp`) with the key `TELNYX_PUBLIC_KEY`, checked by the SDK's `TelnyxWebhook`, which
 *   refuses a timestamp more than 300 s from our clock (the replay window). Event id: `data.id` (10DLC
 *   status webhooks, which carry none, are identified by the SHA-256 of their body).
 * - Twilio: `X-Twilio-Signature` (HMAC-SHA1 of the public URL and the sorted form parameters with
 *   `TWILIO_AUTH_TOKEN`), checked by the SDK's `validateRequest`. Twilio signs no timestamp, so a replay
 *   is refused by its event id: the `I-Twilio-Idempotency-Token` header, else the object's sid and status.
 *
 * A forged or stale webhook is 401 `invalid_signature` with nothing stored; an event id seen before
 * answers `{ received: true, duplicate: true }` and changes nothing (a provider's re-delivery must not
 * be refused into endless retries, and a replay is thereby harmless).
 */
import crypto from 'node:crypto';
import twilio from 'twilio';
import { TelnyxWebhook } from 'telnyx/lib/webhooks';
import { ApiError } from '../../domain/errors';
import { claimWebhookEvent, recordProviderCall, releaseWebhookEvent, updateProviderCall } from '../../db/repositories/providerWebhooks';
import { parseTelnyxClientState } from '../../providers/telephony/telnyx';
import { TELNYX_PROVIDER } from '../../providers/telephony/telnyxClient';
import { TWILIO_PROVIDER } from '../../providers/telephony/twilioClient';
import { endedCallOutcome } from '../../providers/telephony/live';
import type { SmsProviderCallbackResult } from '../../schemas/types/sms';
import { applyProviderCallback, type CallbackBody, type CallbackDeps } from './callbacks';

/** Providers whose own signed webhooks this module takes. */
export const REAL_WEBHOOK_PROVIDERS = new Set([TELNYX_PROVIDER, TWILIO_PROVIDER]);

/** One webhook request as received. */
export interface WebhookRequest {
  /** Exact body bytes as text. */
  raw: string;
  /** Lower-case header names. */
  headers: Record<string, string | string[] | undefined>;
  /** Path and query as received (`/api/v1/sms/provider-callbacks/twilio?org=…`). */
  originalUrl: string;
  query: Record<string, string | undefined>;
}

/** What a mapped webhook does: apply a sandbox-format callback, update a call, or nothing. */
type Mapped = { callback: CallbackBody } | { call: () => Promise<void> } | { ignore: string };

function header(req: WebhookRequest, name: string): string | undefined {
  const v = req.headers[name];
  return Array.isArray(v) ? v[0] : v;
}

function refused(detail: string): ApiError {
  return new ApiError(401, 'invalid_signature', detail);
}

/**
 * Verifies, deduplicates and applies one Telnyx or Twilio webhook.
 * @throws ApiError 401 `invalid_signature` (nothing stored), 400 for a body that is not the provider's
 *   format, 404 `unknown_external_id` when no organization knows the object
 */
export async function processRealProviderWebhook(deps: CallbackDeps, provider: string, req: WebhookRequest): Promise<SmsProviderCallbackResult> {
  const { eventId, eventType, mapped } = provider === TELNYX_PROVIDER ? await telnyxEvent(deps, req) : twilioEvent(deps, req);
  if (!(await claimWebhookEvent(deps.db, provider, eventId, eventType))) return { received: true, duplicate: true };
  try {
    if ('callback' in mapped) return await applyProviderCallback(deps, provider, mapped.callback);
    if ('call' in mapped) await mapped.call();
    return { received: true, duplicate: false };
  } catch (err) {
    // Not applied: forget the id so the provider's re-delivery is processed, not deduplicated.
    await releaseWebhookEvent(deps.db, provider, eventId);
    throw err;
  }
}

/** Telnyx's delivery states that end a text badly (messaging webhooks, `payload.to[].status`). */
const TELNYX_FAILED = new Set(['delivery_failed', 'sending_failed', 'delivery_unconfirmed']);

async function telnyxEvent(deps: CallbackDeps, req: WebhookRequest): Promise<{ eventId: string; eventType: string; mapped: Mapped }> {
  const key = process.env.TELNYX_PUBLIC_KEY;
  if (!key) throw new ApiError(503, 'provider_not_configured', 'TELNYX_PUBLIC_KEY is not set: Telnyx webhooks cannot be verified');
  try {
    await new TelnyxWebhook(key).verify(req.raw, req.headers as Record<string, string>);
  } catch (err) {
    throw refused(`The Telnyx signature is refused: ${err instanceof Error ? err.message : String(err)}`);
  }
  let body: any;
  try {
    body = JSON.parse(req.raw);
  } catch {
    throw new ApiError(400, 'malformed_json', 'The webhook body is not JSON');
  }
  const timestamp = Number(header(req, 'telnyx-timestamp'));
  const data = body?.data;
  const ref = req.query.ref;
  if (!data?.event_type) {
    // 10DLC status webhooks (CampaignStatusUpdate): flat, without an event id.
    const eventId = `sha256:${crypto.createHash('sha256').update(req.raw).digest('hex')}`;
    const failed = body?.status === 'REJECTED' || body?.status === 'failed';
    const accepted = body?.status === 'ACCEPTED' || body?.status === 'success';
    const reason = failed ? String(body?.description || `Telnyx ${body?.type ?? ''} ${body?.status}`.trim()) : null;
    if (body?.campaignId) {
      const status = failed ? 'REJECTED' : accepted ? (body.type === 'MNO_REVIEW' || body.type === 'NUMBER_POOL_PROVISIONED' ? 'PROVISIONED' : 'APPROVED') : 'PENDING';
      return { eventId, eventType: '10dlc.campaign', mapped: { callback: { type: 'campaign.status', id: String(body.campaignId), revision: timestamp, status, reason, reference: ref } } };
    }
    if (body?.brandId) {
      const status = failed ? 'UNVERIFIED' : accepted ? 'VERIFIED' : 'PENDING';
      return { eventId, eventType: '10dlc.brand', mapped: { callback: { type: 'brand.status', id: String(body.brandId), revision: timestamp, status, reason, reference: ref } } };
    }
    throw new ApiError(400, 'validation_error', 'The webhook is neither a Telnyx event (data.event_type) nor a 10DLC status (brandId/campaignId)');
  }
  const eventId = String(data.id ?? '');
  if (!eventId) throw new ApiError(400, 'validation_error', 'The Telnyx event has no data.id');
  const type = String(data.event_type);
  const p = data.payload ?? {};
  const out = (mapped: Mapped) => ({ eventId, eventType: type, mapped });
  if (type === 'message.sent' || type === 'message.finalized') {
    const s = String(p.to?.[0]?.status ?? '');
    const status = s === 'delivered' ? 'DELIVERED' : TELNYX_FAILED.has(s) ? 'FAILED' : 'SENT';
    const reason = status === 'FAILED' ? String(p.errors?.[0]?.detail ?? p.errors?.[0]?.title ?? s) : null;
    return out({ callback: { type: 'message.status', id: String(p.id), status, reason, reference: ref } });
  }
  if (type === 'message.received') {
    return out({ callback: { type: 'message.inbound', id: String(p.id), from: String(p.from?.phone_number ?? ''), to: String(p.to?.[0]?.phone_number ?? ''), text: String(p.text ?? '') } });
  }
  if (type.startsWith('call.')) {
    const callId = String(p.call_control_id ?? '');
    const state = parseTelnyxClientState(p.client_state);
    if (!callId || !state) return out({ ignore: 'not a call this service placed' });
    return out({
      call: async () => {
        await recordProviderCall(deps.db, state.org, { provider: TELNYX_PROVIDER, providerCallId: callId, reference: state.ref, from: String(p.from ?? ''), to: String(p.to ?? '') });
        if (type === 'call.answered') await updateProviderCall(deps.db, TELNYX_PROVIDER, callId, { status: 'answered' });
        else if (type === 'call.machine.detection.ended') await updateProviderCall(deps.db, TELNYX_PROVIDER, callId, { answeredBy: String(p.result ?? 'not_sure') });
        // A voicemail drop (docs/voice.md "Voicemail"): the beep that ends a machine's greeting, then the end of the message spoken.
        else if (type === 'call.machine.greeting.ended') await updateProviderCall(deps.db, TELNYX_PROVIDER, callId, { greetingEnded: String(p.result ?? 'not_sure') });
        else if (type === 'call.speak.ended') await updateProviderCall(deps.db, TELNYX_PROVIDER, callId, { speakEnded: true });
        // The hangup carries the answer time (`start_time`); the event's own time is the end.
        else if (type === 'call.hangup') await endCall(deps, TELNYX_PROVIDER, callId, String(p.hangup_cause ?? 'normal_clearing'), p.start_time, data.occurred_at);
      },
    });
  }
  return out({ ignore: `Telnyx event ${type} is not used` });
}

/**
 * Ends a call from its final webhook: outcome by the provider's end cause and the answering-machine
 * verdict; a call never answered that ended "normally" was not picked up. Duration in whole seconds.
 */
async function endCall(deps: CallbackDeps, provider: string, callId: string, cause: string, startIso?: string, endIso?: string, durationSeconds?: number): Promise<void> {
  const current = await updateProviderCall(deps.db, provider, callId, {});
  if (!current) throw new ApiError(404, 'unknown_external_id', `No call has provider id ${callId}`);
  let outcome = endedCallOutcome(cause, current.answeredBy);
  if (outcome === 'answered' && current.status !== 'answered') outcome = 'no_answer';
  const seconds = durationSeconds ?? (startIso && endIso ? Math.max(0, Math.round((Date.parse(endIso) - Date.parse(startIso)) / 1000)) : 0);
  await updateProviderCall(deps.db, provider, callId, { status: 'ended', outcome, durationSeconds: outcome === 'answered' || outcome === 'voicemail' ? seconds : 0 });
}

/** The URL Twilio signed: PUBLIC_BASE_URL's origin and path prefix, then the path and query received. */
function twilioSignedUrl(deps: CallbackDeps, req: WebhookRequest): string {
  const base = new URL(deps.config.publicBaseUrl);
  return `${base.origin}${base.pathname.replace(/\/+$/, '')}${req.originalUrl}`;
}

function twilioEvent(deps: CallbackDeps, req: WebhookRequest): { eventId: string; eventType: string; mapped: Mapped } {
  const token = process.env.TWILIO_AUTH_TOKEN;
  if (!token) throw new ApiError(503, 'provider_not_configured', 'TWILIO_AUTH_TOKEN is not set: Twilio webhooks cannot be verified');
  const signature = header(req, 'x-twilio-signature');
  if (!signature) throw refused('The Twilio signature is missing (X-Twilio-Signature)');
  const params = Object.fromEntries(new URLSearchParams(req.raw));
  if (!twilio.validateRequest(token, signature, twilioSignedUrl(deps, req), params)) throw refused('The Twilio signature is wrong');
  const sid = params.CallSid || params.MessageSid || params.SmsSid || '';
  if (!sid) throw new ApiError(400, 'validation_error', 'The Twilio webhook has no CallSid or MessageSid');
  const status = params.CallStatus || params.MessageStatus || params.SmsStatus || '';
  const eventId = header(req, 'i-twilio-idempotency-token') || `${sid}:${status}:${params.AnsweredBy ?? ''}`;
  const ref = req.query.ref;
  if (params.CallSid) {
    const org = req.query.org;
    if (!org || !ref) return { eventId, eventType: 'call', mapped: { ignore: 'not a call this service placed' } };
    return {
      eventId,
      eventType: 'call',
      mapped: {
        call: async () => {
          await recordProviderCall(deps.db, org, { provider: TWILIO_PROVIDER, providerCallId: params.CallSid, reference: ref, from: params.From ?? '', to: params.To ?? '' });
          if (params.AnsweredBy) await updateProviderCall(deps.db, TWILIO_PROVIDER, params.CallSid, { answeredBy: params.AnsweredBy });
          if (status === 'in-progress') await updateProviderCall(deps.db, TWILIO_PROVIDER, params.CallSid, { status: 'answered' });
          if (['completed', 'busy', 'no-answer', 'failed', 'canceled'].includes(status)) {
            // A completed call with a duration was answered, whatever order the earlier callbacks came in.
            if (status === 'completed' && Number(params.CallDuration ?? 0) > 0) await updateProviderCall(deps.db, TWILIO_PROVIDER, params.CallSid, { status: 'answered' });
            await endCall(deps, TWILIO_PROVIDER, params.CallSid, status, undefined, undefined, Number(params.CallDuration ?? 0));
          }
        },
      },
    };
  }
  if (params.MessageStatus && params.MessageStatus !== 'received') {
    const s = params.MessageStatus === 'delivered' ? 'DELIVERED' : params.MessageStatus === 'undelivered' || params.MessageStatus === 'failed' ? 'FAILED' : 'SENT';
    const reason = s === 'FAILED' ? `Twilio ${params.MessageStatus}${params.ErrorCode ? ` (error ${params.ErrorCode})` : ''}` : null;
    return { eventId, eventType: 'message.status', mapped: { callback: { type: 'message.status', id: sid, status: s, reason, reference: ref } } };
  }
  return { eventId, eventType: 'message.inbound', mapped: { callback: { type: 'message.inbound', id: sid, from: params.From ?? '', to: params.To ?? '', text: params.Body ?? '' } } };
}
