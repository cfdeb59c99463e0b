/**
 * Answering calls (docs/voice.md): what a voice webhook says to the carrier. A number assigned to
 * an agent with a published version is answered with markup connecting the call to the relay
 * (domain/voice/markup.ts) — the agent's greeting, language, keypad and barge-in settings, and a relay
 * reference pinned to the published version and the stored call. Anything else is a spoken refusal and a
 * hang-up, the call stored `failed` with the reason when the number belongs to an organization.
 */
import type { Db } from '../../db';
import type { AnsweredCampaignCall, TelephonyAdapter } from '../../providers/telephony';
import { getAgent } from '../../db/repositories/agents';
import { getVersion } from '../../db/repositories/agentVersions';
import { findOwnerOfNumber } from '../../db/repositories/numbers';
import { createVoiceCall, endVoiceCall, getVoiceCall, type VoiceCallRecord } from '../../db/repositories/voiceCalls';
import { connectPlacedCall, getPlacedCall } from '../../db/repositories/calls';
import type { Knex } from 'knex';
import { getConversation } from '../../db/repositories/conversations';
import { amountFor, feeOf, PRICES } from '../../domain/billing/prices';
import { recordUsage } from '../billing/usage';
import { finishConversation } from '../conversations/service';
import type { AnalysisDeps } from '../conversations/analysis';
import { signRelayReference } from './reference';
import { pickAgentVersion } from '../agents/traffic';
import type { CompiledAgent } from '../../domain/agents/compile';
import { conversationVariables } from '../../domain/conversations/prompt';
import { greetingFor } from '../../domain/conversations/runtime';
import { connectRelayMarkup, refusalMarkup, transferMarkup, voicemailMarkup } from '../../domain/voice/markup';
import { carrierSpeech, type SpeechCarrier } from '../../domain/voice/carrierVoices';
import { effectivePhoneSettings, inboundRouting, recordingNotice, voicemailRouting, type InboundRouting } from '../../domain/settings/phone';
import { getPhoneSettings } from '../../db/repositories/phoneSettings';
import { callRelayOpened, findVoiceCallByProviderId, recordCallRecording, recordCallTransfer } from '../../db/repositories/voiceCalls';
import { setConversationDuration } from '../../db/repositories/conversations';
import { emitEvent } from '../../events/emit';
import { escalationDestinationFor, escalationSummary } from '../conversations/escalation';

/** The call a webhook reports (Twilio/TeXML parameters `CallSid`, `From`, `To`). */
export interface IncomingCall {
  provider: string;
  providerCallId: string;
  from: string;
  to: string;
}

/** The answer: markup for the carrier, and the call stored (absent for a number of no organization). */
export interface CallAnswer {
  markup: string;
  call?: VoiceCallRecord;
  /**
   * Why the call was refused, else null. `call_ended`: a webhook for a carrier call id whose call has ended (a replay
   * or a late retry), answered with a hang-up and nothing minted.
   */
  refused: 'number_not_in_service' | 'number_unassigned' | 'agent_not_published' | 'call_ended' | null;
  /** How the call was routed by the number's business hours (`agent` when answered by the agent). */
  routing?: InboundRouting['action'];
}

/** Where the carrier posts what happens after the first answer of a call (absolute URLs, per call). */
export interface CallUrls {
  /** `<Record action>`: the voicemail's recording and transcription. */
  recording: (call: VoiceCallRecord) => string;
  /** `<Dial action>`: how a transfer ended (a busy or unanswered destination falls back to a voicemail). */
  dialEnded: (call: VoiceCallRecord) => string;
  /** `<Number url>`: what the person taking a transfer hears first (the conversation's summary). */
  whisper: (call: VoiceCallRecord) => string;
}

/** The speech carrier whose markup a voice provider speaks (the sandbox speaks Twilio's). */
export function speechCarrierOf(provider: string): SpeechCarrier {
  return provider === 'telnyx' ? 'telnyx' : 'twilio';
}

/** Refusal sentences, spoken before the hang-up. */
export const REFUSALS = {
  number_not_in_service: 'The number you have called is not in service. Goodbye.',
  number_unassigned: 'Sorry, nobody is available to take your call at this number. Goodbye.',
  agent_not_published: 'Sorry, this line is not ready to take calls yet. Please try again later. Goodbye.',
} as const;

