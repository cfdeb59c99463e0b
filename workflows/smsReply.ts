/**
 * The agent's answer to one inbound text, workflow id `sms-reply/{inboundMessageId}` (docs/sms.md "Agents
 * answer texts"): started by the provider-callback endpoint once the text is stored and is no keyword; the
 * activity runs the agent's turn and queues the reply as `sms-message/{id}` (which holds it to quiet hours
 * when the registration does not exempt replies). The id makes a provider's repeated callback a no-op.
 */
import { proxyActivities } from '@temporalio/workflow';
import type { SmsActivities } from '../activities/sms';
import { RETRY } from './retryPolicies';

/** Input of the workflow. */
export interface SmsReplyInput {
  orgId: string;
  /** The inbound text (`msg_…`). */
  messageId: string;
}

const { smsAnswerInbound } = proxyActivities<SmsActivities>({
  // A turn can call the model and skills more than once; the SDK's retry brings a crashed worker's turn back.
  startToCloseTimeout: '90 seconds',
  retry: RETRY.standard,
});

/** Answers one inbound text. @returns what became of it (the reply's id, or why there is none) */
export async function smsReply(input: SmsReplyInput): Promise<Awaited<ReturnType<SmsActivities['smsAnswerInbound']>>> {
  return smsAnswerInbound(input.orgId, input.messageId);
}
