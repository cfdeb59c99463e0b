/**
 * Voicemail drops on campaign calls (docs/voice.md "Voicemail"): an agent's `voicemailMessage` (validated, part
 * of the draft, compiled into the version with its variables filled) is left on an answering machine
 * after the beep and the call hung up. Over the sandbox carrier (the `…0002` machine records it), Telnyx
 * Call Control (`greeting_end` detection, `speak` on `call.machine.greeting.ended`, `hangup` on
 * `call.speak.ended`) and Twilio (`DetectMessageEnd`, the voice webhook answering `machine_end_beep` with
 * `<Say>` + `<Hangup/>`) — the carriers as loopback stubs speaking their wire formats. The dial step runs
 * as the activity the dialer workflow calls; the attempt, the call, its conversation and the minutes
 * charged say what was left, once, across a crash of the dial.
 */
import { expect } from 'chai';
import { phone, runningCampaign, useDialerEnv } from './outbound-fixtures';
import { publishDraft } from './agents-fixtures';
import { createOutboundActivities } from '../../activities/outbound';
import { SimulatedCrash } from '../../services/effects';
import { sandboxDials } from '../../db/repositories/sandboxProviders';
import { allMessages, getConversation } from '../../db/repositories/conversations';
import { createLogger } from '../../runtime';
import { callWithKey } from '../helpers/api';
import { TwilioTelephony } from '../../providers/telephony/twilio';
import { TelnyxStub } from '../providers/telnyxStub';
import { TwilioStub } from '../providers/twilioStub';
import type { TelephonyAdapter } from '../../providers/telephony';
import type { FaultHook } from '../../services/effects';
import { useEnvVars } from '../helpers/mocha';

/** 1pm in New York: inside the calling window. */
const NOW = '2026-06-02T17:00:00.000Z';
const MESSAGE = 'Hi, this is {{company}} with a reminder about your visit tomorrow at 10. Call us back at 212 555 0100. Goodbye.';
const RENDERED = 'Hi, this is Acme Dental with a reminder about your visit tomorrow at 10. Call us back at 212 555 0100. Goodbye.';

