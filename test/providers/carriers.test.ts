/**
 * The real carrier adapters against their loopback stubs (docs/going-live.md): provider errors as clear
 * outcomes (a rejected brand's reason, 409 for a number taken meanwhile, 429 waited out with its
 * Retry-After without a second write, bad credentials refused at start-up in one line), the look-ups
 * performOnce uses to reconcile a write whose outcome is unknown, and the webhooks' verification:
 * forged, stale, unsigned and replayed webhooks change nothing.
 */
import crypto from 'node:crypto';
import { expect } from 'chai';
import { until } from '../helpers/wait';
import { publishDraft } from '../api/agents-fixtures';
import twilio from 'twilio';
import { useEnvVars, useResource } from '../helpers/mocha';
import { startTestApi, type TestApi } from '../helpers/api';
import { COMPLETE_BRAND } from '../api/sms-fixtures';
import { createSmsActivities } from '../../activities/sms';
import { TelnyxCarrier } from '../../providers/carrier/telnyx';
import { TelnyxTelephony } from '../../providers/telephony/telnyx';
import { TwilioTelephony } from '../../providers/telephony/twilio';
import { checkProviderCredentials } from '../../providers/credentials';
import { campaignCallHandoff } from '../../services/voice/handoff';
import { SimulatedCrash } from '../../services/effects';
import { retryAfterMs } from '../../providers/telephony/live';
import { purchaseNumberOnce } from '../../api/routes/numbers';
import { reserveNumber } from '../../db/repositories/numbers';
import { insertMessage } from '../../db/repositories/smsMessages';
import { createLogger } from '../../runtime';
import { TelnyxStub, telnyxSignature, telnyxTestKeys } from './telnyxStub';
import { TwilioStub } from './twilioStub';

const TELNYX_KEY = `KEY${crypto.randomBytes(8).toString('hex')}`;
const TWILIO_SID = `AC${crypto.randomBytes(16).toString('hex')}`;
const TWILIO_TOKEN = crypto.randomBytes(16).toString('hex');

/** A message row of the organization with its id, for receipts to find. */
async function outboundMessage(t: TestApi, orgId: string, from: string, to: string, body: string): Promise<string> {
  const id = `msg_${crypto.randomBytes(8).toString('hex')}`;
  await insertMessage(t.db, orgId, { id, direction: 'outbound', trigger: 'reply', from, to, body, status: 'queued' }, async () => undefined);
  return id;
}

