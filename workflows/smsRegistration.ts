/**
 * 10DLC registration submission of one organization, workflow id `sms-registration/{orgId}` (DESIGN.md
 * "Durable processes"; docs/sms.md "10DLC review, submission and carrier callbacks"). Reads like the process:
 *
 *   submit brand → await brand verdict → submit campaign → await campaign verdict → registered
 *   → await carrier provisioning → active;   any rejection (or 30 days without an answer) → failed
 *
 * Verdicts arrive as `carrierEvent` signals sent by the provider-callback endpoint. If no callback
 * arrives within `pollIntervalMs` (1 hour), the workflow polls the carrier's status itself (a durable
 * timer, so it survives restarts), for up to `maxWaitMs` (30 days) per step. Reports about an older
 * revision, or of a lower rank than one already seen (e.g. APPROVED after PROVISIONED), are ignored,
 * so duplicates and out-of-order callbacks change nothing. A callback that arrives before the workflow
 * waits is kept in `latest` (signals are buffered in history). Resubmission starts a new run with a new
 * `submissionId`; the activities reuse the stored brandId/campaignId (the carrier updates them).
 */
import { condition, proxyActivities, setHandler } from '@temporalio/workflow';
import type { SmsActivities } from '../activities/sms';
import { carrierVerdict, supersedes, type CarrierEvent, type CarrierVerdict } from '../domain/sms/carrierStatus';
import type { SmsRegistrationProgress } from '../schemas/types/sms';
import { RETRY } from './retryPolicies';
import { carrierEventSignal, registrationProgressQuery } from './definitions';



/** Input of the workflow. */
export interface SmsRegistrationInput {
  orgId: string;
  /** Generation of the submission (set by POST /sms/submit); a stale one never writes status. */
  submissionId: string;
  /** Poll the carrier after this long without a callback (default 1 hour). */
  pollIntervalMs?: number;
  /** Give up on a step after this long (default 30 days). */
  maxWaitMs?: number;
}

// The activities heartbeat every second while they wait on the carrier or Postgres (activities/heartbeat.ts):
// an attempt on a worker that died (a crash, a SIGKILL of `npm start`) is timed out and retried after
// `heartbeatTimeout`, seconds after the server notices, instead of waiting out the start-to-close timeout.
const { smsSubmitBrand, smsSubmitCampaign, smsPollCarrierStatus, smsMarkRegistration } = proxyActivities<SmsActivities>({
  startToCloseTimeout: '1 minute',
  heartbeatTimeout: '5 seconds',
  retry: RETRY.carrier,
});

const HOUR_MS = 60 * 60 * 1000;
const DAY_MS = 24 * HOUR_MS;

/** Runs one registration submission to `active` or `failed`. @returns the final progress */
export async function smsRegistration(input: SmsRegistrationInput): Promise<SmsRegistrationProgress> {
  const { orgId, submissionId } = input;
  const pollIntervalMs = input.pollIntervalMs ?? HOUR_MS;
  const maxWaitMs = input.maxWaitMs ?? 30 * DAY_MS;
  const progress: SmsRegistrationProgress = { step: 'brand', status: 'submitted', brandId: null, campaignId: null, providerStatus: null, lastError: null, polls: 0 };
  const latest = new Map<string, CarrierEvent>();
  const accept = (e: CarrierEvent) => {
    const key = `${e.kind}:${e.id}`;
    if (supersedes(latest.get(key), e)) latest.set(key, e);
  };
  setHandler(carrierEventSignal, accept);
  setHandler(registrationProgressQuery, () => progress);

  /** Waits until the latest report of (kind, id) at `revision` or later satisfies `done`; polls hourly. */
  const awaitVerdict = async (kind: 'brand' | 'campaign', id: string, revision: number, done: (v: CarrierVerdict) => boolean): Promise<CarrierEvent | null> => {
    const current = () => {
      const e = latest.get(`${kind}:${id}`);
      return e && e.revision >= revision && done(carrierVerdict(e.status)) ? e : undefined;
    };
    for (let waited = pollIntervalMs; ; waited += pollIntervalMs) {
      if (await condition(() => current() !== undefined, pollIntervalMs)) return current()!;
      progress.polls++;
      accept(await smsPollCarrierStatus(orgId, kind, id));
      if (current()) return current()!;
      if (waited >= maxWaitMs) return null;
    }
  };

  const mark = async (to: { status: SmsRegistrationProgress['status']; providerStatus: string; lastError?: string | null }) => {
    progress.status = to.status;
    progress.providerStatus = to.providerStatus;
    progress.lastError = to.lastError ?? null;
    return smsMarkRegistration(orgId, submissionId, { status: to.status as 'submitted' | 'registered' | 'active' | 'failed', providerStatus: to.providerStatus, lastError: to.lastError ?? null });
  };
  const fail = async (providerStatus: string, lastError: string) => {
    await mark({ status: 'failed', providerStatus, lastError });
    return progress;
  };
  const timeoutText = (what: string) => `The carrier gave no ${what} verdict within ${Math.round(maxWaitMs / DAY_MS)} days`;

  // 1. Brand: create (or update the existing brand on resubmission), then wait for the verdict.
  const brand = await smsSubmitBrand(orgId, submissionId);
  if (!brand) return progress; // the draft was saved or resubmitted meanwhile: this run is stale
  progress.brandId = brand.id;
  progress.providerStatus = 'BRAND_PENDING';
  const brandVerdict = await awaitVerdict('brand', brand.id, brand.revision, (v) => v !== 'pending');
  if (!brandVerdict) return fail('BRAND_PENDING', timeoutText('brand'));
  if (carrierVerdict(brandVerdict.status) === 'rejected') return fail(`BRAND_${brandVerdict.status}`, brandVerdict.reason || 'The carrier rejected the brand');
  await mark({ status: 'submitted', providerStatus: `BRAND_${brandVerdict.status}` });

  // 2. Campaign: create (or update) under the approved brand, then wait for vetting.
  progress.step = 'campaign';
  const campaign = await smsSubmitCampaign(orgId, submissionId, brand.id);
  if (!campaign) return progress;
  progress.campaignId = campaign.id;
  const campaignVerdict = await awaitVerdict('campaign', campaign.id, campaign.revision, (v) => v !== 'pending');
  if (!campaignVerdict) return fail('CAMPAIGN_PENDING', timeoutText('campaign'));
  if (carrierVerdict(campaignVerdict.status) === 'rejected') return fail(`CAMPAIGN_${campaignVerdict.status}`, campaignVerdict.reason || 'The carrier rejected the campaign');
  await mark({ status: 'registered', providerStatus: 'CAMPAIGN_APPROVED' });

  // 3. Provisioning: the carriers enable the campaign on their networks.
  progress.step = 'provisioning';
  const provisioned = await awaitVerdict('campaign', campaign.id, campaign.revision, (v) => v === 'provisioned' || v === 'rejected');
  if (!provisioned) return fail('CAMPAIGN_APPROVED', timeoutText('provisioning'));
  if (carrierVerdict(provisioned.status) === 'rejected') return fail(`CAMPAIGN_${provisioned.status}`, provisioned.reason || 'The carrier rejected the campaign');
  progress.step = 'done';
  await mark({ status: 'active', providerStatus: 'CAMPAIGN_PROVISIONED' });
  return progress;
}