/**
 * Decides how to answer an inbound call and stores it.
 * @param relayUrl builds the relay WebSocket URL carrying a signed reference for the stored call
 * @param actionUrl the `<Connect action>` URL for the stored call (transfers are dialed from it)
 */
export async function answerInboundCall(
  db: Db,
  incoming: IncomingCall,
  relayUrl: (call: VoiceCallRecord, agent: CompiledAgent) => Promise<string>,
  actionUrl: (call: VoiceCallRecord) => string,
  urls?: CallUrls,
  at: Date = new Date(),
): Promise<CallAnswer> {
  // A carrier call id whose call has ended (a replayed or late webhook) is hung up: no relay reference, no voicemail.
  const seen = await findVoiceCallByProviderId(db, incoming.provider, incoming.providerCallId);
  if (seen && (seen.status === 'completed' || seen.status === 'failed')) return { markup: HANGUP, call: seen, refused: 'call_ended' };
  const owner = await findOwnerOfNumber(db, incoming.to);
  if (!owner) return { markup: refusalMarkup(REFUSALS.number_not_in_service), refused: 'number_not_in_service' };
  const orgId = owner.orgId;
  const base = { provider: incoming.provider, providerCallId: incoming.providerCallId, direction: 'inbound' as const, from: incoming.from, to: incoming.to };
  const agentRecord = owner.number.agentId ? await getAgent(db, orgId, owner.number.agentId) : undefined;
  const refuse = async (reason: 'number_unassigned' | 'agent_not_published'): Promise<CallAnswer> => {
    const call = await createVoiceCall(db, orgId, { ...base, agentId: agentRecord?.id ?? null, versionId: null, status: 'failed', failureReason: reason });
    return { markup: refusalMarkup(REFUSALS[reason], agentRecord?.language), call, refused: reason };
  };
  const settings = effectivePhoneSettings((await getPhoneSettings(db, orgId, owner.number.id))?.settings);
  const routing = inboundRouting(settings, at);
  if (routing.action !== 'agent' && urls) return answerAfterHours(db, orgId, base, agentRecord ?? null, routing, settings, urls);
  if (!agentRecord) return refuse('number_unassigned');
  // The agent's traffic split picks the version, sticky on the caller's number (docs/api-notes.md "Traffic splits").
  const picked = agentRecord.publishedVersionId ? await pickAgentVersion(db, orgId, agentRecord.id, incoming.from) : null;
  if (!picked) return refuse('agent_not_published');
  const version = await getVersion(db, orgId, agentRecord.id, picked.versionId);
  if (!version) return refuse('agent_not_published');
  const call = await createVoiceCall(db, orgId, { ...base, agentId: agentRecord.id, versionId: picked.versionId, status: 'ringing', routing: 'agent', trafficSplit: picked.split });
  // A replayed webhook gets the call stored first, on the version picked then.
  const agent = (call.versionId && call.versionId !== picked.versionId ? (await getVersion(db, orgId, agentRecord.id, call.versionId))?.snapshot ?? version.snapshot : version.snapshot) as CompiledAgent;
  // A carrier call id seen before (a retried or replayed webhook): its markup again only while it rings and
  // its relay is unopened; never a reference for a call that was answered or has ended.
  if (call.status !== 'ringing' || (await callRelayOpened(db, orgId, call.id))) return { markup: HANGUP, call, refused: null, routing: 'agent' };
  await emitCallStarted(db, call);
  const speech = carrierSpeech(speechCarrierOf(incoming.provider), agent.voice?.id, agent.language);
  const markup = connectRelayMarkup({
    url: await relayUrl(call, agent),
    welcomeGreeting: greetingFor(agent, conversationVariables(agent, {})),
    language: agent.language,
    dtmfDetection: agent.dtmf.enabled,
    interruptible: true,
    action: actionUrl(call),
    parameters: { callId: call.id },
    speech,
    notice: recordingNotice(settings),
  });
  return { markup, call, refused: null, routing: 'agent' };
}

