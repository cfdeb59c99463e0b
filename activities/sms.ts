/**
 * SMS hub activities (DESIGN.md "activities/"): carrier submissions and polls for the registration
 * workflow, status writes guarded by the submission id, and the send of one text for `sms-message/{id}`.
 * Status writes are guarded and monotonic. The carrier's brand and campaign creates and the provider's
 * text send are not idempotent (docs/operations.md "Provider calls happen once"): each goes through `performOnce`,
 * which records the intent before the request and, on a retry, lists by the reference instead of
 * creating or sending again, so Temporal's retries never duplicate an effect.
 */
import type { ActivityDeps } from './index';
import { createCarrier, type CarrierAdapter, type CarrierOptions } from '../providers/carrier';
import { createTelephony, type TelephonyAdapter, type TelephonyOptions } from '../providers/telephony';
import type { CarrierEvent } from '../domain/sms/carrierStatus';
import { getSubmissionRecord, getRegistration, setCarrierIds, transitionSubmission } from '../db/repositories/smsRegistrations';
import { advanceMessage, getMessageRecord } from '../db/repositories/smsMessages';
import { getContact } from '../db/repositories/smsContacts';
import { getOwnedNumberByE164 } from '../db/repositories/numbers';
import { messageChanged, registrationChanged } from '../events/sms';
import { performOnce, type EffectOutcome, type EffectSpec, type FaultHook } from '../services/effects';
import { resolveIntent } from '../db/repositories/providerIntents';
import { Context } from '@temporalio/activity';
import { whileHeartbeating } from './heartbeat';
import { answerInboundText, type InboundAnswer } from '../services/sms/answer';
import { deliverText, type DeliveryResult } from '../services/sms/deliver';
import { createLlm } from '../providers/llm';
import { createSkillHttpClient } from '../providers/http/request';
import type { LlmProvider } from '../domain/conversations/llm';
import type { SkillHttpClient } from '../providers/http/request';
import type { CarrierSubmission } from '../providers/carrier';

/** Extra dependencies (tests and benchmarks pass their own adapters or sandbox options). */
export interface SmsActivityOptions {
  carrier?: CarrierAdapter;
  telephony?: TelephonyAdapter;
  carrierOptions?: CarrierOptions;
  telephonyOptions?: TelephonyOptions;
  /** Tests only: crash points of the provider writes (services/effects.ts). */
  faults?: FaultHook;
  /** The model agents answer texts with (default: the configured LLM provider). */
  llm?: LlmProvider;
}

/** A carrier submission as the workflow sees it. */
export interface SubmittedObject {
  id: string;
  revision: number;
}

