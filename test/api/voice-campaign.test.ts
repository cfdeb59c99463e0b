/**
 * Campaign calls converse (docs/voice.md): an answered dial of an informational campaign is
 * connected by the sandbox carrier to the relay with the campaign's agent, which greets first; the
 * sandbox callee answers and hangs up. The dial's record, the call and its conversation are linked, and
 * the call's minutes are charged once. The dial step runs as the activity the dialer workflow calls.
 * The same over Telnyx (loopback stub): the answered call is handed to the agent with the Call Control
 * command `conversation_relay_start`, and the stub, playing Telnyx's relay, hears the agent greet first;
 * every call webhook is signed as Telnyx signs it.
 */
import { expect } from 'chai';
import { noonZone, phone, runningCampaign, useDialerEnv } from './outbound-fixtures';
import { publishDraft } from './agents-fixtures';
import { createOutboundActivities } from '../../activities/outbound';
import { SANDBOX_CALLEE_SCRIPT } from '../../activities/voice';
import { allMessages, getConversation } from '../../db/repositories/conversations';
import { createLogger } from '../../runtime';
import { TelnyxStub } from '../providers/telnyxStub';
import { startWorker } from '../../worker';
import { serviceWorkflowBundle, testTemporal } from '../helpers/temporal';
import { until } from '../helpers/wait';

describe('campaign calls converse over the relay (sandbox carrier)', function () {
  this.timeout(60_000);
  const { env, dialer } = useDialerEnv('voice_campaign');

  it('connects an answered dial to the agent, greeting first, and links the dial, the call and the transcript', async () => {
    const agent = await env.call(dialer.key, 'POST', '/agents', { name: 'Reminder agent', voiceId: 'voice_ava', greeting: 'Hi, this is Acme with a reminder about your visit tomorrow.' });
    expect(agent.status).to.equal(201);
    const agentId = agent.body.data.id as string;
    await publishDraft(env.db, { orgId: dialer.orgId, keyId: 'key_test' }, agentId, 'v1');
    const contact = phone('212', 1, '0001'); // sandbox: answered
    const campaignId = await runningCampaign(env, dialer, agentId, contact);
    const acts = createOutboundActivities({ db: env.db, config: env.config, logger: createLogger('silent') }, { campaignRelay: { apiBaseUrl: env.api.baseUrl } });
    const now = '2026-06-02T17:00:00.000Z'; // 1pm in New York: inside the calling window
    const claim = await acts.outboundClaimAttempts({ orgId: dialer.orgId, campaignId, token: 'voice-1', now, limit: 5 });
    expect(claim.claimed).to.have.length(1);
    expect(await acts.outboundDial({ orgId: dialer.orgId, attemptId: claim.claimed[0].id, now })).to.deep.equal({ status: 'answered', outcome: 'answered' });

    const call = await env.db('voice_calls').where({ org_id: dialer.orgId, campaign_id: campaignId }).first();
    expect(call).to.include({ direction: 'outbound', status: 'completed', to_e164: contact, agent_id: agentId });
    const conversation = (await getConversation(env.db, dialer.orgId, call.conversation_id))!;
    expect(conversation).to.include({ channel: 'voice', status: 'ended', agentId });
    expect(conversation.metadata).to.include({ campaignId, callId: call.id, to: contact });
    const lines = (await allMessages(env.db, dialer.orgId, conversation.id)).filter((m) => m.content && !m.toolCalls).map((m) => `${m.role}: ${m.content}`);
    expect(lines[0]).to.equal('assistant: Hi, this is Acme with a reminder about your visit tomorrow.');
    expect(lines[1]).to.equal(`user: ${SANDBOX_CALLEE_SCRIPT[0]}`);
    expect(lines.filter((l) => l.startsWith('user:'))).to.deep.equal(SANDBOX_CALLEE_SCRIPT.map((l) => `user: ${l}`));
    const dialRecord = await env.db('conversations').where({ org_id: dialer.orgId, mode: 'none', campaign_id: campaignId }).first();
    expect(dialRecord.metadata).to.include({ conversationId: conversation.id, providerCallId: call.provider_call_id });
    const minutes = await env.db('usage_entries').where({ org_id: dialer.orgId, kind: 'voice_minutes' });
    expect(minutes).to.have.length(1);
    expect(Number(minutes[0].quantity)).to.equal(Math.ceil(dialRecord.duration_seconds / 60));
  });
});

