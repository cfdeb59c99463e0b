/**
 * The lifecycle of one phone call (README "Voice calls"; id `voice-call/{callId}`), started when a voice
 * webhook answers the call: it follows the carrier's status callbacks as signals (`callStatus`:
 * ringing, answered, completed with its duration, failed), and on `completed` stores the call, charges
 * its minutes once and closes its conversation even when the relay socket died without a goodbye. A call
 * the carrier never reports on is completed after {@link MAX_CALL} with no minutes.
 */
import { condition, proxyActivities, setHandler } from '@temporalio/workflow';
import type { VoiceActivities } from '../activities/voice';
import { callStatusSignal, type CallStatusUpdate } from './definitions';
import { RETRY } from './retryPolicies';

const acts = proxyActivities<VoiceActivities>({ startToCloseTimeout: '1 minute', retry: RETRY.standard });

/** Longest a call is followed without a final status. */
export const MAX_CALL = '6 hours';

/** Input of the call workflow. */
export interface VoiceCallInput {
  orgId: string;
  callId: string;
}

/** Follows one call to its end. @returns how it ended and the minutes charged */
export async function voiceCall(input: VoiceCallInput): Promise<{ status: 'completed' | 'failed' | 'timed_out'; minutes: number }> {
  const pending: CallStatusUpdate[] = [];
  setHandler(callStatusSignal, (u) => {
    pending.push(u);
  });
  const ref = { orgId: input.orgId, callId: input.callId };
  for (;;) {
    if (!(await condition(() => pending.length > 0, MAX_CALL))) {
      await acts.completeVoiceCall({ ...ref, durationSeconds: 0 });
      return { status: 'timed_out', minutes: 0 };
    }
    const u = pending.shift()!;
    if (u.status === 'answered') await acts.markCallAnswered(ref);
    else if (u.status === 'failed') {
      await acts.markCallFailed({ ...ref, reason: u.reason });
      return { status: 'failed', minutes: 0 };
    } else if (u.status === 'completed') {
      const { minutes } = await acts.completeVoiceCall({ ...ref, durationSeconds: u.durationSeconds });
      return { status: 'completed', minutes };
    }
  }
}