describe('voicemail drops on campaign calls', function () {
  this.timeout(90_000);
  const { env, dialer } = useDialerEnv('voicemail');

  /** A published agent, with the voicemail message unless `message` is null. @returns its id */
  async function agentWith(name: string, message: string | null = MESSAGE): Promise<string> {
    const created = await env.call(dialer.key, 'POST', '/agents', {
      name,
      voiceId: 'voice_ava',
      greeting: 'Hi, this is {{company}} calling.',
      variables: [{ name: 'company', defaultValue: 'Acme Dental' }],
      ...(message === null ? {} : { voicemailMessage: message }),
    });
    expect(created.status, JSON.stringify(created.body)).to.equal(201);
    const agentId = created.body.data.id as string;
    await publishDraft(env.db, { orgId: dialer.orgId, keyId: 'key_test' }, agentId, 'v1');
    return agentId;
  }

  /** Claims the campaign's one attempt and dials it (again after a simulated crash, when `faults` crash it). */
  async function dialOnce(campaignId: string, token: string, extra: { telephony?: TelephonyAdapter; faults?: FaultHook; config?: typeof env.config } = {}) {
    const activities = (faults?: FaultHook) => createOutboundActivities({ db: env.db, config: extra.config ?? env.config, logger: createLogger('silent') }, { telephony: extra.telephony, faults });
    const acts = activities(extra.faults);
    const claim = await acts.outboundClaimAttempts({ orgId: dialer.orgId, campaignId, token, now: NOW, limit: 5 });
    expect(claim.claimed).to.have.length(1);
    const attemptId = claim.claimed[0].id as string;
    let result;
    try {
      result = await acts.outboundDial({ orgId: dialer.orgId, attemptId, now: NOW });
    } catch (err) {
      if (!(err instanceof SimulatedCrash)) throw err;
      result = await activities().outboundDial({ orgId: dialer.orgId, attemptId, now: NOW });
    }
    return { attemptId, result };
  }

  /** A running campaign of one contact (`phone('212', line, suffix)`) for a new published agent. */
  async function campaignOf(agentName: string, line: number, suffix: string, message: string | null = MESSAGE) {
    const agentId = await agentWith(agentName, message);
    const contact = phone('212', line, suffix);
    return { agentId, contact, campaignId: await runningCampaign(env, dialer, agentId, contact) };
  }

  /** A fault hook that crashes the dial once, after the carrier took it; `crashes()` counts the crashes. */
  function crashOnceAfterAccept(): { faults: FaultHook; crashes: () => number } {
    let crashed = 0;
    const faults: FaultHook = (step, kind) => {
      if (step === 'after_accept' && kind === 'dial' && !crashed++) throw new SimulatedCrash(step, kind);
    };
    return { faults, crashes: () => crashed };
  }

  /** The config a real carrier adapter dials with: callbacks to this test API's origin. */
  const carrierConfig = () => ({ ...env.config, publicBaseUrl: new URL(env.api.baseUrl).origin });

  /** The campaign's attempt as GET /campaigns/{id}/attempts lists it. */
  async function listedAttempt(campaignId: string) {
    const r = await env.call(dialer.key, 'GET', `/campaigns/${campaignId}/attempts`);
    expect(r.status).to.equal(200);
    return r.body.data.items[0];
  }

  /** The call a campaign placed, its transcript lines and the dial's record. */
  async function callRecord(campaignId: string) {
    const call = await env.db('voice_calls').where({ org_id: dialer.orgId, campaign_id: campaignId }).first();
    const lines = call?.conversation_id ? (await allMessages(env.db, dialer.orgId, call.conversation_id)).map((m) => `${m.role}: ${m.content}`) : [];
    const dialRecord = await env.db('conversations').where({ org_id: dialer.orgId, mode: 'none', campaign_id: campaignId }).first();
    const minutes = call ? await env.db('usage_entries').where({ org_id: dialer.orgId, kind: 'voice_minutes' }).whereRaw(`details->>'callId' = ?`, [call.id]) : [];
    return { call, lines, dialRecord, minutes };
  }

  describe('field validation', () => {
    it('refuses a voicemailMessage that is too long, empty or not a string with 400 validation_error naming the field; null clears it', async () => {
      for (const bad of ['x'.repeat(1001), '', 42, { text: 'hi' }]) {
        const r = await env.call(dialer.key, 'POST', '/agents', { name: `Bad voicemail ${typeof bad} ${String(bad).length}`, voicemailMessage: bad });
        expect(r.status, JSON.stringify(bad).slice(0, 40)).to.equal(400);
        expect(r.body.code).to.equal('validation_error');
        expect(r.body.errors.map((e: { field: string }) => e.field)).to.deep.equal(['voicemailMessage']);
      }
      const created = await env.call(dialer.key, 'POST', '/agents', { name: 'Voicemail field agent', voicemailMessage: 'Please call us back.' });
      expect(created.status).to.equal(201);
      expect(created.body.data.voicemailMessage).to.equal('Please call us back.');
      const id = created.body.data.id as string;
      const patched = await callWithKey(env.api.baseUrl, dialer.key, 'PATCH', `/agents/${id}`, { voicemailMessage: null }, { 'if-match': `"${created.body.data.version}"` });
      expect(patched.status).to.equal(200);
      expect(patched.body.data.voicemailMessage).to.equal(null);
    });

    it('compiles the message into the published version with its organization variables in place', async () => {
      const agentId = await agentWith('Compiled voicemail agent');
      const version = await env.db('agent_versions').where({ org_id: dialer.orgId, agent_id: agentId }).first();
      expect(version.snapshot.voicemailMessage).to.equal(MESSAGE);
    });
  });

  describe('sandbox carrier', () => {
    it('leaves the message on the …0002 machine: recorded by the sandbox, the transcript says it, the attempt says so, one minute charged', async () => {
      const { agentId, contact, campaignId } = await campaignOf('Sandbox voicemail agent', 11, '0002');
      const { result } = await dialOnce(campaignId, 'vm-sandbox');
      expect(result).to.deep.equal({ status: 'voicemail', outcome: 'voicemail' });

      const dials = (await sandboxDials(env.db, dialer.orgId)).filter((d) => d.to === contact);
      expect(dials.map((d) => d.voicemailMessage)).to.deep.equal([RENDERED]);
      const { call, lines, dialRecord, minutes } = await callRecord(campaignId);
      expect(call).to.include({ provider: 'sandbox', direction: 'outbound', status: 'completed', to_e164: contact, agent_id: agentId, voicemail_message: RENDERED, duration_seconds: 20 });
      expect(lines).to.deep.equal([`assistant: ${RENDERED}`]);
      const conversation = (await getConversation(env.db, dialer.orgId, call.conversation_id))!;
      expect(conversation).to.include({ channel: 'voice', status: 'ended', agentId });
      expect(conversation.metadata).to.include({ campaignId, callId: call.id, to: contact, voicemail: true });
      expect(dialRecord).to.include({ outcome: 'voicemail', duration_seconds: 20 });
      expect(dialRecord.metadata).to.include({ conversationId: call.conversation_id });
      expect(minutes.map((m) => Number(m.quantity))).to.deep.equal([1]);
      expect(await listedAttempt(campaignId)).to.include({ status: 'voicemail', lastOutcome: 'voicemail', voicemailLeft: true });
    });

    it('survives a crash of the dial after the sandbox took it: one dial, one message, one charge', async () => {
      const { contact, campaignId } = await campaignOf('Crashing voicemail agent', 12, '0002');
      const { faults, crashes } = crashOnceAfterAccept();
      const { result } = await dialOnce(campaignId, 'vm-crash', { faults });
      expect(crashes()).to.equal(1);
      expect(result).to.deep.equal({ status: 'voicemail', outcome: 'voicemail' });
      expect((await sandboxDials(env.db, dialer.orgId)).filter((d) => d.to === contact)).to.have.length(1);
      const { call, lines, minutes, dialRecord } = await callRecord(campaignId);
      expect(lines).to.deep.equal([`assistant: ${RENDERED}`]);
      expect(minutes).to.have.length(1);
      expect(dialRecord.metadata).to.include({ conversationId: call.conversation_id });
      expect(await env.db('voice_calls').where({ org_id: dialer.orgId, campaign_id: campaignId })).to.have.length(1);
      expect(await listedAttempt(campaignId)).to.include({ voicemailLeft: true });
    });

    it('without a message, a machine stays an outcome only, as before: nothing recorded, nothing charged', async () => {
      const { contact, campaignId } = await campaignOf('Silent agent', 13, '0002', null);
      const { result } = await dialOnce(campaignId, 'vm-none');
      expect(result).to.deep.equal({ status: 'voicemail', outcome: 'voicemail' });
      expect((await sandboxDials(env.db, dialer.orgId)).filter((d) => d.to === contact).map((d) => d.voicemailMessage)).to.deep.equal([null]);
      const { call, dialRecord } = await callRecord(campaignId);
      expect(call).to.equal(undefined);
      expect(dialRecord.metadata).to.not.have.property('conversationId');
      expect(await listedAttempt(campaignId)).to.include({ status: 'voicemail', voicemailLeft: false });
    });
  });

  describe('Telnyx Call Control (loopback stub)', () => {
    const apiKey = 'KEYtelnyxvoicemail';
    let stub: TelnyxStub;
    before(async () => {
      stub = await new TelnyxStub(apiKey).start();
      stub.machineAnswers = true;
    });
    after(async () => stub?.stop());
    useEnvVars(() => ({ TELNYX_API_KEY: apiKey, TELNYX_BASE_URL: stub.apiBase, TELNYX_PUBLIC_KEY: stub.keys.publicKey, TELNYX_CONNECTION_ID: '1494404757140276705', TELEPHONY_PROVIDER: 'telnyx' }));

    it('asks for greeting_end detection, speaks the message on call.machine.greeting.ended and hangs up on call.speak.ended', async () => {
      const { contact, campaignId } = await campaignOf('Telnyx voicemail agent', 14, '0009');
      const config = carrierConfig();
      const { attemptId, result } = await dialOnce(campaignId, 'vm-telnyx', { config });
      expect(result).to.deep.equal({ status: 'voicemail', outcome: 'voicemail' });
      await stub.settled();

      const placed = stub.calls.find((c) => c.to === contact);
      expect(placed).to.include({ answering_machine_detection: 'greeting_end' });
      expect(stub.spoken.map((s) => s.command)).to.deep.equal([{ payload: RENDERED, voice: 'female', language: 'en-US', command_id: `voicemail:${attemptId}:1` }]);
      const commands = stub.requests.filter((r) => r.path.includes(encodeURIComponent(placed.call_control_id)) || r.path.includes(placed.call_control_id)).map((r) => r.path.split('/').pop());
      expect(commands).to.deep.equal(['speak', 'hangup']);
      expect(stub.relays).to.have.length(0);
      const { call, lines, minutes, dialRecord } = await callRecord(campaignId);
      expect(call).to.include({ provider: 'telnyx', provider_call_id: placed.call_control_id, status: 'completed', voicemail_message: RENDERED, duration_seconds: 42 });
      expect(lines).to.deep.equal([`assistant: ${RENDERED}`]);
      expect(dialRecord.metadata).to.include({ conversationId: call.conversation_id });
      expect(minutes.map((m) => Number(m.quantity))).to.deep.equal([1]);
      expect(await listedAttempt(campaignId)).to.include({ voicemailLeft: true });
      expect(stub.problems).to.deep.equal([]);
      expect(stub.deliveries.filter((d) => d.status !== 200)).to.deep.equal([]);
    });

    it('a dial that crashes after Telnyx took it is retried by look-up: one call, one message spoken, one charge', async () => {
      const { contact, campaignId } = await campaignOf('Telnyx crashing agent', 18, '0009');
      const config = carrierConfig();
      const { faults, crashes } = crashOnceAfterAccept();
      const { result } = await dialOnce(campaignId, 'vm-telnyx-crash', { config, faults });
      expect(crashes()).to.equal(1);
      expect(result).to.deep.equal({ status: 'voicemail', outcome: 'voicemail' });
      await stub.settled();
      const placed = stub.calls.filter((c) => c.to === contact);
      expect(placed).to.have.length(1);
      expect(stub.spoken.filter((x) => x.callControlId === placed[0].call_control_id)).to.have.length(1);
      const { lines, minutes } = await callRecord(campaignId);
      expect(lines).to.deep.equal([`assistant: ${RENDERED}`]);
      expect(minutes).to.have.length(1);
      expect(await listedAttempt(campaignId)).to.include({ voicemailLeft: true });
      expect(stub.problems).to.deep.equal([]);
    });

    it('without a message, asks for plain detection and sends no command to the machine', async () => {
      const { contact, campaignId } = await campaignOf('Telnyx silent agent', 15, '0009', null);
      const config = carrierConfig();
      const { result } = await dialOnce(campaignId, 'vm-telnyx-none', { config });
      expect(result).to.deep.equal({ status: 'voicemail', outcome: 'voicemail' });
      await stub.settled();
      const placed = stub.calls.find((c) => c.to === contact);
      expect(placed).to.include({ answering_machine_detection: 'detect' });
      expect(stub.requests.filter((r) => r.path.includes('/actions/') && r.path.includes(encodeURIComponent(placed.call_control_id)))).to.deep.equal([]);
      expect(await env.db('voice_calls').where({ org_id: dialer.orgId, campaign_id: campaignId })).to.deep.equal([]);
      expect(await listedAttempt(campaignId)).to.include({ voicemailLeft: false });
      expect(stub.problems).to.deep.equal([]);
    });
  });

  describe('Twilio (loopback stub)', () => {
    const sid = 'AC0123456789abcdef0123456789abcdef';
    const token = 'twilio-voicemail-token';
    let stub: TwilioStub;
    let savedBaseUrl: string;
    before(async () => {
      stub = await new TwilioStub(sid, token).start();
      stub.machineAnswers = true;
      // Twilio signs the URLs it calls: the API verifies them against its public base URL and token.
      savedBaseUrl = env.config.publicBaseUrl;
      env.config.publicBaseUrl = new URL(env.api.baseUrl).origin;
      env.config.twilioAuthToken = token;
    });
    after(async () => {
      env.config.twilioAuthToken = undefined;
      env.config.publicBaseUrl = savedBaseUrl;
      await stub?.stop();
    });
    useEnvVars(() => ({ TWILIO_ACCOUNT_SID: sid, TWILIO_AUTH_TOKEN: token, TWILIO_BASE_URL: stub.baseUrl }));

    it('places the call with DetectMessageEnd; the voice webhook answers machine_end_beep with <Say> the message and <Hangup/>', async () => {
      const { contact, campaignId } = await campaignOf('Twilio voicemail agent', 16, '0009');
      const config = carrierConfig();
      const { result } = await dialOnce(campaignId, 'vm-twilio', { telephony: new TwilioTelephony({ db: env.db, config }), config });
      expect(result).to.deep.equal({ status: 'voicemail', outcome: 'voicemail' });
      await stub.settled();

      const placed = stub.calls.find((c) => c.to === contact);
      expect(placed.params).to.include({ MachineDetection: 'DetectMessageEnd' });
      expect(placed.params).to.not.have.property('AsyncAmd');
      const fetched = stub.deliveries.find((d) => d.url === placed.params.Url)!;
      expect(fetched.status).to.equal(200);
      expect(fetched.body).to.equal(`<?xml version="1.0" encoding="UTF-8"?><Response><Say language="en-US">${RENDERED}</Say><Hangup/></Response>`);
      const { call, lines, minutes, dialRecord } = await callRecord(campaignId);
      expect(call).to.include({ provider: 'twilio', provider_call_id: placed.sid, status: 'completed', voicemail_message: RENDERED, duration_seconds: 42 });
      expect(lines).to.deep.equal([`assistant: ${RENDERED}`]);
      expect(dialRecord.metadata).to.include({ conversationId: call.conversation_id });
      expect(minutes.map((m) => Number(m.quantity))).to.deep.equal([1]);
      expect(await listedAttempt(campaignId)).to.include({ voicemailLeft: true });
      expect(stub.problems).to.deep.equal([]);
      expect(stub.deliveries.filter((d) => d.status >= 300)).to.deep.equal([]);
    });

    it('a person answering the same kind of call (AnsweredBy human) gets the agent over ConversationRelay, no message', async () => {
      stub.machineAnswers = false;
      try {
        const { contact, campaignId } = await campaignOf('Twilio person agent', 17, '0009');
        const config = carrierConfig();
        const { result } = await dialOnce(campaignId, 'vm-twilio-human', { telephony: new TwilioTelephony({ db: env.db, config }), config });
        expect(result).to.deep.equal({ status: 'answered', outcome: 'answered' });
        await stub.settled();
        const placed = stub.calls.find((c) => c.to === contact);
        expect(placed.params).to.include({ MachineDetection: 'DetectMessageEnd' });
        const fetched = stub.deliveries.find((d) => d.url === placed.params.Url)!;
        expect(fetched.body).to.match(/<ConversationRelay url="ws:\/\/[^"]+\/api\/v1\/voice\/relay\?ref=vrf_/).and.not.contain('<Say');
        const { call } = await callRecord(campaignId);
        expect(call).to.include({ provider: 'twilio', voicemail_message: null });
        expect(await listedAttempt(campaignId)).to.include({ status: 'answered', voicemailLeft: false });
      } finally {
        stub.machineAnswers = true;
      }
    });
  });
});