/** `call.started` of a call just stored (once per call: a carrier retrying its webhook gets the stored call back). */
async function emitCallStarted(db: Db, call: VoiceCallRecord): Promise<void> {
  if (Date.now() - Date.parse(call.createdAt) > 60_000) return;
  await emitEvent(db, call.orgId, 'call.started', { callId: call.id, agentId: call.agentId, direction: call.direction, from: call.from, to: call.to, startedAt: call.createdAt, campaignId: call.campaignId });
}

/**
 * A call outside the number's business hours (docs/voice.md "Phone settings on calls"): a voicemail
 * (`<Record>`; the recording arrives at `urls.recording`), a message and the hang-up, or a transfer to the
 * escalation destination (a destination that cannot be dialed, or none open, takes a voicemail instead).
 */
async function answerAfterHours(
  db: Db,
  orgId: string,
  base: { provider: string; providerCallId: string; direction: 'inbound'; from: string; to: string },
  agentRecord: { id: string; publishedVersionId: string | null; language: string } | null,
  routing: Exclude<InboundRouting, { action: 'agent' }>,
  settings: ReturnType<typeof effectivePhoneSettings>,
  urls: CallUrls,
): Promise<CallAnswer> {
  const language = agentRecord?.language ?? 'en-US';
  let route: Exclude<InboundRouting, { action: 'agent' }> = routing;
  const destination = route.action === 'escalation' ? await escalationDestinationFor(db, orgId, { destinationId: route.destinationId, dialable: true }) : null;
  if (route.action === 'escalation' && !destination) route = voicemailRouting(settings);
  const call = await createVoiceCall(db, orgId, { ...base, agentId: agentRecord?.id ?? null, versionId: agentRecord?.publishedVersionId ?? null, status: 'ringing', routing: route.action });
  await emitCallStarted(db, call);
  const notice = recordingNotice(settings);
  if (route.action === 'message') return { markup: refusalMarkup(route.message, language), call, refused: null, routing: 'message' };
  if (route.action === 'voicemail') {
    const greeting = route.action === 'voicemail' && notice ? `${notice} ${route.greeting}` : route.greeting;
    return { markup: voicemailMarkup({ greeting, language, maxSeconds: route.maxSeconds, action: urls.recording(call), transcribe: route.transcribe }), call, refused: null, routing: 'voicemail' };
  }
  await transferCall(db, call, { to: destination!.address, destinationId: destination!.id, reason: 'after_hours', summary: `A caller at ${call.from} called outside business hours.` });
  const markup = transferMarkup({ line: 'We are closed right now. Connecting you to our on-call team.', language, destination: destination!.address, action: urls.dialEnded(call), whisperUrl: urls.whisper(call) });
  return { markup, call, refused: null, routing: 'escalation' };
}

/** Stores a call's transfer and emits `call.transferred` (once per call). */
async function transferCall(db: Db, call: VoiceCallRecord, t: { to: string; destinationId: string | null; reason: string; summary: string | null }): Promise<void> {
  await db.transaction(async (trx) => {
    if (!(await recordCallTransfer(trx, call.orgId, call.id, { to: t.to, destinationId: t.destinationId }))) return;
    await emitEvent(trx, call.orgId, 'call.transferred', { callId: call.id, agentId: call.agentId, conversationId: call.conversationId, destinationId: t.destinationId, destination: t.to, reason: t.reason, summary: t.summary });
  });
}

/**
 * The end of a relay session (the `<Connect action>` callback) for a stored call: an escalation or a
 * `transfer_call` (the relay's `end` frame's `HandoffData`) is dialed through to its destination — a
 * `transfer_call` skill's number, else the organization's escalation destination — with the
 * conversation's summary whispered to the person answering and `call.transferred` emitted; nobody to
 * transfer to takes a voicemail; anything else hangs up.
 */
export async function answerRelayEnded(db: Db, call: VoiceCallRecord, handoffData: string | undefined, urls: CallUrls): Promise<string> {
  const handoff = parseHandoff(handoffData);
  if (!handoff) return HANGUP;
  let to = handoff.destination;
  let destinationId: string | null = null;
  if (!to) {
    const d = await escalationDestinationFor(db, call.orgId, { dialable: true });
    if (!d) return voicemailAfterAll(db, call, urls);
    to = d.address;
    destinationId = d.id;
  }
  const summary = call.conversationId ? await escalationSummary(db, call.orgId, call.conversationId, call.from) : null;
  await transferCall(db, call, { to, destinationId, reason: handoff.reason === 'transferred' ? 'transfer_call' : 'escalation', summary });
  return transferMarkup({ line: null, language: 'en-US', destination: to, action: urls.dialEnded(call), whisperUrl: urls.whisper(call) });
}