describe('Telnyx adapters and webhooks (loopback stub)', function () {
  this.timeout(90_000);
  const stub = useResource('Telnyx stub', () => new TelnyxStub(TELNYX_KEY).start(), (s) => s.stop());
  useEnvVars(() => ({
    CARRIER_PROVIDER: 'telnyx',
    TELEPHONY_PROVIDER: 'telnyx',
    TELNYX_API_KEY: TELNYX_KEY,
    TELNYX_BASE_URL: stub.apiBase,
    TELNYX_PUBLIC_KEY: stub.keys.publicKey,
    TELNYX_MESSAGING_PROFILE_ID: '40017a8e-0000-4000-8000-000000000001',
    TELNYX_CONNECTION_ID: '1494404757140276705',
  }));
  const t = useResource('API', () =>
    startTestApi('telnyx_adapters', {}, {
      worker: (deps) => {
        deps.config.publicBaseUrl = new URL(deps.baseUrl).origin;
        return createSmsActivities(deps, { carrier: new TelnyxCarrier(deps), telephony: new TelnyxTelephony(deps) });
      },
    }), (api) => api.close());
  const deps = () => ({ db: t.db, config: t.config, logger: createLogger('silent'), temporal: undefined } as never);

  it('keeps a rejected brand\'s reason from Telnyx in lastError and providerStatus', async () => {
    const { key } = await t.org();
    await t.call('PUT', '/sms', { key, json: { ...COMPLETE_BRAND, displayName: 'Reject Brand Dental' } });
    expect((await t.call('POST', '/sms/submit', { key })).status).to.equal(200);
    const end = Date.now() + 30_000;
    let reg: any;
    do {
      await new Promise((r) => setTimeout(r, 100));
      reg = (await t.call('GET', '/sms', { key })).body.data;
    } while (reg.status !== 'failed' && Date.now() < end);
    expect(reg).to.include({ status: 'failed', providerStatus: 'BRAND_UNVERIFIED' });
    expect(reg.lastError).to.contain('Tax ID does not match');
  });

  it('answers 409 number_unavailable when the number was taken at Telnyx meanwhile, buying nothing', async () => {
    const { key } = await t.org();
    const e164 = (await t.call('GET', '/numbers/search?areaCode=415', { key })).body.data.items[1].e164;
    const reserved = await t.call('POST', '/numbers/reserve', { key, json: { e164 } });
    expect(reserved.status, reserved.text).to.equal(200);
    const orders = stub.orders.length;
    stub.taken.add(e164);
    const res = await t.call('POST', '/numbers/purchase', { key, json: { id: reserved.body.data.id } });
    expect(res.status, res.text).to.equal(409);
    expect(res.body.code).to.equal('number_unavailable');
    expect(stub.orders.length).to.equal(orders);
    stub.taken.delete(e164);
  });

  it('orders a number once across a crash after Telnyx accepted it (look-up by customer_reference), and releases it', async () => {
    const { orgId } = await t.org();
    const e164 = '+13122230004';
    const n = await reserveNumber(t.db, orgId, e164);
    let crashed = false;
    const faults = (step: string) => {
      if (step === 'after_accept' && !crashed) {
        crashed = true;
        throw new SimulatedCrash('after_accept', 'number_purchase');
      }
    };
    await purchaseNumberOnce(deps(), orgId, n.id, { faults }).catch((err) => expect(err).to.be.instanceOf(SimulatedCrash));
    expect(await purchaseNumberOnce(deps(), orgId, n.id)).to.have.nested.property('number.status', 'purchased');
    const mine = stub.orders.filter((o) => o.customer_reference === n.id);
    expect(mine).to.have.length(1);
    const adapter = new TelnyxTelephony(deps());
    expect(await adapter.findNumberOrder(orgId, n.id)).to.deep.equal({ found: { providerNumberId: mine[0].phone_numbers[0].id } });
    expect(await adapter.findNumberOrder(orgId, 'num_unknown')).to.deep.equal({ absent: true });
    await adapter.releaseNumber(orgId, mine[0].phone_numbers[0].id);
    expect(stub.taken.has(e164)).to.equal(false);
  });

  it('finds a brand and a campaign by our reference, and assigns a number to the campaign', async () => {
    const { orgId, key } = await t.org();
    expect((await t.call('PUT', '/sms', { key, json: { ...COMPLETE_BRAND, displayName: 'Lookup Dental' } })).status).to.equal(200);
    const reg = await t.db('sms_registrations').where({ org_id: orgId }).first();
    const carrier = new TelnyxCarrier(deps());
    const brandRequest = { ...COMPLETE_BRAND, displayName: 'Lookup Dental', vertical: 'HEALTHCARE', stockSymbol: null, stockExchange: null, reference: reg.id };
    const brand = await carrier.createOrUpdateBrand(orgId, brandRequest);
    expect(await carrier.findBrand(orgId, reg.id)).to.have.nested.property('found.id', brand.id);
    expect(await carrier.findBrand(orgId, 'smsreg_other')).to.deep.equal({ absent: true });
    await t.db('sms_registrations').where({ org_id: orgId }).update({ brand_id: brand.id });
    const campaign = await carrier.createOrUpdateCampaign(orgId, { brandId: brand.id, useCase: 'ACCOUNT_NOTIFICATION', description: 'Appointment reminders', sample1: 's1', sample2: 's2', messageFlow: 'f', helpMessage: 'h', sendsLinks: false, optInMethod: null, reference: reg.id });
    expect(await carrier.findCampaign(orgId, reg.id)).to.have.nested.property('found.id', campaign.id);
    expect(await carrier.findCampaign(orgId, 'smsreg_other')).to.deep.equal({ absent: true });
    await carrier.assignNumber(orgId, '+13122230001', campaign.id);
    expect(stub.assignments).to.deep.include({ phoneNumber: '+13122230001', campaignId: campaign.id });
  });

  it('waits out a 429 for its Retry-After and sends the text once', async () => {
    const { orgId } = await t.org();
    const adapter = new TelnyxTelephony(deps());
    const before = stub.requests.filter((r) => r.method === 'POST' && r.path === '/v2/messages').length;
    stub.failNext(/^POST \/v2\/messages$/, { status: 429, headers: { 'retry-after': '1' }, body: { errors: [{ code: '10011', title: 'Too many requests', detail: 'Rate limit exceeded' }] } });
    const started = Date.now();
    const ref = await outboundMessage(t, orgId, '+13122230001', '+12125550100', 'Hello');
    const sent = await adapter.sendMessage(orgId, { from: '+13122230001', to: '+12125550100', body: 'Hello', reference: ref });
    expect(Date.now() - started).to.be.at.least(950);
    expect(stub.requests.filter((r) => r.method === 'POST' && r.path === '/v2/messages').length - before).to.equal(2);
    expect(stub.messages.filter((m) => m.id === sent.providerMessageId)).to.have.length(1);
    expect(retryAfterMs('Wed, 21 Oct 2015 07:28:00 GMT', Date.parse('Wed, 21 Oct 2015 07:27:58 GMT'))).to.equal(2000);
    // Telnyx lists no messages: until a receipt arrives it cannot tell, then the receipt answers.
    await stub.settled();
    expect(await adapter.findMessage(orgId, ref)).to.deep.equal({ found: { providerMessageId: sent.providerMessageId, status: 'SENT' } });
    expect(await adapter.findMessage(orgId, 'msg_never_sent')).to.have.property('cannotTell');
  });

  it("hands an answered campaign call to the campaign's agent with conversation_relay_start (the agent greets first); an agent no longer published hangs it up", async () => {
    const { key, orgId } = await t.org();
    const agent = await t.call('POST', '/agents', { key, json: { name: 'Telnyx campaign agent', voiceId: 'voice_ava', greeting: 'Hi, Acme calling about your visit.' } });
    const agentId = agent.body.data.id as string;
    await publishDraft(t.db, { orgId, keyId: 'key_test' }, agentId, 'v1');
    const origin = new URL(t.api.baseUrl).origin;
    const adapter = new TelnyxTelephony({ db: t.db, config: { ...t.config, publicBaseUrl: origin }, handoff: campaignCallHandoff(t.db, `${origin}/api/v1`) });
    stub.relayCalls = true;
    try {
      const dialed = await adapter.dial(orgId, { from: '+13122230001', to: '+13125550004', idempotencyKey: 'att_relay:1', agentId, campaignId: 'cmp_telnyxtest' });
      expect(dialed).to.include({ outcome: 'answered', durationSeconds: 42 });
      const relay = stub.relays.find((r) => r.callControlId === dialed.providerCallId)!;
      expect(relay.command).to.include({ command_id: 'relay:att_relay:1', language: 'en-US' });
      expect(relay.error).to.equal(undefined);
      expect(relay.heard[0]).to.equal('Hi, Acme calling about your visit.');
      const call = await t.db('voice_calls').where({ org_id: orgId, provider: 'telnyx', provider_call_id: dialed.providerCallId }).first();
      expect(call).to.include({ campaign_id: 'cmp_telnyxtest', agent_id: agentId, direction: 'outbound' });
      expect(relay.command.custom_parameters).to.deep.equal({ callId: call.id });

      const unpublished = (await t.call('POST', '/agents', { key, json: { name: 'Never published', voiceId: 'voice_ava' } })).body.data.id as string;
      const hungUp = await adapter.dial(orgId, { from: '+13122230001', to: '+13125550005', idempotencyKey: 'att_relay:2', agentId: unpublished, campaignId: 'cmp_telnyxtest' });
      expect(stub.relays.filter((r) => r.callControlId === hungUp.providerCallId)).to.deep.equal([]);
      expect(stub.requests.filter((r) => decodeURIComponent(r.path) === `/v2/calls/${hungUp.providerCallId}/actions/hangup`)).to.have.length(1);
      expect(await t.db('voice_calls').where({ provider_call_id: hungUp.providerCallId }).first()).to.include({ status: 'failed', failure_reason: 'agent_not_published' });

      // A dial that did not get to connect (a crash: here, one not told its campaign) leaves the call in silence;
      // the retry's look-up finds it by client_state and connects it.
      const silent = adapter.dial(orgId, { from: '+13122230001', to: '+13125550006', idempotencyKey: 'att_relay:3', agentId });
      await until(async () => (await t.db('provider_calls').where({ org_id: orgId, reference: 'att_relay:3', status: 'answered' }).whereNotNull('answered_by').first()) ?? null, 10_000, 'the silent call answered');
      const found = await adapter.findCall(orgId, { reference: 'att_relay:3', from: '+13122230001', to: '+13125550006', sinceMs: Date.now() - 60_000, agentId, campaignId: 'cmp_telnyxtest' });
      expect(found).to.have.nested.property('found.outcome', 'answered');
      const retried = stub.relays.filter((r) => r.callControlId === (found as { found: { providerCallId: string } }).found.providerCallId);
      expect(retried.map((r) => [r.command.command_id, r.heard[0]])).to.deep.equal([['relay:att_relay:3', 'Hi, Acme calling about your visit.']]);
      expect((await silent).providerCallId).to.equal(retried[0].callControlId);

      // The callee hung up as the command went out: Telnyx refuses it, the dial still ends with the call's webhooks.
      stub.relayTooLate = true;
      const late = await adapter.dial(orgId, { from: '+13122230001', to: '+13125550007', idempotencyKey: 'att_relay:4', agentId, campaignId: 'cmp_telnyxtest' });
      expect(late).to.include({ outcome: 'answered', durationSeconds: 42 });
      const refusedLog = await t.db('provider_requests').where({ org_id: orgId, provider: 'telnyx', operation: 'startConversationRelay refused' });
      expect(refusedLog.map((r) => (typeof r.request === 'string' ? JSON.parse(r.request) : r.request))).to.deep.equal([
        { providerCallId: late.providerCallId, status: 422, error: "Telnyx 422: This call is no longer active and can't receive commands." },
      ]);
    } finally {
      stub.relayCalls = false;
      stub.relayTooLate = false;
    }
  });

  it('refuses forged, stale and unsigned webhooks with nothing stored, and changes nothing on a replay', async () => {
    const { orgId } = await t.org();
    const id = await outboundMessage(t, orgId, '+13122230001', '+12125550101', 'Hi');
    await t.db('sms_messages').where({ id }).update({ status: 'sent', provider_message_id: 'b0e3a9f2-0000-4000-8000-000000000001' });
    const event = { data: { event_type: 'message.finalized', id: crypto.randomUUID(), occurred_at: new Date().toISOString(), record_type: 'event', payload: { id: 'b0e3a9f2-0000-4000-8000-000000000001', to: [{ phone_number: '+12125550101', status: 'delivered' }] } } };
    const body = JSON.stringify(event);
    const post = (headers: Record<string, string>, raw = body) => t.call('POST', `/sms/provider-callbacks/telnyx?org=${orgId}&ref=${id}`, { raw, headers: { 'content-type': 'application/json', ...headers } });
    const forged = await post(telnyxSignature(telnyxTestKeys().privateKey, body));
    expect(forged.status).to.equal(401);
    expect(forged.body.code).to.equal('invalid_signature');
    const stale = await post(telnyxSignature(stub.keys.privateKey, body, Math.floor(Date.now() / 1000) - 301));
    expect(stale.status).to.equal(401);
    expect((await post({})).status).to.equal(401);
    const tampered = await post(telnyxSignature(stub.keys.privateKey, body), body.replace('delivered', 'delivery_failed'));
    expect(tampered.status).to.equal(401);
    expect(await t.db('provider_webhook_events').where({ event_id: event.data.id })).to.have.length(0);
    expect((await t.db('sms_messages').where({ id }).first()).status).to.equal('sent');
    const signed = telnyxSignature(stub.keys.privateKey, body);
    const ok = await post(signed);
    expect(ok.status, ok.text).to.equal(200);
    expect(ok.body.data).to.deep.equal({ received: true, duplicate: false });
    expect((await t.db('sms_messages').where({ id }).first()).status).to.equal('delivered');
    const replay = await post(signed);
    expect(replay.body.data).to.deep.equal({ received: true, duplicate: true });
    expect(await t.db('sms_provider_events').where({ org_id: orgId })).to.have.length(1);
  });

  it('refuses to start with one line when the Telnyx key is refused or a setting is missing', async () => {
    process.env.TELNYX_API_KEY = 'wrong-key';
    try {
      const err = await checkProviderCredentials().then(() => null, (e: Error) => e);
      expect(err?.message).to.match(/^TELNYX_API_KEY is refused by Telnyx \(401\)/);
      expect(err?.message).to.not.contain('\n');
    } finally {
      process.env.TELNYX_API_KEY = TELNYX_KEY;
    }
    await checkProviderCredentials();
    const saved = process.env.TELNYX_PUBLIC_KEY;
    delete process.env.TELNYX_PUBLIC_KEY;
    try {
      const err = await checkProviderCredentials().then(() => null, (e: Error) => e);
      expect(err?.message).to.equal('TELNYX_PUBLIC_KEY is not set (required for verifying Telnyx webhooks)');
    } finally {
      process.env.TELNYX_PUBLIC_KEY = saved;
    }
  });

  it('spoke the Telnyx wire format on every request', async () => {
    await stub.settled();
    expect(stub.problems).to.deep.equal([]);
  });
});

