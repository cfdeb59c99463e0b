/**
 * Outbound voice activities (docs/voice.md "Outbound voice campaigns"): the contact import of `contact-import/{listId}` and the claim,
 * dial and finish steps of the dialer `campaign/{campaignId}`. Every one is idempotent:
 * - the import stores rows per (list, row number) and recomputes its counters at the end;
 * - a claim with the same token answers the same attempts;
 * - a dial records its intent with the reference `{attemptId}:{dial number}` before the provider is asked
 *   (docs/operations.md "Provider calls happen once": voice APIs take no idempotency key); a retry finds the call by
 *   that reference (or from/to/time) instead of dialing again, and records its outcome once per dial
 *   number, with the voice conversation, `call.completed` and the resolved intent in one transaction; a
 *   dial that left the agent's voicemail message first completes its call (minutes charged once, again
 *   harmlessly on a retry) and its record links to the call's conversation (docs/voice.md "Voicemail");
 * - finishing moves the campaign only along the state machine, with `campaign.updated` in that transaction.
 * Times come from the workflow (`now` arguments), so time-skipping tests and real runs agree.
 */
import { ApplicationFailure } from '@temporalio/common';
import { whileHeartbeating } from './heartbeat';
import type { ActivityDeps } from './index';
import { createTelephony, type DialResult, type TelephonyAdapter, type TelephonyOptions } from '../providers/telephony';
import { CsvFormatError, readContactRows, type CsvContactRow } from '../domain/outbound/csv';
import { normalizeUsPhone, purposeNeedsConsent, scrubRow } from '../domain/outbound/scrub';
import { nextDialTime, zonesFor } from '../domain/outbound/callingWindow';
import { nextStatus } from '../domain/outbound/stateMachine';
import { failImport, finishImport, importSource, scrubFacts, storeContactRows, type ContactRowInsert } from '../db/repositories/contactLists';
import {
  campaignCounters,
  campaignDialSettings,
  cancelClaimedAttempt,
  cancelPendingAttempts,
  claimAttempts,
  dialContext,
  lockCampaign,
  recordDialOutcome,
  setCampaignStatus,
  type ClaimResult,
} from '../db/repositories/campaigns';
import { getUploadContent } from '../db/repositories/uploads';
import { recordCallConversation } from '../db/repositories/conversations';
import { findVoiceCallByProviderId, getVoiceCall, linkDialConversation } from '../db/repositories/voiceCalls';
import { completeCall, type CampaignCallDial } from '../services/voice/calls';
import { campaignCallHandoff } from '../services/voice/handoff';
import { publicApiBase } from '../services/voice/calls';
import { campaignVoicemail, recordVoicemail, type CampaignVoicemail } from '../services/voice/voicemail';
import { converseSandboxCampaignCall } from './voice';
import { emitEvent } from '../events/emit';
import { performOnce, type FaultHook } from '../services/effects';
import { resolveIntent } from '../db/repositories/providerIntents';

/** Rows scrubbed and stored per round trip of the import. */
export const IMPORT_CHUNK_ROWS = 2000;

/** Extra dependencies (tests and the benchmark pass a sandbox latency or their own adapter). */
export interface OutboundActivityOptions {
  telephony?: TelephonyAdapter;
  telephonyOptions?: TelephonyOptions;
  /** Tests only: crash points of the dial's provider write (services/effects.ts). */
  faults?: FaultHook;
  /**
   * Where the sandbox carrier connects answered dials (the API's base URL, `…/api/v1`): each answered
   * dial then converses with the campaign's agent over the relay (activities/voice.ts), as a real
   * carrier's call does. Default: PUBLIC_BASE_URL's API, which the sandbox's signed callbacks also reach
   * (none when it names port 0, which no server listens on); `false`: dials are outcomes only.
   */
  campaignRelay?: { apiBaseUrl: string } | false;
}

/** Input of a claim. */
export interface ClaimInput {
  orgId: string;
  campaignId: string;
  /** Unique per batch and stable across retries (`{runId}:{batch}`). */
  token: string;
  /** Workflow time, ISO 8601. */
  now: string;
  limit: number;
}

/** Input of a dial. */
export interface DialInput {
  orgId: string;
  attemptId: string;
  /** Workflow time at the dial, ISO 8601 (the attempt's `lastDialedAt`, the event's `startedAt`). */
  now: string;
}

