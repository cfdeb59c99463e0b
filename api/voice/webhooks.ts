/**
 * The carriers' voice webhooks (docs/voice.md; not in the spec's tables — keyless, signed):
 *
 * - `POST /api/v1/voice/{provider}/inbound` — a call rang a number: answered with TwiML/TeXML
 *   connecting it to the relay (services/voice/calls.ts), or a spoken refusal; never a 5xx for a
 *   number or agent that cannot take calls. An answered campaign call (`?org=…&agt=…&cmp=…` in the
 *   signed URL the dial gave) is connected to the campaign's agent, which greets first — or, when the
 *   carrier's answering-machine detection says a machine finished its greeting (`AnsweredBy`
 *   `machine_end_*`), answered with the agent's voicemail message (`<Say>`) and `<Hangup/>` (docs/voice.md "Voicemail").
 * - `POST /api/v1/voice/{provider}/status` — the carrier's status callback (`CallStatus`,
 *   `CallDuration`): moves the call forward (the `voice-call/{callId}` workflow when Temporal is there); a final
 *   status (`completed`, `busy`, `failed`, `no-answer`, `canceled`) ends the stored call at once, before the workflow
 *   charges it, so a replayed inbound webhook is refused from that moment. A child leg's status (a `<Dial>`ed
 *   number's, which carries `ParentCallSid`) is not the call's and changes nothing.
 * - `POST /api/v1/voice/{provider}/whisper` — the `<Number url>` of a transfer: requested for the dialed (child)
 *   leg with its own `CallSid` and the transferred call's in `ParentCallSid` (Twilio "TwiML Voice: <Number>",
 *   "Twilio's request to your application"; Telnyx TeXML keeps Twilio's parameters): the call is found by
 *   `ParentCallSid`, and the person answering hears the conversation's summary.
 * - `GET /api/v1/voice/talk` and `GET /api/v1/voice/talk/info?token=tt_…` — the voice talk page and what its
 *   token names (api/voice/talkPage.ts).
 * - `POST /api/v1/voice/{provider}/relay-ended` — the `<Connect action>` callback after the relay ends:
 *   a transfer's `HandoffData` is dialed, else the call hangs up.
 *
 * `{provider}` is `twilio` (X-Twilio-Signature, HMAC-SHA1 with TWILIO_AUTH_TOKEN), `telnyx`
 * (telnyx-signature-ed25519 over `timestamp|body` with TELNYX_PUBLIC_KEY) or `sandbox` (the sandbox
 * caller: Twilio's scheme keyed with CARRIER_CALLBACK_SECRET). Bodies are
 * `application/x-www-form-urlencoded` as both carriers post them. A forged or stale signature is 403
 * `invalid_signature` and nothing is recorded.
 */
import type { Next } from 'koa';
import type { AppContext, AppDeps } from '../context';
import { ApiError } from '../../domain/errors';
import { callbackSecret } from '../../domain/sms/callbackSignature';
import { telnyxPublicKey, telnyxSignatureProblem, verifyTwilioSignature } from '../../domain/voice/signatures';
import { advanceVoiceCall, findVoiceCallByProviderId, type VoiceCallRecord } from '../../db/repositories/voiceCalls';
import { answerCampaignCall, answerDialEnded, answerInboundCall, answerRelayEnded, completeCall, receiveRecording, relayEndedMarkup, whisperMarkup, type CallUrls, type CampaignCallDial } from '../../services/voice/calls';
import { WorkflowNotFoundError } from '@temporalio/client';
import { startWorkflow, workflowIds } from '../../temporal.config';
import { callStatusSignal, type CallStatusUpdate } from '../../workflows/definitions';
import { signRelayReference } from '../../services/voice/reference';
import { answerMachineAtBeep } from '../../services/voice/voicemail';
import { BASE_PATH } from '../app';
import { TALK_PAGE_HTML, talkPageInfo } from './talkPage';
import { publicOrigin } from '../publicOrigin';

/** Voice providers whose webhooks are accepted. */
export const VOICE_PROVIDERS = ['twilio', 'telnyx', 'sandbox'] as const;
/** A voice provider. */
export type VoiceProvider = (typeof VOICE_PROVIDERS)[number];

/** Largest webhook body, bytes (carriers post a few hundred). */
const MAX_BODY_BYTES = 64 * 1024;

async function readRaw(ctx: AppContext): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of ctx.req) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY_BYTES) throw new ApiError(413, 'payload_too_large', `The webhook body exceeds ${MAX_BODY_BYTES} bytes`);
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks);
}

