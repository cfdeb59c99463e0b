/**
 * The agent's voice and the number's phone settings reach the carrier (docs/voice.md "The agent's voice on
 * the carrier", "Phone settings on calls", "Escalation"): the ConversationRelay markup carries the voice,
 * TTS and transcription providers of each carrier's dialect; the recording notice is spoken before the
 * greeting; outside the business hours the after-hours action runs instead of the agent (a voicemail that is
 * recorded and stored with `voicemail.received`, a message and the hang-up, or a transfer to the escalation
 * destination with its summary, falling back to a voicemail when nobody answers); an escalation on a call
 * with no transfer skill dials the organization's destination; inbound calls list their caller and duration.
 */
import { expect } from 'chai';
import { startTestApi, type TestApi } from '../helpers/api';
import { publishDraft } from './agents-fixtures';
import { sandboxInventory } from '../../providers/telephony/sandbox';
import { placeSandboxCall, postSandboxWebhook, RelayClient } from '../../providers/telephony/sandboxCaller';
import { twilioSignature } from '../../domain/voice/signatures';
import { getVoiceCall } from '../../db/repositories/voiceCalls';
import { getConversation } from '../../db/repositories/conversations';
import { carrierSpeech } from '../../domain/voice/carrierVoices';
import { until } from '../helpers/wait';
import { SANDBOX_CALLEE_SCRIPT, sandboxCalleeScript } from '../../services/voice/sandboxCallee';

