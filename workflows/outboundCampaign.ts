/**
 * Outbound voice workflows (docs/voice.md "Outbound voice campaigns", DESIGN.md "Durable processes").
 *
 * `campaign/{campaignId}` — the dialer:
 *   loop: claim due attempts (calling window open in every zone of the recipient) up to the free
 *         concurrency → dial each (one activity per dial, idempotency key per attempt and dial number)
 *         → when nothing is due, sleep until the next window opens or a retry falls due
 *   pause: no new claims until resume (dials in flight finish); cancel: drain and end `cancelled`;
 *   nothing pending nor in flight: end `completed`.
 * Contacts never pass through history: attempts live in Postgres and are fetched in batches. After
 * `dialsPerRun` dials (or when Temporal suggests it) the run drains and continues as new.
 *
 * `contact-import/{listId}` — the import of a list's CSV as one activity, failing the list on error.
 */
import { ActivityFailure, ApplicationFailure } from '@temporalio/common';
import { condition, continueAsNew, patched, proxyActivities, setHandler, sleep, workflowInfo } from '@temporalio/workflow';
import type { OutboundActivities } from '../activities/outbound';
import { RETRY } from './retryPolicies';
import { campaignProgressQuery, cancelCampaignSignal, pauseCampaignSignal, resumeCampaignSignal } from './definitions';



/** Input of `campaign/{campaignId}`. */
export interface CampaignDialerInput {
  orgId: string;
  campaignId: string;
  /** Dials per run before continue-as-new (default 1000). */
  dialsPerRun?: number;
  /** Carried over by continue-as-new. */
  paused?: boolean;
  run?: number;
}

const DEFAULT_DIALS_PER_RUN = 1000;
/** How many times (a second apart) a still-draft campaign is re-read before the run gives up. */
const LAUNCH_COMMIT_CHECKS = 30;
/** While paused, the stored status is re-read this often (a lost resume signal cannot strand a campaign). */
const PAUSED_RECHECK = '10 minutes';
/** Longest single sleep while nothing is due (the stored state is re-read after it). */
const MAX_IDLE_MS = 6 * 60 * 60 * 1000;

const { outboundClaimAttempts, outboundCompleteCampaign, outboundCancelCampaign, outboundCampaignStatus } = proxyActivities<OutboundActivities>({
  // Short: an attempt lost with a crashed worker is only retried once this runs out.
  startToCloseTimeout: '20 seconds',
  retry: RETRY.quick,
});
const { outboundDial } = proxyActivities<OutboundActivities>({
  // A dial waits for the call to end, heartbeating; a crashed worker's dial is retried after the
  // heartbeat timeout, and the provider key makes that retry safe.
  startToCloseTimeout: '2 hours',
  heartbeatTimeout: '20 seconds',
  retry: RETRY.untilDone,
});

