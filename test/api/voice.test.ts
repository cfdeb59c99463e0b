/**
 * Phone calls over the ConversationRelay protocol (docs/voice.md), end to end on a real socket,
 * Postgres and the sandbox LLM: the sandbox caller rings the signed voice webhook, opens the relay
 * WebSocket the markup names and plays the carrier's part — greeting, a knowledge answer with its
 * source, a playbook gathering a 4-digit PIN by keypad, a barge-in whose transcript keeps only what was
 * heard, a transfer with `handoffData`, a hang-up mid-turn — plus malformed frames, the refusals, the
 * signature checks of both carriers and isolation between organizations.
 */
import crypto from 'node:crypto';
import { expect } from 'chai';
import { QUICK_CLIENT, startTestApi, type TestApi } from '../helpers/api';
import { chain, publishDraft } from './agents-fixtures';
import { createKnowledgeActivities } from '../../activities/knowledge';
import { createSource } from '../../db/repositories/knowledge';
import { createLogger } from '../../runtime';
import { allMessages, getConversation } from '../../db/repositories/conversations';
import { createVoiceCall, getVoiceCall } from '../../db/repositories/voiceCalls';
import { sandboxInventory } from '../../providers/telephony/sandbox';
import { placeSandboxCall, postSandboxWebhook, RelayClient } from '../../providers/telephony/sandboxCaller';
import { twilioSignature } from '../../domain/voice/signatures';
import { signRelayReference } from '../../services/voice/reference';
import { REFUSALS } from '../../services/voice/calls';
import { until } from '../helpers/wait';
import { runCli } from '../../cli';
import { ingestInline } from '../helpers/knowledge';

const TWILIO_TOKEN = 'twilio-test-auth-token';
const TELNYX_KEYS = crypto.generateKeyPairSync('ed25519');
const TELNYX_PUBLIC = (TELNYX_KEYS.publicKey.export({ format: 'der', type: 'spki' }) as Buffer).subarray(12).toString('base64');

