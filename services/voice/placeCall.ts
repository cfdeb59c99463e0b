/**
 * One call on demand (docs/api-notes.md "Calls on demand"; `POST /calls`, as Vapi's `POST /call`, Retell's
 * `create-phone-call` and Bland's `POST /calls` place one): the request is checked against the campaign
 * rules that apply to a single call (domain/outbound/singleCall.ts), stored `queued` with its
 * `call.started` event, and handed to the `voice-call/{callId}` workflow, which dials it. Nothing is
 * stored and nothing is dialed when a rule refuses it.
 */
import type { Knex } from 'knex';
import type { Client } from '@temporalio/client';
import type { Db } from '../../db';
import { ApiError, temporalUnavailable } from '../../domain/errors';
import { getAgent } from '../../db/repositories/agents';
import { getOwnedNumberByE164 } from '../../db/repositories/numbers';
import { scrubFacts } from '../../db/repositories/contactLists';
import { insertPlacedCall } from '../../db/repositories/calls';
import { pickAgentVersion } from '../agents/traffic';
import { recipientOrProblem, singleCallProblem } from '../../domain/outbound/singleCall';
import { emitEvent } from '../../events/emit';
import { telephonyProviderName } from '../../providers/telephony';
import { workflowIds } from '../../temporal.config';
import { transactionWithStarts } from '../workflowStarts';
import type { Call, CallCreate } from '../../schemas/types/calls';

/**
 * The opt-out and do-not-call facts of one recipient (E.164), as a campaign's scrub reads them
 * (db/repositories/contactLists.ts scrubFacts).
 */
export async function recipientFacts(db: Db, orgId: string, e164: string): Promise<{ suppressed: boolean; doNotCall: boolean }> {
  const f = await scrubFacts(db, orgId, [e164], false);
  return { suppressed: f.suppressed.has(e164), doNotCall: f.doNotCall.has(e164) };
}

/**
 * Places one outbound call answered by `req.agentId` over the relay.
 * @param temporal the client and task queue of the worker that dials it
 * @param opts.at the instant the calling window is checked at (default now)
 * @param opts.inTransaction runs last in the transaction that stores the call (the idempotent replay's answer)
 * @returns the stored call (`queued`)
 * @throws ApiError 404 `agent_not_found` naming `agentId`; 409 `no_published_version` naming `agentId`
 *   (mode `published`); 404 `number_not_found` naming `from` (not a number the organization purchased);
 *   the refusals of singleCallProblem naming `to` or `timeZone` (400, 422 `recipient_not_us`, 409
 *   `recipient_opted_out` / `recipient_do_not_call` / `outside_calling_window` with `nextAllowedAt`);
 *   503 `temporal_unavailable` when this process has no workflow service (nothing stored). The workflow starts
 *   once the call has committed; when Temporal cannot take it at once, the start sweep starts it when it can
 */
export async function placeCall(
  db: Db,
  temporal: { client: Client; taskQueue: string } | undefined,
  orgId: string,
  req: CallCreate,
  opts: { at?: Date; inTransaction?: (trx: Knex.Transaction, call: Call) => Promise<unknown> } = {},
): Promise<Call> {
  const mode = req.mode ?? 'published';
  const agent = await getAgent(db, orgId, req.agentId);
  if (!agent) throw new ApiError(404, 'agent_not_found', 'Agent not found', { errors: [{ field: 'agentId', message: 'no agent with this id in this organization' }] });
  if (mode === 'published' && !agent.publishedVersionId) {
    throw new ApiError(409, 'no_published_version', 'The agent has never been published; publish it, or place the call with mode "draft"', {
      errors: [{ field: 'agentId', message: 'has no published version' }],
    });
  }
  const number = await getOwnedNumberByE164(db, orgId, req.from);
  if (!number) throw new ApiError(404, 'number_not_found', `${req.from} is not a number this organization purchased`, { errors: [{ field: 'from', message: 'must be a purchased number of this organization' }] });
  const recipient = recipientOrProblem(req.to);
  if ('problem' in recipient) throw recipient.problem;
  const problem = singleCallProblem({ to: recipient.e164, timeZone: req.timeZone ?? null }, await recipientFacts(db, orgId, recipient.e164), opts.at ?? new Date());
  if (problem) throw problem;
  // The agent's traffic split picks the version, sticky on the callee's number (docs/api-notes.md "Traffic splits").
  const picked = mode === 'published' ? await pickAgentVersion(db, orgId, agent.id, recipient.e164) : null;
  if (mode === 'published' && !picked) throw new ApiError(409, 'no_published_version', 'The agent has never been published', { errors: [{ field: 'agentId', message: 'has no published version' }] });
  if (!temporal) throw temporalUnavailable('The call cannot be placed now: the workflow service is not configured');

  return transactionWithStarts({ db, temporal }, async (trx, starts) => {
    const call = await insertPlacedCall(trx, orgId, {
      agentId: agent.id,
      versionId: picked?.versionId ?? null,
      trafficSplit: picked?.split ?? null,
      mode,
      provider: telephonyProviderName(),
      from: number.e164,
      to: recipient.e164,
      timeZone: req.timeZone ?? null,
      variables: req.variables ?? {},
      metadata: req.metadata ?? {},
    });
    await emitEvent(trx, orgId, 'call.started', { callId: call.id, agentId: agent.id, direction: 'outbound', from: call.from, to: call.to, startedAt: call.createdAt, campaignId: null });
    // The call's workflow starts once the call has committed (services/workflowStarts.ts), so its first read finds it.
    await starts.record(trx, 'voiceCall', { workflowId: workflowIds.voiceCall(call.id), args: [{ orgId, callId: call.id, placed: true }], orgId, resourceId: call.id });
    await opts.inTransaction?.(trx, call);
    return call;
  });
}
