/**
 * Wallet auto-recharge (docs/api-notes.md "Billing": auto-recharge; docs/going-live.md "Stripe"): the settings
 * (`PUT /billing/wallet/auto-recharge`, shown by `GET /billing/wallet`), and a usage charge that crosses the
 * threshold owing one `wallet-recharge/{orgId}` in the workflow_starts outbox, started by the start sweep and run
 * by the service's own activities on the worker: on the sandbox payments provider (the default) and on the
 * loopback Stripe (an off-session PaymentIntent with an idempotency key of the attempt, credited once whatever the
 * order of webhook and answer, a duplicate webhook credits nothing more, a decline turns it off with
 * `billing.auto_recharge.failed` and never charges again). Also a recharge that crashed after Stripe answered is
 * reconciled from its intent: one PaymentIntent, one credit.
 */
import crypto from 'node:crypto';
import { expect } from 'chai';
import { startTestApi, type TestApi } from '../helpers/api';
import { createActivities } from '../../activities';
import { createLogger } from '../../runtime';
import { testTemporal, withTimeSkipping } from '../helpers/temporal';
import { startWorkflowStartSweep } from '../../services/workflowStarts';
import { recordUsage } from '../../services/billing/usage';
import { reportAutoRechargeUnavailable, runAutoRecharge } from '../../services/billing/autoRecharge';
import { WorkflowFailedError } from '@temporalio/client';
import { SimulatedCrash } from '../../services/effects';
import { ledgerSum, listLedger } from '../../db/repositories/billing';
import { listIntents } from '../../db/repositories/providerIntents';
import { useStripeStub } from '../providers/stripeStub';
import { publishDraft } from './agents-fixtures';
import { workflowIds } from '../../temporal.config';