/** The dialer of one campaign. @returns the campaign's final status (`completed` or `cancelled`), or `not_launched` when the launch never committed */
export async function campaignDialer(input: CampaignDialerInput): Promise<string> {
  const { orgId, campaignId } = input;
  const dialsPerRun = input.dialsPerRun ?? DEFAULT_DIALS_PER_RUN;
  let paused = input.paused ?? false;
  let cancelled = false;
  let dialsThisRun = 0;
  let settled = 0;
  let batch = 0;
  let draftChecks = 0;
  /** The campaign's concurrency limit, as of the last claim. */
  let maxConcurrent = 1;
  const inFlight = new Map<string, Promise<void>>();
  setHandler(pauseCampaignSignal, () => void (paused = true));
  setHandler(resumeCampaignSignal, () => void (paused = false));
  setHandler(cancelCampaignSignal, () => void (cancelled = true));
  setHandler(campaignProgressQuery, () => ({ paused, cancelled, inFlight: inFlight.size, dialsThisRun, run: input.run ?? 1 }));

  const dial = (attemptId: string) => {
    const p = outboundDial({ orgId, attemptId, now: new Date().toISOString() })
      .then(() => undefined)
      .finally(() => {
        inFlight.delete(attemptId);
        settled++;
      });
    inFlight.set(attemptId, p);
  };
  const drain = () => Promise.all([...inFlight.values()]);

  for (;;) {
    if (cancelled) break;
    if (paused) {
      const resumed = await condition(() => !paused || cancelled, PAUSED_RECHECK);
      if (!resumed && !cancelled) {
        const status = await outboundCampaignStatus(orgId, campaignId);
        if (status === 'running') paused = false;
        if (status === 'cancelled') cancelled = true;
      }
      continue;
    }
    if (dialsThisRun >= dialsPerRun || workflowInfo().continueAsNewSuggested) {
      await drain();
      if (!cancelled) await continueAsNew<typeof campaignDialer>({ orgId, campaignId, dialsPerRun: input.dialsPerRun, paused, run: (input.run ?? 1) + 1 });
      continue;
    }
    if (inFlight.size >= maxConcurrent) {
      const before = settled;
      await condition(() => cancelled || settled !== before);
      continue;
    }
    const settledBeforeClaim = settled;
    const got = await outboundClaimAttempts({ orgId, campaignId, token: `${workflowInfo().runId}:${batch++}`, now: new Date().toISOString(), limit: maxConcurrent - inFlight.size });
    maxConcurrent = got.maxConcurrentCalls;
    if (got.campaignStatus === 'draft') {
      // A launch starts this workflow after its transaction commits (services/workflowStarts.ts), so a draft is a
      // launch that never committed: the run ends at once. Runs started before that change waited for the
      // commit, one second at a time; they replay that way (docs/operations.md "Changing a workflow with runs in flight").
      if (patched('campaign-started-after-commit')) return 'not_launched';
      if (++draftChecks > LAUNCH_COMMIT_CHECKS) return 'not_launched';
      await sleep('1 second');
      continue;
    }
    if (got.campaignStatus === 'cancelled') break;
    if (got.campaignStatus === 'completed') {
      await drain();
      return 'completed';
    }
    if (got.campaignStatus === 'paused') {
      paused = true; // the signal may not have arrived yet; the stored status is the truth
      continue;
    }
    for (const a of got.claimed) {
      dial(a.id);
      dialsThisRun++;
    }
    if (got.claimed.length > 0) continue;
    if (got.pending === 0 && got.dialing === 0 && inFlight.size === 0) {
      const status = await outboundCompleteCampaign(orgId, campaignId);
      if (status === 'completed' || status === 'cancelled') return status;
      continue; // paused meanwhile: wait for resume (a resumed campaign with nothing left completes)
    }
    // The claim only moved attempts whose window is closed to their window's opening: claim again at once
    // while due attempts remain (each claim defers or claims every due attempt it reads, so this ends).
    if (got.nextNotBefore && new Date(got.nextNotBefore).getTime() <= Date.now()) continue;
    // A dial that ended while the claim read the attempts is counted in its `dialing` and will not settle again: claim
    // anew. Runs that waited here instead replay that way (docs/operations.md "Changing a workflow with runs in flight").
    if (settled !== settledBeforeClaim && patched('campaign-claim-sees-dials-that-ended')) continue;
    // Nothing due now: wait for a dial to end, a signal, or the next window opening / retry.
    const before = settled;
    const waitMs = got.nextNotBefore ? Math.min(Math.max(new Date(got.nextNotBefore).getTime() - Date.now(), 1000), MAX_IDLE_MS) : MAX_IDLE_MS;
    await condition(() => cancelled || paused || settled !== before, waitMs);
  }
  // Cancelled: dials in flight finish and record their outcomes; nothing else is dialed.
  await drain();
  await outboundCancelCampaign(orgId, campaignId);
  return 'cancelled';
}

/** Input of `contact-import/{listId}`. */
export interface ContactImportInput {
  orgId: string;
  listId: string;
}

const { outboundImportContacts, outboundFailImport } = proxyActivities<OutboundActivities>({
  startToCloseTimeout: '15 minutes',
  retry: RETRY.fileImport,
});

/** Imports a list's CSV; on a final failure the list is marked failed with the reason. */
export async function contactImport(input: ContactImportInput): Promise<{ rowsRead: number; accepted: number; rejected: number } | { error: string }> {
  try {
    return await outboundImportContacts(input.orgId, input.listId);
  } catch (err) {
    const cause = err instanceof ActivityFailure && err.cause instanceof ApplicationFailure ? err.cause : undefined;
    const reason = cause ? `${cause.type ?? 'error'}: ${cause.message}` : err instanceof Error ? err.message : String(err);
    await outboundFailImport(input.orgId, input.listId, reason);
    return { error: reason };
  }
}
