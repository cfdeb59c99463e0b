/**
 * Provider calls happen once (docs/operations.md "Provider calls happen once"): for each non-idempotent write — a
 * dial, a 10DLC brand create, a campaign create, a text, a number purchase — the attempt is crashed at
 * each point of the write (before the request, after the provider accepted it, after the result was
 * recorded) by the activity's fault hook, then run again as Temporal (or the client) retries it. The
 * sandboxes no longer deduplicate, so their request counts prove each effect happened once.
 */
import crypto from 'node:crypto';
import { expect } from 'chai';
import { createOutboundActivities } from '../../activities/outbound';
import { createSmsActivities } from '../../activities/sms';
import { SimulatedCrash, type EffectStep, type FaultHook } from '../../services/effects';
import { stopSandboxDispatchers } from '../../providers/carrier/sandbox';
import { sandboxInventory } from '../../providers/telephony/sandbox';
import { createTelephony } from '../../providers/telephony';
import { purchaseNumberOnce } from '../../api/routes/numbers';
import type { AppDeps } from '../../api/context';
import { insertAttempts, lockCampaign, setCampaignStatus } from '../../db/repositories/campaigns';
import { markSubmitted } from '../../db/repositories/smsRegistrations';
import { insertMessage } from '../../db/repositories/smsMessages';
import { getIntent, listIntents } from '../../db/repositories/providerIntents';
import { countProviderRequests, sandboxDials } from '../../db/repositories/sandboxProviders';
import { createLogger } from '../../runtime';
import { COMPLETE_BRAND } from '../api/sms-fixtures';
import { phone, startOutboundEnv, type OutboundEnv } from '../api/outbound-fixtures';

const STEPS: EffectStep[] = ['before_request', 'after_accept', 'after_record'];

/** A fault hook that crashes once, at `step`. */
function crashOnceAt(step: EffectStep): { hook: FaultHook; fired: () => boolean } {
  let fired = false;
  return {
    hook: (at, kind) => {
      if (at === step && !fired) {
        fired = true;
        throw new SimulatedCrash(at, kind);
      }
    },
    fired: () => fired,
  };
}

/** Runs `attempt` with a crash at `step`, then again without one (the retry); returns the retry's result. */
async function crashThenRetry<T>(step: EffectStep, attempt: (faults: FaultHook | undefined) => Promise<T>): Promise<T> {
  const crash = crashOnceAt(step);
  let err: unknown;
  try {
    await attempt(crash.hook);
  } catch (e) {
    err = e;
  }
  expect(crash.fired(), `the crash at ${step} fired`).to.equal(true);
  expect(err).to.be.instanceOf(SimulatedCrash);
  return attempt(undefined);
}