/** Builds the SMS activities. */
export function createSmsActivities(deps: ActivityDeps, opts: SmsActivityOptions = {}) {
  const { db } = deps;
  let carrier = opts.carrier;
  let telephony = opts.telephony;
  let llm: LlmProvider | undefined;
  let http: SkillHttpClient | undefined;
  const carrierOf = () => (carrier ??= createCarrier(deps, opts.carrierOptions));
  const telephonyOf = () => (telephony ??= createTelephony(deps, opts.telephonyOptions));

  /** The submission's record, or undefined when `submissionId` is no longer the current one. */
  const current = async (orgId: string, submissionId: string) => {
    const rec = await getSubmissionRecord(db, orgId);
    if (!rec || rec.submissionId !== submissionId || rec.registration.status === 'draft') return undefined;
    return rec;
  };

  /**
   * Stores the brand's or campaign's id and moves the submission to BRAND_PENDING / CAMPAIGN_PENDING
   * (idempotent); resolves the create's intent in the same transaction when there was one.
   */
  const record = async (orgId: string, submissionId: string, kind: 'brand' | 'campaign', res: CarrierSubmission, intentId?: string): Promise<SubmittedObject> => {
    await db.transaction(async (trx) => {
      await setCarrierIds(trx, orgId, kind === 'brand' ? { brandId: res.id } : { campaignId: res.id });
      if (intentId) await resolveIntent(trx, orgId, intentId, res);
    });
    await transitionSubmission(db, orgId, submissionId, { status: 'submitted', providerStatus: `${kind.toUpperCase() as 'BRAND' | 'CAMPAIGN'}_PENDING` }, registrationChanged(orgId));
    return { id: res.id, revision: res.revision };
  };

  /**
   * Creates the brand or campaign once per registration (docs/operations.md "Provider calls happen once"): the intent
   * `brand_create`/`campaign_create` keyed by the registration id, then a list by that reference on a
   * retry. Records the outcome: the carrier's id, or, when the carrier cannot tell whether the create
   * happened, the registration `failed` with providerStatus `BRAND_UNKNOWN`/`CAMPAIGN_UNKNOWN` for an
   * operator. @returns null for `unknown` (the workflow stops)
   */
  const createOnce = async (
    orgId: string,
    submissionId: string,
    registrationId: string,
    kind: 'brand' | 'campaign',
    call: Pick<EffectSpec<CarrierSubmission>, 'request' | 'perform' | 'lookup'>,
  ): Promise<SubmittedObject | null> => {
    const ref = kind === 'brand' ? 'brand_create' : 'campaign_create';
    const effect: EffectOutcome<CarrierSubmission> = await performOnce(db, orgId, {
      kind: ref,
      reference: registrationId,
      subjectId: registrationId,
      provider: carrierOf().provider,
      ...call,
      fault: opts.faults,
    });
    if (effect.state === 'unknown') {
      const lastError = `The carrier could not tell whether the ${kind} was created (intent ${effect.intent.id}: ${effect.reason}); an operator must check at the carrier before resubmitting`;
      await transitionSubmission(db, orgId, submissionId, { status: 'failed', providerStatus: `${kind.toUpperCase()}_UNKNOWN`, lastError }, registrationChanged(orgId));
      return null;
    }
    const out = await record(orgId, submissionId, kind, effect.result, effect.intent.id);
    await opts.faults?.('after_record', ref, effect.intent.reference);
    return out;
  };

  /** The brand step of {@link smsSubmitBrand} (without the heartbeat). */
  const submitBrand = async (orgId: string, submissionId: string): Promise<SubmittedObject | null> => {
    const rec = await current(orgId, submissionId);
    if (!rec) return null;
    const r = rec.registration;
    const brand = {
        entityType: r.entityType!,
        legalName: r.legalName,
        displayName: r.displayName,
        ein: r.ein,
        vertical: r.vertical,
        country: r.country ?? 'US',
        street: r.street,
        city: r.city,
        state: r.state,
        postalCode: r.postalCode,
        website: r.website,
        supportEmail: r.supportEmail,
        phone: r.phone,
        stockSymbol: rec.stockSymbol,
        stockExchange: rec.stockExchange,
        reference: rec.registrationId,
    };
    // An update of the brand we hold is safe to repeat (it bumps the revision); a create is not.
    if (r.brandId) return record(orgId, submissionId, 'brand', await carrierOf().createOrUpdateBrand(orgId, brand, r.brandId));
    return createOnce(orgId, submissionId, rec.registrationId, 'brand', {
      request: { legalName: brand.legalName, entityType: brand.entityType },
      perform: () => carrierOf().createOrUpdateBrand(orgId, brand),
      lookup: () => carrierOf().findBrand(orgId, rec.registrationId),
    });
  };

  /** The campaign step of {@link smsSubmitCampaign} (without the heartbeat). */
  const submitCampaign = async (orgId: string, submissionId: string, brandId: string): Promise<SubmittedObject | null> => {
    const rec = await current(orgId, submissionId);
    if (!rec) return null;
    const r = rec.registration;
    const campaign = {
        brandId,
        useCase: r.useCase!,
        description: r.description ?? '',
        sample1: r.sample1 ?? '',
        sample2: r.sample2 ?? '',
        messageFlow: r.messageFlow ?? '',
        helpMessage: r.helpMessage ?? '',
        sendsLinks: r.sendsLinks === true,
        optInMethod: r.optInMethod,
        reference: rec.registrationId,
    };
    if (r.campaignId) return record(orgId, submissionId, 'campaign', await carrierOf().createOrUpdateCampaign(orgId, campaign, r.campaignId));
    return createOnce(orgId, submissionId, rec.registrationId, 'campaign', {
      request: { brandId, useCase: campaign.useCase },
      perform: () => carrierOf().createOrUpdateCampaign(orgId, campaign),
      lookup: () => carrierOf().findCampaign(orgId, rec.registrationId),
    });
  };

  return {
    /**
     * Creates or updates the brand at the carrier and stores its id. A create is done once per
     * registration (its intent, then a list by reference on a retry); `unknown` fails the registration.
     * Heartbeats while the carrier answers (activities/heartbeat.ts), so a dead worker's attempt is
     * retried after the workflow's heartbeat timeout, not its start-to-close timeout.
     * @returns the brand id and revision, or null when the submission is stale
     */
    async smsSubmitBrand(orgId: string, submissionId: string): Promise<SubmittedObject | null> {
      return whileHeartbeating(() => submitBrand(orgId, submissionId));
    },

    /**
     * Creates or updates the campaign under `brandId` and stores its id, a create once per registration
     * as for the brand (heartbeating while the carrier answers).
     * @returns the campaign id and revision, or null when the submission is stale
     */
    async smsSubmitCampaign(orgId: string, submissionId: string, brandId: string): Promise<SubmittedObject | null> {
      return whileHeartbeating(() => submitCampaign(orgId, submissionId, brandId));
    },

    /** Polls the carrier (fallback when no callback arrived), heartbeating while it answers. */
    async smsPollCarrierStatus(orgId: string, kind: 'brand' | 'campaign', id: string): Promise<CarrierEvent> {
      return whileHeartbeating(async () => {
        const s = kind === 'brand' ? await carrierOf().getBrandStatus(orgId, id) : await carrierOf().getCampaignStatus(orgId, id);
        return { kind, id, revision: s.revision, status: s.status, reason: s.reason };
      });
    },

    /**
     * Writes the registration status of the current submission and, when status or providerStatus
     * moved, `sms.registration.updated` in the same transaction. @returns false when stale
     */
    async smsMarkRegistration(
      orgId: string,
      submissionId: string,
      to: { status: 'submitted' | 'registered' | 'active' | 'failed'; providerStatus: string | null; lastError: string | null },
    ): Promise<boolean> {
      return whileHeartbeating(() => transitionSubmission(db, orgId, submissionId, to, registrationChanged(orgId)));
    },
    /**
     * Re-checks a send right before it goes out and hands it to the telephony provider once
     * (services/sms/deliver.ts `deliverText`).
     * @returns the final local status: `sent`, or `failed` with the reason
     */
    async smsDeliverMessage(orgId: string, messageId: string): Promise<DeliveryResult> {
      // Heartbeats while the provider answers (workflows/smsMessage.ts sets a 5 s heartbeat timeout).
      return whileHeartbeating(() => deliverText(db, telephonyOf(), orgId, messageId, opts.faults));
    },

    /**
     * The agent's answer to an inbound text (services/sms/answer.ts): one turn of the number's agent in its
     * `sms` conversation with the sender, the reply queued as `sms-message/{id}` with every SMS rule.
     * Idempotent: a retry sends neither a second turn nor a second reply.
     * @returns the reply queued, or why there is none
     */
    async smsAnswerInbound(orgId: string, messageId: string): Promise<InboundAnswer> {
      const ctx = Context.current();
      // This workflow delivers the reply durably: the owed answer is settled once the reply is queued.
      return answerInboundText({ db, llm: (llm ??= opts.llm ?? createLlm()), http: (http ??= createSkillHttpClient()), temporal: { client: ctx.client, taskQueue: ctx.info.taskQueue } }, orgId, messageId, Date.now(), { settleAnswered: true });
    },

    /** Marks a message held until `heldUntil` (ISO 8601). */
    async smsHoldMessage(orgId: string, messageId: string, heldUntil: string): Promise<void> {
      await advanceMessage(db, orgId, messageId, { status: 'held', heldUntil: new Date(heldUntil) }, messageChanged(orgId));
    },
  };
}

/** The SMS activities' type (workflows proxy it). */
export type SmsActivities = ReturnType<typeof createSmsActivities>;
