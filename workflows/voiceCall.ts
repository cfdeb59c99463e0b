/**
 * The lifecycle of one phone call (docs/voice.md; id `voice-call/{callId}`), started when a voice
 * webhook answers the call: it follows the carrier's status callbacks as signals (`callStatus`:
 * ringing, answered, completed with its duration, failed), and on `completed` stores the call, charges
 * its minutes once and closes its conversation even when the relay socket died without a goodbye. A call
 * the carrier never reports on is completed after {@link MAX_CALL} with no minutes.
 *
 * A call placed by `POST /calls` (`placed: true`; docs/api-notes.md "Calls on demand") is dialed here
 * first: once the API's transaction has committed the call, one activity dials it (its intent recorded
 * before the carrier is asked, so a retry after a crash looks the call up instead of calling twice), has
 * the answered call converse with its agent over the relay, and completes it — minutes charged once,
 * `call.completed` emitted with the change.
 */
import { condition, proxyActivities, setHandler, sleep } from '@temporalio/workflow';
import type { VoiceActivities } from '../activities/voice';
import type { CallActivities } from '../activities/calls';
import { callStatusSignal, type CallStatusUpdate } from './definitions';
import { RETRY } from './retryPolicies';

const acts = proxyActivities<VoiceActivities>({ startToCloseTimeout: '1 minute', retry: RETRY.standard });
const { placedCallStored } = proxyActivities<CallActivities>({ startToCloseTimeout: '20 seconds', retry: RETRY.standard });
/**
 * How often, and how many times, a placed call is looked for before its dial. `POST /calls` starts this workflow
 * after the transaction that stores the call has committed (services/workflowStarts.ts), so the first look finds
 * it; the loop stays for the histories of runs started before that, which replay through it.
 */
const COMMIT_CHECK_INTERVAL = '200 milliseconds';
const COMMIT_CHECKS = 50;
const { dialPlacedCall } = proxyActivities<CallActivities>({
  // The dial waits for the call to end, heartbeating; a crashed worker's dial is retried after the
  // heartbeat timeout, and its recorded intent makes that retry a look-up.
  startToCloseTimeout: '2 hours',
  heartbeatTimeout: '20 seconds',
  retry: RETRY.untilDone,
});

/** Longest a call is followed without a final status. */
export const MAX_CALL = '6 hours';

/** Input of the call workflow. */
export interface VoiceCallInput {
  orgId: string;
  callId: string;
  /** True for a call placed by `POST /calls`: the workflow dials it. */
  placed?: boolean;
}

/** Follows one call to its end. @returns how it ended and the minutes charged */
export async function voiceCall(input: VoiceCallInput): Promise<{ status: 'completed' | 'failed' | 'timed_out'; minutes: number }> {
  const pending: CallStatusUpdate[] = [];
  setHandler(callStatusSignal, (u) => {
    pending.push(u);
  });
  const ref = { orgId: input.orgId, callId: input.callId };
  if (input.placed) {
    for (let check = 1; !(await placedCallStored(ref)).stored; check++) {
      // The API's transaction never committed the call: there is nothing to dial.
      if (check >= COMMIT_CHECKS) return { status: 'failed', minutes: 0 };
      await sleep(COMMIT_CHECK_INTERVAL);
    }
    const out = await dialPlacedCall(ref);
    return { status: out.status, minutes: out.minutes };
  }
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