describe("the agent's voice and the number's phone settings on calls (sandbox carrier)", function () {
  this.timeout(60_000);
  let t: TestApi;
  let org: { orgId: string; key: string; keyId: string };
  let n = 0;
  const caller = '+12065550177';

  before(async () => {
    t = await startTestApi('voice_settings');
    org = await t.org('Phone Settings Co');
  });
  after(async () => {
    await t?.close();
  });

  /** A published agent answering a fresh number. @returns the agent and the number */
  async function answering(json: Record<string, unknown> = {}) {
    const res = await t.call('POST', '/agents', { key: org.key, json: { name: `Desk ${++n}`, voiceId: 'voice_leo', greeting: 'Thanks for calling Acme.', ...json } });
    expect(res.status, res.text).to.equal(201);
    const agentId = res.body.data.id as string;
    await publishDraft(t.db, org, agentId, 'v1');
    const e164 = sandboxInventory('415')[n + 10].e164;
    const bought = await t.call('POST', '/numbers/purchase', { key: org.key, json: { e164 } });
    expect(bought.status, bought.text).to.equal(200);
    const numberId = bought.body.data.id as string;
    expect((await t.call('POST', `/numbers/${numberId}/assign`, { key: org.key, json: { agentId } })).status).to.equal(200);
    return { agentId, e164, numberId };
  }

  /** Settings with business hours that are closed now (a one-minute window twelve hours away). */
  function closedNow(afterHours: Record<string, unknown>, extra: Record<string, unknown> = {}) {
    const h = (new Date().getUTCHours() + 12) % 24;
    const hh = String(h).padStart(2, '0');
    return {
      voicemail: { enabled: true, greeting: 'You reached Acme after hours. Leave a message.', transcribe: true, maxSeconds: 90 },
      recordingConsent: { mode: 'none', announcement: null },
      businessHours: { timeZone: 'UTC', hours: ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'].map((day) => ({ day, open: `${hh}:00`, close: `${hh}:01` })), escalationDestinationId: null, ...afterHours },
      ...extra,
    };
  }

  it("the sandbox callee asks about the agent's knowledge, else a scripted question", () => {
    expect(sandboxCalleeScript({ knowledge: [{ id: 'ks_1', title: 'Opening hours', kind: 'text', chunkCount: 2 }] })).to.deep.equal([
      'Hello, who is this?',
      'Quick question: what can you tell me about opening hours?',
      'Thanks for letting me know. Goodbye.',
    ]);
    expect(sandboxCalleeScript({ knowledge: [] })).to.deep.equal(SANDBOX_CALLEE_SCRIPT);
    expect(SANDBOX_CALLEE_SCRIPT).to.have.length(3);
  });

  it("speaks the agent's voice on each carrier's terms and the recording notice before the greeting; the call lists its caller and duration", async () => {
    expect(carrierSpeech('twilio', 'voice_leo', 'en-US')).to.deep.equal({ language: 'en-US', voice: 'Matthew-Neural', ttsProvider: 'Amazon', transcriptionProvider: 'Deepgram' });
    expect(carrierSpeech('telnyx', 'voice_leo', 'en-US')).to.deep.equal({ language: 'en-US', voice: 'AWS.Polly.Matthew-Neural', ttsProvider: null, transcriptionProvider: 'deepgram' });
    expect(carrierSpeech('twilio', 'voice_lucia', 'es-MX').voice).to.equal('Mia-Neural');

    const { agentId, e164, numberId } = await answering();
    const put = await t.call('PUT', `/numbers/${numberId}/settings`, {
      key: org.key,
      json: { voicemail: { enabled: false, greeting: null, transcribe: false, maxSeconds: 60 }, recordingConsent: { mode: 'announce', announcement: 'This call is recorded.' }, businessHours: { timeZone: 'UTC', hours: null, afterHours: 'agent', escalationDestinationId: null } },
    });
    expect(put.status, put.text).to.equal(200);
    const rec = await placeSandboxCall({ baseUrl: t.api.baseUrl, from: caller, to: e164, script: [{ say: 'Hello there' }] });
    expect(rec.markup).to.match(/<Response><Say language="en-US">This call is recorded\.<\/Say><Connect action=/);
    expect(rec.markup).to.contain('ttsProvider="Amazon"').and.contain('voice="Matthew-Neural"').and.contain('transcriptionProvider="Deepgram"');
    const callId = /name="callId" value="(call_[A-Za-z0-9]+)"/.exec(rec.markup)![1];
    const call = await until(async () => ((c) => (c?.status === 'completed' && c.conversationId ? c : undefined))(await getVoiceCall(t.db, org.orgId, callId)), 10_000, 'the call completed');
    expect(call).to.include({ routing: 'agent', from: caller, agentId });
    const listed = await t.call('GET', `/conversations?channel=voice&agentId=${agentId}`, { key: org.key });
    const item = listed.body.data.items.find((c: { id: string }) => c.id === call.conversationId);
    expect(item).to.include({ counterpart: caller });
    expect(item.durationSeconds).to.equal(call.durationSeconds);
    expect(await t.db('events').where({ org_id: org.orgId, type: 'call.started' }).whereRaw("data->>'callId' = ?", [callId])).to.have.length(1);
  });

  it('after hours takes a voicemail: recorded, stored once with voicemail.received; the agent does not answer', async () => {
    const { agentId, e164, numberId } = await answering();
    const put = await t.call('PUT', `/numbers/${numberId}/settings`, { key: org.key, json: closedNow({ afterHours: 'voicemail' }) });
    expect(put.status, put.text).to.equal(200);
    expect(put.body.data.openNow).to.equal(false);
    const rec = await placeSandboxCall({ baseUrl: t.api.baseUrl, from: caller, to: e164, script: [] });
    expect(rec.markup).to.not.contain('<ConversationRelay');
    expect(rec.markup).to.match(/<Say language="en-US">You reached Acme after hours\. Leave a message\.<\/Say><Record action="[^"]+\/voice\/sandbox\/recording\?call=call_[A-Za-z0-9]+" method="POST" maxLength="90" playBeep="true" finishOnKey="#" transcribe="true"/);
    const callId = /recording\?call=(call_[A-Za-z0-9]+)/.exec(rec.markup)![1];
    const recording = { CallSid: rec.callSid, RecordingUrl: 'https://api.twilio.example/Recordings/RE123', RecordingDuration: '14', RecordingSid: 'RE123' };
    const url = `${t.api.baseUrl}/voice/sandbox/recording?call=${callId}`;
    expect((await postSandboxWebhook(url, recording)).text).to.contain('<Hangup/>');
    await postSandboxWebhook(url, recording); // the carrier's retry
    await postSandboxWebhook(url, { CallSid: rec.callSid, TranscriptionText: 'Hi, please call me back about my crown.' });
    const call = (await getVoiceCall(t.db, org.orgId, callId))!;
    expect(call).to.include({ routing: 'voicemail', agentId, conversationId: null });
    expect(call.recording).to.include({ url: recording.RecordingUrl, seconds: 14, transcript: 'Hi, please call me back about my crown.' });
    const events = await t.db('events').where({ org_id: org.orgId, type: 'voicemail.received' });
    expect(events).to.have.length(1);
    expect(events[0].data).to.include({ callId, agentId, numberId, from: caller, to: e164, durationSeconds: 14, recordingUrl: recording.RecordingUrl });
  });

  it('after hours plays the message and hangs up; or transfers to the escalation destination, falling back to a voicemail when it is busy', async () => {
    const { e164, numberId } = await answering();
    expect((await t.call('PUT', `/numbers/${numberId}/settings`, { key: org.key, json: closedNow({ afterHours: 'message', afterHoursMessage: 'We open at nine. Goodbye.' }) })).status).to.equal(200);
    const closed = await placeSandboxCall({ baseUrl: t.api.baseUrl, from: caller, to: e164, script: [] });
    expect(closed.markup).to.match(/<Response><Say language="en-US">We open at nine\. Goodbye\.<\/Say><Hangup\/><\/Response>$/);

    const dest = await t.call('POST', '/escalation-destinations', { key: org.key, json: { name: 'On call', kind: 'phone', address: '+12065550100', timeZone: 'UTC' } });
    expect(dest.status, dest.text).to.equal(201);
    expect((await t.call('PUT', `/numbers/${numberId}/settings`, { key: org.key, json: closedNow({ afterHours: 'escalation', escalationDestinationId: dest.body.data.id }) })).status).to.equal(200);
    const rec = await placeSandboxCall({ baseUrl: t.api.baseUrl, from: caller, to: e164, script: [] });
    expect(rec.markup).to.match(/<Dial timeout="25" action="[^"]+\/voice\/sandbox\/dial-ended\?call=(call_[A-Za-z0-9]+)" method="POST"><Number url="[^"]+\/voice\/sandbox\/whisper\?call=call_[A-Za-z0-9]+">\+12065550100<\/Number><\/Dial>/);
    const callId = /dial-ended\?call=(call_[A-Za-z0-9]+)/.exec(rec.markup)![1];
    expect(await getVoiceCall(t.db, org.orgId, callId)).to.deep.include({ routing: 'escalation', transfer: { to: '+12065550100', destinationId: dest.body.data.id } });
    const transferred = await t.db('events').where({ org_id: org.orgId, type: 'call.transferred' }).whereRaw("data->>'callId' = ?", [callId]);
    expect(transferred.map((e) => e.data.reason)).to.deep.equal(['after_hours']);
    const busy = await postSandboxWebhook(`${t.api.baseUrl}/voice/sandbox/dial-ended?call=${callId}`, { CallSid: rec.callSid, DialCallStatus: 'busy' });
    expect(busy.text).to.match(/<Record action="[^"]+\/voice\/sandbox\/recording\?call=/);
    const answered = await postSandboxWebhook(`${t.api.baseUrl}/voice/sandbox/dial-ended?call=${callId}`, { CallSid: rec.callSid, DialCallStatus: 'completed' });
    expect(answered.text).to.contain('<Hangup/>');
  });

  it("an escalation on a call with no transfer skill dials the organization's open destination with the conversation's summary", async () => {
    const org2 = await t.org('Escalating Co');
    const res = await t.call('POST', '/agents', { key: org2.key, json: { name: 'Dental desk', voiceId: 'voice_ava', greeting: 'Acme Dental, how can I help?' } });
    const agentId = res.body.data.id as string;
    expect((await t.call('PUT', `/agents/${agentId}/guardrails`, { key: org2.key, json: { blockedTopics: [], forbiddenPhrases: [], redactPii: true, profanityFilter: true, escalateOn: ['emergency'], maxConversationMinutes: null } })).status).to.equal(200);
    await publishDraft(t.db, org2, agentId, 'v1');
    const dest = await t.call('POST', '/escalation-destinations', { key: org2.key, json: { name: 'Front desk', kind: 'phone', address: '+12065550111', timeZone: 'UTC' } });
    expect(dest.status, dest.text).to.equal(201);
    const e164 = sandboxInventory('646')[3].e164;
    const bought = await t.call('POST', '/numbers/purchase', { key: org2.key, json: { e164 } });
    expect((await t.call('POST', `/numbers/${bought.body.data.id}/assign`, { key: org2.key, json: { agentId } })).status).to.equal(200);
    const rec = await placeSandboxCall({ baseUrl: t.api.baseUrl, from: caller, to: e164, script: [{ say: 'I have a dental emergency' }] });
    expect(rec.endedByAgent).to.equal(true);
    expect(rec.handoff).to.include({ reason: 'escalated' });
    const action = await postSandboxWebhook(`${t.api.baseUrl}/voice/sandbox/relay-ended`, { CallSid: rec.callSid, HandoffData: JSON.stringify(rec.handoff) });
    expect(action.text).to.contain('+12065550111</Number></Dial>');
    expect(action.text).to.not.contain('<Hangup/>');
    const callId = /name="callId" value="(call_[A-Za-z0-9]+)"/.exec(rec.markup)![1];
    const call = (await getVoiceCall(t.db, org2.orgId, callId))!;
    expect(call.transfer).to.deep.equal({ to: '+12065550111', destinationId: dest.body.data.id });
    const conversation = (await getConversation(t.db, org2.orgId, call.conversationId!))!;
    expect(conversation.endReason).to.equal('escalated');
    const event = await t.db('events').where({ org_id: org2.orgId, type: 'call.transferred' }).first();
    expect(event.data).to.include({ reason: 'escalation', destination: '+12065550111' });
    expect(event.data.summary).to.contain('I have a dental emergency');
  });
});