function verify(ctx: AppContext, deps: AppDeps, provider: VoiceProvider, raw: Buffer, params: Record<string, string>): void {
  let ok: boolean;
  if (provider === 'telnyx') {
    let key;
    try {
      key = deps.config.telnyxPublicKey ? telnyxPublicKey(deps.config.telnyxPublicKey) : undefined;
    } catch {
      key = undefined;
    }
    const problem = telnyxSignatureProblem(key, raw, ctx.get('telnyx-signature-ed25519') || undefined, ctx.get('telnyx-timestamp') || undefined);
    ok = problem === null;
    if (problem === 'stale') throw new ApiError(403, 'invalid_signature', 'The telnyx-timestamp is more than 5 minutes from now');
  } else {
    const token = provider === 'twilio' ? deps.config.twilioAuthToken : callbackSecret('sandbox');
    const signature = ctx.get('x-twilio-signature') || undefined;
    // Twilio signs the URL it requested: PUBLIC_BASE_URL's, never this request's Host header (two deployments
    // sharing an auth token must not accept each other's webhooks); its host only where PUBLIC_BASE_URL names port 0.
    ok = !!token && verifyTwilioSignature(token, `${publicOrigin(ctx, deps.config.publicBaseUrl)}${ctx.originalUrl}`, params, signature);
  }
  if (!ok) throw new ApiError(403, 'invalid_signature', `The ${provider} signature of this webhook does not verify`);
}

function xml(ctx: AppContext, body: string): void {
  ctx.status = 200;
  ctx.type = 'text/xml; charset=utf-8';
  ctx.body = body;
}

/** Seconds from a carrier's `CallDuration` (0 when absent or malformed). */
function seconds(v: string | undefined): number {
  return v && /^\d{1,7}$/.test(v) ? Number(v) : 0;
}

