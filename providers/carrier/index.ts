/**
 * The carrier interface (DESIGN.md "Providers": `carrier`, 10DLC brand and campaign registration with a
 * Campaign Service Provider). Calls return at once with the carrier's ids; verdicts arrive later as
 * signed callbacks to `POST /sms/provider-callbacks/{provider}` and can also be polled (the workflow's
 * fallback when no callback arrives).
 *
 * Normalized statuses (what callbacks and polls report):
 * - brand: `PENDING` → `VERIFIED` (approved) or `UNVERIFIED` (rejected)
 * - campaign: `PENDING` → `APPROVED` → `PROVISIONED` (carriers finished provisioning), or `REJECTED`
 */
import type { Db } from '../../db';
import type { AppConfig } from '../../config';
import { SandboxCarrier, type SandboxOptions } from './sandbox';
import { TelnyxCarrier } from './telnyx';
import type { SmsRegistration } from '../../schemas/types/sms';
import type { Lookup } from '../lookup';
import { instrumentProvider } from '../../metrics';

/** Brand details sent to the carrier (TCR brand fields). */
export interface CarrierBrandRequest
  extends Pick<SmsRegistration, 'legalName' | 'displayName' | 'ein' | 'street' | 'city' | 'state' | 'postalCode' | 'website' | 'supportEmail' | 'phone'> {
  entityType: string;
  vertical: string | null;
  country: string;
  stockSymbol: string | null;
  stockExchange: string | null;
  /** Our id of the registration (the CSP's reference id: `findBrand` lists the brands created with it). */
  reference: string;
}

/** Campaign details sent to the carrier (TCR campaign fields). */
export interface CarrierCampaignRequest {
  brandId: string;
  useCase: string;
  description: string;
  sample1: string;
  sample2: string;
  messageFlow: string;
  helpMessage: string;
  sendsLinks: boolean;
  optInMethod: string | null;
  /** Our id of the registration. */
  reference: string;
}

/** What a create/update answers at once. `revision` increases with every update of the same object. */
export interface CarrierSubmission {
  id: string;
  revision: number;
  status: string;
}

/** A polled status. `reason` explains a rejection. */
export interface CarrierStatus {
  id: string;
  revision: number;
  status: string;
  reason: string | null;
}

/**
 * A CSP adapter. Every call appends a row to `provider_requests`. Creates are billable and NOT
 * idempotent (a repeated create is a second brand or campaign): callers go through `performOnce`
 * (services/effects.ts) and list by reference on a retry.
 */
export interface CarrierAdapter {
  /** Provider name, also the `{provider}` segment of its callback path. */
  readonly provider: string;
  /** Creates the brand, or updates `existingBrandId` (resubmission keeps the id). */
  createOrUpdateBrand(orgId: string, brand: CarrierBrandRequest, existingBrandId?: string | null): Promise<CarrierSubmission>;
  /** Creates the campaign under `campaign.brandId`, or updates `existingCampaignId`. */
  createOrUpdateCampaign(orgId: string, campaign: CarrierCampaignRequest, existingCampaignId?: string | null): Promise<CarrierSubmission>;
  /** The first brand created with this reference (TCR lists brands by reference id). */
  findBrand(orgId: string, reference: string): Promise<Lookup<CarrierSubmission>>;
  /** The first campaign created with this reference. */
  findCampaign(orgId: string, reference: string): Promise<Lookup<CarrierSubmission>>;
  /** Current brand status. @throws when the id is unknown */
  getBrandStatus(orgId: string, brandId: string): Promise<CarrierStatus>;
  /** Current campaign status. @throws when the id is unknown */
  getCampaignStatus(orgId: string, campaignId: string): Promise<CarrierStatus>;
}

export { carrierVerdict, verdictRank, supersedes, type CarrierVerdict, type CarrierEvent } from '../../domain/sms/carrierStatus';

/**
 * Options of the sandbox adapter: `delayMs` is the delay before each verdict callback, ms
 * (SANDBOX_CARRIER_DELAY_MS, default 2000; 0 in benchmarks).
 */
export type CarrierOptions = SandboxOptions;

/**
 * The configured carrier (CARRIER_PROVIDER: `sandbox`, the default, or `telnyx`; docs/going-live.md).
 * @throws for an unknown provider name, or a real provider whose settings are missing
 */
export function createCarrier(deps: { db: Db; config: AppConfig }, opts: CarrierOptions = {}): CarrierAdapter {
  const name = process.env.CARRIER_PROVIDER || 'sandbox';
  if (name === 'telnyx') return instrumentProvider('carrier', name, new TelnyxCarrier(deps));
  if (name !== 'sandbox') throw new Error(`CARRIER_PROVIDER=${name} is not supported; use "sandbox" or "telnyx"`);
  return instrumentProvider('carrier', name, new SandboxCarrier(deps, opts));
}
