/**
 * Skill outputs as conversation variables (docs/api-notes.md "Agents": playbook graphs): a skill's output member
 * keeps the name the skill declares (`bookingId` of `book_appointment` is `{{book_appointment_bookingId}}`, case
 * kept), and a `say` line whose placeholder has no value or a blank one is not said; on chat and on an SMS reply,
 * over HTTP and Postgres with the skill's endpoint on loopback.
 */
import crypto from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import { chain, publishDraft } from './agents-fixtures';
import { COMPLETE_BRAND, postCallback, startSmsTestApi } from './sms-fixtures';
import type { TestApi } from '../helpers/api';
import { until } from '../helpers/wait';
import { createSkillHttpClient } from '../../providers/http/request';
import { parseAllowList } from '../../domain/net/guard';
import { sandboxInventory } from '../../providers/telephony/sandbox';
import { stopSandboxDispatchers } from '../../providers/carrier/sandbox';
import { outputVariables } from '../../domain/conversations/runtime';
import { missingPlaceholders, startPlaybook } from '../../domain/conversations/playbook';

/** A loopback endpoint answering every request with a booking whose `note` is blank. */
function bookingEndpoint(): Promise<{ url: string; close: () => void }> {
  return new Promise((resolve) => {
    const server = http.createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        res.setHeader('content-type', 'application/json');
        res.end(JSON.stringify({ bookingId: 'BK-7', status: 'confirmed', note: '  ' }));
      });
    });
    server.listen(0, '127.0.0.1', () => resolve({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/book`, close: () => server.close() }));
  });
}

/** The playbook `reserve`: run `book_appointment`, say its booking id, say its note (blank: not said), end. */
const graph = {
  nodes: [
    { id: 'start', type: 'start' },
    { id: 'book', type: 'skill', skill: 'book_appointment' },
    { id: 'confirm', type: 'say', prompt: 'You are booked: your reference is {{book_appointment_bookingId}} ({{ book_appointment_status }}).' },
    { id: 'note', type: 'say', prompt: 'Please note: {{book_appointment_note}}.' },
    { id: 'end', type: 'end' },
  ],
  edges: chain('start', 'book', 'confirm', 'note', 'end'),
};
const CONFIRMATION = 'You are booked: your reference is BK-7 (confirmed).';

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

describe('skill outputs as variables on chat and SMS', function () {
  this.timeout(60_000);
  let t: TestApi;
  let endpoint: { url: string; close: () => void };
  const saved = process.env.HTTP_ALLOW_PRIVATE_HOSTS;

  before(async () => {
    process.env.HTTP_ALLOW_PRIVATE_HOSTS = '127.0.0.1';
    endpoint = await bookingEndpoint();
    t = await startSmsTestApi('pbvars', {}, { providers: { skillHttp: createSkillHttpClient({ allow: parseAllowList('127.0.0.1') }) } });
    process.env.SANDBOX_CALLBACK_URL = `${t.api.baseUrl}/sms/provider-callbacks/sandbox`;
  });
  after(async () => {
    stopSandboxDispatchers();
    delete process.env.SANDBOX_CALLBACK_URL;
    if (saved === undefined) delete process.env.HTTP_ALLOW_PRIVATE_HOSTS;
    else process.env.HTTP_ALLOW_PRIVATE_HOSTS = saved;
    await t?.close();
    endpoint?.close();
  });

  /** An organization whose published agent has the skill `book_appointment` and the playbook `reserve`. */
  async function bookingAgent(name: string) {
    const org = await t.org(name);
    const agent = await t.call('POST', '/agents', { key: org.key, json: { name: 'Desk', voiceId: 'voice_ava' } });
    const agentId = agent.body.data.id as string;
    const skill = await t.call('POST', `/agents/${agentId}/skills`, { key: org.key, json: { name: 'book_appointment', type: 'http_request', config: { url: endpoint.url, method: 'POST' } } });
    expect(skill.status, skill.text).to.equal(201);
    const pb = await t.call('POST', `/agents/${agentId}/playbooks`, { key: org.key, json: { name: 'reserve', description: 'Books a table', graph } });
    expect(pb.status, pb.text).to.equal(201);
    expect((await publishDraft(t.db, org, agentId, `${name}-1`)).kind).to.equal('published');
    return { ...org, agentId };
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
    expect((await t.call('PUT', '/sms', { key: o.key, json: COMPLETE_BRAND })).status).to.equal(200);
    const ours = sandboxInventory('312')[3].e164;
    const bought = await t.call('POST', '/numbers/purchase', { key: o.key, json: { e164: ours } });
    expect(bought.status, bought.text).to.be.oneOf([200, 201]);
    const numberId = bought.body.data.id as string;
    expect((await t.call('POST', `/numbers/${numberId}/assign`, { key: o.key, json: { agentId: o.agentId } })).status).to.equal(200);
    expect((await t.call('PUT', `/numbers/${numberId}/sms`, { key: o.key, json: { enabled: true } })).status).to.equal(200);
    await t.db('sms_registrations').where({ org_id: o.orgId }).update({ status: 'active' });
    const providerId = `SMin${crypto.randomBytes(6).toString('hex')}`;
    const res = await postCallback(t, { type: 'message.inbound', id: providerId, from: '+12125550177', to: ours, text: 'Reserve for tonight' });
    expect(res.status, res.text).to.equal(200);
    const inbound = await t.db('sms_messages').where({ provider_message_id: providerId }).first();
    const reply = await until(async () => t.db('sms_messages').where({ org_id: o.orgId, reply_to: inbound.id }).first(), 30_000, 'the reply');
    expect(reply.body).to.equal(CONFIRMATION);
  });
});