/** The Koa middleware serving the three voice webhook paths; every other request passes through. */
export function voiceWebhooks(deps: AppDeps) {
  // Built here, not at module load: api/app.ts (BASE_PATH) imports this module.
  const PATH = new RegExp(`^${BASE_PATH}/voice/(twilio|telnyx|sandbox)/(inbound|status|relay-ended|recording|dial-ended|whisper)$`);
  const TALK = `${BASE_PATH}/voice/talk`;
  const TALK_INFO = `${TALK}/info`;
  const VOICE = `${BASE_PATH}/voice/`;
  // Other paths pass through synchronously: an async frame here cost every API request a promise.
  return (ctx: AppContext, next: Next): Promise<unknown> => (ctx.path.startsWith(VOICE) ? serve(ctx, next) : next());
  async function serve(ctx: AppContext, next: Next): Promise<unknown> {
    if (ctx.path === TALK && (ctx.method === 'GET' || ctx.method === 'HEAD')) {
      ctx.type = 'text/html; charset=utf-8';
      ctx.set('Cache-Control', 'no-store');
      ctx.set('Referrer-Policy', 'no-referrer'); // the page's URL carries the talk token
      ctx.body = TALK_PAGE_HTML;
      return;
    }
    if (ctx.path === TALK_INFO && ctx.method === 'GET') {
      // 200 either way: the page tells the person the link is invalid without a failed request in the console.
      const token = typeof ctx.query.token === 'string' ? ctx.query.token : '';
      const info = token ? await talkPageInfo(deps.db, token) : undefined;
      ctx.set('Cache-Control', 'no-store');
      ctx.set('Referrer-Policy', 'no-referrer');
      ctx.body = info ? { valid: true, ...info } : { valid: false };
      return;
    }
    const m = PATH.exec(ctx.path);
    if (!m) return next();
    if (ctx.method !== 'POST') {
      ctx.set('Allow', 'POST');
      throw new ApiError(405, 'method_not_allowed', `${ctx.method} is not allowed on ${ctx.path}; allowed: POST`);
    }
    const provider = m[1] as VoiceProvider;
    const type = (ctx.get('content-type') || '').split(';')[0].trim().toLowerCase();
    if (type !== 'application/x-www-form-urlencoded') throw new ApiError(415, 'unsupported_media_type', 'Voice webhooks are application/x-www-form-urlencoded');
    const raw = await readRaw(ctx);
    const params = Object.fromEntries(new URLSearchParams(raw.toString('utf8')));
    verify(ctx, deps, provider, raw, params);
    const callSid = params.CallSid ?? '';
    if (!CARRIER_CALL_ID.test(callSid)) throw new ApiError(400, 'validation_error', 'CallSid is missing or malformed', { errors: [{ field: 'CallSid', message: 'must be the carrier call id' }] });
    const parentSid = params.ParentCallSid || null;
    if (parentSid !== null && !CARRIER_CALL_ID.test(parentSid)) throw new ApiError(400, 'validation_error', 'ParentCallSid is malformed', { errors: [{ field: 'ParentCallSid', message: 'must be the carrier call id of the parent leg' }] });
    const origin = publicOrigin(ctx, deps.config.publicBaseUrl);
    const base = `${origin}${BASE_PATH}/voice/${provider}`;
    const urls: CallUrls = {
      recording: (call) => `${base}/recording?call=${call.id}`,
      dialEnded: (call) => `${base}/dial-ended?call=${call.id}`,
      whisper: (call) => `${base}/whisper?call=${call.id}`,
    };
    switch (m[2]) {
      case 'inbound': {
        const campaign = campaignCallOf(provider, ctx.query as Record<string, unknown>, params, callSid);
        if (campaign) {
          // A machine at its beep (Twilio's DetectMessageEnd verdict in `AnsweredBy`): the agent's voicemail message, then the hang-up.
          const machine = await answerMachineAtBeep(deps.db, campaign, params.AnsweredBy);
          if (machine) {
            ctx.state.log.info({ provider, callSid, callId: machine.call.id, campaignId: campaign.campaignId }, 'voice: campaign call leaves a voicemail');
            return xml(ctx, machine.markup);
          }
          const answer = await answerCampaignCall(deps.db, `${origin}${BASE_PATH}`, campaign, () => `${origin}${BASE_PATH}/voice/${provider}/relay-ended`);
          if (answer.refused) ctx.state.log.info({ provider, callSid, reason: answer.refused, campaignId: campaign.campaignId }, 'voice: campaign call hung up');
          return xml(ctx, answer.markup);
        }
        const answer = await answerInboundCall(
          deps.db,
          { provider, providerCallId: callSid, from: String(params.From ?? '').slice(0, 40), to: String(params.To ?? '').slice(0, 40) },
          async (call) => `${origin.replace(/^http/, 'ws')}${BASE_PATH}/voice/relay?ref=${await signRelayReference(deps.db, { org: call.orgId, agt: call.agentId!, ver: call.versionId!, call: call.id, grt: 0 })}`,
          () => `${origin}${BASE_PATH}/voice/${provider}/relay-ended`,
          urls,
        );
        if (answer.refused) ctx.state.log.info({ provider, callSid, reason: answer.refused, callId: answer.call?.id }, 'voice: call refused');
        else if (answer.call && deps.temporal) await startCallWorkflow(ctx, deps, answer.call.orgId, answer.call.id);
        return xml(ctx, answer.markup);
      }
      case 'status': {
        // A dialed child leg reports its own progress (`<Number statusCallback>`); the call it belongs to is not ending.
        if (parentSid) {
          ctx.status = 204;
          return;
        }
        const call = await findVoiceCallByProviderId(deps.db, provider, callSid);
        const update = statusUpdate(params);
        if (call && update) await reportStatus(ctx, deps, call, update);
        ctx.status = 204;
        return;
      }
      case 'recording':
      case 'dial-ended':
      case 'whisper': {
        // The call is found by the carrier's id the request is signed with — for the whisper, the dialed child leg's
        // request, by its parent's (`ParentCallSid`); the URL's `call` must name the same call.
        const call = await findVoiceCallByProviderId(deps.db, provider, m[2] === 'whisper' && parentSid ? parentSid : callSid);
        if (!call || (ctx.query.call !== undefined && ctx.query.call !== call.id)) return xml(ctx, HANGUP_MARKUP);
        if (m[2] === 'whisper') return xml(ctx, await whisperMarkup(deps.db, call));
        if (m[2] === 'dial-ended') return xml(ctx, await answerDialEnded(deps.db, call, params.DialCallStatus, urls));
        const seconds = Number(params.RecordingDuration);
        return xml(ctx, await receiveRecording(deps.db, call, { url: params.RecordingUrl, seconds: Number.isFinite(seconds) ? seconds : 0, transcript: params.TranscriptionText }));
      }
      default: {
        const call = await findVoiceCallByProviderId(deps.db, provider, callSid);
        return xml(ctx, call ? await answerRelayEnded(deps.db, call, params.HandoffData, urls) : relayEndedMarkup(params.HandoffData));
      }
    }
  }
}

/** A carrier's call id (`CallSid`, `ParentCallSid`): Twilio's `CA…`, Telnyx's call control ids. */
const CARRIER_CALL_ID = /^[A-Za-z0-9:_.-]{1,128}$/;

/** The answer that ends a call. */
const HANGUP_MARKUP = '<?xml version="1.0" encoding="UTF-8"?><Response><Hangup/></Response>';

/** Ids in a campaign call's webhook URL (`org_…`, `agt_…`, `cmp_…`, `call_…`). */
const URL_ID = /^[a-z]{2,5}_[A-Za-z0-9_-]{1,64}$/;

