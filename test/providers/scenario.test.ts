/**
 * One scenario over the three telephony set-ups (docs/going-live.md): the sandbox, Telnyx (loopback
 * stub, also the carrier for 10DLC) and Twilio (loopback stub; 10DLC through the sandbox carrier, since
 * Twilio's A2P registration is not built). Each runs the real API over a socket, a real Temporal worker
 * with the real SMS activities and the provider's adapter on its official SDK, and the provider's
 * callbacks signed as the provider signs them:
 * a 10DLC registration to `active`, a number bought, a text sent and delivered, an inbound text answered by
 * the number's agent through the provider, an inbound STOP
 * honoured (the opt-out confirmation goes out through the provider), a call placed and answered.
 */
import crypto from 'node:crypto';
import { expect } from 'chai';
import { useResource } from '../helpers/mocha';
import { startTestApi, type TestApi } from '../helpers/api';
import { COMPLETE_BRAND } from '../api/sms-fixtures';
import { publishDraft } from '../api/agents-fixtures';
import { createSmsActivities } from '../../activities/sms';
import { SandboxCarrier, stopSandboxDispatchers } from '../../providers/carrier/sandbox';
import { TelnyxCarrier } from '../../providers/carrier/telnyx';
import { createTelephony, type TelephonyAdapter } from '../../providers/telephony';
import type { CarrierAdapter } from '../../providers/carrier';
import { callbackSecret, SIGNATURE_HEADER, signCallback } from '../../domain/sms/callbackSignature';
import { TelnyxStub } from './telnyxStub';
import { TwilioStub } from './twilioStub';
import type { StubServer } from './stubServer';

/** One provider set-up of the scenario. */
interface Flavor {
  name: 'sandbox' | 'telnyx' | 'twilio';
  /** Starts its stub (if any) and returns the environment that selects and configures it. */
  start(): Promise<{ env: Record<string, string>; stub?: StubServer }>;
  carrier(deps: { db: any; config: any }, callbackUrl: string): CarrierAdapter;
  /** Delivers an inbound text as the provider would. */
  inbound(t: TestApi, from: string, to: string, text: string): Promise<void>;
}

const TELNYX_KEY = `KEY${crypto.randomBytes(8).toString('hex')}`;
const TWILIO_SID = `AC${crypto.randomBytes(16).toString('hex')}`;
const TWILIO_TOKEN = crypto.randomBytes(16).toString('hex');

let telnyx: TelnyxStub | undefined;
let twilioStub: TwilioStub | undefined;

const flavors: Flavor[] = [
  {
    name: 'sandbox',
    async start() {
      return { env: { CARRIER_PROVIDER: 'sandbox', TELEPHONY_PROVIDER: 'sandbox', SANDBOX_TELEPHONY_DELAY_MS: '0' } };
    },
    carrier: (deps, callbackUrl) => new SandboxCarrier(deps, { delayMs: 0, callbackUrl }),
    async inbound(t, from, to, text) {
      const body = JSON.stringify({ type: 'message.inbound', id: `SM${crypto.randomBytes(8).toString('hex')}`, from, to, text });
      const res = await t.call('POST', '/sms/provider-callbacks/sandbox', { raw: body, headers: { 'content-type': 'application/json', [SIGNATURE_HEADER]: signCallback(callbackSecret('sandbox'), body) } });
      expect(res.status).to.equal(200);
    },
  },
  {
    name: 'telnyx',
    async start() {
      telnyx = await new TelnyxStub(TELNYX_KEY).start();
      return {
        stub: telnyx,
        env: {
          CARRIER_PROVIDER: 'telnyx',
          TELEPHONY_PROVIDER: 'telnyx',
          TELNYX_API_KEY: TELNYX_KEY,
          TELNYX_BASE_URL: telnyx.apiBase,
          TELNYX_PUBLIC_KEY: telnyx.keys.publicKey,
          TELNYX_MESSAGING_PROFILE_ID: '40017a8e-0000-4000-8000-000000000001',
          TELNYX_CONNECTION_ID: '1494404757140276705',
        },
      };
    },
    carrier: (deps) => new TelnyxCarrier(deps),
    async inbound(t, from, to, text) {
      telnyx!.inbound(`${t.api.baseUrl}/sms/provider-callbacks/telnyx`, from, to, text);
      await telnyx!.settled();
    },
  },
  {
    name: 'twilio',
    async start() {
      twilioStub = await new TwilioStub(TWILIO_SID, TWILIO_TOKEN).start();
      return { stub: twilioStub, env: { CARRIER_PROVIDER: 'sandbox', TELEPHONY_PROVIDER: 'twilio', TWILIO_ACCOUNT_SID: TWILIO_SID, TWILIO_AUTH_TOKEN: TWILIO_TOKEN, TWILIO_BASE_URL: twilioStub.baseUrl } };
    },
    carrier: (deps, callbackUrl) => new SandboxCarrier(deps, { delayMs: 0, callbackUrl }),
    async inbound(_t, from, to, text) {
      twilioStub!.inbound(from, to, text);
      await twilioStub!.settled();
    },
  },
];

