/**
 * Live control (docs/api-notes.md "Live control") over a real socket and Postgres with the sandbox LLM: a chat taken
 * over (the agent stops answering, the member's lines are marked `operator`) and handed back; the stream of live turns
 * (SSE `state`, `message` … `done`); a call's relay session told to say a line, add a message and end; the refusals
 * (403 without chat:write, 404 for another organization's conversation, 409 once it ended, 400 naming the field).
 */
import { expect } from 'chai';
import { createParser, type EventSourceMessage } from 'eventsource-parser';
import { QUICK_CLIENT, startTestApi, type TestApi } from '../helpers/api';
import { publishDraft } from './agents-fixtures';
import { RelayClient } from '../../providers/telephony/sandboxCaller';
import { allMessages, getConversation } from '../../db/repositories/conversations';
import { until } from '../helpers/wait';

describe('live control of conversations', () => {
  let t: TestApi;
  let org: { orgId: string; key: string; keyId: string };
  let agentId: string;

  before(async () => {
    t = await startTestApi('live_control', QUICK_CLIENT);
    org = await t.org('Live');
    const res = await t.call('POST', '/agents', { key: org.key, json: { name: 'Helper', voiceId: 'voice_ava', greeting: 'Hello, how can I help?' } });
    expect(res.status, res.text).to.equal(201);
    agentId = res.body.data.id;
    await publishDraft(t.db, org, agentId, 'v1');
  });
  after(async () => {
    await t?.close();
  });

  const startChat = async () => {
    const res = await t.call('POST', '/chat/sessions', { key: org.key, json: { agentId } });
    expect(res.status, res.text).to.equal(201);
    return res.body.data.session.id as string;
  };
  const control = (id: string, json: Record<string, unknown>, key = org.key) => t.call('POST', `/conversations/${id}/control`, { key, json });
  const say = (id: string, content: string) => t.call('POST', `/chat/sessions/${id}/messages`, { key: org.key, json: { content } });

  it('takes a chat over: the agent stops answering, the member writes as operator, and handing back lets the agent answer again', async () => {
    const id = await startChat();
    const refused = await control(id, { action: 'say', content: 'Hi, Sam here' });
    expect(refused.status).to.equal(409);
    expect(refused.body.code).to.equal('not_taken_over');
    const taken = await control(id, { action: 'take_over' });
    expect(taken.status, taken.text).to.equal(200);
    expect(taken.body.data).to.include({ status: 'applied', conversationStatus: 'active', takenOverBy: org.keyId });
    const held = await say(id, 'Is anyone there?');
    expect(held.status, held.text).to.equal(200);
    expect(held.body.data.reply).to.equal(null);
    const wrote = await control(id, { action: 'say', content: 'Hi, Sam from the team here.' });
    expect(wrote.status, wrote.text).to.equal(200);
    expect(wrote.body.data.message).to.include({ role: 'assistant', content: 'Hi, Sam from the team here.', name: `operator:${org.keyId}` });
    // The person sees the member's line among the conversation's messages.
    const session = await t.call('GET', `/chat/sessions/${id}`, { key: org.key });
    expect(session.body.data.messages.map((m: { content: string }) => m.content)).to.include('Hi, Sam from the team here.');
    const back = await control(id, { action: 'hand_back' });
    expect(back.body.data.takenOverBy).to.equal(null);
    const answered = await say(id, 'Thanks, what are your hours?');
    expect(answered.body.data.reply?.content).to.be.a('string').and.have.length.greaterThan(0);
    const transcript = await t.call('GET', `/conversations/${id}/transcript`, { key: org.key });
    const lines = transcript.body.data.messages.map((m: { speaker: string; text: string }) => `${m.speaker}: ${m.text}`);
    expect(lines.slice(0, 4)).to.deep.equal(['agent: Hello, how can I help?', 'user: Is anyone there?', 'operator: Hi, Sam from the team here.', 'user: Thanks, what are your hours?']);
    const types = (await t.db('events').where({ org_id: org.orgId }).whereIn('type', ['conversation.taken_over', 'conversation.handed_back']).orderBy('created_at')).map((e: { type: string; data: { conversationId: string } }) => [e.type, e.data.conversationId]);
    expect(types).to.deep.equal([
      ['conversation.taken_over', id],
      ['conversation.handed_back', id],
    ]);
  });

  it('refuses a key without chat:write (403), another organization (404), a bad action or line (400) and an ended conversation (409)', async () => {
    const id = await startChat();
    const reader = await t.call('POST', '/api-keys', { key: org.key, json: { name: 'reader', scopes: ['calls:read', 'analytics:read'] } });
    expect(reader.status, reader.text).to.equal(201);
    const forbidden = await control(id, { action: 'take_over' }, reader.body.data.secret);
    expect(forbidden.status).to.equal(403);
    expect(forbidden.headers.get('content-type')).to.match(/application\/problem\+json/);
    const other = await t.org('Elsewhere');
    const missing = await control(id, { action: 'take_over' }, other.key);
    expect(missing.status).to.equal(404);
    expect(missing.body.code).to.equal('conversation_not_found');
    expect((await control(id, { action: 'transfer', to: '+12065550100' })).body.errors[0].field).to.equal('action');
    expect((await control(id, { action: 'add_message', content: '' })).body.errors[0].field).to.equal('content');
    expect((await control(id, { action: 'dance' })).status).to.equal(400);
    expect((await control(id, { action: 'end' })).body.data.conversationStatus).to.equal('ended');
    const ended = await control(id, { action: 'take_over' });
    expect(ended.status).to.equal(409);
    expect(ended.body.code).to.equal('conversation_ended');
  });

  it('streams the live turns as SSE: state, each message in order with its speaker, and done once the conversation ends', async () => {
    const id = await startChat();
    const res = await fetch(`${t.api.baseUrl}/conversations/${id}/live`, { headers: { authorization: `Bearer ${org.key}` } });
    expect(res.status).to.equal(200);
    expect(res.headers.get('content-type')).to.match(/^text\/event-stream/);
    const events: EventSourceMessage[] = [];
    const parser = createParser({ onEvent: (e) => events.push(e) });
    const reader = res.body!.getReader();
    const reading = (async () => {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) return;
        parser.feed(new TextDecoder().decode(value));
      }
    })();
    await until(async () => events.some((e) => e.event === 'message') || null, 5000, 'the greeting');
    await control(id, { action: 'take_over' });
    await say(id, 'Hello?');
    await control(id, { action: 'say', content: 'A person here.' });
    await control(id, { action: 'end' });
    await reading;
    const kinds = events.map((e) => e.event);
    expect(kinds[0]).to.equal('state');
    expect(kinds[kinds.length - 1]).to.equal('done');
    const messages = events.filter((e) => e.event === 'message').map((e) => JSON.parse(e.data) as { speaker: string; text: string });
    expect(messages.map((m) => `${m.speaker}: ${m.text}`)).to.deep.equal(['agent: Hello, how can I help?', 'user: Hello?', 'operator: A person here.']);
    const states = events.filter((e) => e.event === 'state').map((e) => JSON.parse(e.data) as { status: string; takenOverBy: string | null });
    expect(states[states.length - 1]).to.include({ status: 'ended' });
    expect(states.some((s) => s.takenOverBy === org.keyId)).to.equal(true);
  });

  it("tells a call's relay session to say a line, add a message to the model's context, and end the call", async () => {
    const token = await t.call('POST', `/agents/${agentId}/talk-token`, { key: org.key, json: { channel: 'voice' } });
    expect(token.status, token.text).to.equal(201);
    const ws = t.api.baseUrl.replace(/^http/, 'ws') + '/voice/relay';
    const c = await RelayClient.open(`${ws}?token=${token.body.data.token}`);
    c.send({ type: 'setup', sessionId: 'VXlive', callSid: 'web', from: '', to: '' });
    expect((await c.reply()).text).to.equal('Hello, how can I help?');
    const conv = await until(async () => (await t.db('conversations').where({ org_id: org.orgId, channel: 'voice' }).first()) ?? null, 5000, 'the call');
    expect((await control(conv.id, { action: 'take_over' })).body.errors[0].field).to.equal('action');
    const said = await control(conv.id, { action: 'say', content: 'One moment, a colleague is joining.' });
    expect(said.status, said.text).to.equal(200);
    expect(said.body.data.status).to.equal('applied');
    expect((await c.reply()).text).to.equal('One moment, a colleague is joining.');
    await control(conv.id, { action: 'add_message', content: 'The caller is a premium member.' });
    const ended = await control(conv.id, { action: 'end' });
    expect(ended.body.data.conversationStatus).to.equal('ended');
    await c.closedWith();
    expect(c.end).to.not.equal(null);
    const stored = await allMessages(t.db, org.orgId, conv.id);
    expect(stored.map((m) => [m.role, m.content, m.name ?? null])).to.deep.include.members([
      ['assistant', 'One moment, a colleague is joining.', `operator:${org.keyId}`],
      ['system', 'The caller is a premium member.', `operator:${org.keyId}`],
    ]);
    expect((await getConversation(t.db, org.orgId, conv.id))?.endReason).to.equal('ended_by_api');
  });
});
