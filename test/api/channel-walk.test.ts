/**
 * The channel walk: one published agent — a greeting, an outbound first line (`outboundGreeting`), the playbook
 * `reserve` started by its trigger phrase, whose say lines use the booking skill's output variables (one with a blank
 * placeholder, not said), and a warm transfer — walked through every channel on the real HTTP server, asserting what
 * the person reads or hears on each, line by line, and what the operator finds afterwards:
 * chat (REST), `POST /chat/completions` (the official `openai` client), the web widget (publishable key and session
 * token), an inbound text (the sandbox carrier's signed callback), an inbound call over ConversationRelay (the sandbox
 * caller), an outbound call of a launched campaign on the worker as `npm start` composes it (the outbound first line
 * heard; attempt, call and conversation linked both ways; `GET /conversations?campaignId=`), and a warm transfer on
 * the loopback Twilio (the whisper requested on the dialed child leg by `ParentCallSid` speaks the summary).
 * docs/api-notes.md "Conversations", "Widget", "Agents"; docs/voice.md; docs/sms.md.
 */
import crypto from 'node:crypto';
import { expect } from 'chai';
import OpenAI from 'openai';
import { CONFIRMATION, createBookingAgent, useBookingEndpoint } from './booking-fixtures';
import { importContactList, noonZone, phone } from './outbound-fixtures';
import { postCallback, textingNumber } from './sms-fixtures';
import { startTestApi, type TestApi } from '../helpers/api';
import { serviceWorkflowBundle, testTemporal } from '../helpers/temporal';
import { until } from '../helpers/wait';
import { TwilioStub, twimlAttr } from '../providers/twilioStub';
import { sandboxInventory } from '../../providers/telephony/sandbox';
import { placeSandboxCall, RelayClient } from '../../providers/telephony/sandboxCaller';
import { stopSandboxDispatchers } from '../../providers/carrier/sandbox';
import { SANDBOX_CALLEE_SCRIPT } from '../../activities/voice';
import { genericReply } from '../../providers/llm/sandboxReplies';
import { createLogger } from '../../runtime';
import { startWorker, type RunningWorker } from '../../worker';

const GREETING = 'Hello, Acme Bistro here. How can I help?';
const OUTBOUND = 'Hi, this is Acme Bistro calling to confirm your visit.';
/** The playbook's trigger phrase, and a message that holds it without naming the playbook. */
const TRIGGER = 'table for tonight';
const ASK = 'Do you have a table for tonight?';
const TRANSFER = '+12065550199';
/** What the agent says as it hands a call to a person (services/conversations/skills.ts, the `transfer_call` skill). */
const HANDOFF_LINE = 'Transferring you to a member of our team now.';
const SITE = 'https://bistro.example.com';
const TWILIO_SID = `AC${crypto.randomBytes(16).toString('hex')}`;
const TWILIO_TOKEN = crypto.randomBytes(16).toString('hex');

/** `speaker: text` of every line of a conversation's transcript (`GET /conversations/{id}/transcript`). */
async function transcript(t: TestApi, key: string, conversationId: string): Promise<string[]> {
  const res = await t.call('GET', `/conversations/${conversationId}/transcript`, { key });
  expect(res.status, res.text).to.equal(200);
  return res.body.data.messages.map((m: { speaker: string; text: string }) => `${m.speaker}: ${m.text}`);
}

