/**
 * The sandbox carrier (DESIGN.md "Providers"): the default `carrier` adapter. It behaves like a real
 * CSP API: ids come back at once, verdicts arrive later as signed HTTP callbacks to
 * `POST {PUBLIC_BASE_URL}/api/v1/sms/provider-callbacks/sandbox` (the same endpoint a real provider
 * calls), after a configurable delay (SANDBOX_CARRIER_DELAY_MS, default 2000 ms). Pending callbacks are
 * rows of `sandbox_callbacks`, so they survive a restart (the dispatcher resumes them).
 *
 * Magic values (case-insensitive), like payment providers' test modes:
 * - legalName or displayName containing "Reject Brand": the brand is `UNVERIFIED` (rejected)
 * - description containing "Reject Campaign": the campaign is `REJECTED`
 * - legalName containing "No Callback": no callback is ever sent; verdicts are visible only by polling
 *   `getBrandStatus`/`getCampaignStatus` (exercises the workflow's hourly polling fallback)
 * Otherwise the brand is `VERIFIED`, the campaign `APPROVED` after one delay and `PROVISIONED` after two.
 *
 * Creates are not idempotent, as at a real CSP: each create makes (and bills) a new brand or campaign
 * with a new id; `findBrands`/`findCampaigns` list them by the reference they were created with.
 */
import crypto from 'node:crypto';
import type { Db } from '../../db';
import { envNumber, type AppConfig } from '../../config';
import { getSandboxObject, upsertSandboxObject } from '../../db/repositories/smsSandbox';
import {
  claimDueSandboxCallbacks,
  finishSandboxCallback,
  logProviderRequest,
  nextSandboxCallbackDelayMs,
  scheduleSandboxCallback,
} from '../../db/repositories/smsProviderEvents';
import { callbackSecret, SIGNATURE_HEADER, signCallback } from '../../domain/sms/callbackSignature';
import { logExchangeWithCallback, sandboxCarrierObjectsByReference } from '../../db/repositories/sandboxProviders';
import type { Lookup } from '../lookup';
import type { CarrierAdapter, CarrierBrandRequest, CarrierCampaignRequest, CarrierOptions, CarrierStatus, CarrierSubmission } from './index';

/** Provider name of every sandbox adapter (carrier and telephony share one callback endpoint). */
export const SANDBOX_PROVIDER = 'sandbox';

/** Body of a sandbox callback (JSON). `reference` echoes our registration id, as CSPs echo a reference id. */
export interface SandboxCallbackPayload {
  eventId: string;
  type: 'brand.status' | 'campaign.status' | 'message.status' | 'message.inbound';
  /** Brand, campaign or provider message id. */
  id: string;
  revision?: number;
  status?: string;
  reason?: string | null;
  reference?: string;
  /** message.inbound: sender, our number, text. */
  from?: string;
  to?: string;
  text?: string;
  occurredAt: string;
}

/** The callback URL of the sandbox provider for a configuration. */
export function sandboxCallbackUrl(config: AppConfig, override?: string): string {
  return override || process.env.SANDBOX_CALLBACK_URL || `${config.publicBaseUrl.replace(/\/+$/, '')}/api/v1/sms/provider-callbacks/${SANDBOX_PROVIDER}`;
}

/**
 * TCR-like id: prefix + 6 random base-36 characters. A repeated create is a new (billable) object, as at
 * a real CSP (docs/operations.md "Provider calls happen once"); callers find earlier ones by reference.
 */
function newCarrierId(prefix: 'B' | 'C'): string {
  return prefix + (BigInt('0x' + crypto.randomBytes(8).toString('hex')) % 36n ** 6n).toString(36).toUpperCase().padStart(6, '0');
}

/**
 * Delivers due sandbox callbacks by real HTTP POSTs, signed like a real provider's. One per process;
 * `kick(ms)` arms a timer, `resume()` re-arms after a restart. A 2xx or 4xx answer ends a callback
 * (4xx recorded as its last error); a 5xx or network error retries with backoff (1 s doubling, 10 attempts).
 */
export class SandboxCallbackDispatcher {
  private timer: NodeJS.Timeout | undefined;
  private timerAt = Infinity;
  private running = false;
  private stopped = false;

  constructor(private readonly db: Db, private readonly url: string, private readonly log: (msg: string, err?: unknown) => void = () => {}) {}