/**
 * The answered outbound call a voice webhook asks about: its URL names the organization, agent and
 * campaign (`org`, `agt`, `cmp` — the dial put them there, providers/telephony/twilio.ts), or, for a
 * call placed by `POST /calls`, the stored call (`org`, `agt`, `call`).
 * Trusted only from carriers whose signature covers the URL (Twilio's scheme: Twilio and the sandbox);
 * Telnyx signs the body alone, so its URL parameters are ignored (its campaign calls are connected by a
 * Call Control command instead). The call's `From` is our number, its `To` the contact.
 * @returns null for an inbound call
 * @throws ApiError 400 `validation_error` naming the parameter when one is malformed
 */
export function campaignCallOf(provider: VoiceProvider, query: Record<string, unknown>, params: Record<string, string>, callSid: string): CampaignCallDial | null {
  if (provider === 'telnyx' || (query.cmp === undefined && query.call === undefined)) return null;
  const placed = query.cmp === undefined;
  for (const field of ['org', 'agt', placed ? 'call' : 'cmp']) {
    const v = query[field];
    if (typeof v !== 'string' || !URL_ID.test(v)) throw new ApiError(400, 'validation_error', `The outbound call's ${field} is missing or malformed`, { errors: [{ field, message: 'must be the id the dial put in the URL' }] });
  }
  const ids = placed ? { campaignId: null, callId: String(query.call) } : { campaignId: String(query.cmp) };
  return { orgId: String(query.org), agentId: String(query.agt), ...ids, providerCallId: callSid, provider, from: String(params.From ?? '').slice(0, 40), to: String(params.To ?? '').slice(0, 40) };
}

/** The signal a status callback carries (Twilio/TeXML `CallStatus`, `CallDuration`), or null for a status the workflow ignores. */
export function statusUpdate(params: Record<string, string>): CallStatusUpdate | null {
  const status = String(params.CallStatus ?? '').toLowerCase();
  if (status === 'ringing') return { status: 'ringing' };
  if (status === 'in-progress' || status === 'answered') return { status: 'answered' };
  if (status === 'completed') return { status: 'completed', durationSeconds: seconds(params.CallDuration) };
  if (['busy', 'failed', 'no-answer', 'canceled'].includes(status)) return { status: 'failed', reason: status };
  return null;
}

/** Starts `voice-call/{callId}` (a running one is kept: a carrier retrying its webhook). A failure is logged; the call is answered anyway and its status callbacks complete it inline. */
async function startCallWorkflow(ctx: AppContext, deps: AppDeps, orgId: string, callId: string): Promise<void> {
  try {
    await startWorkflow(deps.temporal!, 'voiceCall', { workflowId: workflowIds.voiceCall(callId), args: [{ orgId, callId }], orgId, resourceId: callId, workflowIdConflictPolicy: 'USE_EXISTING' });
  } catch (err) {
    ctx.state.log.warn({ err, orgId, callId }, 'voice: starting the call workflow failed');
  }
}

/**
 * Hands a status to the call's workflow; without Temporal, or when the workflow cannot be reached, the
 * same steps run inline (services/voice/calls.ts), so a call is still completed and charged once.
 */
async function reportStatus(ctx: AppContext, deps: AppDeps, call: VoiceCallRecord, update: CallStatusUpdate): Promise<void> {
  const { orgId, id: callId } = call;
  // The end is stored at once (the workflow then charges the minutes and closes the conversation): a webhook replayed
  // after it finds the call ended. A call placed by `POST /calls` is ended by its dial, with its `call.completed`.
  const placed = call.direction === 'outbound' && !call.campaignId;
  if (!placed && update.status === 'completed') await advanceVoiceCall(deps.db, orgId, callId, { status: 'completed', durationSeconds: update.durationSeconds });
  else if (!placed && update.status === 'failed') await advanceVoiceCall(deps.db, orgId, callId, { status: 'failed', reason: update.reason });
  if (deps.temporal) {
    try {
      await deps.temporal.client.workflow.getHandle(workflowIds.voiceCall(callId)).signal(callStatusSignal, update);
      return;
    } catch (err) {
      if (!(err instanceof WorkflowNotFoundError)) ctx.state.log.warn({ err, orgId, callId }, 'voice: signalling the call workflow failed; completing inline');
    }
  }
  if (update.status === 'answered') await advanceVoiceCall(deps.db, orgId, callId, { status: 'answered' });
  else if (update.status === 'failed') await advanceVoiceCall(deps.db, orgId, callId, { status: 'failed', reason: update.reason });
  else if (update.status === 'completed') await completeCall(deps.db, orgId, callId, update.durationSeconds);
}
