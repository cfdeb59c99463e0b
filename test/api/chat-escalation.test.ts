/**
 * Escalation that reaches a person off the phone too (docs/api-notes.md "Conversations": escalation; docs/voice.md
 * "Escalation"): the `escalate` tool offered only when the organization has an escalation destination, the sandbox's
 * key-word rule, a chat ended `escalated` whose reply says how the person will be reached (by phone, e-mail, a
 * webhook's follow-up, by text on SMS), a playbook `escalate` node, the `conversation.escalated` event with the
 * destination and a summary (voice conversations too), and the pre-publish report's facts per number. Real HTTP on a
 * real Postgres with the sandbox LLM.
 */
import { expect } from 'chai';
import { useTestApi } from '../helpers/api';
import { chain, publishDraft } from './agents-fixtures';
import { createLlm } from '../../providers/llm';
import { createSkillHttpClient } from '../../providers/http/request';
import { matchEscalation } from '../../providers/llm/sandboxTools';
import { sandboxInventory } from '../../providers/telephony/sandbox';
import { sendMessage, startConversation } from '../../services/conversations/service';
import { escalateTool, reachLine, summarizeForEscalation } from '../../domain/conversations/escalation';

describe('escalation in chat, the widget and SMS', () => {
  const t = useTestApi('chat_escalation');
  const llm = createLlm({});
  const deps = () => ({ db: t.db, llm, http: createSkillHttpClient() });

  /** An organization with a published agent and the given escalation destinations. */
  async function orgWith(destinations: Record<string, unknown>[], agent: Record<string, unknown> = {}) {
    const org = await t.org('Escalating Co');
    const ids: string[] = [];
    for (const d of destinations) {
      const r = await t.call('POST', '/escalation-destinations', { key: org.key, json: { timeZone: 'UTC', ...d } });
      expect(r.status, r.text).to.equal(201);
      ids.push(r.body.data.id);
    }
    const created = await t.call('POST', '/agents', { key: org.key, json: { name: 'Front desk', voiceId: 'voice_ava', greeting: 'Hello!', ...agent } });
    expect(created.status, created.text).to.equal(201);
    const agentId = created.body.data.id as string;
    return { ...org, agentId, destinationIds: ids };
  }
  const publish = async (o: { orgId: string; keyId: string; agentId: string }, key: string) => expect((await publishDraft(t.db, o, o.agentId, key)).kind).to.equal('published');
  const session = async (o: { key: string; agentId: string }, variables: Record<string, string> = {}) => {
    const r = await t.call('POST', '/chat/sessions', { key: o.key, json: { agentId: o.agentId, variables } });
    expect(r.status, r.text).to.equal(201);
    return r.body.data.session.id as string;
  };
  const say = (o: { key: string }, id: string, content: string) => t.call('POST', `/chat/sessions/${id}/messages`, { key: o.key, json: { content } });
  const escalatedEvents = (orgId: string, id: string) =>
    t.db('events').where({ org_id: orgId, type: 'conversation.escalated' }).whereRaw(`data->>'conversationId' = ?`, [id]).select('data');

  it('offers the escalate tool only when the organization has a destination, and calls it for "speak to a person"', async () => {
    const none = await orgWith([]);
    await publish(none, 'n1');
    const id = await session(none);
    const plain = await say(none, id, 'I need to speak to a person');
    expect(plain.status, plain.text).to.equal(200);
    expect(plain.body.data.session.status).to.equal('active');
    expect(plain.body.data.receipt.toolCalls).to.deep.equal([]);

    const o = await orgWith([{ name: 'Front desk', kind: 'phone', address: '+14155550123' }]);
    await publish(o, 'p1');
    const chat = await session(o, { phone: '+12125550199' });
    expect((await say(o, chat, 'What are your hours?')).body.data.session.status).to.equal('active');
    const res = await say(o, chat, 'I need to speak to a person');
    expect(res.status, res.text).to.equal(200);
    expect(res.body.data.session).to.include({ status: 'ended', endReason: 'escalated' });
    expect(res.body.data.reply.content).to.equal("I'll connect you with a member of our team. A member of our team will call you at +12125550199.");
    expect(res.body.data.receipt.toolCalls[0]).to.include({ skill: 'escalate', type: 'escalate', source: 'model' });
    // Exactly one agent line in the turn: the reach line is part of the reply.
    expect(res.body.data.messages.filter((m: { role: string; content: string | null; toolCalls?: unknown }) => m.role === 'assistant' && m.content && !m.toolCalls)).to.have.length(1);

    const events = await escalatedEvents(o.orgId, chat);
    expect(events).to.have.length(1);
    expect(events[0].data).to.deep.equal({
      conversationId: chat,
      agentId: o.agentId,
      channel: 'chat',
      destinationId: o.destinationIds[0],
      destination: { kind: 'phone', address: '+14155550123' },
      reason: 'escalate_tool',
      summary: 'A caller at +12125550199 asked for help: "What are your hours? / I need to speak to a person"',
    });
    const after = await say(o, chat, 'Hello?');
    expect(after.status).to.equal(409);
    expect(after.body.code).to.equal('conversation_ended');
  });

  it('says how the person will be reached for each kind of destination, and on SMS by text at this number', async () => {
    const mail = await orgWith([{ name: 'Support inbox', kind: 'email', address: 'help@acme.test' }]);
    await publish(mail, 'm1');
    const byMail = await say(mail, await session(mail, { email: 'ada@example.com' }), 'Can I talk to a human?');
    expect(byMail.body.data.reply.content).to.equal("I'll connect you with a member of our team. A member of our team will follow up by e-mail at ada@example.com.");

    const hook = await orgWith([{ name: 'Helpdesk', kind: 'webhook', address: 'https://hooks.acme.test/escalate' }]);
    await t.call('PUT', `/agents/${hook.agentId}/guardrails`, { key: hook.key, json: { blockedTopics: [], forbiddenPhrases: [], redactPii: true, profanityFilter: true, escalateOn: ['lawyer'], maxConversationMinutes: null } });
    await publish(hook, 'h1');
    const hookChat = await session(hook);
    const viaGuardrail = await say(hook, hookChat, 'I want a lawyer');
    expect(viaGuardrail.body.data.session).to.include({ status: 'ended', endReason: 'escalated' });
    expect(viaGuardrail.body.data.reply.content).to.equal("I'll connect you with a member of our team who can help with that. A member of our team will follow up with you as soon as possible.");
    expect((await escalatedEvents(hook.orgId, hookChat))[0].data).to.include({ reason: 'escalateOn', destinationId: hook.destinationIds[0] });

    // A phone destination without the person's number to call: a follow-up, not a promise of a call.
    const phone = await orgWith([{ name: 'Desk', kind: 'phone', address: '+14155550124' }]);
    await publish(phone, 'ph1');
    expect((await say(phone, await session(phone), 'Get me a representative')).body.data.reply.content).to.equal(
      "I'll connect you with a member of our team. A member of our team will follow up with you as soon as possible.",
    );

    // SMS: the reply says the team answers by text, the event names the destination and the texter.
    const sms = await startConversation(t.db, phone.orgId, { agentId: phone.agentId, channel: 'sms', keyId: null, counterpart: '+12125550177', seed: [] });
    const out = await sendMessage(deps(), sms.conversation, 'This is an emergency, I need a manager');
    expect(out.conversation).to.include({ status: 'ended', endReason: 'escalated' });
    expect(out.reply!.content).to.equal("I'll connect you with a member of our team. A member of our team will reply by text at this number.");
    expect((await escalatedEvents(phone.orgId, sms.conversation.id))[0].data).to.include({ channel: 'sms', destinationId: phone.destinationIds[0], summary: 'A caller at +12125550177 asked for help: "This is an emergency, I need a manager"' });
  });

  it('emits conversation.escalated for voice conversations too, with the spoken line only', async () => {
    const o = await orgWith([{ name: 'Inbox', kind: 'email', address: 'help@acme.test' }, { name: 'Desk', kind: 'phone', address: '+14155550125' }]);
    await publish(o, 'v1');
    const call = await startConversation(t.db, o.orgId, { agentId: o.agentId, channel: 'voice', keyId: null, counterpart: '+12125550166' });
    const out = await sendMessage(deps(), call.conversation, 'Let me speak to a real person');
    expect(out.conversation).to.include({ status: 'ended', endReason: 'escalated' });
    expect(out.reply!.content).to.equal("I'll connect you with a member of our team.");
    // On a call the destination is the first phone number or SIP URI (what the relay's end dials).
    expect((await escalatedEvents(o.orgId, call.conversation.id))[0].data).to.include({ channel: 'voice', destinationId: o.destinationIds[1], reason: 'escalate_tool' });
  });

  it('escalates from a playbook escalate node, and refuses an edge leaving one', async () => {
    const o = await orgWith([{ name: 'Desk', kind: 'phone', address: '+14155550126' }]);
    const graph = {
      nodes: [
        { id: 'start', type: 'start' },
        { id: 'ask_issue', type: 'ask', prompt: 'What is the problem?', gathers: 'issue' },
        { id: 'handoff', type: 'escalate', prompt: 'Thanks, I am passing this to our billing team.' },
      ],
      edges: chain('start', 'ask_issue', 'handoff'),
    };
    const pb = await t.call('POST', `/agents/${o.agentId}/playbooks`, { key: o.key, json: { name: 'billing_dispute', graph } });
    expect(pb.status, pb.text).to.equal(201);
    const bad = await t.call('PUT', `/agents/${o.agentId}/playbooks/${pb.body.data.id}/graph`, {
      key: o.key,
      json: { nodes: [...graph.nodes, { id: 'end', type: 'end' }], edges: [...graph.edges, { from: 'handoff', to: 'end' }] },
    });
    expect(bad.status).to.equal(400);
    expect(bad.body.errors.map((e: { field: string }) => e.field)).to.include('graph.nodes[handoff]');
    await publish(o, 'pb1');
    const id = await session(o, { caller_phone: '+12125550155' });
    expect((await say(o, id, 'I have a billing dispute')).body.data.reply.content).to.equal('What is the problem?');
    const res = await say(o, id, 'I was charged twice');
    expect(res.body.data.session).to.include({ status: 'ended', endReason: 'escalated' });
    expect(res.body.data.reply.content).to.equal('Thanks, I am passing this to our billing team. A member of our team will call you at +12125550155.');
    expect((await escalatedEvents(o.orgId, id))[0].data).to.include({ reason: 'playbook_node' });
  });

  it('lists per number the hours, the after-hours action, the recording notice, the escalation destinations and the carrier voice', async () => {
    const o = await orgWith([
      { name: 'Inbox', kind: 'email', address: 'help@acme.test' },
      { name: 'On call', kind: 'phone', address: '+14155550127' },
    ]);
    const e164 = sandboxInventory('646')[7].e164;
    const numberId = (await t.call('POST', '/numbers/purchase', { key: o.key, json: { e164 } })).body.data.id;
    expect((await t.call('POST', `/numbers/${numberId}/assign`, { key: o.key, json: { agentId: o.agentId } })).status).to.equal(200);
    const put = await t.call('PUT', `/numbers/${numberId}/settings`, {
      key: o.key,
      json: {
        voicemail: { enabled: true, greeting: null, transcribe: true, maxSeconds: 90 },
        recordingConsent: { mode: 'announce', announcement: null },
        businessHours: { timeZone: 'America/New_York', hours: [{ day: 'mon', open: '09:00', close: '17:00' }], afterHours: 'escalation', escalationDestinationId: o.destinationIds[1] },
      },
    });
    expect(put.status, put.text).to.equal(200);
    const report = (await t.call('GET', `/agents/${o.agentId}/prepublish-report`, { key: o.key })).body.data;
    expect(report.numbers).to.have.length(1);
    const n = report.numbers[0];
    expect(n).to.include({ numberId, e164, smsEnabled: false, afterHours: 'escalation', recordingNotice: 'This call may be recorded for quality and training purposes.' });
    expect(n.businessHours).to.deep.equal({ timeZone: 'America/New_York', hours: [{ day: 'mon', open: '09:00', close: '17:00' }] });
    expect(n.afterHoursAction).to.equal('Outside business hours calls are transferred to On call (+14155550127); busy or unanswered, the caller leaves a voicemail');
    expect(n.carrierSpeech).to.deep.equal({ carrier: 'twilio', language: 'en-US', voice: 'Joanna-Neural', ttsProvider: 'Amazon', transcriptionProvider: 'Deepgram' });
    expect(n.escalation.map((d: { destinationId: string }) => d.destinationId)).to.deep.equal([o.destinationIds[1]]);
    expect(n.escalation[0].usedWhen[0]).to.equal('Outside business hours (America/New_York), every call');
    expect(n.escalation[0].usedWhen[1]).to.match(/^When the agent escalates a call \(the model calls the escalate tool/);
    expect(n.statements[1]).to.equal(`${e164}: calls are recorded; callers first hear "This call may be recorded for quality and training purposes."`);
    expect(report.escalation.toolOffered).to.equal(true);
    expect(report.escalation.destinations.map((d: { destinationId: string }) => d.destinationId)).to.deep.equal(o.destinationIds);
    expect(report.escalation.statements).to.include('In chat and the widget, with an e-mail destination, the person is told: "A member of our team will follow up by e-mail."');
    expect(report.conversationLimits).to.deep.equal({ idleTimeoutSeconds: 1800, smsIdleTimeoutSeconds: 86_400, smsMaxSegments: 3 });

    const lonely = await orgWith([], {});
    await t.call('PUT', `/agents/${lonely.agentId}/guardrails`, { key: lonely.key, json: { blockedTopics: [], forbiddenPhrases: [], redactPii: true, profanityFilter: true, escalateOn: ['lawyer'], maxConversationMinutes: null } });
    const r2 = (await t.call('GET', `/agents/${lonely.agentId}/prepublish-report`, { key: lonely.key })).body.data;
    expect(r2.numbers).to.deep.equal([]);
    expect(r2.escalation).to.include({ toolOffered: false });
    expect(r2.warnings.map((w: { code: string }) => w.code)).to.include('escalation_without_destination');
  });

  it('words the reach line and the summary, and the sandbox hears who asks for a person (pure)', () => {
    const dest = (kind: string) => ({ id: 'esc_1', kind, address: 'x' });
    expect(reachLine('voice', { destination: dest('phone'), phone: '+1', email: null })).to.equal(null);
    expect(reachLine('chat', { destination: null, phone: '+12125550100', email: null })).to.equal(null);
    expect(reachLine('web', { destination: dest('sip'), phone: '+12125550100', email: null })).to.equal('A member of our team will call you at +12125550100.');
    expect(reachLine('chat', { destination: dest('email'), phone: null, email: null })).to.equal('A member of our team will follow up by e-mail.');
    expect(reachLine('sms', { destination: dest('email'), phone: '+12125550100', email: null })).to.equal('A member of our team will reply by text at this number.');
    expect(summarizeForEscalation([], null)).to.equal('A customer asked to speak with a person.');
    expect(summarizeForEscalation(['a', 'b', 'c', 'd'], '+12125550100')).to.equal('A caller at +12125550100 asked for help: "b / c / d"');
    const tools = [escalateTool('chat')];
    for (const m of ['I need to speak to a person', 'get me a HUMAN', 'representative', 'I want your manager', 'this is an emergency']) expect(matchEscalation(m, tools), m).to.equal(tools[0]);
    for (const m of ['What time do you open?', 'the humanities building']) expect(matchEscalation(m, tools), m).to.equal(undefined);
    expect(matchEscalation('speak to a person', [])).to.equal(undefined);
  });
});
