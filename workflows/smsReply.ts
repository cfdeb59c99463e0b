/**
 * The agent's answer to one inbound text, workflow id `sms-reply/{inboundMessageId}` (docs/sms.md "Agents
 * answer texts"): started by the provider-callback endpoint once the text is stored and is no keyword; the
 * activity runs the agent's turn and stores the reply, which this workflow then delivers as `sms-message/{id}`
 * would (holding it to quiet hours when the registration does not exempt replies). The id makes a
 * provider's repeated callback a no-op.
 */
import { proxyActivities } from '@temporalio/workflow';
import type { SmsActivities } from '../activities/sms';
import { RETRY } from './retryPolicies';
import { smsMessage } from './smsMessage';

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

/**
 * Answers one inbound text, then delivers the reply with the steps of `sms-message/{id}` (held to the
 * quiet-hours window when the registration does not exempt replies), in this one workflow.
 * @returns what became of the text (the reply's id, or why there is none) and the reply's delivery
 */
export async function smsReply(input: SmsReplyInput): Promise<Awaited<ReturnType<SmsActivities['smsAnswerInbound']>> & { delivery?: { status: 'sent' | 'failed'; error: string | null } }> {
  const answer = await smsAnswerInbound(input.orgId, input.messageId);
  if (!answer.answered) return answer;
  const delivery = await smsMessage({ orgId: input.orgId, messageId: answer.replyMessageId, holdUntil: answer.heldUntil });
  return { ...answer, delivery };
}
