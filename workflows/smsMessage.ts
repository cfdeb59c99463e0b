/**
 * One outgoing text, workflow id `sms-message/{messageId}` (DESIGN.md "Durable processes"):
 *
 *   (held until the recipient-local window opens, if the API decided so) → deliver → sent
 *
 * The API computes the quiet-hours decision when it accepts the send (api/sms/quietHours.ts) and passes
 * `holdUntil`; the hold is a durable timer, so a held text survives restarts and goes out at 8am
 * recipient-local. The delivery activity re-checks opt-out, the number's SMS toggle and the
 * registration right before sending. Delivery receipts (delivered/failed) update the message directly
 * from the provider callback.
 */
import { proxyActivities, sleep } from '@temporalio/workflow';
import type { SmsActivities } from '../activities/sms';
import { RETRY } from './retryPolicies';

/** Input of the workflow. */
export interface SmsMessageInput {
  orgId: string;
  messageId: string;
  /** ISO 8601 instant to hold the text until, or null to send at once. */
  holdUntil: string | null;
}

const { smsHoldMessage } = proxyActivities<SmsActivities>({
  startToCloseTimeout: '30 seconds',
  retry: RETRY.standard,
});
// The provider send heartbeats while it waits (activities/heartbeat.ts): a dead worker's attempt is
// retried after 5 s, not after the start-to-close timeout (the send itself happens once: performOnce).
const { smsDeliverMessage } = proxyActivities<SmsActivities>({
  startToCloseTimeout: '30 seconds',
  heartbeatTimeout: '5 seconds',
  retry: RETRY.standard,
});

/** Sends one text, holding it to the quiet-hours window when asked. @returns the final local status */
export async function smsMessage(input: SmsMessageInput): Promise<{ status: 'sent' | 'failed'; error: string | null }> {
  if (input.holdUntil) {
    await smsHoldMessage(input.orgId, input.messageId, input.holdUntil);
    const waitMs = new Date(input.holdUntil).getTime() - Date.now();
    if (waitMs > 0) await sleep(waitMs);
  }
  return smsDeliverMessage(input.orgId, input.messageId);
}