/** Polls `probe` every 50 ms until it returns a value, or fails after `ms` naming `what`. */
async function eventually<T>(what: string, probe: () => Promise<T | undefined | null | false>, ms = 20_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await probe();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

for (const flavor of flavors) {
  describe(`carrier scenario over ${flavor.name}`, function () {
    this.timeout(120_000);
    const saved: Record<string, string | undefined> = {};
    let stub: StubServer | undefined;
    let telephony: TelephonyAdapter;
    const t = useResource(
      `${flavor.name} scenario`,
      async () => {
        const started = await flavor.start();
        stub = started.stub;
        for (const [k, v] of Object.entries(started.env)) {
          saved[k] = process.env[k];
          process.env[k] = v;
        }
        return startTestApi(`scenario_${flavor.name}`, {}, {
          worker: (deps) => {
            // The providers call back PUBLIC_BASE_URL: this API's own origin.
            deps.config.publicBaseUrl = new URL(deps.baseUrl).origin;
            const callbackUrl = `${deps.baseUrl}/sms/provider-callbacks/sandbox`;
            telephony = flavor.name === 'sandbox' ? createTelephony(deps, { delayMs: 0, callbackUrl }) : createTelephony(deps);
            return createSmsActivities(deps, { carrier: flavor.carrier(deps, callbackUrl), telephony, telephonyOptions: { delayMs: 0, callbackUrl } });
          },
        });
      },
      async (api) => {
        stopSandboxDispatchers();
        await stub?.settled();
        await api.close();
        await stub?.stop();
        for (const [k, v] of Object.entries(saved)) {
          if (v === undefined) delete process.env[k];
          else process.env[k] = v;
        }
      },
    );
    let org: { orgId: string; key: string };
    let number: { id: string; e164: string };
    const recipient = '+12125550147';

    it(`registers 10DLC to active${flavor.name === 'twilio' ? ' (through the sandbox carrier: Twilio A2P is not built)' : ''}`, async () => {
      org = await t.org('Scenario Dental');
      expect((await t.call('PUT', '/sms', { key: org.key, json: COMPLETE_BRAND })).status).to.equal(200);
      expect((await t.call('POST', '/sms/submit', { key: org.key })).status).to.equal(200);
      const reg = await eventually('an active registration', async () => {
        const r = (await t.call('GET', '/sms', { key: org.key })).body.data;
        if (r.status === 'failed') throw new Error(`registration failed: ${r.providerStatus} ${r.lastError}`);
        return r.status === 'active' && r;
      });
      expect(reg).to.include({ providerStatus: 'CAMPAIGN_PROVISIONED', lastError: null });
      if (flavor.name === 'telnyx') {
        expect(telnyx!.brands.has(reg.brandId)).to.equal(true);
        expect(telnyx!.campaigns.get(reg.campaignId)).to.include({ referenceId: (await t.db('sms_registrations').where({ org_id: org.orgId }).first()).id });
      }
    });

    it('buys a number found by the search', async () => {
      const search = await t.call('GET', '/numbers/search?areaCode=312', { key: org.key });
      expect(search.status).to.equal(200);
      const e164 = search.body.data.items[0].e164;
      const bought = await t.call('POST', '/numbers/purchase', { key: org.key, json: { e164 } });
      expect(bought.status, bought.text).to.be.oneOf([200, 201]);
      number = { id: bought.body.data.id, e164 };
      if (flavor.name === 'telnyx') expect(telnyx!.orders.map((o) => o.customer_reference)).to.include(number.id);
      if (flavor.name === 'twilio') expect(twilioStub!.numbers.map((n) => n.friendly_name)).to.include(number.id);
    });

    it('sends a text that is delivered', async () => {
      expect((await t.call('PUT', `/numbers/${number.id}/sms`, { key: org.key, json: { enabled: true } })).status).to.equal(200);
      const sent = await t.call('POST', '/sms/messages', { key: org.key, json: { from: number.e164, to: recipient, body: 'Acme Dental: your visit is confirmed.', trigger: 'reply' } });
      expect(sent.status, sent.text).to.equal(202);
      const row = await eventually('a delivered text', async () => {
        const r = await t.db('sms_messages').where({ id: sent.body.data.id }).first();
        return r.status === 'delivered' && r;
      });
      expect(row.provider_message_id).to.be.a('string').and.not.equal('');
      if (flavor.name === 'telnyx') expect(telnyx!.messages.map((m) => m.id)).to.include(row.provider_message_id);
      if (flavor.name === 'twilio') expect(twilioStub!.messages.map((m) => m.sid)).to.include(row.provider_message_id);
    });

    it("has the number's agent answer an inbound text through the provider (docs/sms.md \"Agents answer texts\")", async () => {
      const agent = await t.call('POST', '/agents', { key: org.key, json: { name: 'Scenario texting desk', voiceId: 'voice_ava', instructions: 'You answer questions about Acme Dental.' } });
      const agentId = agent.body.data.id as string;
      await publishDraft(t.db, { orgId: org.orgId, keyId: 'key_scenario' }, agentId, 'v1');
      expect((await t.call('POST', `/numbers/${number.id}/assign`, { key: org.key, json: { agentId } })).status).to.equal(200);
      const texter = '+12125550148';
      await flavor.inbound(t, texter, number.e164, 'What time do you open on Saturday?');
      const inbound = await eventually('the inbound text stored', async () => t.db('sms_messages').where({ org_id: org.orgId, direction: 'inbound', from_e164: texter }).first());
      const reply = await eventually('the agent reply delivered', async () => {
        const r = await t.db('sms_messages').where({ org_id: org.orgId, reply_to: inbound.id }).first();
        return r && r.status === 'delivered' && r;
      });
      expect(reply).to.include({ direction: 'outbound', trigger: 'reply', from_e164: number.e164, to_e164: texter });
      expect(reply.body).to.be.a('string').and.not.equal('');
      const conversation = await t.db('conversations').where({ org_id: org.orgId, id: reply.conversation_id }).first();
      expect(conversation).to.include({ channel: 'sms', agent_id: agentId, counterpart: texter });
      if (flavor.name === 'telnyx') expect(telnyx!.messages.map((m) => m.id)).to.include(reply.provider_message_id);
      if (flavor.name === 'twilio') expect(twilioStub!.messages.map((m) => m.sid)).to.include(reply.provider_message_id);
    });

    it('honours an inbound STOP: the sender is opted out and the confirmation goes out through the provider', async () => {
      await flavor.inbound(t, recipient, number.e164, 'STOP');
      const reply = await eventually('the opt-out confirmation delivered', async () => {
        const r = await t.db('sms_messages').where({ org_id: org.orgId, trigger: 'keyword', to_e164: recipient }).first().catch(() => undefined);
        return r && r.status === 'delivered' && r;
      });
      expect(reply.body).to.match(/STOP|opted out|unsubscribed/i);
      const refused = await t.call('POST', '/sms/messages', { key: org.key, json: { from: number.e164, to: recipient, body: 'Anything else?', trigger: 'reply' } });
      expect(refused.status).to.equal(409);
      expect(refused.body.code).to.equal('recipient_opted_out');
    });

    it('places a call that is answered', async () => {
      const result = await telephony.dial(org.orgId, { from: number.e164, to: '+13125550001', idempotencyKey: `att_scenario:${flavor.name}`, agentId: 'agt_scenario' });
      expect(result.outcome).to.equal('answered');
      expect(result.durationSeconds).to.be.greaterThan(0);
      expect(result.dialedNow).to.equal(true);
      if (flavor.name !== 'sandbox') expect(result.durationSeconds).to.equal(42);
      if (flavor.name === 'twilio') expect(twilioStub!.calls[0].params).to.include({ MachineDetection: 'Enable', Url: `${t.config.publicBaseUrl}/api/v1/voice/twilio/inbound` });
      if (flavor.name === 'telnyx') expect(telnyx!.calls[0]).to.include({ answering_machine_detection: 'detect' });
    });

    it('spoke the provider wire format on every request and webhook', async () => {
      if (!stub) return;
      await stub.settled();
      expect(stub.problems).to.deep.equal([]);
      expect(stub.deliveries.filter((d) => d.status !== 200)).to.deep.equal([]);
    });
  });
}
