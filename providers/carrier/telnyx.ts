/**
 * The Telnyx carrier (CARRIER_PROVIDER=telnyx; docs/going-live.md "Telnyx"): 10DLC brands
 * (`POST /10dlc/brand`), campaigns (`POST /10dlc/campaignBuilder`), their status, and number-to-campaign
 * assignment (`POST /10dlc/phone_number_campaigns`), through the official `telnyx` SDK. Status webhooks
 * go to `PUBLIC_BASE_URL/api/v1/sms/provider-callbacks/telnyx?org=…&ref=…` (Ed25519-signed; mapped onto
 * `brand.status`/`campaign.status` by api/sms/providerWebhooks.ts).
 *
 * Telnyx statuses are normalized to the carrier interface's (providers/carrier/index.ts):
 * brand `REGISTRATION_FAILED`, or `OK` with identity `UNVERIFIED`, → `UNVERIFIED`, `OK` with a verified or
 * self-declared identity → `VERIFIED`; campaign `MNO_PROVISIONED` → `PROVISIONED`, accepted states →
 * `APPROVED`, failed/rejected/suspended/expired → `REJECTED`. The revision is the object's `updatedAt`
 * in Unix seconds for a brand, `createDate` for a campaign (Telnyx has no revision counter).
 *
 * Creates are billable and not idempotent: the brand carries our registration id in its webhook URL
 * and the campaign in `referenceId`, which `findBrand`/`findCampaign` look for on a retry.
 */
import type Telnyx from 'telnyx';
import { getRegistration } from '../../db/repositories/smsRegistrations';
import { logProviderRequest } from '../../db/repositories/smsProviderEvents';
import type { Lookup } from '../lookup';
import { providerCallbackUrl } from '../telephony/live';
import { TELNYX_PROVIDER, TelnyxAdapterBase, telnyxErrorText } from '../telephony/telnyxClient';
import type { CarrierAdapter, CarrierBrandRequest, CarrierCampaignRequest, CarrierStatus, CarrierSubmission } from './index';

/** Normalized brand status of a Telnyx brand (`status`, `identityStatus`). */
export function telnyxBrandStatus(status: string | undefined, identityStatus: string | undefined): string {
  if (status === 'REGISTRATION_FAILED' || (status === 'OK' && identityStatus === 'UNVERIFIED')) return 'UNVERIFIED';
  if (status === 'OK' && (identityStatus === 'VERIFIED' || identityStatus === 'VETTED_VERIFIED' || identityStatus === 'SELF_DECLARED')) return 'VERIFIED';
  return 'PENDING';
}

/** Normalized campaign status of a Telnyx `campaignStatus`. */
export function telnyxCampaignStatus(campaignStatus: string | undefined): string {
  switch (campaignStatus) {
    case 'MNO_PROVISIONED':
      return 'PROVISIONED';
    case 'TCR_ACCEPTED':
    case 'TELNYX_ACCEPTED':
    case 'MNO_PENDING':
    case 'MNO_ACCEPTED':
      return 'APPROVED';
    case 'TCR_FAILED':
    case 'TELNYX_FAILED':
    case 'MNO_REJECTED':
    case 'MNO_PROVISIONING_FAILED':
    case 'TCR_SUSPENDED':
    case 'TCR_EXPIRED':
      return 'REJECTED';
    default:
      return 'PENDING';
  }
}

/** Unix seconds of an ISO time (the revision of a Telnyx object), 0 when absent. */
export function telnyxRevision(iso: string | undefined | null): number {
  const ms = iso ? Date.parse(iso) : NaN;
  return Number.isFinite(ms) ? Math.floor(ms / 1000) : 0;
}

/** The Telnyx CSP adapter. */
export class TelnyxCarrier extends TelnyxAdapterBase implements CarrierAdapter {
  async createOrUpdateBrand(orgId: string, brand: CarrierBrandRequest, existingBrandId?: string | null): Promise<CarrierSubmission> {
    const body = {
      country: brand.country,
      displayName: brand.displayName ?? brand.legalName ?? '',
      companyName: brand.legalName ?? undefined,
      email: brand.supportEmail ?? '',
      entityType: brand.entityType as Telnyx.Messaging10dlc.EntityType,
      vertical: (brand.vertical ?? 'TECHNOLOGY') as Telnyx.Messaging10dlc.Vertical,
      ein: brand.ein ?? undefined,
      phone: brand.phone ?? undefined,
      street: brand.street ?? undefined,
      city: brand.city ?? undefined,
      state: brand.state ?? undefined,
      postalCode: brand.postalCode ?? undefined,
      website: brand.website ?? undefined,
      stockSymbol: brand.stockSymbol ?? undefined,
      stockExchange: (brand.stockExchange ?? undefined) as Telnyx.Messaging10dlc.StockExchange | undefined,
      webhookURL: providerCallbackUrl(this.config, TELNYX_PROVIDER, { org: orgId, ref: brand.reference }),
    };
    await logProviderRequest(this.db, orgId, TELNYX_PROVIDER, existingBrandId ? 'updateBrand' : 'createBrand', { reference: brand.reference, entityType: body.entityType });
    const b = await this.call(() => (existingBrandId ? this.client.messaging10dlc.brand.update(existingBrandId, body) : this.client.messaging10dlc.brand.create(body)));
    if (!b.brandId) throw new Error('Telnyx answered the brand without a brandId');
    return { id: b.brandId, revision: telnyxRevision(b.updatedAt ?? b.createdAt), status: telnyxBrandStatus(b.status, b.identityStatus) };
  }

