/**
 * Skill outputs as conversation variables (docs/api-notes.md "Agents": playbook graphs): a skill's output member
 * keeps the name the skill declares (`bookingId` of `book_appointment` is `{{book_appointment_bookingId}}`, case
 * kept), and a `say` line whose placeholder has no value or a blank one is not said; on every channel — chat, an
 * SMS reply, a phone call over ConversationRelay and the web widget — over HTTP and Postgres with the skill's
 * endpoint on loopback.
 */
import crypto from 'node:crypto';
import { expect } from 'chai';
import { chain } from './agents-fixtures';
import { CONFIRMATION, createBookingAgent, RESERVE_GRAPH as graph, useBookingEndpoint } from './booking-fixtures';
import { postCallback, startSmsTestApi, textingNumber } from './sms-fixtures';
import type { TestApi } from '../helpers/api';
import { until } from '../helpers/wait';
import { sandboxInventory } from '../../providers/telephony/sandbox';
import { placeSandboxCall } from '../../providers/telephony/sandboxCaller';
import { stopSandboxDispatchers } from '../../providers/carrier/sandbox';
import { allMessages, getConversation } from '../../db/repositories/conversations';
import { outputVariables } from '../../domain/conversations/runtime';
import { missingPlaceholders, startPlaybook } from '../../domain/conversations/playbook';

describe('skill outputs as variables (pure)', () => {
  it('keeps the case of each output key and treats a blank value as missing', () => {
    expect(outputVariables('book_appointment', { bookingId: 'BK-7', startTime: 'x', 'bad-key': 1, nested: { a: 1 } })).to.deep.equal({
      book_appointment_bookingId: 'BK-7',
      book_appointment_startTime: 'x',
      book_appointment_nested: '{"a":1}',
    });
    expect(missingPlaceholders('{{a}} {{B_c}} {{d}}', { a: 'x', B_c: ' ', d: '' })).to.deep.equal(['B_c', 'd']);
    const vars = { book_appointment_bookingId: 'BK-7', book_appointment_status: 'confirmed', book_appointment_note: '' };
    const steps = startPlaybook({ ...graph, nodes: graph.nodes.filter((n) => n.type !== 'skill'), edges: chain('start', 'confirm', 'note', 'end') } as never, 'reserve', vars).steps;
    expect(steps).to.deep.equal([
      { type: 'say', node: 'confirm', text: CONFIRMATION },
      { type: 'skip', node: 'note', missing: ['book_appointment_note'] },
      { type: 'end', node: 'end' },
    ]);
  });
});

