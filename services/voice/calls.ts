/**
 * Answering calls (README "Voice calls"): what a voice webhook says to the carrier. A number assigned to
 * an agent with a published version is answered with markup connecting the call to the relay
 * (domain/voice/markup.ts) — the agent's greeting, language, keypad and barge-in settings, and a relay
 * reference pinned to the published version and the stored call. Anything else is a spoken refusal and a
 * hang-up, the call stored `failed` with the reason when the number belongs to an organization.
 */
import type { Db } from '../../db';
import type { AnsweredCampaignCall } from '../../providers/telephony';
import { getAgent } from '../../db/repositories/agents';
import { getVersion } from '../../db/repositories/agentVersions';
import { findOwnerOfNumber } from '../../db/repositories/numbers';
import { advanceVoiceCall, createVoiceCall, type VoiceCallRecord } from '../../db/repositories/voiceCalls';
import { getConversation } from '../../db/repositories/conversations';
import { amountFor, feeOf, PRICES } from '../../domain/billing/prices';
import { recordUsage } from '../billing/usage';
import { finishConversation } from '../conversations/service';
import type { AnalysisDeps } from '../conversations/analysis';
import { signRelayReference } from './reference';
import type { CompiledAgent } from '../../domain/agents/compile';
import { conversationVariables } from '../../domain/conversations/prompt';
import { greetingFor } from '../../domain/conversations/runtime';
import { connectRelayMarkup, refusalMarkup } from '../../domain/voice/markup';

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
  /** Why the call was refused, else null. */
  refused: 'number_not_in_service' | 'number_unassigned' | 'agent_not_published' | null;
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
): Promise<CallAnswer> {
  const owner = await findOwnerOfNumber(db, incoming.to);
  if (!owner) return { markup: refusalMarkup(REFUSALS.number_not_in_service), refused: 'number_not_in_service' };
  const orgId = owner.orgId;
  const base = { provider: incoming.provider, providerCallId: incoming.providerCallId, direction: 'inbound' as const, from: incoming.from, to: incoming.to };
  const agentRecord = owner.number.agentId ? await getAgent(db, orgId, owner.number.agentId) : undefined;
  const refuse = async (reason: 'number_unassigned' | 'agent_not_published'): Promise<CallAnswer> => {
    const call = await createVoiceCall(db, orgId, { ...base, agentId: agentRecord?.id ?? null, versionId: null, status: 'failed', failureReason: reason });
    return { markup: refusalMarkup(REFUSALS[reason], agentRecord?.language), call, refused: reason };
  };
  if (!agentRecord) return refuse('number_unassigned');
  if (!agentRecord.publishedVersionId) return refuse('agent_not_published');
  const version = await getVersion(db, orgId, agentRecord.id, agentRecord.publishedVersionId);
  if (!version) return refuse('agent_not_published');
  const agent = version.snapshot as CompiledAgent;
  const call = await createVoiceCall(db, orgId, { ...base, agentId: agentRecord.id, versionId: agentRecord.publishedVersionId, status: 'ringing' });
  const markup = connectRelayMarkup({
    url: await relayUrl(call, agent),
    welcomeGreeting: greetingFor(agent, conversationVariables(agent, {})),
    language: agent.language,
    dtmfDetection: agent.dtmf.enabled,
    interruptible: true,
    action: actionUrl(call),
    parameters: { callId: call.id },
  });
  return { markup, call, refused: null };
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
 * @returns the minutes charged by this run (0 when charged before, or none connected), or null when the call does not exist
 */
export async function completeCall(db: Db, orgId: string, callId: string, durationSeconds: number, analysis?: AnalysisDeps): Promise<{ minutes: number; chargedNow: boolean } | null> {
  const call = await advanceVoiceCall(db, orgId, callId, { status: 'completed', durationSeconds });
  if (!call) return null;
  const seconds = call.durationSeconds ?? durationSeconds;
  const minutes = Math.ceil(Math.max(0, seconds) / 60);
  let chargedNow = false;
  if (minutes > 0) {
    chargedNow = await recordUsage(db, orgId, {
      ...CALL_MINUTES_FEE,
      amountCents: amountFor(PRICES.voiceMinutes.unitPriceCents, minutes),
      quantity: minutes,
      dedupeKey: `voice-call:${callId}:minutes`,
      details: { callId, conversationId: call.conversationId, agentId: call.agentId, durationSeconds: seconds },
    });
  }
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

/** An answered campaign dial to connect to the relay. */
export type CampaignCallDial = AnsweredCampaignCall;

/**
 * Stores an answered campaign dial as an outbound call pinned to the agent's published version and
 * returns the relay URL (under `apiBaseUrl`, `…/api/v1`) whose reference has the relay speak the
 * greeting first — what the carrier's call instructions connect the answered call to — and the
 * published version's compiled agent (its language and keypad settings, for those instructions).
 * @returns null when the agent is no longer published (the call is then stored failed)
 */
export async function prepareCampaignCall(db: Db, apiBaseUrl: string, dial: CampaignCallDial): Promise<{ call: VoiceCallRecord; relayUrl: string; agent: CompiledAgent | undefined } | null> {
  const agent = await getAgent(db, dial.orgId, dial.agentId);
  const base = { provider: dial.provider, providerCallId: dial.providerCallId, direction: 'outbound' as const, from: dial.from, to: dial.to, campaignId: dial.campaignId };
  if (!agent?.publishedVersionId) {
    await createVoiceCall(db, dial.orgId, { ...base, agentId: dial.agentId, versionId: null, status: 'failed', failureReason: 'agent_not_published' });
    return null;
  }
  const call = await createVoiceCall(db, dial.orgId, { ...base, agentId: agent.id, versionId: agent.publishedVersionId, status: 'answered' });
  const ref = await signRelayReference(db, { org: dial.orgId, agt: agent.id, ver: agent.publishedVersionId, call: call.id, grt: 1, cmp: dial.campaignId });
  const version = await getVersion(db, dial.orgId, agent.id, agent.publishedVersionId);
  return { call, relayUrl: `${apiBaseUrl.replace(/^http/, 'ws')}/voice/relay?ref=${ref}`, agent: version?.snapshot as CompiledAgent | undefined };
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
  const agent = prepared.agent;
  const markup = connectRelayMarkup({
    url: prepared.relayUrl,
    welcomeGreeting: null,
    language: agent?.language ?? 'en-US',
    dtmfDetection: agent?.dtmf.enabled ?? true,
    interruptible: true,
    action: actionUrl(prepared.call),
    parameters: { callId: prepared.call.id },
  });
  return { markup, call: prepared.call, refused: null };
}