  async createOrUpdateCampaign(orgId: string, c: CarrierCampaignRequest, existingCampaignId?: string | null): Promise<CarrierSubmission> {
    const common = {
      description: c.description,
      sample1: c.sample1,
      sample2: c.sample2,
      messageFlow: c.messageFlow,
      helpMessage: c.helpMessage,
      embeddedLink: c.sendsLinks,
      webhookURL: providerCallbackUrl(this.config, TELNYX_PROVIDER, { org: orgId, ref: c.reference }),
    };
    await logProviderRequest(this.db, orgId, TELNYX_PROVIDER, existingCampaignId ? 'updateCampaign' : 'createCampaign', { reference: c.reference, brandId: c.brandId });
    const r = await this.call(() =>
      existingCampaignId
        ? this.client.messaging10dlc.campaign.update(existingCampaignId, { sample1: c.sample1, sample2: c.sample2, messageFlow: c.messageFlow, helpMessage: c.helpMessage, webhookURL: common.webhookURL })
        : this.client.messaging10dlc.campaignBuilder.submit({
            brandId: c.brandId,
            usecase: c.useCase,
            referenceId: c.reference,
            subscriberOptin: true,
            subscriberOptout: true,
            subscriberHelp: true,
            termsAndConditions: true,
            ...common,
          }),
    );
    return { id: r.campaignId, revision: telnyxRevision(r.createDate), status: telnyxCampaignStatus(r.campaignStatus) };
  }

  async findBrand(orgId: string, reference: string): Promise<Lookup<CarrierSubmission>> {
    const reg = await getRegistration(this.db, orgId);
    const displayName = reg?.displayName ?? reg?.legalName;
    if (!displayName) return { cannotTell: 'Telnyx: the registration has no display name to list brands by' };
    await logProviderRequest(this.db, orgId, TELNYX_PROVIDER, 'listBrands', { reference, displayName });
    const marker = `ref=${encodeURIComponent(reference)}`;
    for await (const listed of this.client.messaging10dlc.brand.list({ displayName, sort: 'createdAt' })) {
      if (!listed.brandId) continue;
      // The list omits webhook URLs: the brand itself says whether it was created for this registration.
      const b = await this.call(() => this.client.messaging10dlc.brand.retrieve(listed.brandId!));
      if (b.webhookURL?.includes(marker)) return { found: { id: listed.brandId, revision: telnyxRevision(b.updatedAt ?? b.createdAt), status: telnyxBrandStatus(b.status, b.identityStatus) } };
    }
    return { absent: true };
  }

  async findCampaign(orgId: string, reference: string): Promise<Lookup<CarrierSubmission>> {
    const reg = await getRegistration(this.db, orgId);
    if (!reg?.brandId) return { absent: true };
    await logProviderRequest(this.db, orgId, TELNYX_PROVIDER, 'listCampaigns', { reference, brandId: reg.brandId });
    for await (const c of this.client.messaging10dlc.campaign.list({ brandId: reg.brandId })) {
      if (c.referenceId === reference && c.campaignId) return { found: { id: c.campaignId, revision: telnyxRevision(c.createDate), status: telnyxCampaignStatus(c.campaignStatus) } };
    }
    return { absent: true };
  }

  async getBrandStatus(orgId: string, brandId: string): Promise<CarrierStatus> {
    await logProviderRequest(this.db, orgId, TELNYX_PROVIDER, 'getBrandStatus', { brandId });
    const b = await this.call(() => this.client.messaging10dlc.brand.retrieve(brandId));
    const status = telnyxBrandStatus(b.status, b.identityStatus);
    return { id: brandId, revision: telnyxRevision(b.updatedAt ?? b.createdAt), status, reason: status === 'UNVERIFIED' ? b.failureReasons || `Telnyx brand status ${b.status}` : null };
  }

  async getCampaignStatus(orgId: string, campaignId: string): Promise<CarrierStatus> {
    await logProviderRequest(this.db, orgId, TELNYX_PROVIDER, 'getCampaignStatus', { campaignId });
    const c = await this.call(() => this.client.messaging10dlc.campaign.retrieve(campaignId));
    const status = telnyxCampaignStatus(c.campaignStatus);
    return { id: campaignId, revision: telnyxRevision(c.createDate), status, reason: status === 'REJECTED' ? c.failureReasons || `Telnyx campaign status ${c.campaignStatus}` : null };
  }

  /**
   * Assigns a number to the campaign (`POST /10dlc/phone_number_campaigns`); repeating it is harmless.
   * @throws Error with Telnyx's reason when refused
   */
  async assignNumber(orgId: string, e164: string, campaignId: string): Promise<void> {
    await logProviderRequest(this.db, orgId, TELNYX_PROVIDER, 'assignNumberToCampaign', { e164, campaignId });
    try {
      await this.call(() => this.client.messaging10dlc.phoneNumberCampaigns.create({ phoneNumber: e164, campaignId }));
    } catch (err) {
      throw new Error(telnyxErrorText(err));
    }
  }
}