describe('voice calls over ConversationRelay (sandbox caller, sandbox LLM)', () => {
  let t: TestApi;
  let org: { orgId: string; key: string; keyId: string };
  let areaCodes = 0;

  const newAgent = async (json: Record<string, unknown>) => {
    const res = await t.call('POST', '/agents', { key: org.key, json: { voiceId: 'voice_ava', ...json } });
    expect(res.status, res.text).to.equal(201);
    return res.body.data.id as string;
  };
  /** Buys a fresh sandbox number and assigns it to the agent (null: unassigned). */
  const numberFor = async (agentId: string | null, o = org): Promise<string> => {
    const e164 = sandboxInventory(['206', '415', '312', '646'][Math.floor(areaCodes / 5)])[areaCodes++ % 5].e164;
    const p = await t.call('POST', '/numbers/purchase', { key: o.key, json: { e164 } });
    expect(p.status, p.text).to.equal(200);
    if (agentId) expect((await t.call('POST', `/numbers/${p.body.data.id}/assign`, { key: o.key, json: { agentId } })).status).to.equal(200);
    return e164;
  };
  const callerNumber = '+12065550123';
  /** The stored conversation of a call once the relay closed it, with its messages. */
  const transcriptOf = async (callId: string) => {
    let conversationId: string | null = null;
    await until(async () => {
      const call = await getVoiceCall(t.db, org.orgId, callId);
      conversationId = call?.conversationId ?? null;
      if (!conversationId) return null;
      return (await getConversation(t.db, org.orgId, conversationId))?.status === 'ended' ? true : null;
    }, 10_000, `call ${callId} ended`);
    const conversation = (await getConversation(t.db, org.orgId, conversationId!))!;
    const messages = (await allMessages(t.db, org.orgId, conversationId!)).filter((m) => (m.role === 'user' || m.role === 'assistant') && m.content !== null && !m.toolCalls);
    return { conversation, lines: messages.map((m) => `${m.role}: ${m.content}`) };
  };
  const callIdOf = (markup: string) => /name="callId" value="(call_[A-Za-z0-9]+)"/.exec(markup)![1];

  before(async () => {
    t = await startTestApi('voice', { ...QUICK_CLIENT, twilioAuthToken: TWILIO_TOKEN, telnyxPublicKey: TELNYX_PUBLIC });
    org = await t.org('Voice');
  });
  after(async () => {
    await t?.close();
  });

  it('answers an assigned number with ConversationRelay markup (greeting, language, DTMF, barge-in) and converses: a knowledge answer with its source', async () => {
    const agentId = await newAgent({ name: 'Front desk', greeting: 'Thanks for calling Acme, how can I help?', dtmf: { enabled: true } });
    const source = await createSource(t.db, org.orgId, { agentId, kind: 'text', name: 'Opening hours', text: 'We are open Monday to Friday from 8am to 6pm. Parking is free behind the building.' }, async () => undefined);
    const acts = createKnowledgeActivities({ db: t.db, config: t.config, logger: createLogger('silent') });
    const ref = { orgId: org.orgId, sourceId: source.id };
    expect((await ingestInline(acts, ref)).status).to.equal('ready');
    await publishDraft(t.db, org, agentId, 'v1');
    const to = await numberFor(agentId);

    const rec = await placeSandboxCall({ baseUrl: t.api.baseUrl, from: callerNumber, to, script: [{ say: 'When are you open on Monday?' }] });
    expect(rec.webhookStatus).to.equal(200);
    expect(rec.markup).to.match(/^<\?xml[^>]*\?><Response><Connect action="[^"]+\/voice\/sandbox\/relay-ended"><ConversationRelay url="ws:\/\/[^"]+\/api\/v1\/voice\/relay\?ref=vrf_/);
    expect(rec.markup).to.contain('welcomeGreeting="Thanks for calling Acme, how can I help?"').and.contain('language="en-US"').and.contain('dtmfDetection="true"').and.contain('interruptible="any"');
    expect(rec.lines[0]).to.deep.equal({ who: 'agent', text: 'Thanks for calling Acme, how can I help?' });
    expect(rec.lines[2].who).to.equal('agent');
    expect(rec.lines[2].text).to.contain('8am to 6pm').and.not.contain('(source:');
    expect(rec.close?.code).to.equal(1000);

    const callId = callIdOf(rec.markup);
    const { conversation, lines } = await transcriptOf(callId);
    expect(conversation).to.include({ channel: 'voice', mode: 'published', agentId, endReason: 'ended_by_user' });
    expect(conversation.metadata).to.include({ callId, callSid: rec.callSid, from: callerNumber, to });
    expect(lines[0]).to.equal('assistant: Thanks for calling Acme, how can I help?');
    expect(lines[1]).to.equal('user: When are you open on Monday?');
    expect(lines[2]).to.contain('8am to 6pm').and.not.contain('(source:');
    const call = (await getVoiceCall(t.db, org.orgId, callId))!;
    // The sandbox carrier's status callbacks (in-progress, completed) completed the call inline (no Temporal here).
    expect(call).to.include({ agentId, provider: 'sandbox', providerCallId: rec.callSid, direction: 'inbound', from: callerNumber, to, status: 'completed', conversationId: conversation.id });
    const minutes = await t.db('usage_entries').where({ org_id: org.orgId, kind: 'voice_minutes' }).whereRaw(`details->>'callId' = ?`, [callId]);
    expect(minutes.map((e) => [e.quantity, e.amount_cents])).to.deep.equal([[1, 2]]);
  });

  it('gathers a 4-digit PIN by keypad through a playbook (terminator #), and the inter-digit timeout completes an input too', async () => {
    const agentId = await newAgent({ name: 'Verifier', greeting: 'Hello.', dtmf: { enabled: true, terminator: '#', interDigitTimeoutMs: 500, maxDigits: 8 } });
    const pb = await t.call('POST', `/agents/${agentId}/playbooks`, {
      key: org.key,
      json: {
        name: 'verify_account',
        graph: {
          nodes: [
            { id: 'start', type: 'start' },
            { id: 'ask_pin', type: 'ask', prompt: 'Please enter your 4-digit PIN, then press pound.', gathers: 'pin' },
            { id: 'ask_menu', type: 'ask', prompt: 'Thanks. Press 1 for billing or 2 for support.', gathers: 'choice' },
            { id: 'done', type: 'say', prompt: 'PIN {{pin}} noted, option {{choice}}.' },
            { id: 'end', type: 'end' },
          ],
          edges: chain('start', 'ask_pin', 'ask_menu', 'done', 'end'),
        },
      },
    });
    expect(pb.status, pb.text).to.equal(201);
    await publishDraft(t.db, org, agentId, 'v1');
    const to = await numberFor(agentId);
    const rec = await placeSandboxCall({ baseUrl: t.api.baseUrl, from: callerNumber, to, script: [{ say: 'Please verify account access' }, { digits: '4321#' }, { digits: '2' }] });
    expect(rec.lines.map((l) => l.text)).to.deep.equal([
      'Hello.',
      'Please verify account access',
      'Please enter your 4-digit PIN, then press pound.',
      '[keys 4321#]',
      'Thanks. Press 1 for billing or 2 for support.',
      '[keys 2]',
      'PIN 4321 noted, option 2.',
    ]);
    const { lines } = await transcriptOf(callIdOf(rec.markup));
    expect(lines).to.include('user: 4321').and.include('user: 2');
  });

  it('on a barge-in stops the reply and stores only the part the caller heard', async () => {
    const agentId = await newAgent({ name: 'Talker', greeting: 'Hi there.' });
    await publishDraft(t.db, org, agentId, 'v1');
    const to = await numberFor(agentId);
    const long = 'Tell me everything you know about the weather, the tides, the moon and the history of lighthouses on this coast';
    const rec = await placeSandboxCall({ baseUrl: t.api.baseUrl, from: callerNumber, to, script: [{ say: long, bargeInAfterChars: 12 }, { say: 'Thanks' }] });
    const heard = rec.lines[2].text.replace(/ \[interrupted\]$/, '');
    expect(heard.length).to.equal(12);
    const { lines } = await transcriptOf(callIdOf(rec.markup));
    expect(lines[2]).to.equal(`assistant: ${heard.trim()}`);
    expect(lines[3]).to.equal('user: Thanks');
  });

  it('a transfer_call skill ends the relay with handoffData naming the destination; the Connect action then dials it', async () => {
    const agentId = await newAgent({ name: 'Router', greeting: 'Hello.' });
    const skill = await t.call('POST', `/agents/${agentId}/skills`, { key: org.key, json: { name: 'transfer_to_human', type: 'transfer_call', description: 'Transfers to a person', config: { phoneNumber: '+12065550199' } } });
    expect(skill.status, skill.text).to.equal(201);
    await publishDraft(t.db, org, agentId, 'v1');
    const to = await numberFor(agentId);
    const rec = await placeSandboxCall({ baseUrl: t.api.baseUrl, from: callerNumber, to, script: [{ say: 'Please transfer to human now' }, { say: 'never sent' }] });
    expect(rec.endedByAgent).to.equal(true);
    expect(rec.handoff).to.include({ reason: 'transferred', destination: '+12065550199' });
    expect(rec.close?.code).to.equal(1000);
    expect(rec.lines.map((l) => l.text)).to.not.include('never sent');
    const { conversation } = await transcriptOf(callIdOf(rec.markup));
    expect(conversation.endReason).to.equal('transferred');
    // The post-conversation analysis of a voice call (docs/api-notes.md "Conversation analysis").
    const analysis = await until(async () => {
      const res = await t.call('GET', `/conversations/${conversation.id}/transcript`, { key: org.key });
      return res.body.data.analysis?.status === 'completed' ? res.body.data.analysis : undefined;
    }, 10_000, 'the analysis');
    expect(analysis).to.include({ outcome: 'transferred' });
    expect(analysis.summary).to.match(/^The user wrote 1 message\(s\), first: "Please transfer to human now"/);
    const action = await postSandboxWebhook(`${t.api.baseUrl}/voice/sandbox/relay-ended`, { CallSid: rec.callSid, HandoffData: JSON.stringify(rec.handoff) });
    expect(action.status).to.equal(200);
    const callId = callIdOf(rec.markup);
    expect(action.text).to.match(new RegExp(`<Dial timeout="25" action="[^"]+/voice/sandbox/dial-ended\\?call=${callId}" method="POST"><Number url="[^"]+/voice/sandbox/whisper\\?call=${callId}">\\+12065550199</Number></Dial>`));
    const transferred = await t.db('events').where({ org_id: org.orgId, type: 'call.transferred' });
    expect(transferred.map((e) => e.data)).to.deep.equal([{ callId, agentId, conversationId: conversation.id, destinationId: null, destination: '+12065550199', reason: 'transfer_call', summary: `A caller at ${callerNumber} asked for help: "Please transfer to human now"` }]);
    const whisper = await postSandboxWebhook(`${t.api.baseUrl}/voice/sandbox/whisper?call=${callId}`, { CallSid: rec.callSid });
    expect(whisper.text).to.contain(`<Say language="en-US">A caller at ${callerNumber} asked for help: &quot;Please transfer to human now&quot;</Say>`);
    const hangup = await postSandboxWebhook(`${t.api.baseUrl}/voice/sandbox/relay-ended`, { CallSid: rec.callSid });
    expect(hangup.text).to.contain('<Hangup/>');
  });

  it('a hang-up mid-turn stores the turn and closes the conversation; other calls are untouched', async () => {
    const agentId = await newAgent({ name: 'Patient', greeting: 'Hello.' });
    await publishDraft(t.db, org, agentId, 'v1');
    const to = await numberFor(agentId);
    const [cut, whole] = await Promise.all([
      placeSandboxCall({ baseUrl: t.api.baseUrl, from: callerNumber, to, script: [{ say: 'Tell me a long story about ships', hangUpMidTurn: true }] }),
      placeSandboxCall({ baseUrl: t.api.baseUrl, from: '+12065550124', to, script: [{ say: 'Hello?' }, { say: 'Goodbye' }] }),
    ]);
    const a = await transcriptOf(callIdOf(cut.markup));
    expect(a.conversation.endReason).to.equal('ended_by_user');
    expect(a.lines[1]).to.equal('user: Tell me a long story about ships');
    const b = await transcriptOf(callIdOf(whole.markup));
    expect(b.lines.filter((l) => l.startsWith('user:'))).to.deep.equal(['user: Hello?', 'user: Goodbye']);
  });

  it('closes the socket with a reason on a malformed frame, and refuses a socket without a valid reference', async () => {
    const agentId = await newAgent({ name: 'Strict', greeting: 'Hello.' });
    await publishDraft(t.db, org, agentId, 'v1');
    const agent = (await t.call('GET', `/agents/${agentId}`, { key: org.key })).body.data;
    // A reference opens its call's relay once (docs/security.md "Carrier webhooks and relay references"): one call each.
    const refFor = async () => {
      const call = await createVoiceCall(t.db, org.orgId, { agentId, versionId: agent.publishedVersionId, provider: 'sandbox', providerCallId: `CAstrict${crypto.randomBytes(6).toString('hex')}`, direction: 'inbound', from: callerNumber, to: '+12065550000', status: 'ringing' });
      return signRelayReference(t.db, { org: org.orgId, agt: agentId, ver: agent.publishedVersionId, call: call.id, grt: 1 });
    };
    const ws = t.api.baseUrl.replace(/^http/, 'ws') + '/voice/relay';
    for (const [frame, reason] of [
      ['not json', 'frame is not JSON'],
      [JSON.stringify({ type: 'prompt', voicePrompt: 'hi', last: true }), 'prompt before setup'],
      [JSON.stringify({ type: 'dance' }), 'unknown frame type "dance"'],
    ]) {
      const c = await RelayClient.open(`${ws}?ref=${await refFor()}`);
      c.send(frame);
      expect(await c.closedWith()).to.deep.equal({ code: frame === 'not json' || frame.includes('dance') ? 1007 : 1008, reason });
    }
    const ref = await refFor();
    const setupThenBad = await RelayClient.open(`${ws}?ref=${ref}`);
    setupThenBad.send({ type: 'setup', sessionId: 'VX1', callSid: 'CA1', from: callerNumber, to: '+12065550000' });
    expect((await setupThenBad.reply()).text).to.equal('Hello.');
    setupThenBad.send({ type: 'dtmf', digit: 'x' });
    expect((await setupThenBad.closedWith()).reason).to.equal('dtmf.digit must be one of 0-9, *, #, A-D');
    // The same reference a second time (a replay, or a second socket) is refused, as are forged ones.
    for (const bad of ['', `?ref=${ref}`, '?ref=vrf_forged.aaaa', `?ref=${ref.slice(0, -2)}xx`, '?token=tt_nope.nope']) {
      const err = await RelayClient.open(`${ws}${bad}`).then(
        () => null,
        (e: Error & { status?: number }) => e,
      );
      expect(err?.status, bad).to.equal(401);
    }
  });

  it("never opens another organization's agent with a reference: a reference claiming another organization does not verify", async () => {
    const other = await t.org('Other');
    const theirs = (await t.call('POST', '/agents', { key: other.key, json: { name: 'Theirs', greeting: 'Secret greeting.' } })).body.data.id as string;
    const v = await publishDraft(t.db, other, theirs, 'v1');
    const versionId = (v as { version?: { id: string } }).version?.id ?? (await t.call('GET', `/agents/${theirs}`, { key: other.key })).body.data.publishedVersionId;
    const ws = t.api.baseUrl.replace(/^http/, 'ws') + '/voice/relay';
    // Signed by our organization, naming their agent: the agent is looked up in our organization only.
    const call = await createVoiceCall(t.db, org.orgId, { agentId: null, versionId: null, provider: 'sandbox', providerCallId: `CAother${crypto.randomBytes(6).toString('hex')}`, direction: 'inbound', from: callerNumber, to: '+12065550000', status: 'ringing' });
    const ours = await signRelayReference(t.db, { org: org.orgId, agt: theirs, ver: versionId, call: call.id, grt: 1 });
    const c = await RelayClient.open(`${ws}?ref=${ours}`);
    c.send({ type: 'setup', sessionId: 'VX2', callSid: 'CA2', from: callerNumber, to: '+12065550000' });
    expect(await c.closedWith()).to.deep.equal({ code: 1008, reason: 'agent_not_found' });
    expect(c.frames).to.deep.equal([]);
    // Their claims with our signature: refused at the upgrade.
    const [body] = ours.slice(4).split('.');
    const claims = JSON.parse(Buffer.from(body, 'base64url').toString());
    const forged = `vrf_${Buffer.from(JSON.stringify({ ...claims, org: other.orgId })).toString('base64url')}.${ours.split('.')[1]}`;
    const err = await RelayClient.open(`${ws}?ref=${forged}`).then(() => null, (e: { status?: number }) => e);
    expect(err?.status).to.equal(401);
  });

  it('refuses an unassigned number and an agent never published with a spoken refusal and a recorded failed call, never a 5xx', async () => {
    const unassigned = await numberFor(null);
    const a = await placeSandboxCall({ baseUrl: t.api.baseUrl, from: callerNumber, to: unassigned, script: [] });
    expect(a.webhookStatus).to.equal(200);
    expect(a.refusal).to.equal(REFUSALS.number_unassigned);
    expect(a.markup).to.contain('<Hangup/>');
    const draftOnly = await newAgent({ name: 'Unpublished' });
    const b = await placeSandboxCall({ baseUrl: t.api.baseUrl, from: callerNumber, to: await numberFor(draftOnly), script: [] });
    expect(b.refusal).to.equal(REFUSALS.agent_not_published);
    const rows = await t.db('voice_calls').where({ org_id: org.orgId }).whereIn('provider_call_id', [a.callSid, b.callSid]).orderBy('failure_reason');
    expect(rows.map((r) => [r.status, r.failure_reason, r.agent_id])).to.deep.equal([
      ['failed', 'agent_not_published', draftOnly],
      ['failed', 'number_unassigned', null],
    ]);
    const nobody = await placeSandboxCall({ baseUrl: t.api.baseUrl, from: callerNumber, to: '+19995550000', script: [] });
    expect(nobody.refusal).to.equal(REFUSALS.number_not_in_service);
  });

  it('places a sandbox call from the CLI (`calls place`) and prints the conversation', async () => {
    const agentId = await newAgent({ name: 'Demo', greeting: 'Demo line, hello!' });
    await publishDraft(t.db, org, agentId, 'v1');
    const to = await numberFor(agentId);
    const out: string[] = [];
    const code = await runCli(['calls', 'place', '--to', to, '--url', t.api.baseUrl, 'Hello there'], (l) => out.push(l), (l) => out.push(l));
    expect(code, out.join('\n')).to.equal(0);
    expect(out[0]).to.equal('agent : Demo line, hello!');
    expect(out[1]).to.equal('caller: Hello there');
    expect(out[2]).to.match(/^agent : ./);
    expect(out[3]).to.match(/^call CAsandbox\w+ ended \(caller hung up\)$/);
    const refused: string[] = [];
    expect(await runCli(['calls', 'place', '--to', '+19995550003', '--url', t.api.baseUrl], (l) => refused.push(l))).to.equal(1);
    expect(refused[0]).to.equal(`refused (200): ${REFUSALS.number_not_in_service}`);
  });

  it('a voice talk token opens the relay as a browser test session: draft or published as the token says', async () => {
    const agentId = await newAgent({ name: 'Tester', greeting: 'Draft hello.' });
    const ws = t.api.baseUrl.replace(/^http/, 'ws') + '/voice/relay';
    const draft = await t.call('POST', `/agents/${agentId}/talk-token`, { key: org.key, json: { draftMode: true, channel: 'voice' } });
    expect(draft.status, draft.text).to.equal(201);
    const c = await RelayClient.open(`${ws}?token=${draft.body.data.token}`);
    c.send({ type: 'setup', sessionId: 'VXweb', callSid: 'web', from: '', to: '' });
    expect((await c.reply()).text).to.equal('Draft hello.');
    c.send({ type: 'prompt', voicePrompt: 'Hello?', last: true });
    expect((await c.reply()).text).to.have.length.greaterThan(0);
    c.hangUp();
    await c.closedWith();
    const stored = await until(async () => (await t.db('conversations').where({ org_id: org.orgId, agent_id: agentId }).first()) ?? null, 5000, 'the session');
    expect(stored).to.include({ channel: 'voice', mode: 'draft' });
    const chat = await t.call('POST', `/agents/${agentId}/talk-token`, { key: org.key, json: { draftMode: true, channel: 'chat' } });
    const refused = await RelayClient.open(`${ws}?token=${chat.body.data.token}`).then(() => null, (e: { status?: number }) => e);
    expect(refused?.status, 'a chat token does not open the voice relay').to.equal(401);
  });

  describe('webhook signatures', () => {
    const form = (p: Record<string, string>) => new URLSearchParams(p).toString();
    const inbound = (provider: string) => `${t.api.baseUrl}/voice/${provider}/inbound`;
    const params = () => ({ CallSid: `CA${crypto.randomUUID().replace(/-/g, '')}`, From: callerNumber, To: '+19995550001', CallStatus: 'ringing' });
    const post = (provider: string, body: string, headers: Record<string, string>) =>
      fetch(inbound(provider), { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers }, body });

    it('Twilio: a good X-Twilio-Signature is answered; a forged one, one over other parameters, or none is 403 and nothing is recorded', async () => {
      const p = params();
      const good = await post('twilio', form(p), { 'x-twilio-signature': twilioSignature(TWILIO_TOKEN, inbound('twilio'), p) });
      expect(good.status).to.equal(200);
      expect(await good.text()).to.contain('<Say');
      const q = params();
      const forged = await post('twilio', form(q), { 'x-twilio-signature': twilioSignature('wrong-token', inbound('twilio'), q) });
      expect(forged.status).to.equal(403);
      expect(((await forged.json()) as { code: string }).code).to.equal('invalid_signature');
      const replayed = await post('twilio', form({ ...q, To: '+19995550002' }), { 'x-twilio-signature': twilioSignature(TWILIO_TOKEN, inbound('twilio'), q) });
      expect(replayed.status).to.equal(403);
      expect((await post('twilio', form(q), {})).status).to.equal(403);
      expect(await t.db('voice_calls').where({ provider_call_id: q.CallSid }).first()).to.equal(undefined);
    });

    it("Twilio: an answered campaign call (org, agent and campaign in the signed URL) is connected to the campaign's agent, which greets first; the URL's ids are checked", async () => {
      const agentId = await newAgent({ name: 'Campaign caller', greeting: 'Hi, this is Acme calling about your visit.' });
      await publishDraft(t.db, org, agentId, 'v1');
      const url = `${inbound('twilio')}?org=${org.orgId}&agt=${agentId}&cmp=cmp_webhooktest`;
      const p = { ...params(), From: '+19995550001', To: '+12125550101', Direction: 'outbound-api', CallStatus: 'in-progress' };
      const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-twilio-signature': twilioSignature(TWILIO_TOKEN, url, p) }, body: form(p) });
      expect(res.status).to.equal(200);
      const markup = await res.text();
      expect(markup).to.match(/<Connect action="[^"]+\/voice\/twilio\/relay-ended"><ConversationRelay url="ws:\/\/[^"]+\/api\/v1\/voice\/relay\?ref=vrf_/);
      expect(markup).not.to.contain('welcomeGreeting');
      const call = await t.db('voice_calls').where({ provider: 'twilio', provider_call_id: p.CallSid }).first();
      expect(call).to.include({ org_id: org.orgId, direction: 'outbound', campaign_id: 'cmp_webhooktest', agent_id: agentId, status: 'answered', from_e164: '+19995550001', to_e164: '+12125550101' });
      const relayUrl = /ConversationRelay url="([^"]+)"/.exec(markup)![1].replace(/&amp;/g, '&');
      const client = await RelayClient.open(relayUrl);
      client.send({ type: 'setup', sessionId: 'VXcampaign', callSid: p.CallSid, from: p.From, to: p.To, direction: 'outbound-api', callStatus: 'in-progress', customParameters: { callId: call.id } });
      expect((await client.reply()).text).to.equal('Hi, this is Acme calling about your visit.');
      client.hangUp();
      await client.closedWith();

      // The URL's ids are the dial's, covered by the signature: a malformed one is a 400 naming it.
      const bad = `${inbound('twilio')}?org=${org.orgId}&agt=nope&cmp=cmp_webhooktest`;
      const q = params();
      const refused = await fetch(bad, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-twilio-signature': twilioSignature(TWILIO_TOKEN, bad, q) }, body: form(q) });
      expect(refused.status).to.equal(400);
      expect(((await refused.json()) as { errors: { field: string }[] }).errors[0].field).to.equal('agt');
    });

    it('Telnyx signs the body only: campaign parameters in its URL are ignored and the call is answered as an inbound one', async () => {
      const agentId = await newAgent({ name: 'Not reachable by URL', greeting: 'Hello from a forged URL.' });
      await publishDraft(t.db, org, agentId, 'v1');
      const now = Math.floor(Date.now() / 1000);
      const p = params();
      const body = form(p);
      const signature = crypto.sign(null, Buffer.from(`${now}|${body}`), TELNYX_KEYS.privateKey).toString('base64');
      const res = await fetch(`${inbound('telnyx')}?org=${org.orgId}&agt=${agentId}&cmp=cmp_forged`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', 'telnyx-timestamp': String(now), 'telnyx-signature-ed25519': signature },
        body,
      });
      expect(res.status).to.equal(200);
      expect(await res.text()).to.contain(REFUSALS.number_not_in_service);
      expect(await t.db('voice_calls').where({ campaign_id: 'cmp_forged' }).first()).to.equal(undefined);
    });

    it('Telnyx: a good Ed25519 signature over timestamp|body is answered; a forged or stale one is 403 and nothing is recorded', async () => {
      const sign = (ts: number, body: string) => crypto.sign(null, Buffer.from(`${ts}|${body}`), TELNYX_KEYS.privateKey).toString('base64');
      const now = Math.floor(Date.now() / 1000);
      const goodBody = form(params());
      const good = await post('telnyx', goodBody, { 'telnyx-timestamp': String(now), 'telnyx-signature-ed25519': sign(now, goodBody) });
      expect(good.status).to.equal(200);
      const p = params();
      const body = form(p);
      const forged = await post('telnyx', body, { 'telnyx-timestamp': String(now), 'telnyx-signature-ed25519': sign(now, body + 'x') });
      expect(forged.status).to.equal(403);
      const stale = await post('telnyx', body, { 'telnyx-timestamp': String(now - 600), 'telnyx-signature-ed25519': sign(now - 600, body) });
      expect(stale.status).to.equal(403);
      expect(((await stale.json()) as { detail: string }).detail).to.match(/5 minutes/);
      expect(await t.db('voice_calls').where({ provider_call_id: p.CallSid }).first()).to.equal(undefined);
    });
  });
});
