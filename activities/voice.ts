/**
 * Activities of the `voice-call/{callId}` workflow (docs/voice.md). Idempotent: Temporal retries
 * them, and a call's minutes are charged under one dedupe key.
 */
import type { Db } from '../db';
import { advanceVoiceCall, getVoiceCall } from '../db/repositories/voiceCalls';
import { completeCall, prepareCampaignCall, type CampaignCallDial } from '../services/voice/calls';
import { RelayClient } from '../providers/telephony/sandboxCaller';
import { createLlm } from '../providers/llm';
import type { LlmProvider } from '../domain/conversations/llm';
import type { AnalysisDeps } from '../services/conversations/analysis';
import { sandboxCalleeScript } from '../services/voice/sandboxCallee';

export { SANDBOX_CALLEE_SCRIPT } from '../services/voice/sandboxCallee';

/**
 * The sandbox carrier's answered campaign call (docs/voice.md): the call is stored and connected
 * to the relay as a carrier would connect it, the agent opens (its outbound first line; or the callee speaks first when
 * the agent waits for the callee), the sandbox callee answers, asks one
 * question (services/voice/sandboxCallee.ts: about the agent's knowledge, else a scripted line) and hangs up; the call is then completed with `durationSeconds` (minutes
 * charged once, conversation closed and analysed once when `analysis` is given). A real carrier reaches the same relay through the markup
 * `prepareCampaignCall` serves. A call placed by `POST /calls` (`dial.callId`) converses the same way.
 * @param onCompleted runs in the transaction that stores the call completed (services/voice/calls.ts completeCall)
 * @returns the conversation the call held, or null when the agent was no longer published
 */
export async function converseSandboxCampaignCall(
  db: Db,
  apiBaseUrl: string,
  dial: CampaignCallDial,
  durationSeconds: number,
  script?: string[],
  analysis?: AnalysisDeps,
  onCompleted?: Parameters<typeof completeCall>[5],
): Promise<string | null> {
  const prepared = await prepareCampaignCall(db, apiBaseUrl, dial);
  if (!prepared) return null;
  try {
    const client = await RelayClient.open(prepared.relayUrl);
    client.send({ type: 'setup', sessionId: `VX${dial.providerCallId}`, callSid: dial.providerCallId, from: dial.from, to: dial.to, direction: 'outbound-api', callStatus: 'in-progress', customParameters: {} });
    // The agent's opening line, unless it waits for the callee or has none (docs/voice.md "Outbound first line").
    if (prepared.agentSpeaksFirst) await client.reply();
    for (const line of script ?? sandboxCalleeScript(prepared.agent)) {
      if (client.closed || client.end) break;
      client.send({ type: 'prompt', voicePrompt: line, lang: 'en-US', last: true });
      await client.reply();
    }
    client.hangUp();
    await client.closedWith();
  } finally {
    // The carrier's `completed` status comes whether or not the relay was reached: minutes charged once.
    await completeCall(db, dial.orgId, prepared.call.id, durationSeconds, analysis, onCompleted);
  }
  return (await getVoiceCall(db, dial.orgId, prepared.call.id))?.conversationId ?? null;
}

/** A call of an organization. */
export interface CallRef {
  orgId: string;
  callId: string;
}

/** The voice activities. */
export function createVoiceActivities(deps: { db: Db }, providers: { llm?: LlmProvider } = {}) {
  let llm = providers.llm;
  return {
    /** Stores the call answered (from `ringing` only). */
    async markCallAnswered(ref: CallRef): Promise<void> {
      await advanceVoiceCall(deps.db, ref.orgId, ref.callId, { status: 'answered' });
    },
    /** Stores the call failed with the carrier's reason (busy, no-answer, …), closing nothing else. */
    async markCallFailed(ref: CallRef & { reason: string }): Promise<void> {
      await advanceVoiceCall(deps.db, ref.orgId, ref.callId, { status: 'failed', reason: ref.reason });
    },
    /** The call ended: stored completed, minutes charged once, its conversation closed (services/voice/calls.ts completeCall). */
    async completeVoiceCall(ref: CallRef & { durationSeconds: number }): Promise<{ minutes: number }> {
      const out = await completeCall(deps.db, ref.orgId, ref.callId, ref.durationSeconds, { db: deps.db, llm: (llm ??= createLlm()) });
      return { minutes: out?.minutes ?? 0 };
    },
  };
}

/** The voice activities' type (workflows import it as a type). */
export type VoiceActivities = ReturnType<typeof createVoiceActivities>;