  /** Makes sure a delivery pass runs within `ms`. */
  kick(ms = 0): void {
    if (this.stopped) return;
    const at = Date.now() + ms;
    if (this.timer && this.timerAt <= at) return;
    if (this.timer) clearTimeout(this.timer);
    this.timerAt = at;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.timerAt = Infinity;
      void this.pass();
    }, ms);
    this.timer.unref?.();
  }

  /** Re-arms for callbacks already pending in Postgres (call at worker start). */
  async resume(): Promise<void> {
    const next = await nextSandboxCallbackDelayMs(this.db);
    if (next !== null) this.kick(next);
  }

  /** Stops arming timers (pending rows stay for the next start). */
  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
  }

  /** One delivery pass: claims due callbacks, POSTs them, then re-arms for the next due one. */
  async pass(): Promise<number> {
    if (this.running) {
      this.kick(50);
      return 0;
    }
    this.running = true;
    let delivered = 0;
    try {
      while (!this.stopped) {
        const batch = await claimDueSandboxCallbacks(this.db, 50, 60_000);
        if (!batch.length) break;
        await Promise.all(
          batch.map(async (cb) => {
            const body = JSON.stringify(cb.payload);
            try {
              const res = await fetch(this.url, {
                method: 'POST',
                headers: { 'content-type': 'application/json', [SIGNATURE_HEADER]: signCallback(callbackSecret(cb.provider), body) },
                body,
                signal: AbortSignal.timeout(10_000),
              });
              await res.arrayBuffer().catch(() => undefined);
              if (res.status >= 500 || res.status === 429) throw new Error(`callback answered ${res.status}`);
              if (res.status >= 400) {
                await finishSandboxCallback(this.db, cb.id, { delivered: true });
                this.log(`sandbox callback ${cb.id} refused with ${res.status}`);
              } else {
                await finishSandboxCallback(this.db, cb.id, { delivered: true });
              }
              delivered++;
            } catch (err) {
              if (cb.attempts >= 10) await finishSandboxCallback(this.db, cb.id, { delivered: true });
              else await finishSandboxCallback(this.db, cb.id, { delivered: false, error: String(err), retryInMs: 1000 * 2 ** (cb.attempts - 1) });
              this.log(`sandbox callback ${cb.id} failed`, err);
            }
          }),
        );
      }
    } catch (err) {
      this.log('sandbox callback pass failed', err);
      this.kick(1000);
    } finally {
      this.running = false;
    }
    if (!this.stopped) {
      const next = await nextSandboxCallbackDelayMs(this.db).catch(() => null);
      if (next !== null) this.kick(Math.max(next, 10));
    }
    return delivered;
  }
}

const dispatchers = new Map<string, SandboxCallbackDispatcher>();

/** The process's dispatcher for (database, url); created on first use. */
export function sandboxDispatcher(db: Db, url: string): SandboxCallbackDispatcher {
  const key = url;
  let d = dispatchers.get(key);
  if (!d) {
    d = new SandboxCallbackDispatcher(db, url);
    dispatchers.set(key, d);
  }
  return d;
}

/** Stops every dispatcher of this process (tests, shutdown). */
export function stopSandboxDispatchers(): void {
  for (const d of dispatchers.values()) d.stop();
  dispatchers.clear();
}

/** Options every sandbox adapter takes (carrier, telephony). */
export interface SandboxOptions {
  /** Delay of the adapter's callbacks, ms (each adapter's env variable and default). */
  delayMs?: number;
  /** Where sandbox callbacks are POSTed (SANDBOX_CALLBACK_URL, default PUBLIC_BASE_URL/api/v1/sms/provider-callbacks/sandbox). */
  callbackUrl?: string;
  /** Tests: the look-ups answer "cannot tell", like a provider without a list by reference (default false). */
  lookupsUnavailable?: boolean;
}

/**
 * What the sandbox carrier and telephony adapters share: the database, the callback delay (ms) and the
 * dispatcher that POSTs their signed callbacks to our own callback endpoint (DESIGN.md "Providers").
 */
export abstract class SandboxAdapter {
  readonly provider = SANDBOX_PROVIDER;
  protected readonly db: Db;
  protected readonly delayMs: number;
  protected readonly dispatcher: SandboxCallbackDispatcher;
  protected readonly lookupsUnavailable: boolean;

