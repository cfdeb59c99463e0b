/**
 * Voice webhooks with the request shapes Twilio sends (the loopback Twilio of test/providers/twilioStub.ts signs and
 * posts them; Twilio "Twilio's request to your application", "TwiML Voice: <Number>", "<Dial>", "<ConversationRelay>"),
 * and Telnyx TeXML's equivalents: a warm transfer whose whisper is requested on the dialed child leg (its own `CallSid`,
 * the call in `ParentCallSid`), a child leg's status that leaves the call alone, the `completed` status ending the call
 * at once although its workflow has not run, and a replayed inbound webhook of the ended call refused with a hang-up.
 * The API has Temporal but no worker: the call's `voice-call/{callId}` workflow waits, as behind a busy worker.
 */
import crypto from 'node:crypto';
import { expect } from 'chai';
import { startTestApi, type TestApi } from '../helpers/api';
import { publishDraft } from './agents-fixtures';
import { sandboxInventory } from '../../providers/telephony/sandbox';
import { RelayClient } from '../../providers/telephony/sandboxCaller';
import { twimlAttr as attr, TwilioStub } from '../providers/twilioStub';

const TWILIO_SID = `AC${crypto.randomBytes(16).toString('hex')}`;
const TWILIO_TOKEN = crypto.randomBytes(16).toString('hex');
const TELNYX_KEYS = crypto.generateKeyPairSync('ed25519');
const TELNYX_PUBLIC = (TELNYX_KEYS.publicKey.export({ format: 'der', type: 'spki' }) as Buffer).subarray(12).toString('base64');