describe('Twilio adapter and webhooks (loopback stub)', function () {
  this.timeout(90_000);
  const stub = useResource('Twilio stub', () => new TwilioStub(TWILIO_SID, TWILIO_TOKEN).start(), (s) => s.stop());
  useEnvVars(() => ({ TELEPHONY_PROVIDER: 'twilio', CARRIER_PROVIDER: 'sandbox', TWILIO_ACCOUNT_SID: TWILIO_SID, TWILIO_AUTH_TOKEN: TWILIO_TOKEN, TWILIO_BASE_URL: stub.baseUrl }));
  const t = useResource('API', async () => {
    const api = await startTestApi('twilio_adapters');
    api.config.publicBaseUrl = new URL(api.api.baseUrl).origin;
    return api;
  }, (api) => api.close());
  const deps = () => ({ db: t.db, config: t.config, logger: createLogger('silent'), temporal: undefined } as never);

  it('answers 409 number_unavailable when Twilio says 21422, and buys once across a crash (look-up by FriendlyName)', async () => {
    const { key, orgId } = await t.org();
    const items = (await t.call('GET', '/numbers/search?areaCode=415', { key })).body.data.items;
    const reserved = await t.call('POST', '/numbers/reserve', { key, json: { e164: items[0].e164 } });
    stub.taken.add(items[0].e164);
    const refused = await t.call('POST', '/numbers/purchase', { key, json: { id: reserved.body.data.id } });
    expect(refused.status).to.equal(409);
    expect(refused.body.code).to.equal('number_unavailable');
    const n = await reserveNumber(t.db, orgId, items[1].e164);
    let crashed = false;
    const faults = (step: string) => {
      if (step === 'after_accept' && !crashed) {
        crashed = true;
        throw new SimulatedCrash('after_accept', 'number_purchase');
      }
    };
    await purchaseNumberOnce(deps(), orgId, n.id, { faults }).catch((err) => expect(err).to.be.instanceOf(SimulatedCrash));
    expect(await purchaseNumberOnce(deps(), orgId, n.id)).to.have.nested.property('number.status', 'purchased');
    expect(stub.numbers.filter((x) => x.friendly_name === n.id)).to.have.length(1);
    await new TwilioTelephony(deps()).releaseNumber(orgId, stub.numbers.find((x) => x.friendly_name === n.id).sid);
    expect(stub.numbers.filter((x) => x.friendly_name === n.id)).to.have.length(0);
  });

  it('waits out a 429 for its Retry-After, sends once, and finds the text and the call by listing', async () => {
    const { orgId } = await t.org();
    const adapter = new TwilioTelephony(deps());
    stub.failNext(/^POST .*\/Messages\.json$/, { status: 429, headers: { 'retry-after': '1' }, body: { code: 20429, message: 'Too Many Requests', status: 429 } });
    const started = Date.now();
    const ref = await outboundMessage(t, orgId, '+13122230001', '+12125550102', 'Hello there');
    const sent = await adapter.sendMessage(orgId, { from: '+13122230001', to: '+12125550102', body: 'Hello there', reference: ref });
    expect(Date.now() - started).to.be.at.least(950);
    expect(stub.requests.filter((r) => r.method === 'POST' && r.path.endsWith('/Messages.json'))).to.have.length(2);
    expect(stub.messages).to.have.length(1);
    await t.db('sms_provider_events').where({ provider: 'twilio' }).delete();
    expect(await adapter.findMessage(orgId, ref)).to.deep.equal({ found: { providerMessageId: sent.providerMessageId, status: 'SENT' } });
    const dialing = adapter.dial(orgId, { from: '+13122230001', to: '+13125550002', idempotencyKey: 'att_x:1', agentId: 'agt_x' });
    await stub.settled();
    expect(stub.deliveries.filter((d) => d.status !== 200)).to.deep.equal([]);
    const dialed = await dialing;
    expect(dialed).to.include({ outcome: 'answered', durationSeconds: 42 });
    await t.db('provider_calls').where({ provider_call_id: dialed.providerCallId }).delete();
    const found = await adapter.findCall(orgId, { reference: 'att_x:1', from: '+13122230001', to: '+13125550002', sinceMs: started - 1000 });
    expect(found).to.have.nested.property('found.providerCallId', dialed.providerCallId);
  });

  it("points an answered campaign call at the voice webhook, which answers with ConversationRelay for the campaign's agent", async () => {
    const { key, orgId } = await t.org();
    const agent = await t.call('POST', '/agents', { key, json: { name: 'Twilio campaign agent', voiceId: 'voice_ava', greeting: 'Hi, Acme calling.' } });
    const agentId = agent.body.data.id as string;
    await publishDraft(t.db, { orgId, keyId: 'key_test' }, agentId, 'v1');
    const dialed = await new TwilioTelephony(deps()).dial(orgId, { from: '+13122230001', to: '+13125550003', idempotencyKey: 'att_y:1', agentId, campaignId: 'cmp_twiliotest' });
    await stub.settled();
    const url = stub.calls.find((c) => c.sid === dialed.providerCallId).params.Url as string;
    expect(url).to.equal(`${t.config.publicBaseUrl}/api/v1/voice/twilio/inbound?org=${orgId}&agt=${agentId}&cmp=cmp_twiliotest`);
    const fetched = stub.deliveries.find((d) => d.url === url)!;
    expect(fetched.status).to.equal(200);
    expect(fetched.body).to.match(/<ConversationRelay url="ws:\/\/[^"]+\/api\/v1\/voice\/relay\?ref=vrf_/).and.not.contain('welcomeGreeting');
    expect(await t.db('voice_calls').where({ org_id: orgId, provider: 'twilio', provider_call_id: dialed.providerCallId }).first()).to.include({ campaign_id: 'cmp_twiliotest', agent_id: agentId, direction: 'outbound' });
  });

  it('refuses a wrong or missing X-Twilio-Signature with nothing stored, and changes nothing on a replay', async () => {
    const { orgId } = await t.org();
    const id = await outboundMessage(t, orgId, '+13122230001', '+12125550103', 'Hi');
    await t.db('sms_messages').where({ id }).update({ status: 'sent', provider_message_id: 'SM0123456789abcdef0123456789abcdef' });
    const path = `/sms/provider-callbacks/twilio?org=${orgId}&ref=${id}`;
    const url = `${t.config.publicBaseUrl}/api/v1${path}`;
    const params = { MessageSid: 'SM0123456789abcdef0123456789abcdef', MessageStatus: 'delivered', AccountSid: TWILIO_SID, From: '+13122230001', To: '+12125550103' };
    const raw = new URLSearchParams(params).toString();
    const post = (headers: Record<string, string>) => t.call('POST', path, { raw, headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers } });
    const wrong = await post({ 'x-twilio-signature': twilio.getExpectedTwilioSignature('not-the-token', url, params) });
    expect(wrong.status).to.equal(401);
    expect((await post({})).status).to.equal(401);
    expect(await t.db('provider_webhook_events').where({ provider: 'twilio', event_id: 'replayed-token' })).to.have.length(0);
    expect((await t.db('sms_messages').where({ id }).first()).status).to.equal('sent');
    const signed = { 'x-twilio-signature': twilio.getExpectedTwilioSignature(TWILIO_TOKEN, url, params), 'i-twilio-idempotency-token': 'replayed-token' };
    const ok = await post(signed);
    expect(ok.status, ok.text).to.equal(200);
    // Twilio reads the answer as TwiML: an empty <Response/>, as text/xml.
    expect(ok.headers.get('content-type')).to.match(/^text\/xml/);
    expect(ok.text).to.match(/<Response\/>$/);
    expect((await t.db('sms_messages').where({ id }).first()).status).to.equal('delivered');
    const replay = await post(signed);
    expect(replay.status).to.equal(200);
    expect(await t.db('provider_webhook_events').where({ provider: 'twilio', event_id: 'replayed-token' })).to.have.length(1);
  });

  it('refuses to start with one line when Twilio refuses the credentials', async () => {
    process.env.TWILIO_AUTH_TOKEN = 'wrong';
    try {
      const err = await checkProviderCredentials().then(() => null, (e: Error) => e);
      expect(err?.message).to.match(/^TWILIO_ACCOUNT_SID\/TWILIO_AUTH_TOKEN are refused by Twilio \(401\)/);
    } finally {
      process.env.TWILIO_AUTH_TOKEN = TWILIO_TOKEN;
    }
    await checkProviderCredentials();
  });

  it('spoke the Twilio wire format on every request', async () => {
    await stub.settled();
    expect(stub.problems).to.deep.equal([]);
  });
});