describe('provider writes happen once across crashes at each step', function () {
  this.timeout(60_000);
  let env: OutboundEnv;
  const logger = createLogger('silent');
  const callbackUrl = () => `${env.api.baseUrl}/sms/provider-callbacks/sandbox`;
  // Verdicts and receipts far in the future: nothing calls back during the test.
  const sms = (faults?: FaultHook, lookupsUnavailable = false) =>
    createSmsActivities(
      { db: env.db, config: env.config, logger },
      { faults, carrierOptions: { delayMs: 3_600_000, callbackUrl: callbackUrl(), lookupsUnavailable }, telephonyOptions: { delayMs: 3_600_000, callbackUrl: callbackUrl(), lookupsUnavailable } },
    );

  before(async function () {
    this.timeout(120_000);
    env = await startOutboundEnv('effects');
  });
  after(async () => {
    stopSandboxDispatchers();
    await env?.close();
  });

  describe('outbound dials', () => {
    let key: string;
    let orgId: string;
    let agentId: string;
    let numberId: string;

    before(async () => {
      ({ key, orgId } = await env.org('Effects dialer'));
      agentId = await env.publishedAgent(orgId);
      numberId = await env.ownNumber(key);
    });

    /** A running campaign (no workflow: the test is the dialer) whose one contact is claimed; returns the attempt. */
    const claimedAttempt = async (to: string) => {
      const offset = 12 - new Date().getUTCHours();
      const noonZone = offset === 0 ? 'Etc/GMT' : `Etc/GMT${offset > 0 ? '-' : '+'}${Math.abs(offset)}`;
      const list = await env.importList(key, `phone,time_zone\n${to},${noonZone}`);
      const c = (await env.call(key, 'POST', '/campaigns', { name: 'Once', agentId, callerIdNumberId: numberId, contactListId: list.id, purpose: 'informational' })).body.data;
      await env.db.transaction(async (trx) => {
        const row = await lockCampaign(trx, orgId, c.id);
        await insertAttempts(trx, orgId, c.id, row.list_id);
        await setCampaignStatus(trx, orgId, c.id, 'running');
      });
      const acts = createOutboundActivities({ db: env.db, config: env.config, logger });
      const claim = await acts.outboundClaimAttempts({ orgId, campaignId: c.id, token: `t-${crypto.randomBytes(4).toString('hex')}`, now: new Date().toISOString(), limit: 10 });
      expect(claim.claimed).to.have.length(1);
      return { campaignId: c.id as string, attemptId: claim.claimed[0].id };
    };
    const dialsTo = async (to: string) => (await sandboxDials(env.db, orgId)).filter((d) => d.to === to);

    STEPS.forEach((step, i) => {
      it(`calls the contact once when the worker dies ${step.replace('_', ' ')} of the dial`, async () => {
        const to = phone('415', 700 + i);
        const { campaignId, attemptId } = await claimedAttempt(to);
        const out = await crashThenRetry(step, (faults) =>
          createOutboundActivities({ db: env.db, config: env.config, logger }, { faults }).outboundDial({ orgId, attemptId, now: new Date().toISOString() }),
        );
        expect(out.status).to.equal(step === 'after_record' ? 'skipped' : 'answered');
        expect(await dialsTo(to)).to.have.length(1);
        const attempt = (await env.call(key, 'GET', `/campaigns/${campaignId}/attempts`)).body.data.items[0];
        expect(attempt).to.include({ status: 'answered', dials: 1, lastOutcome: 'answered' });
        expect((await getIntent(env.db, orgId, 'dial', `${attemptId}:1`))?.status).to.equal('done');
        expect(await env.db('events').where({ org_id: orgId, type: 'call.completed' }).whereRaw(`data->>'to' = ?`, [to])).to.have.length(1);
      });
    });

    it('without the sandbox deduplicating, a retry that skipped the intent would have called twice (the count can fail)', async () => {
      const to = phone('415', 710);
      const { attemptId } = await claimedAttempt(to);
      const telephony = createTelephony({ db: env.db, config: env.config });
      await telephony.dial(orgId, { from: '+14155550100', to, idempotencyKey: `${attemptId}:1`, agentId });
      await telephony.dial(orgId, { from: '+14155550100', to, idempotencyKey: `${attemptId}:1`, agentId });
      expect(await dialsTo(to)).to.have.length(2);
    });

    it('marks the attempt failed with lastOutcome unknown and emits provider.intent.unknown when the provider cannot tell, without calling again', async () => {
      const to = phone('415', 720);
      const { campaignId, attemptId } = await claimedAttempt(to);
      const crash = crashOnceAt('after_accept');
      await createOutboundActivities({ db: env.db, config: env.config, logger }, { faults: crash.hook })
        .outboundDial({ orgId, attemptId, now: new Date().toISOString() })
        .catch(() => undefined);
      const blind = createOutboundActivities({ db: env.db, config: env.config, logger }, { telephonyOptions: { lookupsUnavailable: true } });
      expect(await blind.outboundDial({ orgId, attemptId, now: new Date().toISOString() })).to.deep.equal({ status: 'failed', outcome: 'unknown' });
      expect(await dialsTo(to)).to.have.length(1);
      const attempt = (await env.call(key, 'GET', `/campaigns/${campaignId}/attempts`)).body.data.items[0];
      expect(attempt).to.include({ status: 'failed', lastOutcome: 'unknown' });
      const ev = await env.db('events').where({ org_id: orgId, type: 'provider.intent.unknown' }).whereRaw(`data->>'subjectId' = ?`, [attemptId]);
      expect(ev).to.have.length(1);
      expect(ev[0].data).to.include({ kind: 'dial', reference: `${attemptId}:1`, provider: 'sandbox' });
      expect((await listIntents(env.db, orgId, { status: 'unknown' })).map((x) => x.subjectId)).to.deep.equal([attemptId]);
    });
  });

  describe('10DLC brand and campaign creates', () => {
    /** An organization with a submitted registration (no workflow: the test runs its activities). */
    const submitted = async () => {
      const org = await env.org('Effects brand');
      expect((await env.call(org.key, 'PUT', '/sms', COMPLETE_BRAND)).status).to.equal(200);
      const submissionId = `smssub_${crypto.randomBytes(6).toString('hex')}`;
      await env.db.transaction((trx) => markSubmitted(trx, org.orgId, { submissionId }));
      return { ...org, submissionId };
    };
    const objects = async (orgId: string, kind: 'brand' | 'campaign') => env.db('sandbox_carrier_objects').where({ org_id: orgId, kind });

    STEPS.forEach((step) => {
      it(`creates (and bills) one brand and one campaign when the worker dies ${step.replace('_', ' ')} of each create`, async () => {
        const { orgId, key, submissionId } = await submitted();
        const brand = await crashThenRetry(step, (faults) => sms(faults).smsSubmitBrand(orgId, submissionId));
        expect(brand).to.not.equal(null);
        const campaign = await crashThenRetry(step, (faults) => sms(faults).smsSubmitCampaign(orgId, submissionId, brand!.id));
        expect(campaign).to.not.equal(null);
        expect(await objects(orgId, 'brand')).to.have.length(1);
        expect(await objects(orgId, 'campaign')).to.have.length(1);
        expect(await countProviderRequests(env.db, orgId, 'createBrand')).to.equal(1);
        expect(await countProviderRequests(env.db, orgId, 'createCampaign')).to.equal(1);
        const reg = (await env.call(key, 'GET', '/sms')).body.data;
        expect(reg).to.include({ brandId: brand!.id, campaignId: campaign!.id, providerStatus: 'CAMPAIGN_PENDING' });
        expect((await listIntents(env.db, orgId)).map((x) => `${x.kind}:${x.status}`)).to.deep.equal(['brand_create:done', 'campaign_create:done']);
      });
    });

    it('fails the registration with BRAND_UNKNOWN and emits provider.intent.unknown when the carrier cannot list by reference', async () => {
      const { orgId, key, submissionId } = await submitted();
      await sms(crashOnceAt('after_accept').hook).smsSubmitBrand(orgId, submissionId).catch(() => undefined);
      expect(await sms(undefined, true).smsSubmitBrand(orgId, submissionId)).to.equal(null);
      expect(await objects(orgId, 'brand')).to.have.length(1);
      const reg = (await env.call(key, 'GET', '/sms')).body.data;
      expect(reg).to.include({ status: 'failed', providerStatus: 'BRAND_UNKNOWN' });
      expect(reg.lastError).to.match(/could not tell whether the brand was created \(intent pin_/);
      expect(await env.db('events').where({ org_id: orgId, type: 'provider.intent.unknown' })).to.have.length(1);
    });
  });

  describe('texts', () => {
    let orgId: string;
    let key: string;
    let ours: string;

    before(async () => {
      ({ orgId, key } = await env.org('Effects texts'));
      await env.call(key, 'PUT', '/sms', COMPLETE_BRAND);
      ours = sandboxInventory('628')[2].e164;
      const bought = await env.call(key, 'POST', '/numbers/purchase', { e164: ours });
      expect(bought.status).to.equal(200);
      expect((await env.call(key, 'PUT', `/numbers/${bought.body.data.id}/sms`, { enabled: true })).status).to.equal(200);
      await env.db('sms_registrations').where({ org_id: orgId }).update({ status: 'active' });
    });
    const queued = async () => {
      const id = `msg_eff${crypto.randomBytes(5).toString('hex')}`;
      await insertMessage(env.db, orgId, { id, direction: 'outbound', trigger: 'agent', from: ours, to: '+14155550188', body: 'Your table is ready', status: 'queued' });
      return id;
    };

    STEPS.forEach((step) => {
      it(`sends the text once when the worker dies ${step.replace('_', ' ')} of the send`, async () => {
        const id = await queued();
        expect(await crashThenRetry(step, (faults) => sms(faults).smsDeliverMessage(orgId, id))).to.deep.equal({ status: 'sent', error: null });
        expect(await countProviderRequests(env.db, orgId, 'sendMessage', id)).to.equal(1);
        const row = await env.db('sms_messages').where({ org_id: orgId, id }).first();
        expect(row.status).to.equal('sent');
        expect(row.provider_message_id).to.match(/^SM/);
      });
    });

    it('fails the message with provider_outcome_unknown when the provider cannot tell, without sending again', async () => {
      const id = await queued();
      await sms(crashOnceAt('after_accept').hook).smsDeliverMessage(orgId, id).catch(() => undefined);
      expect(await sms(undefined, true).smsDeliverMessage(orgId, id)).to.deep.equal({ status: 'failed', error: 'provider_outcome_unknown' });
      expect(await countProviderRequests(env.db, orgId, 'sendMessage', id)).to.equal(1);
      expect((await getIntent(env.db, orgId, 'sms_send', id))?.status).to.equal('unknown');
    });
  });

  describe('number purchases', () => {
    let orgId: string;
    let key: string;
    const deps = () => ({ db: env.db, config: env.config, logger }) as unknown as AppDeps;

    before(async () => {
      ({ orgId, key } = await env.org('Effects numbers'));
    });

    STEPS.forEach((step, i) => {
      it(`buys (and bills) the number once when the API dies ${step.replace('_', ' ')} of the purchase and the client retries`, async () => {
        const e164 = sandboxInventory('917')[i].e164;
        const reserved = (await env.call(key, 'POST', '/numbers/reserve', { e164 })).body.data;
        let err: unknown;
        const crash = crashOnceAt(step);
        try {
          await purchaseNumberOnce(deps(), orgId, reserved.id, { faults: crash.hook });
        } catch (e) {
          err = e;
        }
        expect(err).to.be.instanceOf(SimulatedCrash);
        const again = await env.call(key, 'POST', '/numbers/purchase', { e164 });
        expect(again.status).to.equal(200);
        expect(again.body.data).to.include({ id: reserved.id, status: 'purchased' });
        expect(await countProviderRequests(env.db, orgId, 'purchaseNumber', reserved.id)).to.equal(1);
        const usage = await env.db('usage_entries').where({ org_id: orgId, kind: 'phone_number_purchase' }).whereRaw(`details->>'numberId' = ?`, [reserved.id]);
        expect(usage).to.have.length(1);
      });
    });

    it('answers 409 provider_outcome_unknown when the provider cannot tell whether the order went through', async () => {
      const e164 = sandboxInventory('917')[5].e164;
      const reserved = (await env.call(key, 'POST', '/numbers/reserve', { e164 })).body.data;
      await purchaseNumberOnce(deps(), orgId, reserved.id, { faults: crashOnceAt('after_accept').hook }).catch(() => undefined);
      const blind = createTelephony({ db: env.db, config: env.config }, { lookupsUnavailable: true });
      let err: any;
      try {
        await purchaseNumberOnce(deps(), orgId, reserved.id, { telephony: blind });
      } catch (e) {
        err = e;
      }
      expect(err?.status).to.equal(409);
      expect(err?.code).to.equal('provider_outcome_unknown');
      const r = await env.call(key, 'POST', '/numbers/purchase', { id: reserved.id });
      expect(r.status).to.equal(409);
      expect(r.body.code).to.equal('provider_outcome_unknown');
      expect(await countProviderRequests(env.db, orgId, 'purchaseNumber', reserved.id)).to.equal(1);
    });
  });
});
