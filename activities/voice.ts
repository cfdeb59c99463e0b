/**
 * Activities of the `voice-call/{callId}` workflow (README "Voice calls"). Idempotent: Temporal retries
 * them, and a call's minutes are charged under one dedupe key.
 */
import type { Db } from '../db';
import { advanceVoiceCall } from '../db/repositories/voiceCalls';
import { completeCall } from '../services/voice/calls';

/** A call of an organization. */
export interface CallRef {
  orgId: string;
  callId: string;
}

/** The voice activities. */
export function createVoiceActivities(deps: { db: Db }) {
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
      const out = await completeCall(deps.db, ref.orgId, ref.callId, ref.durationSeconds);
      return { minutes: out?.minutes ?? 0 };
    },
  };
}

/** The voice activities' type (workflows import it as a type). */
export type VoiceActivities = ReturnType<typeof createVoiceActivities>;