describe('carrier webhooks and relay references are single-use; Twilio signatures cover PUBLIC_BASE_URL', function () {
  this.timeout(60_000);
  const TOKEN = 'twilio-single-use-token';
  const PUBLIC = 'https://voice.example.test';
  let t: TestApi;
  let org: { orgId: string; key: string; keyId: string };
  const caller = '+12065550178';

  before(async () => {
    t = await startTestApi('voice_single_use', { twilioAuthToken: TOKEN, publicBaseUrl: PUBLIC });
    org = await t.org('Single Use Co');
  });
  after(async () => {
    await t?.close();
  });

  /** POSTs a Twilio webhook to this API, signed over `signedUrl`. */
  async function twilioHook(path: string, params: Record<string, string>, signedUrl: string) {
    const res = await fetch(`${t.api.baseUrl}${path}`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-twilio-signature': twilioSignature(TOKEN, signedUrl, params) }, body: new URLSearchParams(params).toString() });
    return { status: res.status, text: await res.text() };
  }

  it("verifies Twilio's signature over PUBLIC_BASE_URL, never over the request's own host", async () => {
    const params = { CallSid: 'CAsigned0001', From: caller, To: '+19995550100', CallStatus: 'ringing' };
    const ok = await twilioHook('/voice/twilio/inbound', params, `${PUBLIC}/api/v1/voice/twilio/inbound`);
    expect(ok.status, ok.text).to.equal(200);
    const ownHost = await twilioHook('/voice/twilio/inbound', { ...params, CallSid: 'CAsigned0002' }, `${t.api.baseUrl}/voice/twilio/inbound`);
    expect(ownHost.status).to.equal(403);
  });

  it('a replayed inbound webhook mints no reference once the call was answered or ended, and a reference opens one relay', async () => {
    const res = await t.call('POST', '/agents', { key: org.key, json: { name: 'Replay desk', voiceId: 'voice_ava', greeting: 'Hello from Acme.' } });
    const agentId = res.body.data.id as string;
    await publishDraft(t.db, org, agentId, 'v1');
    const e164 = sandboxInventory('206')[7].e164;
    const bought = await t.call('POST', '/numbers/purchase', { key: org.key, json: { e164 } });
    expect((await t.call('POST', `/numbers/${bought.body.data.id}/assign`, { key: org.key, json: { agentId } })).status).to.equal(200);
    const params = { CallSid: 'CAreplay0001', From: caller, To: e164, CallStatus: 'ringing' };
    const url = `${PUBLIC}/api/v1/voice/twilio/inbound`;
    const first = await twilioHook('/voice/twilio/inbound', params, url);
    const ref = /ref=(vrf_[A-Za-z0-9_.-]+)/.exec(first.text)![1];
    // The carrier retrying while the call rings: the same call's markup again.
    const retried = await twilioHook('/voice/twilio/inbound', params, url);
    expect(retried.text).to.contain('<ConversationRelay');
    const ws = t.api.baseUrl.replace(/^http/, 'ws') + '/voice/relay';
    const relay = await RelayClient.open(`${ws}?ref=${ref}`);
    relay.send({ type: 'setup', sessionId: 'VXreplay', callSid: params.CallSid, from: caller, to: e164, direction: 'inbound' });
    relay.send({ type: 'prompt', voicePrompt: 'Are you open today?', lang: 'en-US', last: true });
    expect((await relay.reply()).text).to.be.a('string').and.not.equal('');
    // The same reference again, and the retry's fresh one, while the first socket is open: refused.
    const again = await RelayClient.open(`${ws}?ref=${ref}`).then(() => null, (e: { status?: number }) => e);
    expect(again?.status).to.equal(401);
    const retriedRef = /ref=(vrf_[A-Za-z0-9_.-]+)/.exec(retried.text)![1];
    const second = await RelayClient.open(`${ws}?ref=${retriedRef}`).then(() => null, (e: { status?: number }) => e);
    expect(second?.status).to.equal(401);
    relay.hangUp();
    await relay.closedWith();
    // A replay of the signed webhook after the call: no reference, only the hang-up.
    const replayed = await twilioHook('/voice/twilio/inbound', params, url);
    expect(replayed.status).to.equal(200);
    expect(replayed.text).to.not.contain('vrf_');
    expect(replayed.text).to.contain('<Hangup/>');
    expect(await t.db('conversations').where({ org_id: org.orgId, agent_id: agentId, channel: 'voice' })).to.have.length(1);
  });
});
