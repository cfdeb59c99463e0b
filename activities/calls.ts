/**
 * Activities of a call placed by `POST /calls` (docs/api-notes.md "Calls on demand"), run by its
 * `voice-call/{callId}` workflow. Idempotent, because Temporal retries them:
 * - the dial records its intent with the reference `{callId}` before the carrier is asked (voice APIs
 *   take no idempotency key: docs/operations.md "Provider calls happen once"); a retry that finds the
 *   intent looks the call up instead of dialing again, and one the carrier cannot tell about ends the
 *   call `failed` with outcome `unknown` (and `provider.intent.unknown`): nobody is called twice;
 * - the campaign rules of a single call are checked again when the dial is due (the do-not-call list or
 *   the clock may have moved since the request), before anything is dialed;
 * - the outcome, the call's end and its `call.completed` event are stored once: the event in the
 *   transaction that ends the call, and only by the run that ends it; the minutes are charged once
 *   (services/voice/calls.ts completeCall, deduplicated per call).
 * With the sandbox carrier, an answered call converses with its agent over the relay at PUBLIC_BASE_URL's
 * API as a campaign call does (activities/voice.ts); a real carrier connects it itself (Telnyx by the
 * handoff's `conversation_relay_start`, Twilio by requesting the voice webhook the dial named).
 */
import { ApplicationFailure } from '@temporalio/common';
import type { Knex } from 'knex';
import { whileHeartbeating } from './heartbeat';
import type { ActivityDeps } from './index';
import { createTelephony, type DialResult, type TelephonyAdapter, type TelephonyOptions } from '../providers/telephony';
import { createLlm } from '../providers/llm';
import type { LlmProvider } from '../domain/conversations/llm';
import { getPlacedCall, recordPlacedOutcome, type PlacedCall } from '../db/repositories/calls';
import { endVoiceCall, type VoiceCallRecord } from '../db/repositories/voiceCalls';
import { getIntent, resolveIntent } from '../db/repositories/providerIntents';
import { refusalOf, singleCallProblem } from '../domain/outbound/singleCall';
import { completeCall, publicApiBase } from '../services/voice/calls';
import { campaignCallHandoff } from '../services/voice/handoff';
import { recipientFacts } from '../services/voice/placeCall';
import { performOnce, type FaultHook } from '../services/effects';
import { emitEvent } from '../events/emit';
import { converseSandboxCampaignCall } from './voice';

/** Extra dependencies (tests pass their own adapter, latency or crash points). */
export interface CallActivityOptions {
  telephony?: TelephonyAdapter;
  telephonyOptions?: TelephonyOptions;
  /** Tests only: crash points of the dial's provider write (services/effects.ts). */
  faults?: FaultHook;
  /**
   * Where the sandbox carrier connects answered calls (the API's base URL, `…/api/v1`). Default:
   * PUBLIC_BASE_URL's API (none when it names port 0, which no server listens on); `false`: the call is an outcome only.
   */
  relay?: { apiBaseUrl: string } | false;
  llm?: LlmProvider;
}

/** A call of an organization. */
export interface PlacedCallRef {
  orgId: string;
  callId: string;
}

/** How a placed call ended, for its workflow. */
export interface PlacedCallResult {
  status: 'completed' | 'failed';
  /** The dial's outcome, or the refusal that kept it from being dialed. */
  outcome: string | null;
  /** Minutes of the call (charged once, whichever run charged them); 0 when it never connected. */
  minutes: number;
}

/** `call.completed` of a placed call that `ended` now (spec "Events"; schemas/types/events.ts). */
async function emitCompleted(trx: Knex.Transaction, call: PlacedCall, ended: VoiceCallRecord, outcome: string): Promise<void> {
  await emitEvent(trx, call.orgId, 'call.completed', {
    callId: call.id,
    agentId: call.agentId,
    direction: 'outbound',
    from: call.from,
    to: call.to,
    startedAt: call.createdAt,
    endedAt: ended.endedAt ?? new Date().toISOString(),
    durationSeconds: ended.durationSeconds ?? 0,
    outcome,
    campaignId: null,
  });
}