/**
 * A call's relay ended in a transfer or an escalation on a carrier driven by commands (Telnyx Call Control:
 * campaign and on-demand calls): the destination — the `transfer_call` skill's number, else the
 * organization's open escalation destination — is recorded with `call.transferred` (and the conversation's
 * summary) and the carrier is told to transfer the call. Calls of TwiML carriers (Twilio, Telnyx TeXML, the
 * sandbox) transfer by the markup of their `<Connect action>` ({@link answerRelayEnded}) and are left alone here.
 */
export async function transferOverCallControl(db: Db, telephony: TelephonyAdapter, orgId: string, callId: string, handoff: { reason: string; destination: string | null }): Promise<void> {
  const call = await getVoiceCall(db, orgId, callId);
  if (!call?.providerCallId || call.provider !== telephony.provider || !telephony.transferCall) return;
  let to = handoff.destination;
  let destinationId: string | null = null;
  if (!to) {
    const d = await escalationDestinationFor(db, orgId, { dialable: true });
    if (!d) return;
    to = d.address;
    destinationId = d.id;
  }
  const summary = call.conversationId ? await escalationSummary(db, orgId, call.conversationId, call.direction === 'inbound' ? call.from : call.to) : null;
  await transferCall(db, call, { to, destinationId, reason: handoff.reason === 'transferred' ? 'transfer_call' : 'escalation', summary });
  await telephony.transferCall(orgId, call.providerCallId, to, call.id);
}

/** `<Response><Hangup/></Response>` */
const HANGUP = '<?xml version="1.0" encoding="UTF-8"?><Response><Hangup/></Response>';