describe('campaign calls converse on the worker as npm start composes it (sandbox carrier)', function () {
  this.timeout(120_000);
  const { env, dialer } = useDialerEnv('voice_campaign_worker');

  it("a launched campaign's answered dial holds a voice conversation with the greeting and the callee's turns, its duration, minutes charged once and the analysis", async () => {
    const agent = await env.call(dialer.key, 'POST', '/agents', {
      name: 'Launched reminder agent',
      voiceId: 'voice_ava',
      greeting: 'Thanks for calling Acme, how can I help you today?',
      outboundGreeting: 'Hi, this is Acme with a reminder about your cleaning.',
    });
    const agentId = agent.body.data.id as string;
    await publishDraft(env.db, { orgId: dialer.orgId, keyId: 'key_test' }, agentId, 'v1');
    const contact = phone('212', 7, '0001'); // sandbox: answered
    const list = await env.importList(dialer.key, `phone,time_zone\n${contact},${await noonZone()}`);

    // The fixture's worker is replaced by worker.ts's startWorker with the service's own activities
    // (createActivities), as npm start and npm run start:worker build it; PUBLIC_BASE_URL is this API.
    await env.stopWorker();
    const { address } = await testTemporal();
    const config = { ...env.config, publicBaseUrl: new URL(env.api.baseUrl).origin };
    const worker = await startWorker({ address, namespace: 'default', taskQueue: env.taskQueue, db: env.db, config, logger: createLogger('silent'), workflowBundle: await serviceWorkflowBundle() });
    try {
      const created = await env.call(dialer.key, 'POST', '/campaigns', { name: 'Launched reminders', agentId, callerIdNumberId: dialer.numberId, contactListId: list.id, purpose: 'informational' });
      expect(created.status).to.equal(201);
      const campaignId = created.body.data.id as string;
      expect((await env.call(dialer.key, 'POST', `/campaigns/${campaignId}/launch`)).status).to.equal(200);
      await until(async () => ((await env.call(dialer.key, 'GET', `/campaigns/${campaignId}`)).body.data.status === 'completed' ? true : undefined), 60_000, 'the campaign to complete');

      const call = await env.db('voice_calls').where({ org_id: dialer.orgId, campaign_id: campaignId }).first();
      expect(call).to.include({ direction: 'outbound', status: 'completed', to_e164: contact, agent_id: agentId });
      expect(call.duration_seconds).to.be.greaterThan(0);
      const conversation = (await getConversation(env.db, dialer.orgId, call.conversation_id))!;
      expect(conversation).to.include({ channel: 'voice', status: 'ended', agentId });
      const lines = (await allMessages(env.db, dialer.orgId, conversation.id)).filter((m) => m.content && !m.toolCalls).map((m) => `${m.role}: ${m.content}`);
      expect(lines[0]).to.equal('assistant: Hi, this is Acme with a reminder about your cleaning.');
      expect(lines.filter((l) => l.startsWith('user:')).length).to.be.greaterThan(0);
      const attempt = (await env.call(dialer.key, 'GET', `/campaigns/${campaignId}/attempts`)).body.data.items[0];
      expect(attempt, JSON.stringify(attempt)).to.have.property('status', 'answered');
      // Linked both ways: the attempt names its call and conversation, the call its attempt.
      expect(attempt).to.include({ callId: call.id, conversationId: conversation.id });
      expect((await env.call(dialer.key, 'GET', `/calls/${call.id}`)).body.data).to.include({ attemptId: attempt.id, campaignId, conversationId: conversation.id });
      // Where an operator looks: the campaign's conversations are the one the call held (no empty dial record beside it).
      const analysed = await until(async () => ((c) => (c?.analysis && c.analysis.status !== 'running' ? c : undefined))((await env.call(dialer.key, 'GET', `/conversations?campaignId=${campaignId}`)).body.data.items[0]), 20_000, 'the analysed conversation');
      const listed = (await env.call(dialer.key, 'GET', `/conversations?campaignId=${campaignId}`)).body.data.items;
      expect(listed.map((c: { id: string }) => c.id)).to.deep.equal([conversation.id]);
      expect(analysed).to.include({ campaignId, channel: 'voice' });
      expect(analysed.messageCount).to.be.greaterThan(1);
      const transcript = (await env.call(dialer.key, 'GET', `/conversations/${conversation.id}/transcript`)).body.data;
      expect(transcript.messages[0].text).to.equal('Hi, this is Acme with a reminder about your cleaning.');
      const minutes = await env.db('usage_entries').where({ org_id: dialer.orgId, kind: 'voice_minutes' }).whereRaw("details->>'callId' = ?", [call.id]);
      expect(minutes).to.have.length(1);
      expect(Number(minutes[0].quantity)).to.equal(Math.ceil(call.duration_seconds / 60));
      const analysis = await until(async () => (await env.db('conversation_analyses').where({ org_id: dialer.orgId, conversation_id: conversation.id }).first()) ?? undefined, 20_000, 'the analysis');
      expect(analysis).to.have.property('status');
    } finally {
      await worker.stop();
    }
  });
});