/** Builds the activities of placed calls. */
export function createCallActivities(deps: ActivityDeps, opts: CallActivityOptions = {}) {
  const { db } = deps;
  const apiBaseUrl = publicApiBase(deps.config);
  let telephony = opts.telephony;
  const telephonyOf = () => (telephony ??= createTelephony({ ...deps, handoff: campaignCallHandoff(db, apiBaseUrl) }, opts.telephonyOptions));
  const relay = opts.relay === false ? null : (opts.relay ?? (new URL(apiBaseUrl).port === '0' ? null : { apiBaseUrl }));
  let llm = opts.llm;
  const analysis = () => ({ db, llm: (llm ??= createLlm()) });

  /** Ends a call that never connected, with its reason, outcome and `call.completed`, once. */
  const fail = async (call: PlacedCall, reason: string, dial: { provider: string; providerCallId: string | null; outcome: string } | null): Promise<PlacedCallResult> => {
    await db.transaction(async (trx) => {
      if (dial) await recordPlacedOutcome(trx, call.orgId, call.id, dial);
      const ended = await endVoiceCall(trx, call.orgId, call.id, { status: 'failed', reason });
      if (ended) await emitCompleted(trx, call, ended, dial?.outcome ?? reason);
    });
    return { status: 'failed', outcome: dial?.outcome ?? reason, minutes: 0 };
  };

  /** Ends a call that connected (a person or a machine): completed, minutes charged once, `call.completed` with the change. */
  const complete = async (call: PlacedCall, res: DialResult): Promise<PlacedCallResult> => {
    const onCompleted = (trx: Knex.Transaction, ended: VoiceCallRecord) => emitCompleted(trx, call, ended, res.outcome);
    const dial = { orgId: call.orgId, agentId: call.agentId, campaignId: null, callId: call.id, providerCallId: res.providerCallId, provider: telephonyOf().provider, from: call.from, to: call.to };
    let done: Awaited<ReturnType<typeof completeCall>> = null;
    if (res.outcome === 'answered' && relay && telephonyOf().provider === 'sandbox') {
      try {
        await converseSandboxCampaignCall(db, relay.apiBaseUrl, dial, res.durationSeconds, undefined, analysis(), onCompleted);
      } catch (err) {
        // The outcome is recorded; a relay the sandbox callee cannot reach leaves the call completed without a transcript.
        deps.logger.warn({ err: err instanceof Error ? err.message : String(err), orgId: call.orgId, callId: call.id, relay: relay.apiBaseUrl }, 'sandbox call: the relay could not be reached');
      }
    }
    // Completes it when the relay did not (a machine, a real carrier's call, a relay that could not be
    // reached); after the relay it only reads the minutes back (charged once per call).
    done = await completeCall(db, call.orgId, call.id, res.durationSeconds, analysis(), onCompleted);
    return { status: 'completed', outcome: res.outcome, minutes: done?.minutes ?? 0 };
  };

  return {
    /**
     * The first step of a placed call's workflow: whether the call `POST /calls` stores is there — its
     * transaction commits right after the workflow starts, so the workflow asks again a moment later (and
     * gives up when it never commits: nothing to dial).
     */
    async placedCallStored(ref: PlacedCallRef): Promise<{ stored: boolean }> {
      return { stored: !!(await getPlacedCall(db, ref.orgId, ref.callId)) };
    },

    /**
     * Dials a placed call once and follows it to its end (see the module comment): refused by a single
     * call's rules when due → `failed` with the refusal; busy, no answer, failed → `failed` with the
     * outcome; answered or voicemail → converses (sandbox), then `completed` with its duration and minutes.
     * @throws non-retryable ApplicationFailure `not_found` for a call that is not a placed call of the organization
     */
    async dialPlacedCall(ref: PlacedCallRef): Promise<PlacedCallResult> {
      const call = await getPlacedCall(db, ref.orgId, ref.callId);
      if (!call) throw ApplicationFailure.nonRetryable(`placed call ${ref.callId} not found`, 'not_found');
      if (call.status === 'completed' || call.status === 'failed') return { status: call.status, outcome: call.outcome, minutes: 0 };
      const { orgId, id: callId } = call;
      if (!(await getIntent(db, orgId, 'dial', callId))) {
        const problem = singleCallProblem({ to: call.to, timeZone: call.timeZone }, await recipientFacts(db, orgId, call.to), new Date());
        if (problem) return fail(call, refusalOf(problem), null);
      }
      const request = { from: call.from, to: call.to, idempotencyKey: callId, agentId: call.agentId, callId };
      // The whole dial, its outcome recorded included, heartbeats: a dead worker's attempt is retried within seconds.
      return whileHeartbeating(async () => {
        const effect = await performOnce(db, orgId, {
          kind: 'dial',
          reference: callId,
          subjectId: callId,
          provider: telephonyOf().provider,
          request: { from: call.from, to: call.to, callId },
          perform: () => telephonyOf().dial(orgId, request),
          // A call starts after its intent: look from a minute before, for clock skew between hosts.
          lookup: (intent) => telephonyOf().findCall(orgId, { reference: callId, from: call.from, to: call.to, sinceMs: Date.parse(intent.createdAt) - 60_000, agentId: call.agentId, callId }),
          fault: opts.faults,
        });
        if (effect.state === 'unknown') return await fail(call, 'unknown', { provider: telephonyOf().provider, providerCallId: null, outcome: 'unknown' });
        const res = effect.result;
        const provider = telephonyOf().provider;
        await db.transaction(async (trx) => {
          await recordPlacedOutcome(trx, orgId, callId, { provider, providerCallId: res.providerCallId, outcome: res.outcome });
          await resolveIntent(trx, orgId, effect.intent.id, res);
        });
        await opts.faults?.('after_record', 'dial', callId);
        if (res.outcome === 'answered' || res.outcome === 'voicemail') return await complete(call, res);
        return await fail(call, res.outcome, { provider, providerCallId: res.providerCallId, outcome: res.outcome });
      });
    },
  };
}

/** The placed-call activities' type (the workflow imports it as a type). */
export type CallActivities = ReturnType<typeof createCallActivities>;