describe('skill outputs as variables on every channel', function () {
  this.timeout(60_000);
  let t: TestApi;
  const booking = useBookingEndpoint();
  const SITE = 'https://shop.example.com';

  before(async () => {
    t = await startSmsTestApi('pbvars', {}, { providers: { skillHttp: booking.skillHttp() } });
    process.env.SANDBOX_CALLBACK_URL = `${t.api.baseUrl}/sms/provider-callbacks/sandbox`;
  });
  after(async () => {
    stopSandboxDispatchers();
    delete process.env.SANDBOX_CALLBACK_URL;
    await t?.close();
  });

  /** An organization whose published agent has the skill `book_appointment` and the playbook `reserve`. */
  async function bookingAgent(name: string, agent: Record<string, unknown> = {}) {
    const org = await t.org(name);
    return { ...org, agentId: await createBookingAgent(t, org, booking.endpoint().url, { agent }) };
  }

  it('chat: {{book_appointment_bookingId}} is filled from the output `bookingId`, and the line with a blank placeholder is skipped', async () => {
    const o = await bookingAgent('Chat bookings');
    const s = await t.call('POST', '/chat/sessions', { key: o.key, json: { agentId: o.agentId } });
    const id = s.body.data.session.id as string;
    const res = await t.call('POST', `/chat/sessions/${id}/messages`, { key: o.key, json: { content: 'I would like to reserve, please' } });
    expect(res.status, res.text).to.equal(200);
    expect(res.body.data.reply.content).to.equal(CONFIRMATION);
    expect(res.body.data.receipt.playbook).to.include({ name: 'reserve' });
    expect(res.body.data.receipt.playbook.skipped).to.deep.equal(['note']);
    const session = await t.call('GET', `/chat/sessions/${id}`, { key: o.key });
    expect(session.body.data.session.variables).to.include({ book_appointment_bookingId: 'BK-7', book_appointment_status: 'confirmed' });
    expect(session.body.data.session.variables).to.not.have.property('book_appointment_bookingid');
  });

  it('SMS: the agent\'s reply text says the booking reference and not the blank note', async () => {
    const o = await bookingAgent('Text bookings');
    const ours = sandboxInventory('312')[3].e164;
    await textingNumber(t, o, o.agentId, ours);
    const providerId = `SMin${crypto.randomBytes(6).toString('hex')}`;
    const res = await postCallback(t, { type: 'message.inbound', id: providerId, from: '+12125550177', to: ours, text: 'Reserve for tonight' });
    expect(res.status, res.text).to.equal(200);
    const inbound = await t.db('sms_messages').where({ provider_message_id: providerId }).first();
    const reply = await until(async () => t.db('sms_messages').where({ org_id: o.orgId, reply_to: inbound.id }).first(), 30_000, 'the reply');
    expect(reply.body).to.equal(CONFIRMATION);
  });

  it('voice: the caller hears the booking reference over ConversationRelay and no line for the blank note', async () => {
    const o = await bookingAgent('Phone bookings', { greeting: 'Desk here, how can I help?' });
    const ours = sandboxInventory('206')[2].e164;
    const bought = await t.call('POST', '/numbers/purchase', { key: o.key, json: { e164: ours } });
    expect(bought.status, bought.text).to.equal(200);
    expect((await t.call('POST', `/numbers/${bought.body.data.id}/assign`, { key: o.key, json: { agentId: o.agentId } })).status).to.equal(200);
    const rec = await placeSandboxCall({ baseUrl: t.api.baseUrl, from: '+12065550123', to: ours, script: [{ say: 'I would like to reserve, please' }] });
    expect(rec.webhookStatus).to.equal(200);
    expect(rec.lines).to.deep.equal([
      { who: 'agent', text: 'Desk here, how can I help?' },
      { who: 'caller', text: 'I would like to reserve, please' },
      { who: 'agent', text: CONFIRMATION },
    ]);
    expect(rec.lines.map((l) => l.text).join(' ')).to.not.contain('Please note');
    const callId = /name="callId" value="(call_[A-Za-z0-9]+)"/.exec(rec.markup)![1];
    const conversationId = await until(async () => (await t.db('voice_calls').where({ id: callId }).first())?.conversation_id as string | null, 10_000, 'the call\'s conversation');
    const conversation = (await getConversation(t.db, o.orgId, conversationId))!;
    expect(conversation.variables).to.include({ book_appointment_bookingId: 'BK-7', book_appointment_status: 'confirmed' });
    expect(conversation.variables).to.not.have.property('book_appointment_bookingid');
    const said = (await allMessages(t.db, o.orgId, conversationId)).filter((m) => m.role === 'assistant' && m.content && !m.toolCalls).map((m) => m.content);
    expect(said).to.include(CONFIRMATION);
    expect(said.join(' ')).to.not.contain('Please note');
  });

  it('widget: the web session reads the booking reference and no line for the blank note', async () => {
    const o = await bookingAgent('Widget bookings', { greeting: 'Desk here, how can I help?' });
    const pk = await t.call('POST', '/publishable-keys', { key: o.key, json: { name: 'site', agentId: o.agentId, allowedOrigins: [SITE] } });
    expect(pk.status, pk.text).to.equal(201);
    const started = await t.call('POST', '/chat/widget/sessions', { headers: { authorization: `Bearer ${pk.body.data.key}`, origin: SITE }, json: {} });
    expect(started.status, started.text).to.equal(201);
    const { session, sessionToken } = started.body.data;
    const auth = { authorization: `Bearer ${sessionToken}`, origin: SITE };
    const res = await t.call('POST', `/chat/sessions/${session.id}/messages`, { headers: auth, json: { content: 'I would like to reserve, please' } });
    expect(res.status, res.text).to.equal(200);
    expect(res.body.data.reply.content).to.equal(CONFIRMATION);
    const read = await t.call('GET', `/chat/sessions/${session.id}`, { headers: auth });
    expect(read.status, read.text).to.equal(200);
    expect(read.body.data.messages.map((m: { role: string; content: string }) => `${m.role}: ${m.content}`)).to.deep.equal([
      'assistant: Desk here, how can I help?',
      'user: I would like to reserve, please',
      `assistant: ${CONFIRMATION}`,
    ]);
    // The page sees only the conversation (docs/api-notes.md "Widget"); the organization sees the variables as named.
    expect(read.body.data.session).to.include({ channel: 'web' });
    expect(read.body.data.session.variables).to.deep.equal({});
    const operator = await t.call('GET', `/chat/sessions/${session.id}`, { key: o.key });
    expect(operator.body.data.session.variables).to.include({ book_appointment_bookingId: 'BK-7', book_appointment_status: 'confirmed' });
    expect(operator.body.data.session.variables).to.not.have.property('book_appointment_bookingid');
  });
});