describe('campaign calls converse over the relay (Telnyx Call Control, loopback stub)', function () {
  this.timeout(60_000);
  const { env, dialer } = useDialerEnv('voice_campaign_telnyx');
  const apiKey = 'KEYtelnyxrelay';
  let stub: TelnyxStub;
  const saved: Record<string, string | undefined> = {};
  before(async () => {
    stub = await new TelnyxStub(apiKey).start();
    stub.relayCalls = true;
    const vars = { TELNYX_API_KEY: apiKey, TELNYX_BASE_URL: stub.apiBase, TELNYX_PUBLIC_KEY: stub.keys.publicKey, TELNYX_CONNECTION_ID: '1494404757140276705', TELEPHONY_PROVIDER: 'telnyx' };
    for (const [k, v] of Object.entries(vars)) {
      saved[k] = process.env[k];
      process.env[k] = v;
    }
  });
  after(async () => {
    await stub?.stop();
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  });

  it('hands the answered call to the agent with conversation_relay_start; the agent greets first and the call is completed and charged once', async () => {
    const agent = await env.call(dialer.key, 'POST', '/agents', { name: 'Telnyx reminder agent', voiceId: 'voice_ava', greeting: 'Hi, this is Acme calling about your visit.' });
    const agentId = agent.body.data.id as string;
    await publishDraft(env.db, { orgId: dialer.orgId, keyId: 'key_test' }, agentId, 'v1');
    const contact = phone('212', 1, '0002');
    const campaignId = await runningCampaign(env, dialer, agentId, contact);
    // Telnyx calls back PUBLIC_BASE_URL: this API's own origin.
    const config = { ...env.config, publicBaseUrl: new URL(env.api.baseUrl).origin };
    // The adapter and its campaign-call handoff as the worker composes them (TELEPHONY_PROVIDER=telnyx).
    const acts = createOutboundActivities({ db: env.db, config, logger: createLogger('silent') });
    const now = '2026-06-02T17:00:00.000Z';
    const claim = await acts.outboundClaimAttempts({ orgId: dialer.orgId, campaignId, token: 'telnyx-1', now, limit: 5 });
    expect(await acts.outboundDial({ orgId: dialer.orgId, attemptId: claim.claimed[0].id, now })).to.deep.equal({ status: 'answered', outcome: 'answered' });
    await stub.settled();

    expect(stub.calls[0]).to.include({ answering_machine_detection: 'detect', to: contact });
    expect(stub.relays).to.have.length(1);
    const [relay] = stub.relays;
    expect(relay.error).to.equal(undefined);
    expect(relay.callControlId).to.equal(stub.calls[0].call_control_id);
    expect(relay.command.url).to.match(/^ws:\/\/127\.0\.0\.1:\d+\/api\/v1\/voice\/relay\?ref=/);
    expect(relay.command).to.include({ language: 'en-US', command_id: `relay:${claim.claimed[0].id}:1` });
    expect(relay.heard[0]).to.equal('Hi, this is Acme calling about your visit.');
    expect(relay.heard).to.have.length(2);

    const call = await env.db('voice_calls').where({ org_id: dialer.orgId, campaign_id: campaignId }).first();
    expect(call).to.include({ provider: 'telnyx', provider_call_id: relay.callControlId, direction: 'outbound', status: 'completed', agent_id: agentId, duration_seconds: 42 });
    const lines = (await allMessages(env.db, dialer.orgId, call.conversation_id)).filter((m) => m.content && !m.toolCalls).map((m) => `${m.role}: ${m.content}`);
    expect(lines.slice(0, 2)).to.deep.equal(['assistant: Hi, this is Acme calling about your visit.', `user: ${stub.relayCallee[0]}`]);
    const dialRecord = await env.db('conversations').where({ org_id: dialer.orgId, mode: 'none', campaign_id: campaignId }).first();
    expect(dialRecord.metadata).to.include({ conversationId: call.conversation_id });
    const minutes = await env.db('usage_entries').where({ org_id: dialer.orgId, kind: 'voice_minutes' }).whereRaw(`details->>'callId' = ?`, [call.id]);
    expect(minutes.map((m) => Number(m.quantity))).to.deep.equal([1]);
    expect(stub.problems).to.deep.equal([]);
    expect(stub.deliveries.filter((d) => d.status !== 200)).to.deep.equal([]);
  });

  it("transfers an escalated call with the Call Control command to the organization's destination, with call.transferred", async () => {
    const agent = await env.call(dialer.key, 'POST', '/agents', { name: 'Telnyx escalating agent', voiceId: 'voice_ava', greeting: 'Hi, this is Acme Dental calling.' });
    const agentId = agent.body.data.id as string;
    const guard = await env.call(dialer.key, 'PUT', `/agents/${agentId}/guardrails`, { blockedTopics: [], forbiddenPhrases: [], redactPii: true, profanityFilter: true, escalateOn: ['emergency'], maxConversationMinutes: null });
    expect(guard.status).to.equal(200);
    await publishDraft(env.db, { orgId: dialer.orgId, keyId: 'key_test' }, agentId, 'v1');
    const dest = await env.call(dialer.key, 'POST', '/escalation-destinations', { name: 'Front desk line', kind: 'phone', address: '+12065550111', timeZone: 'UTC' });
    expect(dest.status).to.equal(201);
    const contact = phone('212', 2, '0003');
    const campaignId = await runningCampaign(env, dialer, agentId, contact);
    const config = { ...env.config, publicBaseUrl: new URL(env.api.baseUrl).origin };
    const acts = createOutboundActivities({ db: env.db, config, logger: createLogger('silent') });
    const now = '2026-06-02T17:00:00.000Z';
    const claim = await acts.outboundClaimAttempts({ orgId: dialer.orgId, campaignId, token: 'telnyx-2', now, limit: 5 });
    const callee = stub.relayCallee;
    stub.relayCallee = ['I have a dental emergency'];
    try {
      await acts.outboundDial({ orgId: dialer.orgId, attemptId: claim.claimed[0].id, now });
      await stub.settled();
    } finally {
      stub.relayCallee = callee;
    }
    const call = await env.db('voice_calls').where({ org_id: dialer.orgId, campaign_id: campaignId }).first();
    const transfer = await until(async () => stub.transfers.find((x) => x.callControlId === call.provider_call_id), 10_000, 'the transfer command');
    expect(transfer.command).to.include({ to: '+12065550111', command_id: `transfer:${call.id}` });
    const event = await until(async () => env.db('events').where({ org_id: dialer.orgId, type: 'call.transferred' }).whereRaw("data->>'callId' = ?", [call.id]).first(), 10_000, 'call.transferred');
    expect(event.data).to.include({ destination: '+12065550111', destinationId: dest.body.data.id, reason: 'escalation' });
    expect(event.data.summary).to.contain('I have a dental emergency');
    expect(stub.problems).to.deep.equal([]);
  });
});