describe('wallet auto-recharge', function () {
  this.timeout(90_000);
  let t: TestApi;
  const saved = { ...process.env };

  before(async () => {
    t = await startTestApi('auto_recharge', {}, { worker: ({ db, config, logger }) => createActivities({ db, config, logger }) });
  });
  after(async () => {
    await t?.close();
    for (const k of Object.keys(process.env)) if (!(k in saved)) delete process.env[k];
    Object.assign(process.env, saved);
  });

  const topUp = (key: string, amountCents: number) => t.call('POST', '/billing/wallet/topup', { key, json: { amountCents }, headers: { 'idempotency-key': crypto.randomUUID() } });
  const setAuto = (key: string, json: unknown) => t.call('PUT', '/billing/wallet/auto-recharge', { key, json });
  let usage = 0;
  /** A usage charge of `amountCents`, as the services record them. */
  const charge = (orgId: string, amountCents: number) => recordUsage(t.db, orgId, { kind: 'conversation_message', amountCents, dedupeKey: `test-${usage++}` });
  /** Starts what the outbox owes now and waits for the organization's recharge run. */
  const recharge = async (orgId: string) => {
    const { client } = await testTemporal();
    const sweep = startWorkflowStartSweep({ db: t.db, logger: createLogger('silent'), temporal: { client, taskQueue: t.taskQueue! }, intervalMs: 0, minAgeMs: 0 });
    try {
      await sweep.sweep();
    } finally {
      await sweep.stop();
    }
    return (await client.workflow.getHandle(`wallet-recharge/${orgId}`).result()) as { status: string };
  };
  const owed = async (orgId: string) => t.db('workflow_starts').where({ org_id: orgId, workflow_type: 'walletAutoRecharge' });

  describe('settings', () => {
    it('answers 400 naming each field wrong; saves and shows the settings in GET /billing/wallet', async () => {
      const { key } = await t.org();
      const bad = await setAuto(key, { enabled: true, thresholdCents: -1, amountCents: 100 });
      expect(bad.status).to.equal(400);
      expect(bad.body.code).to.equal('validation_error');
      expect(bad.body.errors.map((e: { field: string }) => e.field)).to.deep.equal(['thresholdCents', 'amountCents']);
      const missing = await setAuto(key, { enabled: true });
      expect(missing.status).to.equal(400);
      expect(missing.body.errors.map((e: { field: string }) => e.field)).to.deep.equal(['thresholdCents', 'amountCents']);
      expect((await setAuto(key, { enabled: 'yes' })).body.errors.map((e: { field: string }) => e.field)).to.deep.equal(['enabled']);
      expect((await t.call('GET', '/billing/wallet', { key })).body.data.autoRecharge).to.deep.equal({ enabled: false, thresholdCents: null, amountCents: null, disabledReason: null });
      const ok = await setAuto(key, { enabled: true, thresholdCents: 500, amountCents: 2000 });
      expect(ok.status, ok.text).to.equal(200);
      expect(ok.body.data.autoRecharge).to.deep.equal({ enabled: true, thresholdCents: 500, amountCents: 2000, disabledReason: null });
      expect((await t.call('GET', '/billing/wallet', { key })).body.data.autoRecharge).to.include({ enabled: true, thresholdCents: 500 });
      const readOnly = await t.org('Reader', ['billing:read']);
      expect((await setAuto(readOnly.key, { enabled: false })).status).to.equal(403);
    });
  });

  describe('on the sandbox payments provider (the default)', () => {
    it('a charge crossing the threshold recharges once; charges below it owe nothing more', async () => {
      const { orgId, key } = await t.org();
      expect((await topUp(key, 1000)).status).to.equal(201);
      await setAuto(key, { enabled: true, thresholdCents: 500, amountCents: 2000 });
      await charge(orgId, 300); // 700: above
      expect(await owed(orgId)).to.have.length(0);
      await charge(orgId, 400); // 300: crossed
      expect(await owed(orgId)).to.have.length(1);
      expect(await recharge(orgId)).to.deep.equal({ status: 'credited' });
      const credits = (await listLedger(t.db, orgId)).filter((e) => e.kind === 'topup' && e.description === 'Auto-recharge');
      expect(credits.map((e) => e.amountCents)).to.deep.equal([2000]);
      expect(await ledgerSum(t.db, orgId)).to.equal(2300);
      expect((await listIntents(t.db, orgId, { kind: 'recharge' })).map((i) => i.status)).to.deep.equal(['done']);
      await charge(orgId, 100); // 2200: above the threshold, nothing owed
      expect(await owed(orgId)).to.have.length(0);
    });

    it("a chat turn's charge crossing the threshold (charged in the turn's own statement) owes the same recharge", async () => {
      const org = await t.org();
      expect((await topUp(org.key, 1000)).status).to.equal(201);
      await setAuto(org.key, { enabled: true, thresholdCents: 1000, amountCents: 1500 }); // any charge crosses
      const agent = (await t.call('POST', '/agents', { key: org.key, json: { name: 'Desk', voiceId: 'voice_ava' } })).body.data;
      expect((await publishDraft(t.db, org, agent.id, 'v1')).kind).to.equal('published');
      const s = await t.call('POST', '/chat/sessions', { key: org.key, json: { agentId: agent.id } });
      expect((await t.call('POST', `/chat/sessions/${s.body.data.session.id}/messages`, { key: org.key, json: { content: 'Hello' } })).status).to.equal(200);
      const rows = await owed(org.orgId);
      expect(rows.map((r) => r.workflow_id)).to.deep.equal([workflowIds.walletAutoRecharge(org.orgId)]);
      const spent = 1000 - (await ledgerSum(t.db, org.orgId));
      expect(spent).to.be.greaterThan(0);
      expect(await recharge(org.orgId)).to.deep.equal({ status: 'credited' });
      expect(await ledgerSum(t.db, org.orgId)).to.equal(1000 - spent + 1500);
    });

    it('a declined card turns auto-recharge off with billing.auto_recharge.failed; the next crossing charges nothing', async () => {
      const { orgId, key } = await t.org();
      expect((await topUp(key, 1000)).status).to.equal(201);
      await setAuto(key, { enabled: true, thresholdCents: 800, amountCents: 2002 }); // sandbox: an amount ending in 02 is declined
      await charge(orgId, 300);
      expect(await recharge(orgId)).to.deep.equal({ status: 'declined' });
      expect(await ledgerSum(t.db, orgId)).to.equal(700);
      const wallet = (await t.call('GET', '/billing/wallet', { key })).body.data;
      expect(wallet.autoRecharge).to.include({ enabled: false });
      expect(wallet.autoRecharge.disabledReason).to.match(/^card_declined: /);
      const events = await t.db('events').where({ org_id: orgId, type: 'billing.auto_recharge.failed' });
      expect(events).to.have.length(1);
      expect(events[0].data).to.include({ amountCents: 2002, code: 'card_declined', autoRechargeEnabled: false, balanceCents: 700, currency: 'USD' });
      // Back above the threshold with a top-up, then below again: off, so nothing is owed.
      expect((await topUp(key, 500)).status).to.equal(201);
      await charge(orgId, 600);
      expect(await owed(orgId)).to.have.length(0);
    });
  });

  it('a provider unavailable through every retry fails the run with billing.auto_recharge.failed (provider_unavailable), once, auto-recharge still on', async () => {
    const { orgId, key } = await t.org();
    expect((await topUp(key, 1000)).status).to.equal(201);
    await setAuto(key, { enabled: true, thresholdCents: 800, amountCents: 2009 }); // sandbox: an amount ending in 09 finds the provider unavailable
    await charge(orgId, 300);
    // Six attempts over about a minute of retry backoff, skipped.
    const failed = await withTimeSkipping(() => recharge(orgId).then(() => null, (err: unknown) => err));
    expect(failed).to.be.instanceOf(WorkflowFailedError);
    const events = await t.db('events').where({ org_id: orgId, type: 'billing.auto_recharge.failed' });
    expect(events.map((e) => e.data)).to.deep.equal([
      { attemptId: events[0].data.attemptId, amountCents: 2009, currency: 'USD', code: 'provider_unavailable', reason: 'The payment provider is unavailable (sandbox: amount ending in 09)', autoRechargeEnabled: true, balanceCents: 700 },
    ]);
    expect(events[0].data.attemptId).to.match(/^rch_/);
    // The step that reports it runs again after a crash without a second event.
    expect(await reportAutoRechargeUnavailable(t.db, { orgId, attemptId: events[0].data.attemptId, reason: 'again' })).to.equal(false);
    expect(await t.db('events').where({ org_id: orgId, type: 'billing.auto_recharge.failed' })).to.have.length(1);
    expect((await t.call('GET', '/billing/wallet', { key })).body.data.autoRecharge).to.include({ enabled: true });
    expect(await ledgerSum(t.db, orgId)).to.equal(700);
  });

  describe('on Stripe (loopback stub)', () => {
    const stub = useStripeStub(() => `${t.api.baseUrl}/billing/provider-webhooks/stripe`);

    it('charges the saved card off-session once and credits it once, the webhook delivered twice', async () => {
      const { orgId, key } = await t.org();
      expect((await topUp(key, 1000)).status).to.equal(201);
      await setAuto(key, { enabled: true, thresholdCents: 500, amountCents: 1500 });
      const before = stub.intents.size;
      await charge(orgId, 600);
      expect(await recharge(orgId)).to.deep.equal({ status: 'credited' });
      expect(stub.intents.size).to.equal(before + 1);
      const [attempt] = await listIntents(t.db, orgId, { kind: 'recharge' });
      const paymentId = attempt.result!.paymentId as string;
      const created = stub.requests.filter((r) => r.method === 'POST' && r.path === '/v1/payment_intents').pop()!;
      // The adapter scopes the key by organization (providers/payments/stripe.ts).
      expect(created.headers['idempotency-key']).to.equal(`topup:${orgId}:auto-recharge:${attempt.reference}`);
      const form = new URLSearchParams(created.raw);
      expect(form.get('off_session')).to.equal('true');
      expect(form.get('amount')).to.equal('1500');
      await stub.flush();
      const event = stub.events.find((e) => e.type === 'payment_intent.succeeded' && e.data.object.id === paymentId);
      stub.send(event);
      await stub.settled();
      const credits = (await listLedger(t.db, orgId)).filter((e) => e.paymentId === paymentId);
      expect(credits.map((e) => e.amountCents)).to.deep.equal([1500]);
      expect(await ledgerSum(t.db, orgId)).to.equal(1900);
    });

    it('credits once when the webhook comes before the answer', async () => {
      const { orgId, key } = await t.org();
      expect((await topUp(key, 1000)).status).to.equal(201);
      await setAuto(key, { enabled: true, thresholdCents: 500, amountCents: 1200 });
      stub.webhookFirst = true;
      await charge(orgId, 600);
      expect(await recharge(orgId)).to.deep.equal({ status: 'credited' });
      expect(await ledgerSum(t.db, orgId)).to.equal(1600);
      expect((await listLedger(t.db, orgId)).filter((e) => e.description === 'Auto-recharge' || e.kind === 'topup')).to.have.length(2);
    });

    it('a declined card turns it off with billing.auto_recharge.failed, one PaymentIntent asked, nothing credited', async () => {
      const { orgId, key } = await t.org();
      expect((await topUp(key, 1000)).status).to.equal(201);
      await setAuto(key, { enabled: true, thresholdCents: 500, amountCents: 1500 });
      stub.outcome = 'card_declined';
      const asked = () => stub.requests.filter((r) => r.method === 'POST' && r.path === '/v1/payment_intents').length;
      const before = asked();
      await charge(orgId, 600);
      expect(await recharge(orgId)).to.deep.equal({ status: 'declined' });
      expect(asked()).to.equal(before + 1);
      expect(await ledgerSum(t.db, orgId)).to.equal(400);
      expect((await t.db('events').where({ org_id: orgId, type: 'billing.auto_recharge.failed' })).map((e) => e.data.code)).to.deep.equal(['card_declined']);
      expect((await t.call('GET', '/billing/wallet', { key })).body.data.autoRecharge.enabled).to.equal(false);
    });

    it('a recharge that died after Stripe answered is reconciled from its intent: one PaymentIntent, one credit', async () => {
      const { orgId, key } = await t.org();
      expect((await topUp(key, 1000)).status).to.equal(201);
      await setAuto(key, { enabled: true, thresholdCents: 500, amountCents: 1100 });
      const before = stub.intents.size;
      const input = { orgId, attemptId: `rch_test${crypto.randomBytes(4).toString('hex')}` };
      await charge(orgId, 600);
      await t.db('workflow_starts').where({ org_id: orgId }).delete(); // driven by hand here
      const crashed = await runAutoRecharge(t.db, input, {
        fault: async (step) => {
          if (step === 'after_accept') throw new SimulatedCrash(step, 'recharge');
        },
      }).catch((err) => err);
      expect(crashed).to.be.instanceOf(SimulatedCrash);
      const again = await runAutoRecharge(t.db, input);
      expect(again).to.include({ status: 'credited', performedNow: false, amountCents: 1100 });
      expect(stub.intents.size).to.equal(before + 1);
      await stub.flush();
      await stub.settled();
      expect(await ledgerSum(t.db, orgId)).to.equal(1500);
      expect((await listIntents(t.db, orgId, { kind: 'recharge' })).map((i) => [i.status, i.tries])).to.deep.equal([['done', 2]]);
    });
  });
});