  /** @param defaultDelay the env variable and default (ms) of `delayMs` when `opts.delayMs` is unset */
  constructor(deps: { db: Db; config: AppConfig }, opts: SandboxOptions, defaultDelay: { env: string; ms: number }) {
    this.db = deps.db;
    this.lookupsUnavailable = opts.lookupsUnavailable ?? false;
    this.delayMs = opts.delayMs ?? envNumber(defaultDelay.env, defaultDelay.ms);
    this.dispatcher = sandboxDispatcher(deps.db, sandboxCallbackUrl(deps.config, opts.callbackUrl));
  }

  /**
   * Schedules a callback `delayMs` from now (durably, in Postgres) with a fresh event id and its time.
   * @param db a transaction to schedule it in (then the caller kicks the dispatcher once it committed)
   */
  protected async callback(orgId: string, payload: Omit<SandboxCallbackPayload, 'eventId' | 'occurredAt'>, delayMs: number, db?: Db): Promise<void> {
    const full: SandboxCallbackPayload = { eventId: `evt_${crypto.randomBytes(8).toString('hex')}`, ...payload, occurredAt: new Date(Date.now() + delayMs).toISOString() };
    await scheduleSandboxCallback(db ?? this.db, orgId, SANDBOX_PROVIDER, full as unknown as Record<string, unknown>, delayMs);
    if (!db) this.dispatcher.kick(delayMs);
  }

  /**
   * Logs a request and the sandbox's answer (`provider_requests`) and schedules the callback it owes `delayMs` from now,
   * in one statement (as {@link callback} schedules it).
   */
  protected async exchangeWithCallback(orgId: string, exchange: { operation: string; request: Record<string, unknown>; response: Record<string, unknown> }, payload: Omit<SandboxCallbackPayload, 'eventId' | 'occurredAt'>, delayMs: number): Promise<void> {
    const full: SandboxCallbackPayload = { eventId: `evt_${crypto.randomBytes(8).toString('hex')}`, ...payload, occurredAt: new Date(Date.now() + delayMs).toISOString() };
    await logExchangeWithCallback(this.db, orgId, SANDBOX_PROVIDER, exchange, { payload: full as unknown as Record<string, unknown>, delayMs });
    this.dispatcher.kick(delayMs);
  }
}

/** The sandbox's verdict on a brand and a campaign, approved or rejected (by the magic values of the module comment). */
const VERDICTS = {
  brand: { approved: 'VERIFIED', rejected: 'UNVERIFIED', reason: 'Sandbox: the brand identity could not be verified (magic value "Reject Brand")' },
  campaign: { approved: 'APPROVED', rejected: 'REJECTED', reason: 'Sandbox: the campaign was rejected in vetting (magic value "Reject Campaign")' },
} as const;

/** The sandbox CSP. See the module comment for its magic values. */
export class SandboxCarrier extends SandboxAdapter implements CarrierAdapter {
  constructor(deps: { db: Db; config: AppConfig }, opts: CarrierOptions = {}) {
    super(deps, opts, { env: 'SANDBOX_CARRIER_DELAY_MS', ms: 2000 });
  }

  /**
   * Stores a brand or campaign under its existing id (an update bumps the revision) or a new `B…`/`C…`
   * id, with the verdict it will get after `delayMs` (and, an approved campaign, provisioning after twice
   * that), and the callbacks that will announce it, in one transaction: as at a real CSP, an object that
   * exists always gets its verdicts, even when the caller dies before the answer (a retry finds the object
   * by reference and waits for the callback).
   * @param rejected the magic value of {@link VERDICTS} asked for the rejection
   * @param silent no callback is ever sent ("No Callback"): the verdict is visible only by polling
   * @returns the submission, always `PENDING` (the verdict comes by callback)
   */
  private async submit(
    orgId: string,
    kind: 'brand' | 'campaign',
    request: CarrierBrandRequest | CarrierCampaignRequest,
    existingId: string | null | undefined,
    rejected: boolean,
    silent: boolean,
  ): Promise<CarrierSubmission> {
    const verdicts = VERDICTS[kind];
    const provisions = kind === 'campaign' && !rejected;
    const verdict = { outcome: rejected ? verdicts.rejected : verdicts.approved, reason: rejected ? verdicts.reason : null, provisionDelayMs: provisions ? 2 * this.delayMs : null };
    const id = existingId || newCarrierId(kind === 'brand' ? 'B' : 'C');
    const { obj, delays } = await this.db.transaction(async (trx) => {
      const t = trx as unknown as Db;
      const stored = await upsertSandboxObject(t, orgId, { id, kind, reference: request.reference, delayMs: this.delayMs, request, ...verdict });
      const announce = { type: `${kind}.status` as const, id, revision: stored.revision, reference: request.reference };
      const due = silent
        ? []
        : [
            { payload: { ...announce, status: stored.outcome, reason: stored.reason }, delayMs: this.delayMs },
            ...(provisions ? [{ payload: { ...announce, status: 'PROVISIONED', reason: null }, delayMs: 2 * this.delayMs }] : []),
          ];
      for (const c of due) await this.callback(orgId, c.payload, c.delayMs, t);
      return { obj: stored, delays: due.map((c) => c.delayMs) };
    });
    for (const d of delays) this.dispatcher.kick(d);
    return { id, revision: obj.revision, status: 'PENDING' };
  }

