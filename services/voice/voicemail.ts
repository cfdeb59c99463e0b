/**
 * Voicemail drops on campaign calls (docs/voice.md "Voicemail"): when answering-machine detection reports the
 * end of a machine's greeting (the beep), a campaign call whose agent has a voicemail message leaves it
 * and hangs up. This module decides the message (the campaign's pinned version, variables filled as in the
 * greeting) and stores what was left — the call (`voice_calls`, its `voicemail_message`) and its `voice`
 * conversation holding the message as the agent's one line, ended — so the dial's record links to a
 * transcript that says what was left. Every step is idempotent: a carrier repeating its webhook, or a
 * retried dial, finds the call and conversation already stored.
 */
import type { Db } from '../../db';
import { derivedId } from '../../db/ids';
import { getAgent, isUniqueViolation } from '../../db/repositories/agents';
import { getVersion } from '../../db/repositories/agentVersions';
import { campaignPinnedVersion } from '../../db/repositories/campaigns';
import { getConversation } from '../../db/repositories/conversations';
import { createVoiceCall, getVoiceCall, linkCallConversation, type VoiceCallRecord } from '../../db/repositories/voiceCalls';
import type { CompiledAgent } from '../../domain/agents/compile';
import { conversationVariables } from '../../domain/conversations/prompt';
import { voicemailMessageFor } from '../../domain/conversations/runtime';
import { finishConversation, startConversation } from '../conversations/service';
import { refusalMarkup } from '../../domain/voice/markup';
import type { CampaignCallDial } from './calls';

/** The message a campaign's calls leave on machines, and the version it comes from. */
export interface CampaignVoicemail {
  /** The text spoken after the beep, variables filled. */
  message: string;
  /** The agent version it was compiled into (`ver_…`). */
  versionId: string;
  /** BCP 47 language the message is spoken in (the agent's). */
  language: string;
}

/**
 * The voicemail message of a campaign's calls: the agent version the campaign pinned at launch (else the
 * agent's current published version), its `voicemailMessage` rendered with the agent's variable
 * defaults as the greeting is. Scoped by organization: another organization's campaign or agent is none.
 * @returns null when the version has no message (the machine is then only the `voicemail` outcome)
 */
export async function campaignVoicemail(db: Db, orgId: string, campaignId: string, agentId: string): Promise<CampaignVoicemail | null> {
  const versionId = (await campaignPinnedVersion(db, orgId, campaignId)) ?? (await getAgent(db, orgId, agentId))?.publishedVersionId ?? null;
  if (!versionId) return null;
  const version = await getVersion(db, orgId, agentId, versionId);
  if (!version) return null;
  const agent = version.snapshot as CompiledAgent;
  if (!agent.voicemailMessage) return null; // before the variables: a version may predate the field
  const message = voicemailMessageFor(agent, conversationVariables(agent, {}));
  return message ? { message, versionId, language: agent.language } : null;
}

/**
 * Twilio `AnsweredBy` values (answering-machine detection with `MachineDetection=DetectMessageEnd`) that
 * mean a machine finished its greeting: after the beep, after silence, or otherwise — the moment to speak.
 */
export function isMachineGreetingEnd(answeredBy: string | null | undefined): boolean {
  return /^machine_end_(beep|silence|other)$/.test(answeredBy ?? '');
}

/** Conversation id of a call's voicemail (one per call, so a repeated store finds the first). */
function voicemailConversationId(callId: string): string {
  return derivedId('cnv', `voicemail:${callId}`);
}

/**
 * Stores a campaign call that leaves `vm` on a machine: the call (outbound, answered, pinned to the
 * message's version, `voicemail_message` set) and its `voice` conversation — the message as the agent's
 * only line, ended `end_call` (the agent hung up). Idempotent per (provider, provider call id).
 * @returns the stored call, its `conversationId` set
 */
export async function recordVoicemail(db: Db, dial: CampaignCallDial, vm: CampaignVoicemail): Promise<VoiceCallRecord> {
  const call = await createVoiceCall(db, dial.orgId, {
    provider: dial.provider,
    providerCallId: dial.providerCallId,
    direction: 'outbound',
    from: dial.from,
    to: dial.to,
    campaignId: dial.campaignId,
    agentId: dial.agentId,
    versionId: vm.versionId,
    status: 'answered',
    voicemailMessage: vm.message,
  });
  if (call.conversationId) return call;
  const id = voicemailConversationId(call.id);
  let conversation = await getConversation(db, dial.orgId, id);
  if (!conversation) {
    try {
      conversation = (
        await startConversation(db, dial.orgId, {
          id,
          agentId: dial.agentId,
          channel: 'voice',
          versionId: vm.versionId,
          keyId: null,
          counterpart: dial.to,
          metadata: { callId: call.id, campaignId: dial.campaignId, callSid: dial.providerCallId, from: dial.from, to: dial.to, direction: 'outbound-api', voicemail: true },
          seed: [{ role: 'assistant', content: vm.message }],
        })
      ).conversation;
    } catch (err) {
      if (!isUniqueViolation(err)) throw err;
      conversation = (await getConversation(db, dial.orgId, id))!;
    }
  }
  await linkCallConversation(db, dial.orgId, call.id, conversation.id);
  if (conversation.status === 'active') await finishConversation(db, conversation, 'end_call');
  return (await getVoiceCall(db, dial.orgId, call.id))!;
}

/**
 * A campaign call's voice webhook when Twilio's answering-machine detection says a machine finished its
 * greeting (`AnsweredBy` `machine_end_*`, asked for with `MachineDetection=DetectMessageEnd`): the
 * campaign's voicemail message is stored and the answer is TwiML `<Say>` then `<Hangup/>`.
 * @returns the markup and the stored call, or null when this is no machine at its beep or there is no message (the call then goes on as an answered campaign call)
 */
export async function answerMachineAtBeep(db: Db, dial: CampaignCallDial, answeredBy: string | undefined): Promise<{ markup: string; call: VoiceCallRecord } | null> {
  if (!isMachineGreetingEnd(answeredBy) || !dial.campaignId) return null;
  const vm = await campaignVoicemail(db, dial.orgId, dial.campaignId, dial.agentId);
  if (!vm) return null;
  const call = await recordVoicemail(db, dial, vm);
  // The same verbs as a refusal: the message spoken in the agent's language, then the hang-up.
  return { markup: refusalMarkup(vm.message, vm.language), call };
}