/** The handoff of a relay's `end` frame: why, and the number or SIP URI to dial (null: the escalation destination). */
function parseHandoff(handoffData: string | undefined): { reason: string; destination: string | null } | null {
  try {
    const d = handoffData ? (JSON.parse(handoffData) as { reason?: unknown; destination?: unknown }) : null;
    if (!d || (d.reason !== 'escalated' && d.reason !== 'transferred' && typeof d.destination !== 'string')) return null;
    const destination = typeof d.destination === 'string' && /^\+?[0-9*#]{3,20}$|^sips?:[^<>"\s]{3,200}$/.test(d.destination) ? d.destination : null;
    return { reason: String(d.reason ?? 'transferred'), destination };
  } catch {
    return null;
  }
}

/** A transfer that found nobody: the agent takes a message (the number's voicemail greeting). */
async function voicemailAfterAll(db: Db, call: VoiceCallRecord, urls: CallUrls): Promise<string> {
  const number = await findOwnerOfNumber(db, call.direction === 'inbound' ? call.to : call.from);
  const settings = effectivePhoneSettings(number ? (await getPhoneSettings(db, call.orgId, number.number.id))?.settings : undefined);
  const vm = voicemailRouting(settings);
  return voicemailMarkup({ greeting: "Nobody is available to take your call right now. Please leave a message after the beep and we'll call you back.", language: 'en-US', maxSeconds: vm.maxSeconds, action: urls.recording(call), transcribe: vm.transcribe });
}

/**
 * How a transfer's `<Dial>` ended (`DialCallStatus`): busy, no answer, failed or cancelled falls back to
 * the agent taking a message; otherwise the call is over.
 */
export async function answerDialEnded(db: Db, call: VoiceCallRecord, dialStatus: string | undefined, urls: CallUrls): Promise<string> {
  if (['busy', 'no-answer', 'failed', 'canceled'].includes(String(dialStatus ?? '').toLowerCase())) return voicemailAfterAll(db, call, urls);
  return HANGUP;
}

/** What the person taking a transfer hears before being connected: the conversation's summary. */
export async function whisperMarkup(db: Db, call: VoiceCallRecord): Promise<string> {
  const summary = call.conversationId ? await escalationSummary(db, call.orgId, call.conversationId, call.from) : `A caller at ${call.from} is being transferred to you.`;
  return `<?xml version="1.0" encoding="UTF-8"?><Response><Say language="en-US">${summary.replace(/[<>&"']/g, (c) => ({ '<': '&lt;', '>': '&gt;', '&': '&amp;', '"': '&quot;', "'": '&apos;' })[c]!)}</Say></Response>`;
}

/**
 * The voicemail a caller left (the `<Record action>` callback: `RecordingUrl`, `RecordingDuration`, and
 * `TranscriptionText` when the carrier transcribed it): stored once on the call with `voicemail.received`.
 * @returns markup that hangs up
 */
export async function receiveRecording(db: Db, call: VoiceCallRecord, rec: { url?: string; seconds?: number; transcript?: string }): Promise<string> {
  const number = await findOwnerOfNumber(db, call.direction === 'inbound' ? call.to : call.from);
  const numberId = number?.orgId === call.orgId ? number.number.id : null;
  await db.transaction(async (trx) => {
    const { call: stored, storedNow } = await recordCallRecording(trx, call.orgId, call.id, { url: rec.url ?? null, seconds: rec.seconds ?? null, transcript: rec.transcript ?? null });
    if (!storedNow || !stored?.recording) return;
    await emitEvent(trx, call.orgId, 'voicemail.received', {
      callId: call.id,
      agentId: call.agentId,
      numberId,
      from: call.from,
      to: call.to,
      durationSeconds: stored.recording.seconds,
      recordingUrl: stored.recording.url,
      transcript: stored.recording.transcript,
      receivedAt: stored.recording.receivedAt,
    });
  });
  return HANGUP;
}

/**
 * The markup answering the end of a relay session (the `<Connect action>` callback): a transfer's
 * `HandoffData` (JSON with `destination`, written by the relay's `end` frame) is dialed; anything else
 * hangs up.
 */
export function relayEndedMarkup(handoffData: string | undefined): string {
  let destination: string | null = null;
  try {
    const d = handoffData ? (JSON.parse(handoffData) as { destination?: unknown }) : null;
    if (d && typeof d.destination === 'string' && /^\+?[0-9*#]{3,20}$|^sips?:[^<>"\s]{3,200}$/.test(d.destination)) destination = d.destination;
  } catch {
    destination = null;
  }
  if (!destination) return '<?xml version="1.0" encoding="UTF-8"?><Response><Hangup/></Response>';
  const target = destination.startsWith('sip') ? `<Sip>${destination.replace(/&/g, '&amp;')}</Sip>` : `<Number>${destination}</Number>`;
  return `<?xml version="1.0" encoding="UTF-8"?><Response><Dial>${target}</Dial></Response>`;
}

/** Usage entry kind and price of call minutes (domain/billing/prices.ts). */
export const CALL_MINUTES_FEE = feeOf(PRICES.voiceMinutes);

/**
 * A call ended (the carrier's `completed` status with its duration): the call is stored `completed`,
 * its minutes are charged once (usage `voice_minutes`, deduplicated per call, rounded up to whole
 * minutes), and its conversation is closed if the relay did not close it (a socket that died without a
 * goodbye) and analysed once when `analysis` is given. Idempotent: a second run charges nothing and changes nothing.
 * @param onCompleted runs in the transaction that stores the call `completed`, only in the run that does
 *   (a call placed by `POST /calls` emits its `call.completed` there)
 * @returns the minutes charged by this run (0 when charged before, or none connected), or null when the call does not exist
 */
export async function completeCall(
  db: Db,
  orgId: string,
  callId: string,
  durationSeconds: number,
  analysis?: AnalysisDeps,
  onCompleted?: (trx: Knex.Transaction, call: VoiceCallRecord) => Promise<void>,
): Promise<{ minutes: number; chargedNow: boolean } | null> {
  // The charge and the duration commit with the completion: a reader that sees the call `completed` sees its minutes.
  const done = await db.transaction(async (trx) => {
    const ended = await endVoiceCall(trx, orgId, callId, { status: 'completed', durationSeconds });
    if (ended && onCompleted) await onCompleted(trx, ended);
    const call = ended ?? (await getVoiceCall(trx, orgId, callId));
    if (!call) return null;
    const seconds = call.durationSeconds ?? durationSeconds;
    const minutes = Math.ceil(Math.max(0, seconds) / 60);
    const chargedNow =
      minutes > 0 &&
      (await recordUsage(trx, orgId, {
        ...CALL_MINUTES_FEE,
        amountCents: amountFor(PRICES.voiceMinutes.unitPriceCents, minutes),
        quantity: minutes,
        dedupeKey: `voice-call:${callId}:minutes`,
        details: { callId, conversationId: call.conversationId, agentId: call.agentId, durationSeconds: seconds },
      }));
    if (call.conversationId) await setConversationDuration(trx, orgId, call.conversationId, seconds);
    return { call, minutes, chargedNow };
  });
  if (!done) return null;
  const { call, minutes, chargedNow } = done;
  if (call.conversationId) {
    const c = await getConversation(db, orgId, call.conversationId);
    if (c && c.status === 'active') await finishConversation(db, c, 'ended_by_user', analysis);
  }
  return { minutes, chargedNow };
}

/**
 * The API's public base (`PUBLIC_BASE_URL` + `/api/v1`): what carriers call back and connect their relay
 * WebSockets to, and where the sandbox callee connects as a carrier would.
 */
export function publicApiBase(config: { publicBaseUrl: string }): string {
  return `${config.publicBaseUrl.replace(/\/+$/, '')}/api/v1`;
}

/** An answered outbound dial to connect to the relay: a campaign's, or a call placed by `POST /calls`. */
export type CampaignCallDial = AnsweredCampaignCall;

/** What the carrier's instructions connect an answered outbound call to. */
export interface PreparedCall {
  call: VoiceCallRecord;
  /** The relay's WebSocket URL; its reference has the relay speak the greeting first. */
  relayUrl: string;
  /** The pinned version's compiled agent (undefined for a draft-mode call: its draft compiles at setup). */
  agent: CompiledAgent | undefined;
  /** The language (BCP 47) and keypad setting of the agent the call reaches. */
  language: string;
  dtmfEnabled: boolean;
  /**
   * Whether the relay opens the call with a line (the outbound first line, else the greeting); false when the
   * agent waits for the callee or has neither, so the callee speaks first (docs/voice.md "Outbound first line").
   */
  agentSpeaksFirst: boolean;
}

/** See {@link PreparedCall.agentSpeaksFirst}; `agent` is the compiled version or, for a draft-mode call, the draft. */
function speaksFirst(agent: Pick<CompiledAgent, 'greeting' | 'outboundGreeting' | 'outboundFirstMessageMode'> | undefined): boolean {
  return !!agent && agent.outboundFirstMessageMode !== 'wait_for_callee' && !!(agent.outboundGreeting ?? agent.greeting);
}

/**
 * Stores an answered campaign dial as an outbound call pinned to the published version the agent's traffic split
 * picks for the callee (services/agents/traffic.ts) and
 * returns the relay URL (under `apiBaseUrl`, `…/api/v1`) whose reference has the relay speak the
 * greeting first — what the carrier's call instructions connect the answered call to — and the
 * published version's compiled agent (its language and keypad settings, for those instructions).
 * A call placed by `POST /calls` (`dial.callId`) is the stored call itself: it gets the carrier's call
 * id and moves to `answered`, its reference pinned to the version (or draft) it was placed with.
 * @returns null when the agent is no longer published (the call is then stored failed), or when the
 *   placed call is not this organization's and agent's or has ended
 */
export async function prepareCampaignCall(db: Db, apiBaseUrl: string, dial: CampaignCallDial): Promise<PreparedCall | null> {
  if (dial.callId) return preparePlacedCall(db, apiBaseUrl, dial, dial.callId);
  const agent = await getAgent(db, dial.orgId, dial.agentId);
  const base = { provider: dial.provider, providerCallId: dial.providerCallId, direction: 'outbound' as const, from: dial.from, to: dial.to, campaignId: dial.campaignId };
  // The agent's traffic split picks the version, sticky on the callee's number (docs/api-notes.md "Traffic splits").
  const picked = agent?.publishedVersionId ? await pickAgentVersion(db, dial.orgId, agent.id, dial.to) : null;
  if (!agent || !picked) {
    await createVoiceCall(db, dial.orgId, { ...base, agentId: dial.agentId, versionId: null, status: 'failed', failureReason: 'agent_not_published' });
    return null;
  }
  const call = await createVoiceCall(db, dial.orgId, { ...base, agentId: agent.id, versionId: picked.versionId, status: 'answered', trafficSplit: picked.split });
  // A replayed webhook of a call that ended, or whose relay opened already, mints no reference.
  if (call.status !== 'answered' || (await callRelayOpened(db, dial.orgId, call.id))) return null;
  const versionId = call.versionId ?? picked.versionId;
  const ref = await signRelayReference(db, { org: dial.orgId, agt: agent.id, ver: versionId, call: call.id, grt: 1, ...(dial.campaignId ? { cmp: dial.campaignId } : {}) });
  const version = await getVersion(db, dial.orgId, agent.id, versionId);
  const compiled = version?.snapshot as CompiledAgent | undefined;
  return { call, relayUrl: relayUrlOf(apiBaseUrl, ref), agent: compiled, language: compiled?.language ?? agent.language ?? 'en-US', dtmfEnabled: compiled?.dtmf.enabled ?? true, agentSpeaksFirst: speaksFirst(compiled) };
}

function relayUrlOf(apiBaseUrl: string, ref: string): string {
  return `${apiBaseUrl.replace(/^http/, 'ws')}/voice/relay?ref=${ref}`;
}

/** The answered call placed by `POST /calls`: see {@link prepareCampaignCall}. */
async function preparePlacedCall(db: Db, apiBaseUrl: string, dial: CampaignCallDial, callId: string): Promise<PreparedCall | null> {
  const placed = await getPlacedCall(db, dial.orgId, callId);
  if (!placed || placed.agentId !== dial.agentId) return null;
  const connected = await connectPlacedCall(db, dial.orgId, callId, { provider: dial.provider, providerCallId: dial.providerCallId });
  // A replayed webhook of a call that ended, or whose relay opened already, mints no reference.
  if (!connected || (await callRelayOpened(db, dial.orgId, callId))) return null;
  const ref = await signRelayReference(db, { org: dial.orgId, agt: placed.agentId, ver: placed.versionId, call: callId, grt: 1, plc: 1 });
  const call = (await getVoiceCall(db, dial.orgId, callId))!;
  const version = placed.versionId ? await getVersion(db, dial.orgId, placed.agentId, placed.versionId) : undefined;
  const compiled = version?.snapshot as CompiledAgent | undefined;
  // A draft-mode call compiles the draft when the relay opens; the draft's own settings name the language.
  const draft = compiled ? undefined : await getAgent(db, dial.orgId, placed.agentId);
  return {
    call,
    relayUrl: relayUrlOf(apiBaseUrl, ref),
    agent: compiled,
    language: compiled?.language ?? draft?.language ?? 'en-US',
    dtmfEnabled: compiled?.dtmf.enabled ?? draft?.dtmf?.enabled ?? true,
    agentSpeaksFirst: speaksFirst(compiled ?? draft),
  };
}

/**
 * Answers a carrier's request for the instructions of an answered campaign call (the voice webhook with
 * the campaign's `org`, `agt` and `cmp` in its signed URL): markup connecting the call to the relay of
 * the call stored by {@link prepareCampaignCall}, without `welcomeGreeting` — the relay has the agent
 * speak its greeting first. An agent no longer published hangs the call up (the call stored failed).
 * @param apiBaseUrl the public API base (`…/api/v1`) the relay URL is built under
 * @param actionUrl the `<Connect action>` URL for the stored call
 */
export async function answerCampaignCall(db: Db, apiBaseUrl: string, dial: CampaignCallDial, actionUrl: (call: VoiceCallRecord) => string): Promise<CallAnswer> {
  const prepared = await prepareCampaignCall(db, apiBaseUrl, dial);
  if (!prepared) return { markup: '<?xml version="1.0" encoding="UTF-8"?><Response><Hangup/></Response>', refused: 'agent_not_published' };
  const markup = connectRelayMarkup({
    url: prepared.relayUrl,
    welcomeGreeting: null,
    language: prepared.language,
    dtmfDetection: prepared.dtmfEnabled,
    interruptible: true,
    action: actionUrl(prepared.call),
    parameters: { callId: prepared.call.id },
  });
  return { markup, call: prepared.call, refused: null };
}