  async createOrUpdateBrand(orgId: string, brand: CarrierBrandRequest, existingBrandId?: string | null): Promise<CarrierSubmission> {
    await logProviderRequest(this.db, orgId, SANDBOX_PROVIDER, existingBrandId ? 'updateBrand' : 'createBrand', { ...brand, brandId: existingBrandId ?? null });
    const rejected = /reject brand/i.test(`${brand.legalName ?? ''} ${brand.displayName ?? ''}`);
    return this.submit(orgId, 'brand', brand, existingBrandId, rejected, /no callback/i.test(brand.legalName ?? ''));
  }

  async createOrUpdateCampaign(orgId: string, campaign: CarrierCampaignRequest, existingCampaignId?: string | null): Promise<CarrierSubmission> {
    await logProviderRequest(this.db, orgId, SANDBOX_PROVIDER, existingCampaignId ? 'updateCampaign' : 'createCampaign', { ...campaign, campaignId: existingCampaignId ?? null });
    const brand = await getSandboxObject(this.db, orgId, campaign.brandId);
    if (!brand) throw new Error(`sandbox carrier: unknown brand ${campaign.brandId}`);
    // A brand registered with "No Callback" keeps its campaigns silent too.
    return this.submit(orgId, 'campaign', campaign, existingCampaignId, /reject campaign/i.test(campaign.description), /no callback/i.test(String(brand.request.legalName ?? '')));
  }

  private async status(orgId: string, id: string, operation: string): Promise<CarrierStatus> {
    await logProviderRequest(this.db, orgId, SANDBOX_PROVIDER, operation, { id });
    const obj = await getSandboxObject(this.db, orgId, id);
    if (!obj) throw new Error(`sandbox carrier: unknown id ${id}`);
    const now = Date.now();
    let status = now >= obj.decidedAt.getTime() ? obj.outcome : 'PENDING';
    if (status === 'APPROVED' && obj.provisionedAt && now >= obj.provisionedAt.getTime()) status = 'PROVISIONED';
    return { id, revision: obj.revision, status, reason: status === obj.outcome ? obj.reason : null };
  }

  private async find(orgId: string, kind: 'brand' | 'campaign', reference: string): Promise<Lookup<CarrierSubmission>> {
    if (this.lookupsUnavailable) return { cannotTell: `sandbox: ${kind} look-ups are unavailable` };
    await logProviderRequest(this.db, orgId, SANDBOX_PROVIDER, kind === 'brand' ? 'listBrands' : 'listCampaigns', { reference });
    const [first] = await sandboxCarrierObjectsByReference(this.db, orgId, kind, reference);
    return first ? { found: { id: first.id, revision: first.revision, status: 'PENDING' } } : { absent: true };
  }

  findBrand(orgId: string, reference: string): Promise<Lookup<CarrierSubmission>> {
    return this.find(orgId, 'brand', reference);
  }

  findCampaign(orgId: string, reference: string): Promise<Lookup<CarrierSubmission>> {
    return this.find(orgId, 'campaign', reference);
  }

  getBrandStatus(orgId: string, brandId: string): Promise<CarrierStatus> {
    return this.status(orgId, brandId, 'getBrandStatus');
  }

  getCampaignStatus(orgId: string, campaignId: string): Promise<CarrierStatus> {
    return this.status(orgId, campaignId, 'getCampaignStatus');
  }
}

/**
 * Re-arms delivery of sandbox callbacks left pending by a previous process (call once at worker start;
 * harmless in several processes at once: deliveries are claimed with SKIP LOCKED).
 */
export async function resumeSandboxCallbacks(deps: { db: Db; config: AppConfig }, callbackUrl?: string): Promise<void> {
  await sandboxDispatcher(deps.db, sandboxCallbackUrl(deps.config, callbackUrl)).resume();
}
