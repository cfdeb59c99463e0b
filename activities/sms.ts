/**
 * SMS hub activities (DESIGN.md "activities/"): carrier submissions and polls for the registration
 * workflow, status writes guarded by the submission id, and the send of one text for `sms-message/{id}`.
 * All are idempotent: the sandbox derives carrier and message ids from our ids, status writes are
 * guarded and monotonic, so Temporal's retries never duplicate an effect.
 */
import type { ActivityDeps } from './index';
import { createCarrier, type CarrierAdapter, type CarrierOptions } from './providers/carrier';
import { createTelephony, type TelephonyAdapter, type TelephonyOptions } from './providers/telephony';
import type { CarrierEvent } from '../domain/sms/carrierStatus';
import { getSubmissionRecord, getRegistration, setCarrierIds, transitionSubmission } from '../db/repositories/smsRegistrations';
import { advanceMessage, getMessageRecord } from '../db/repositories/smsMessages';
import { getContact } from '../db/repositories/smsContacts';
import { getOwnedNumberByE164 } from '../db/repositories/numbers';
import { messageChanged, registrationChanged } from '../events/sms';

/** Extra dependencies (tests and benchmarks pass their own adapters or sandbox options). */
export interface SmsActivityOptions {
  carrier?: CarrierAdapter;
  telephony?: TelephonyAdapter;
  carrierOptions?: CarrierOptions;
  telephonyOptions?: TelephonyOptions;
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
  const carrierOf = () => (carrier ??= createCarrier(deps, opts.carrierOptions));
  const telephonyOf = () => (telephony ??= createTelephony(deps, opts.telephonyOptions));

  /** The submission's record, or undefined when `submissionId` is no longer the current one. */
  const current = async (orgId: string, submissionId: string) => {
    const rec = await getSubmissionRecord(db, orgId);
    if (!rec || rec.submissionId !== submissionId || rec.registration.status === 'draft') return undefined;
    return rec;
  };

  return {
    /**
     * Creates or updates the brand at the carrier and stores its id.
     * @returns the brand id and revision, or null when the submission is stale
     */
    async smsSubmitBrand(orgId: string, submissionId: string): Promise<SubmittedObject | null> {
      const rec = await current(orgId, submissionId);
      if (!rec) return null;
      const r = rec.registration;
      const res = await carrierOf().createOrUpdateBrand(
        orgId,
        {
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
        },
        r.brandId,
      );
      await setCarrierIds(db, orgId, { brandId: res.id });
      await transitionSubmission(db, orgId, submissionId, { status: 'submitted', providerStatus: 'BRAND_PENDING' }, registrationChanged(orgId));
      return { id: res.id, revision: res.revision };
    },

    /**
     * Creates or updates the campaign under `brandId` and stores its id.
     * @returns the campaign id and revision, or null when the submission is stale
     */
    async smsSubmitCampaign(orgId: string, submissionId: string, brandId: string): Promise<SubmittedObject | null> {
      const rec = await current(orgId, submissionId);
      if (!rec) return null;
      const r = rec.registration;
      const res = await carrierOf().createOrUpdateCampaign(
        orgId,
        {
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
        },
        r.campaignId,
      );
      await setCarrierIds(db, orgId, { campaignId: res.id });
      await transitionSubmission(db, orgId, submissionId, { status: 'submitted', providerStatus: 'CAMPAIGN_PENDING' }, registrationChanged(orgId));
      return { id: res.id, revision: res.revision };
    },

    /** Polls the carrier (fallback when no callback arrived). */
    async smsPollCarrierStatus(orgId: string, kind: 'brand' | 'campaign', id: string): Promise<CarrierEvent> {
      const s = kind === 'brand' ? await carrierOf().getBrandStatus(orgId, id) : await carrierOf().getCampaignStatus(orgId, id);
      return { kind, id, revision: s.revision, status: s.status, reason: s.reason };
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
      return transitionSubmission(db, orgId, submissionId, to, registrationChanged(orgId));
    },

    /**
     * Re-checks a send right before it goes out (the recipient may have opted out, the number may have
     * been disabled while the text was held) and hands it to the telephony provider.
     * @returns the final local status: `sent`, or `failed` with the reason
     */
    async smsDeliverMessage(orgId: string, messageId: string): Promise<{ status: 'sent' | 'failed'; error: string | null }> {
      const m = await getMessageRecord(db, orgId, messageId);
      if (!m) return { status: 'failed', error: 'message not found' };
      if (m.status === 'sent' || m.status === 'delivered') return { status: 'sent', error: null };
      if (m.status === 'failed') return { status: 'failed', error: m.error };
      const refuse = async (error: string) => {
        await advanceMessage(db, orgId, messageId, { status: 'failed', error }, messageChanged(orgId));
        return { status: 'failed' as const, error };
      };
      const contact = await getContact(db, orgId, m.to);
      // A keyword reply (the one STOP/START confirmation, the HELP answer) always answers the texter
      // from the number they wrote to (CTIA): it goes to a number that has just opted out, from a number
      // whose SMS toggle is off, before the registration is active. Nothing else does.
      const keywordReply = m.trigger === 'keyword';
      if (contact?.optedOut && !keywordReply) return refuse('recipient_opted_out');
      const number = await getOwnedNumberByE164(db, orgId, m.from);
      if (!number || (!number.smsEnabled && !keywordReply)) return refuse('number_not_sms_enabled');
      const reg = await getRegistration(db, orgId);
      if (reg?.status !== 'active' && !keywordReply) return refuse('registration_not_active');
      const res = await telephonyOf().sendMessage(orgId, { from: m.from, to: m.to, body: m.body, mediaIds: m.mediaIds, reference: m.id });
      await advanceMessage(db, orgId, messageId, { status: 'sent', providerMessageId: res.providerMessageId }, messageChanged(orgId));
      return { status: 'sent', error: null };
    },

    /** Marks a message held until `heldUntil` (ISO 8601). */
    async smsHoldMessage(orgId: string, messageId: string, heldUntil: string): Promise<void> {
      await advanceMessage(db, orgId, messageId, { status: 'held', heldUntil: new Date(heldUntil) }, messageChanged(orgId));
    },
  };
}

/** The SMS activities' type (workflows proxy it). */
export type SmsActivities = ReturnType<typeof createSmsActivities>;