/**
 * A dial that left the agent's voicemail message (docs/voice.md "Voicemail"): the call and its conversation are
 * stored (for the sandbox carrier here; a real carrier's by its voice webhook or adapter while the call
 * was up) and the call completed with its minutes charged once (services/voice/calls.ts completeCall,
 * deduplicated per call). Idempotent.
 * @returns the call's conversation (the dial's record links to it), or null when no call was stored
 */
async function completeVoicemail(db: ActivityDeps['db'], dial: CampaignCallDial, res: DialResult, voicemail: CampaignVoicemail | null): Promise<string | null> {
  let held = await findVoiceCallByProviderId(db, dial.provider, dial.providerCallId);
  if (!held && dial.provider === 'sandbox' && voicemail) held = await recordVoicemail(db, dial, { ...voicemail, message: res.voicemailMessage! });
  if (!held || held.orgId !== dial.orgId) return null;
  await completeCall(db, dial.orgId, held.id, res.durationSeconds);
  return (await getVoiceCall(db, dial.orgId, held.id))?.conversationId ?? null;
}

/** Builds the outbound activities. */
export function createOutboundActivities(deps: ActivityDeps, opts: OutboundActivityOptions = {}) {
  const { db } = deps;
  let telephony = opts.telephony;
  const apiBaseUrl = publicApiBase(deps.config);
  const telephonyOf = () => (telephony ??= createTelephony({ ...deps, handoff: campaignCallHandoff(db, apiBaseUrl) }, opts.telephonyOptions));
  const campaignRelay = opts.campaignRelay === false ? null : (opts.campaignRelay ?? (new URL(apiBaseUrl).port === '0' ? null : { apiBaseUrl }));

  /** Moves a campaign along the state machine with its event; a no-op when the move is not allowed. */
  const moveCampaign = async (orgId: string, campaignId: string, action: 'complete' | 'cancel'): Promise<string> =>
    db.transaction(async (trx) => {
      const row = await lockCampaign(trx, orgId, campaignId);
      if (!row) return 'missing';
      if (action === 'cancel') await cancelPendingAttempts(trx, orgId, campaignId);
      const to = nextStatus(row.status, action);
      if (!to) return row.status as string;
      await setCampaignStatus(trx, orgId, campaignId, to);
      const counts = (await campaignCounters(trx, orgId, [campaignId])).get(campaignId)!;
      await emitEvent(trx, orgId, 'campaign.updated', { campaignId, status: to, previousStatus: row.status, counts: { ...counts } });
      return to;
    });

  return {
    /**
     * Imports the list's CSV: streaming parse, scrub per chunk (E.164, US only, duplicates,
     * suppressions, do-not-call, consent for marketing lists), rows and progress stored per chunk, then
     * the counters by outcome. A no-op for a list that is already ready.
     * @throws non-retryable ApplicationFailure `file_expired` / `malformed_csv` (the workflow then fails the import)
     */
    async outboundImportContacts(orgId: string, listId: string): Promise<{ rowsRead: number; accepted: number; rejected: number }> {
      const src = await importSource(db, orgId, listId);
      if (!src || src.status === 'ready') return { rowsRead: 0, accepted: 0, rejected: 0 };
      const file = src.fileId ? await getUploadContent(db, orgId, src.fileId) : undefined;
      if (!file) throw ApplicationFailure.nonRetryable('the uploaded file is gone (file_expired)', 'file_expired');
      const withConsent = purposeNeedsConsent(src.purpose);
      const seen = new Set<string>();
      const progress = { rowsRead: 0, accepted: 0, rejected: 0 };
      let chunk: CsvContactRow[] = [];
      const flush = async () => {
        const normalized = chunk.map((r) => normalizeUsPhone(r.phone));
        const e164s = normalized.flatMap((n) => ('e164' in n ? [n.e164] : []));
        const facts = await scrubFacts(db, orgId, e164s, withConsent);
        const rows: ContactRowInsert[] = chunk.map((r, i) => {
          const { outcome, e164 } = scrubRow(r, src.purpose, seen, facts, normalized[i]);
          const accepted = outcome === 'accepted';
          if (accepted) progress.accepted++;
          else progress.rejected++;
          return {
            row: r.row,
            rawPhone: r.phone,
            e164,
            firstName: r.firstName,
            lastName: r.lastName,
            timeZone: r.timeZone,
            zones: accepted && e164 ? zonesFor(e164, r.timeZone) : [],
            variables: r.variables,
            status: accepted ? 'accepted' : 'rejected',
            reason: outcome,
          };
        });
        progress.rowsRead += chunk.length;
        chunk = [];
        // One store in flight while the next chunk is parsed and scrubbed.
        await storing;
        storing = storeContactRows(db, orgId, listId, rows, { ...progress });
      };
      let storing: Promise<void> = Promise.resolve();
      try {
        for await (const row of readContactRows(file.data, src.mapping ?? undefined)) {
          chunk.push(row);
          if (chunk.length >= IMPORT_CHUNK_ROWS) await flush();
        }
        await flush();
        await storing;
      } catch (err) {
        await storing.catch(() => undefined);
        if (err instanceof CsvFormatError) throw ApplicationFailure.nonRetryable(err.message, 'malformed_csv');
        throw err;
      }
      const done = await finishImport(db, orgId, listId);
      return { rowsRead: done?.import.rowsRead ?? 0, accepted: done?.import.accepted ?? 0, rejected: done?.import.rejected ?? 0 };
    },

    /** Marks the import failed with `reason`. */
    async outboundFailImport(orgId: string, listId: string, reason: string): Promise<void> {
      await failImport(db, orgId, listId, reason);
    },

    /**
     * Claims up to `limit` attempts whose calling window is open at `now` (recipient-local, per the
     * campaign's window and days); attempts outside it are moved to their window's opening. Claims
     * nothing unless the campaign is running (`campaignStatus` tells the dialer what it is instead).
     */
    async outboundClaimAttempts(input: ClaimInput): Promise<ClaimResult> {
      const camp = await campaignDialSettings(db, input.orgId, input.campaignId);
      if (!camp) throw ApplicationFailure.nonRetryable(`campaign ${input.campaignId} not found`, 'not_found');
      const spec = { startMinutes: camp.startMinutes, endMinutes: camp.endMinutes, days: camp.days };
      const now = new Date(input.now);
      return claimAttempts(db, input.orgId, input.campaignId, input.token, now, input.limit, (zones) => nextDialTime(zones, now, spec));
    },

    /**
     * Places one dial of a claimed attempt and records its outcome (busy/no-answer go back to pending
     * for a retry while dials remain) with its voice conversation and `call.completed`, in one
     * transaction. Safe to retry (docs/operations.md "Provider calls happen once"): the dial's intent is recorded
     * before the provider is asked, and a retry that finds it looks the call up instead of dialing
     * again. When the provider cannot tell, the attempt ends `failed` with `lastOutcome` `unknown` and
     * `provider.intent.unknown` is emitted: nobody is called twice.
     * @returns the attempt's status after the dial (`skipped` when it was no longer claimed)
     */
    async outboundDial(input: DialInput): Promise<{ status: string; outcome: string | null }> {
      const { orgId, attemptId } = input;
      const a = await dialContext(db, orgId, attemptId);
      if (!a || a.status !== 'dialing') return { status: 'skipped', outcome: null };
      if (a.campaignStatus === 'cancelled') {
        await cancelClaimedAttempt(db, orgId, attemptId);
        return { status: 'cancelled', outcome: null };
      }
      const dialNumber = a.dials + 1;
      const reference = `${attemptId}:${dialNumber}`;
      const at = new Date(input.now);
      // The message a machine gets after its beep (docs/voice.md "Voicemail"), from the campaign's pinned version.
      const voicemail = await campaignVoicemail(db, orgId, a.campaignId, a.agentId);
      const call = { from: a.callerId, to: a.e164, idempotencyKey: reference, agentId: a.agentId, campaignId: a.campaignId, ...(voicemail ? { voicemailMessage: voicemail.message } : {}) };
      const effect = await whileHeartbeating(() =>
        performOnce(db, orgId, {
          kind: 'dial',
          reference,
          subjectId: attemptId,
          provider: telephonyOf().provider,
          request: { from: call.from, to: call.to, campaignId: a.campaignId },
          perform: () => telephonyOf().dial(orgId, call),
          // A call starts after its intent: look from a minute before, for clock skew between hosts.
          lookup: (intent) =>
            telephonyOf().findCall(orgId, { reference, from: call.from, to: call.to, sinceMs: Date.parse(intent.createdAt) - 60_000, agentId: call.agentId, campaignId: call.campaignId, voicemailMessage: call.voicemailMessage }),
          fault: opts.faults,
        }),
      );
      // A voicemail left: its call completed (minutes charged once) before the attempt is recorded, so a
      // retry after a crash in between, finding the attempt still dialing, completes it then.
      const left = effect.state !== 'unknown' && effect.result.outcome === 'voicemail' && effect.result.voicemailMessage ? effect.result : null;
      const voicemailConversationId = left
        ? await completeVoicemail(db, { orgId, agentId: a.agentId, campaignId: a.campaignId, providerCallId: left.providerCallId, provider: telephonyOf().provider, from: a.callerId, to: a.e164 }, left, voicemail)
        : null;
      const out = await db.transaction(async (trx) => {
        if (effect.state === 'unknown') {
          const r = await recordDialOutcome(trx, orgId, attemptId, dialNumber, { outcome: 'unknown', status: 'failed', durationSeconds: 0, at, maxAttempts: a.maxAttempts, retryDelayMinutes: a.retryDelayMinutes });
          return { status: r.status, outcome: 'unknown', answeredNow: null };
        }
        const res = effect.result;
        const r = await recordDialOutcome(trx, orgId, attemptId, dialNumber, {
          outcome: res.outcome,
          durationSeconds: res.durationSeconds,
          at,
          maxAttempts: a.maxAttempts,
          retryDelayMinutes: a.retryDelayMinutes,
          voicemailLeft: res.outcome === 'voicemail' && !!res.voicemailMessage,
        });
        if (r.recorded) {
          await resolveIntent(trx, orgId, effect.intent.id, res);
          await recordCallConversation(trx, orgId, {
            dialKey: reference,
            agentId: a.agentId,
            campaignId: a.campaignId,
            counterpart: a.e164,
            outcome: res.outcome,
            durationSeconds: res.durationSeconds,
            startedAt: at,
            providerCallId: res.providerCallId,
            conversationId: voicemailConversationId,
          });
          await emitEvent(trx, orgId, 'call.completed', {
            callId: res.providerCallId,
            agentId: a.agentId,
            direction: 'outbound',
            from: a.callerId,
            to: a.e164,
            startedAt: at.toISOString(),
            endedAt: new Date(at.getTime() + res.durationSeconds * 1000).toISOString(),
            durationSeconds: res.durationSeconds,
            outcome: res.outcome,
            campaignId: a.campaignId,
          });
        }
        return { status: r.status, outcome: res.outcome, answeredNow: r.recorded && res.outcome === 'answered' ? res : null };
      });
      await opts.faults?.('after_record', 'dial', reference);
      if (out.answeredNow && campaignRelay && telephonyOf().provider === 'sandbox') {
        const dial = { orgId, agentId: a.agentId, campaignId: a.campaignId, providerCallId: out.answeredNow.providerCallId, provider: 'sandbox', from: a.callerId, to: a.e164 };
        try {
          const conversationId = await converseSandboxCampaignCall(db, campaignRelay.apiBaseUrl, dial, out.answeredNow.durationSeconds);
          if (conversationId) await linkDialConversation(db, orgId, reference, conversationId);
        } catch (err) {
          // The dial's outcome is recorded; a relay the sandbox callee cannot reach leaves the call completed without a transcript.
          deps.logger.warn({ err: err instanceof Error ? err.message : String(err), orgId, attemptId, relay: campaignRelay.apiBaseUrl }, 'sandbox campaign call: the relay could not be reached');
        }
      } else if (out.answeredNow && telephonyOf().provider !== 'sandbox') {
        // A real carrier connected the answered call to the relay (its adapter, or the voice webhook the
        // call's URL names): the stored call is completed (minutes charged once) and linked to the dial.
        const held = await findVoiceCallByProviderId(db, telephonyOf().provider, out.answeredNow.providerCallId);
        if (held && held.orgId === orgId) {
          await completeCall(db, orgId, held.id, out.answeredNow.durationSeconds);
          const conversationId = (await getVoiceCall(db, orgId, held.id))?.conversationId;
          if (conversationId) await linkDialConversation(db, orgId, reference, conversationId);
        }
      }
      return { status: out.status, outcome: out.outcome };
    },

    /** Completes a running campaign whose attempts are all final. @returns the status after the call */
    async outboundCompleteCampaign(orgId: string, campaignId: string): Promise<string> {
      return moveCampaign(orgId, campaignId, 'complete');
    },

    /** Makes sure a cancelled campaign has no pending attempt left (the API cancels them too). @returns the status */
    async outboundCancelCampaign(orgId: string, campaignId: string): Promise<string> {
      return moveCampaign(orgId, campaignId, 'cancel');
    },

    /** The campaign's stored status (the dialer re-reads it while paused, in case a signal was lost). */
    async outboundCampaignStatus(orgId: string, campaignId: string): Promise<string> {
      return (await campaignDialSettings(db, orgId, campaignId))?.status ?? 'missing';
    },
  };
}

/** The outbound activities' type, for proxyActivities. */
export type OutboundActivities = ReturnType<typeof createOutboundActivities>;