describe('the channel walk: one agent on every channel', function () {
  this.timeout(120_000);
  const booking = useBookingEndpoint();
  let t: TestApi;
  let worker: RunningWorker;
  let stub: TwilioStub;
  let org: { orgId: string; key: string; keyId: string };
  let agentId: string;
  let ours: string;
  let numberId: string;

  before(async function () {
    this.timeout(180_000);
    t = await startTestApi('walk', { twilioAuthToken: TWILIO_TOKEN, rateLimitPoints: 1_000_000 }, { temporal: true, providers: { skillHttp: booking.skillHttp() } });
    process.env.SANDBOX_CALLBACK_URL = `${t.api.baseUrl}/sms/provider-callbacks/sandbox`;
    // The worker as npm start and `npm run start:worker` build it (worker.ts), its sandbox calls reaching this API.
    const { address } = await testTemporal();
    const config = { ...t.config, publicBaseUrl: new URL(t.api.baseUrl).origin };
    worker = await startWorker({ address, namespace: 'default', taskQueue: t.taskQueue, db: t.db, config, logger: createLogger('silent'), workflowBundle: await serviceWorkflowBundle() });
    stub = await new TwilioStub(TWILIO_SID, TWILIO_TOKEN).start();
    org = await t.org('Acme Bistro');
    agentId = await createBookingAgent(t, org, booking.endpoint().url, {
      agent: { name: 'Bistro desk', greeting: GREETING, outboundGreeting: OUTBOUND },
      playbook: { triggerPhrases: [TRIGGER] },
      skills: [{ name: 'transfer_to_human', type: 'transfer_call', description: 'Transfers to a person', config: { phoneNumber: TRANSFER } }],
    });
    ours = sandboxInventory('415')[1].e164;
    numberId = await textingNumber(t, org, agentId, ours);
  });
  after(async () => {
    stopSandboxDispatchers();
    delete process.env.SANDBOX_CALLBACK_URL;
    await worker?.stop();
    await stub?.stop();
    await t?.close();
  });

  it('chat (REST): the greeting, then the trigger phrase starts the playbook and the confirmation is read', async () => {
    const s = await t.call('POST', '/chat/sessions', { key: org.key, json: { agentId } });
    expect(s.status, s.text).to.equal(201);
    expect(s.body.data.greeting.content).to.equal(GREETING);
    const id = s.body.data.session.id as string;
    const res = await t.call('POST', `/chat/sessions/${id}/messages`, { key: org.key, json: { content: ASK } });
    expect(res.status, res.text).to.equal(200);
    expect(res.body.data.reply.content).to.equal(CONFIRMATION);
    expect(res.body.data.receipt.playbook).to.include({ name: 'reserve' });
    expect(await transcript(t, org.key, id)).to.deep.equal([`agent: ${GREETING}`, `user: ${ASK}`, `agent: ${CONFIRMATION}`]);
  });

  it('chat completions (openai client): the answer is the confirmation', async () => {
    const client = new OpenAI({ apiKey: org.key, baseURL: t.api.baseUrl, maxRetries: 0 });
    const res = await client.chat.completions.create({ model: agentId, messages: [{ role: 'user', content: ASK }] });
    expect(res.choices.map((c) => c.message.content)).to.deep.equal([CONFIRMATION]);
    expect(await transcript(t, org.key, res.id.slice('chatcmpl-'.length))).to.deep.equal([`user: ${ASK}`, `agent: ${CONFIRMATION}`]);
  });

  it('web widget: the page reads the greeting and the confirmation, and sees only the conversation', async () => {
    const pk = await t.call('POST', '/publishable-keys', { key: org.key, json: { name: 'bistro site', agentId, allowedOrigins: [SITE] } });
    expect(pk.status, pk.text).to.equal(201);
    const started = await t.call('POST', '/chat/widget/sessions', { headers: { authorization: `Bearer ${pk.body.data.key}`, origin: SITE }, json: {} });
    expect(started.status, started.text).to.equal(201);
    expect(started.body.data.greeting.content).to.equal(GREETING);
    const { session, sessionToken } = started.body.data;
    const page = { authorization: `Bearer ${sessionToken}`, origin: SITE };
    const res = await t.call('POST', `/chat/sessions/${session.id}/messages`, { headers: page, json: { content: ASK } });
    expect(res.status, res.text).to.equal(200);
    expect(res.body.data.reply.content).to.equal(CONFIRMATION);
    const read = await t.call('GET', `/chat/sessions/${session.id}`, { headers: page });
    expect(read.body.data.messages.map((m: { role: string; content: string }) => `${m.role}: ${m.content}`)).to.deep.equal([`assistant: ${GREETING}`, `user: ${ASK}`, `assistant: ${CONFIRMATION}`]);
    expect(read.body.data.session).to.include({ channel: 'web' });
    expect(read.body.data.session.variables).to.deep.equal({});
  });

  it('inbound text: the texter reads the confirmation as the reply', async () => {
    const texter = '+12125550177';
    const providerId = `SMin${crypto.randomBytes(6).toString('hex')}`;
    const res = await postCallback(t, { type: 'message.inbound', id: providerId, from: texter, to: ours, text: ASK });
    expect(res.status, res.text).to.equal(200);
    const inbound = await t.db('sms_messages').where({ provider_message_id: providerId }).first();
    const reply = await until(async () => t.db('sms_messages').where({ org_id: org.orgId, reply_to: inbound.id }).first(), 30_000, 'the reply');
    expect(reply).to.include({ body: CONFIRMATION, to_e164: texter, from_e164: ours });
    const thread = await until(async () => inbound.conversation_id ?? (await t.db('sms_messages').where({ id: inbound.id }).first()).conversation_id, 10_000, 'the thread');
    expect(await transcript(t, org.key, thread)).to.deep.equal([`user: ${ASK}`, `agent: ${CONFIRMATION}`]);
  });

  it('inbound call over ConversationRelay: the caller hears the greeting and the confirmation', async () => {
    const caller = '+12065550123';
    const rec = await placeSandboxCall({ baseUrl: t.api.baseUrl, from: caller, to: ours, script: [{ say: ASK }] });
    expect(rec.webhookStatus).to.equal(200);
    expect(rec.lines).to.deep.equal([
      { who: 'agent', text: GREETING },
      { who: 'caller', text: ASK },
      { who: 'agent', text: CONFIRMATION },
    ]);
    const callId = /name="callId" value="(call_[A-Za-z0-9]+)"/.exec(rec.markup)![1];
    const call = await until(async () => ((c) => (c?.status === 'completed' && c.conversationId ? c : undefined))((await t.call('GET', `/calls/${callId}`, { key: org.key })).body.data), 20_000, 'the completed call');
    expect(call).to.include({ direction: 'inbound', from: caller, to: ours });
    expect(await transcript(t, org.key, call.conversationId)).to.deep.equal([`agent: ${GREETING}`, `user: ${ASK}`, `agent: ${CONFIRMATION}`]);
  });

  it("outbound call of a launched campaign: the callee hears the outbound first line; attempt, call and conversation are linked both ways and listed by campaign with their messages", async () => {
    const contact = phone('212', 7, '0001'); // sandbox: answered
    const list = await importContactList(t.api.baseUrl, org.key, `phone,time_zone\n${contact},${await noonZone()}`, { name: 'Tonight' });
    expect(list.import.status).to.equal('ready');
    const created = await t.call('POST', '/campaigns', { key: org.key, json: { name: 'Confirmations', agentId, callerIdNumberId: numberId, contactListId: list.id, purpose: 'informational' } });
    expect(created.status, created.text).to.equal(201);
    const campaignId = created.body.data.id as string;
    expect((await t.call('POST', `/campaigns/${campaignId}/launch`, { key: org.key })).status).to.equal(200);
    await until(async () => ((await t.call('GET', `/campaigns/${campaignId}`, { key: org.key })).body.data.status === 'completed' ? true : undefined), 60_000, 'the campaign to complete');

    const attempts = (await t.call('GET', `/campaigns/${campaignId}/attempts`, { key: org.key })).body.data.items;
    expect(attempts).to.have.length(1);
    const attempt = attempts[0];
    expect(attempt).to.include({ status: 'answered' });
    expect(attempt.callId).to.match(/^call_/);
    expect(attempt.conversationId).to.match(/^cnv_/);
    const call = (await t.call('GET', `/calls/${attempt.callId}`, { key: org.key })).body.data;
    expect(call).to.include({ direction: 'outbound', to: contact, attemptId: attempt.id, campaignId, conversationId: attempt.conversationId });

    const listed = (await t.call('GET', `/conversations?campaignId=${campaignId}`, { key: org.key })).body.data.items;
    expect(listed.map((c: { id: string }) => c.id)).to.deep.equal([attempt.conversationId]);
    expect(listed[0]).to.include({ campaignId, channel: 'voice' });
    const lines = await transcript(t, org.key, attempt.conversationId);
    expect(listed[0].messageCount).to.equal(lines.length);
    // The outbound first line, not the inbound greeting; then the sandbox callee's lines, each answered by the sandbox
    // model's documented generic reply (no trigger phrase in them, so the playbook does not start).
    expect(lines).to.deep.equal([
      `agent: ${OUTBOUND}`,
      ...SANDBOX_CALLEE_SCRIPT.flatMap((l) => [`user: ${l}`, `agent: ${genericReply([{ role: 'user', content: l }])}`]),
    ]);
  });

  it('warm transfer on Twilio: the caller hears the greeting, the agent hands off, and the whisper on the child leg (ParentCallSid) speaks the summary', async () => {
    const caller = '+12065550177';
    const ring = await stub.incomingCall(`${t.api.baseUrl}/voice/twilio/inbound`, caller, ours);
    expect(ring.status).to.equal(200);
    expect(twimlAttr(ring.text, 'ConversationRelay', 'welcomeGreeting')).to.equal(GREETING);
    const relay = await RelayClient.open(twimlAttr(ring.text, 'ConversationRelay', 'url'));
    relay.send({ type: 'setup', sessionId: `VX${ring.callSid}`, callSid: ring.callSid, from: caller, to: ours, direction: 'inbound', callStatus: 'in-progress', customParameters: {} });
    const ask = 'Please transfer to human now';
    relay.send({ type: 'prompt', voicePrompt: ask, lang: 'en-US', last: true });
    const heard = await relay.reply();
    await relay.closedWith();
    expect(heard.text).to.equal(HANDOFF_LINE);
    expect(JSON.parse(relay.end!.handoffData!)).to.include({ reason: 'transferred', destination: TRANSFER });

    const call = { callSid: ring.callSid, from: caller, to: ours };
    const dial = await stub.connectAction(twimlAttr(ring.text, 'Connect', 'action'), call, relay.end!.handoffData!);
    expect(dial.status).to.equal(200);
    expect(dial.text).to.contain(`>${TRANSFER}</Number>`);
    const child = await stub.dialedLeg(twimlAttr(dial.text, 'Number', 'url'), call, TRANSFER);
    expect(child.status).to.equal(200);
    expect(child.text).to.equal(`<?xml version="1.0" encoding="UTF-8"?><Response><Say language="en-US">A caller at ${caller} asked for help: &quot;${ask}&quot;</Say></Response>`);
    const ended = await stub.dialAction(twimlAttr(dial.text, 'Dial', 'action'), call, { callSid: child.callSid, status: 'completed', seconds: 30 });
    expect(ended.text).to.contain('<Hangup/>');
    const stored = await t.db('voice_calls').where({ provider: 'twilio', provider_call_id: ring.callSid }).first();
    expect(await transcript(t, org.key, stored.conversation_id)).to.deep.equal([`agent: ${GREETING}`, `user: ${ask}`, `agent: ${HANDOFF_LINE}`]);
  });
});
