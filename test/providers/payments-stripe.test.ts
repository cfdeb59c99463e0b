/**
 * Wallet top-ups on Stripe (docs/going-live.md "Stripe") through the API, against the loopback Stripe
 * (test/providers/stripeStub.ts): a succeeded PaymentIntent is credited once whether its webhook or the API's
 * answer comes first and however often the webhook is delivered; a webhook whose signature does not verify is
 * 400 and credits nothing; refunds and disputes are recorded once each; declines, a missing card and a timeout
 * are clear outcomes that credit nothing. Every request and answer is checked against Stripe's OpenAPI document.
 */
import crypto from 'node:crypto';
import { expect } from 'chai';
import { until } from '../helpers/wait';
import { useTestApi } from '../helpers/api';
import { ledgerSum, listLedger } from '../../db/repositories/billing';
import { useStripeStub } from './stripeStub';

describe('Stripe payments (loopback Stripe)', function () {
  this.timeout(60_000);
  const stub = useStripeStub(() => `${t.api.baseUrl}/billing/provider-webhooks/stripe`);
  const t = useTestApi('payments_stripe');

  afterEach(() => {
    expect(stub.deliveries.filter((d) => d.status !== 200 && d.status !== 400)).to.deep.equal([]);
  });

  const topUp = (key: string, amountCents: number, idem = crypto.randomUUID()) => t.call('POST', '/billing/wallet/topup', { key, json: { amountCents }, headers: { 'idempotency-key': idem } });
  const topUpLedger = async (orgId: string) => (await listLedger(t.db, orgId)).filter((e) => e.kind === 'topup');

  it('credits a top-up once when the API answer comes first and the webhook after, even delivered twice', async () => {
    const { orgId, key } = await t.org();
    const res = await topUp(key, 2500);
    expect(res.status, res.text).to.equal(201);
    expect(res.body.data.payment).to.include({ status: 'succeeded' });
    expect(res.body.data.payment.id).to.match(/^pi_/);
    expect(res.body.data.entry).to.include({ kind: 'topup', amountCents: 2500, paymentId: res.body.data.payment.id });
    await stub.flush();
    const event = stub.events.find((e) => e.type === 'payment_intent.succeeded' && e.data.object.id === res.body.data.payment.id);
    stub.send(event); // Stripe re-delivers an event it got no 2xx for, or twice anyway
    await stub.settled();
    expect(stub.deliveries.slice(-2).map((d) => JSON.parse(d.body).data)).to.deep.equal([
      { received: true, duplicate: false, recorded: 0 },
      { received: true, duplicate: true, recorded: 0 },
    ]);
    expect((await topUpLedger(orgId)).map((e) => e.paymentId)).to.deep.equal([res.body.data.payment.id]);
    expect(await ledgerSum(t.db, orgId)).to.equal(2500);
    expect((await t.call('GET', '/billing/wallet', { key })).body.data.balanceCents).to.equal(2500);
  });

  it('credits a top-up once when the webhook comes before the API answer', async () => {
    const { orgId, key } = await t.org();
    stub.webhookFirst = true;
    const res = await topUp(key, 1200);
    expect(res.status, res.text).to.equal(201);
    const delivered = JSON.parse(stub.deliveries[stub.deliveries.length - 1].body).data;
    expect(delivered).to.deep.equal({ received: true, duplicate: false, recorded: 1 });
    const ledger = await topUpLedger(orgId);
    expect(ledger).to.have.length(1);
    expect(res.body.data.entry.id).to.equal(ledger[0].id); // the API answered the webhook's credit
    expect(await ledgerSum(t.db, orgId)).to.equal(1200);
  });

  it('answers a replayed Idempotency-Key with the same payment and makes one PaymentIntent', async () => {
    const { orgId, key } = await t.org();
    const idem = crypto.randomUUID();
    const before = stub.intents.size;
    const a = await topUp(key, 700, idem);
    const b = await topUp(key, 700, idem);
    expect(b.body.data.payment.id).to.equal(a.body.data.payment.id);
    expect(stub.intents.size).to.equal(before + 1);
    expect(await ledgerSum(t.db, orgId)).to.equal(700);
    const creates = stub.requests.filter((r) => r.method === 'POST' && r.path === '/v1/payment_intents');
    expect(creates[creates.length - 1].headers['idempotency-key']).to.equal(`topup:${orgId}:${idem}`);
    await stub.flush();
  });

  it('answers 202 for a payment still processing and credits it when the webhook says it succeeded', async () => {
    const { orgId, key } = await t.org();
    stub.outcome = 'processing';
    const res = await topUp(key, 900);
    expect(res.status, res.text).to.equal(202);
    expect(res.body.data.entry).to.equal(null);
    expect(await ledgerSum(t.db, orgId)).to.equal(0);
    const pi = stub.intents.get(res.body.data.payment.id);
    Object.assign(pi, { status: 'succeeded', amount_received: pi.amount });
    stub.send(stub.event('payment_intent.succeeded', pi, 'payment_intent'));
    await stub.settled();
    expect(await ledgerSum(t.db, orgId)).to.equal(900);
  });

  it('refuses a webhook whose signature does not verify with 400 and credits nothing', async () => {
    const { orgId, key } = await t.org();
    stub.outcome = 'processing';
    const res = await topUp(key, 800);
    const pi = { ...stub.intents.get(res.body.data.payment.id), status: 'succeeded', amount_received: 800 };
    const payload = JSON.stringify(stub.event('payment_intent.succeeded', pi, 'payment_intent'));
    const post = (headers: Record<string, string>, body = payload) => t.call('POST', '/billing/provider-webhooks/stripe', { raw: body, headers: { 'content-type': 'application/json', ...headers } });
    const forged = await post({ 'stripe-signature': stub.signature(payload, 'whsec_not_the_secret') });
    expect(forged.status).to.equal(400);
    expect(forged.body).to.include({ code: 'invalid_signature', status: 400 });
    const tampered = await post({ 'stripe-signature': stub.signature(payload) }, payload.replace('"amount":800', '"amount":80000'));
    expect(tampered.status).to.equal(400);
    const unsigned = await post({});
    expect(unsigned.status).to.equal(400);
    expect(await ledgerSum(t.db, orgId)).to.equal(0);
    expect(await t.db('provider_webhook_events').where({ provider: 'stripe', event_id: JSON.parse(payload).id }).first()).to.equal(undefined);
    const signed = await post({ 'stripe-signature': stub.signature(payload) });
    expect(signed.status).to.equal(200);
    expect(await ledgerSum(t.db, orgId)).to.equal(800);
  });

  it('records a refund and a dispute once each, and a won dispute as a credit', async () => {
    const { orgId, key } = await t.org();
    const res = await topUp(key, 5000);
    await stub.flush();
    const piId = res.body.data.payment.id;
    const refund = stub.refund(piId, 1500);
    await stub.settled();
    const { dispute, close } = stub.dispute(piId);
    await stub.settled();
    close('won');
    await stub.settled();
    stub.send(stub.events.find((e) => e.type === 'charge.dispute.created')); // a re-delivery
    await stub.settled();
    const ledger = (await listLedger(t.db, orgId)).map((e) => ({ kind: e.kind, amountCents: e.amountCents, paymentId: e.paymentId }));
    expect(ledger).to.deep.equal([
      { kind: 'topup', amountCents: 5000, paymentId: piId },
      { kind: 'topup_refund', amountCents: -1500, paymentId: refund.id },
      { kind: 'dispute', amountCents: -5000, paymentId: dispute.id },
      { kind: 'dispute_won', amountCents: 5000, paymentId: `${dispute.id}:won` },
    ]);
    expect(await ledgerSum(t.db, orgId)).to.equal(3500);
    const view = await t.call('GET', '/billing/wallet', { key });
    expect(view.body.data.balanceCents).to.equal(3500);
  });

  it('answers a decline, a missing card and a timeout with a clear problem and credits nothing', async () => {
    const { orgId, key } = await t.org();
    stub.outcome = 'insufficient_funds';
    const declined = await topUp(key, 1000);
    expect(declined.status).to.equal(402);
    expect(declined.body).to.include({ code: 'payment_declined', declineCode: 'insufficient_funds' });
    stub.outcome = 'requires_action';
    expect((await topUp(key, 1000)).body.declineCode).to.equal('authentication_required');
    stub.failNext(/^POST \/v1\/payment_intents$/, { status: 500, body: { error: { type: 'api_error', message: 'An unknown error occurred' } } });
    expect((await topUp(key, 1000)).status).to.equal(502);
    expect(await ledgerSum(t.db, orgId)).to.equal(0);
    const other = await t.org();
    stub.cardOnFile = false;
    const noCard = await topUp(other.key, 1000);
    expect(noCard.status).to.equal(402);
    expect(noCard.body.declineCode).to.equal('payment_method_required');
    expect(await ledgerSum(t.db, other.orgId)).to.equal(0);
  });

  it('answers 502 when Stripe does not answer in time, and credits the payment once its webhook reports it succeeded', async () => {
    const { orgId, key } = await t.org();
    const before = stub.intents.size;
    stub.slowNext(/^POST \/v1\/payment_intents$/, 1500); // STRIPE_TIMEOUT_MS is 1000
    const slow = await topUp(key, 1000);
    expect(slow.status).to.equal(502);
    expect(slow.body.code).to.equal('payment_unavailable');
    expect(await ledgerSum(t.db, orgId)).to.equal(0);
    await until(async () => stub.intents.size === before + 1 || null, 5_000, 'the slow PaymentIntent');
    await stub.flush();
    expect(await ledgerSum(t.db, orgId)).to.equal(1000);
  });
});