describe('voice webhooks with Twilio request shapes (transfer, whisper, status, replay)', function () {
  this.timeout(60_000);
  let t: TestApi;
  let org: { orgId: string; key: string; keyId: string };
  let stub: TwilioStub;
  let agentId: string;
  let ours: string;
  let inboundUrl: string;
  let statusUrl: string;
  const caller = '+12065550177';

  before(async () => {
    t = await startTestApi('voice_twilio', { twilioAuthToken: TWILIO_TOKEN, telnyxPublicKey: TELNYX_PUBLIC }, { temporal: true });
    stub = await new TwilioStub(TWILIO_SID, TWILIO_TOKEN).start();
    org = await t.org('Twilio voice');
    const agent = await t.call('POST', '/agents', { key: org.key, json: { name: 'Router', voiceId: 'voice_ava', greeting: 'Hello, Acme here.' } });
    agentId = agent.body.data.id;
    const skill = await t.call('POST', `/agents/${agentId}/skills`, { key: org.key, json: { name: 'transfer_to_human', type: 'transfer_call', description: 'Transfers to a person', config: { phoneNumber: '+12065550199' } } });
    expect(skill.status, skill.text).to.equal(201);
    await publishDraft(t.db, org, agentId, 'v1');
    ours = sandboxInventory('415')[3].e164;
    const bought = await t.call('POST', '/numbers/purchase', { key: org.key, json: { e164: ours } });
    expect(bought.status, bought.text).to.equal(200);
    expect((await t.call('POST', `/numbers/${bought.body.data.id}/assign`, { key: org.key, json: { agentId } })).status).to.equal(200);
    inboundUrl = `${t.api.baseUrl}/voice/twilio/inbound`;
    statusUrl = `${t.api.baseUrl}/voice/twilio/status`;
  });
  after(async () => {
    await stub?.stop();
    await t?.close();
  });

  const storedCall = (callSid: string) => t.db('voice_calls').where({ provider: 'twilio', provider_call_id: callSid }).first();

  it('transfers on Twilio: the whisper is requested on the dialed child leg (ParentCallSid) and speaks the summary; its status leaves the call alone', async () => {
    const ring = await stub.incomingCall(inboundUrl, caller, ours);
    expect(ring.status).to.equal(200);
    const call = { callSid: ring.callSid, from: caller, to: ours };
    const relay = await RelayClient.open(attr(ring.text, 'ConversationRelay', 'url'));
    relay.send({ type: 'setup', sessionId: `VX${ring.callSid}`, callSid: ring.callSid, from: caller, to: ours, direction: 'inbound', callStatus: 'in-progress', customParameters: {} });
    relay.send({ type: 'prompt', voicePrompt: 'Please transfer to human now', lang: 'en-US', last: true });
    await relay.reply();
    await relay.closedWith();
    expect(relay.end?.handoffData).to.be.a('string');
    expect(JSON.parse(relay.end!.handoffData!)).to.include({ reason: 'transferred', destination: '+12065550199' });

    const dial = await stub.connectAction(attr(ring.text, 'Connect', 'action'), call, relay.end!.handoffData!);
    expect(dial.status).to.equal(200);
    expect(dial.text).to.contain('<Number url=').and.contain('>+12065550199</Number>');
    const whisperUrl = attr(dial.text, 'Number', 'url');

    // Twilio's request for the <Number url>: the child leg's CallSid, the transferred call in ParentCallSid.
    const child = await stub.dialedLeg(whisperUrl, call, '+12065550199');
    expect(child.status).to.equal(200);
    expect(child.text).to.match(new RegExp(`^<\\?xml[^>]*\\?><Response><Say language="en-US">A caller at \\${caller} asked for help: &quot;Please transfer to human now&quot;</Say></Response>$`));
    // A request naming only the child leg (no ParentCallSid) is no call of ours: hung up, nothing said.
    const orphan = await stub.request(whisperUrl, { AccountSid: TWILIO_SID, CallSid: child.callSid, From: caller, To: '+12065550199', CallStatus: 'in-progress', Direction: 'outbound-dial' });
    expect(orphan.text).to.contain('<Hangup/>').and.not.contain('<Say');

    // The child leg's own status callback does not end the call it was dialed from.
    const before = await storedCall(ring.callSid);
    expect((await stub.callStatus(statusUrl, { callSid: child.callSid, from: caller, to: '+12065550199', direction: 'outbound-dial' }, 'completed', 30, ring.callSid)).status).to.equal(204);
    expect((await storedCall(ring.callSid)).status).to.equal(before.status).and.not.equal('completed');
    expect(await storedCall(child.callSid)).to.equal(undefined);

    // The bridged leg ended: the <Dial action> on the parent call hangs up.
    const ended = await stub.dialAction(attr(dial.text, 'Dial', 'action'), call, { callSid: child.callSid, status: 'completed', seconds: 30 });
    expect(ended.text).to.contain('<Hangup/>');
    const transferred = await t.db('events').where({ org_id: org.orgId, type: 'call.transferred' });
    expect(transferred.map((e) => e.data.destination)).to.deep.equal(['+12065550199']);
  });

  it('ends the call at its completed status although its workflow has not run, and hangs up a replayed inbound webhook minting nothing', async () => {
    const ring = await stub.incomingCall(inboundUrl, caller, ours);
    expect(ring.text).to.contain('ref=vrf_');
    const call = { callSid: ring.callSid, from: caller, to: ours };
    expect((await stub.callStatus(statusUrl, call, 'completed', 75)).status).to.equal(204);
    const stored = await storedCall(ring.callSid);
    expect(stored).to.include({ status: 'completed', duration_seconds: 75 });
    expect(stored.ended_at).to.not.equal(null);
    const listed = await t.call('GET', `/calls/${stored.id}`, { key: org.key });
    expect(listed.body.data).to.include({ status: 'completed' });

    // The same signed inbound request again (a replay, or Twilio retrying late): a hang-up, no relay reference.
    const replay = await stub.incomingCall(inboundUrl, caller, ours, ring.callSid);
    expect(replay.status).to.equal(200);
    expect(replay.text).to.equal('<?xml version="1.0" encoding="UTF-8"?><Response><Hangup/></Response>');
    expect(Number((await t.db('voice_calls').where({ provider: 'twilio', provider_call_id: ring.callSid }).count({ n: '*' }))[0].n)).to.equal(1);
    // The reference minted before the call ended opens nothing either.
    const late = await RelayClient.open(attr(ring.text, 'ConversationRelay', 'url')).then(() => null, (e: { status?: number }) => e);
    expect(late?.status).to.be.oneOf([401, 403, 409, 410]);
  });

  it('Telnyx TeXML: the whisper of a transfer is found by ParentCallSid the same way (Ed25519-signed body)', async () => {
    const post = (path: string, params: Record<string, string>) => {
      const body = new URLSearchParams(params).toString();
      const now = Math.floor(Date.now() / 1000);
      const signature = crypto.sign(null, Buffer.from(`${now}|${body}`), TELNYX_KEYS.privateKey).toString('base64');
      return fetch(`${t.api.baseUrl}/voice/telnyx/${path}`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded', 'telnyx-timestamp': String(now), 'telnyx-signature-ed25519': signature }, body }).then(async (r) => ({ status: r.status, text: await r.text() }));
    };
    const parent = `v3:${crypto.randomBytes(12).toString('hex')}`;
    const ring = await post('inbound', { AccountSid: crypto.randomUUID(), CallSid: parent, From: caller, To: ours, CallStatus: 'ringing', Direction: 'inbound' });
    expect(ring.text).to.contain('<ConversationRelay');
    const callId = /name="callId" value="(call_[A-Za-z0-9]+)"/.exec(ring.text)![1];
    const child = `v3:${crypto.randomBytes(12).toString('hex')}`;
    const whisper = await post(`whisper?call=${callId}`, { CallSid: child, ParentCallSid: parent, From: caller, To: '+12065550199', CallStatus: 'in-progress', Direction: 'outbound-dial' });
    expect(whisper.status).to.equal(200);
    expect(whisper.text).to.contain(`<Say language="en-US">A caller at ${caller} is being transferred to you.</Say>`);
    const childStatus = await post('status', { CallSid: child, ParentCallSid: parent, CallStatus: 'completed', CallDuration: '9' });
    expect(childStatus.status).to.equal(204);
    expect((await t.db('voice_calls').where({ id: callId }).first()).status).to.equal('ringing');
    expect((await post('status', { CallSid: parent, CallStatus: 'completed', CallDuration: '20' })).status).to.equal(204);
    expect((await t.db('voice_calls').where({ id: callId }).first()).status).to.equal('completed');
    expect((await post('inbound', { CallSid: parent, From: caller, To: ours, CallStatus: 'ringing', Direction: 'inbound' })).text).to.contain('<Hangup/>').and.not.contain('vrf_');
  });
});
