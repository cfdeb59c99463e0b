/**
 * Chat sessions on the OpenAI-compatible adapter against a loopback server speaking the OpenAI wire format
 * (docs/api-notes.md "Sandbox LLM", "Conversations"): the prompt the model receives (persona, instructions, the skills
 * as tools), a tool call executed and answered, upstream 429/500 answered as 503/502 problems with
 * nothing of the turn stored, and the `escalate` tool offered once the organization has an escalation destination.
 */
import { expect } from 'chai';
import { publishDraft } from './agents-fixtures';
import { startTestApi, type TestApi } from '../helpers/api';
import { answerWith, sendError, startOpenAiStub, type OpenAiStub, type StubHandler } from '../helpers/llm';
import { OpenAiLlm } from '../../providers/llm/openai';

describe('chat sessions on the OpenAI-compatible adapter', () => {
  let t: TestApi;
  let stub: OpenAiStub;
  let org: { orgId: string; key: string; keyId: string };
  let handler: StubHandler = answerWith({ content: 'Hello from upstream' });
  let agentId: string;

  before(async () => {
    stub = await startOpenAiStub((req, res) => handler(req, res));
    t = await startTestApi('chatupstream', {}, { providers: { llm: new OpenAiLlm({ baseUrl: stub.baseUrl, apiKey: 'sk-test', model: 'gpt-test', timeoutMs: 5000, maxRetries: 0 }) } });
    org = await t.org('Upstream');
    agentId = (await t.call('POST', '/agents', { key: org.key, json: { name: 'Concierge', voiceId: 'voice_ava', persona: 'A calm concierge for {{hotel}}.', instructions: 'Keep answers short.', variables: [{ name: 'hotel', defaultValue: 'Hotel Nord' }] } })).body.data.id;
    await t.call('POST', `/agents/${agentId}/skills`, { key: org.key, json: { name: 'hang_up', type: 'end_call', description: 'Ends the conversation', config: { closingLine: 'Bye now.' } } });
    const out = await publishDraft(t.db, org, agentId, 'u1');
    expect(out.kind).to.equal('published');
  });
  after(async () => {
    await t?.close();
    await stub?.close();
  });

  const session = async () => (await t.call('POST', '/chat/sessions', { key: org.key, json: { agentId } })).body.data.session.id as string;

  it('sends the persona, instructions, variables and skills, and stores the upstream answer with its usage', async () => {
    handler = answerWith({ content: 'Hello from upstream' });
    const id = await session();
    stub.requests.length = 0;
    const res = await t.call('POST', `/chat/sessions/${id}/messages`, { key: org.key, json: { content: 'Hi' } });
    expect(res.status, res.text).to.equal(200);
    expect(res.body.data.reply.content).to.equal('Hello from upstream');
    const sent = stub.requests[0].body;
    expect(sent.model).to.equal('gpt-test');
    expect(sent.messages[0].role).to.equal('system');
    expect(sent.messages[0].content).to.contain('A calm concierge for Hotel Nord.').and.to.contain('Keep answers short.');
    expect(sent.messages[sent.messages.length - 1]).to.deep.equal({ role: 'user', content: 'Hi' });
    expect(sent.tools.map((x: { function: { name: string } }) => x.function.name)).to.deep.equal(['hang_up']);
    expect(res.body.data.session.usage).to.deep.equal({ promptTokens: 11, completionTokens: 7, totalTokens: 18 });
  });

  it('executes a tool call of the model and ends the conversation for end_call', async () => {
    handler = answerWith((body: { messages: { role: string }[] }) =>
      body.messages.some((m) => m.role === 'tool') ? { content: 'unused' } : { toolCalls: [{ id: 'call_1', name: 'hang_up', arguments: '{}' }] },
    );
    const id = await session();
    const res = await t.call('POST', `/chat/sessions/${id}/messages`, { key: org.key, json: { content: 'That is all, thanks' } });
    expect(res.status, res.text).to.equal(200);
    expect(res.body.data.reply.content).to.equal('Bye now.');
    expect(res.body.data.session).to.include({ status: 'ended', endReason: 'end_call' });
    expect(res.body.data.receipt.toolCalls[0]).to.include({ id: 'call_1', skill: 'hang_up', type: 'end_call', source: 'model' });
  });

  it('answers an upstream 429 with 503 llm_rate_limited and Retry-After, and a 500 with 502 llm_unavailable, storing nothing', async () => {
    const id = await session();
    const before = (await t.call('GET', `/chat/sessions/${id}`, { key: org.key })).body.data;
    handler = (_req, res) => sendError(res, 429, { message: 'slow down', type: 'rate_limit_error' }, { 'retry-after': '7' });
    const limited = await t.call('POST', `/chat/sessions/${id}/messages`, { key: org.key, json: { content: 'Hello?' } });
    expect(limited.status).to.equal(503);
    expect(limited.body.code).to.equal('llm_rate_limited');
    expect(limited.headers.get('retry-after')).to.equal('7');
    handler = (_req, res) => sendError(res, 500, { message: 'boom', type: 'server_error' });
    const down = await t.call('POST', `/chat/sessions/${id}/messages`, { key: org.key, json: { content: 'Hello?' } });
    expect(down.status).to.equal(502);
    expect(down.headers.get('content-type')).to.match(/application\/problem\+json/);
    expect(down.body.code).to.equal('llm_unavailable');
    const after = (await t.call('GET', `/chat/sessions/${id}`, { key: org.key })).body.data;
    expect(after.messages).to.deep.equal(before.messages);
    expect(after.session.messageCount).to.equal(before.session.messageCount);
    handler = answerWith({ content: 'Back again' });
    const ok = await t.call('POST', `/chat/sessions/${id}/messages`, { key: org.key, json: { content: 'Hello?' } });
    expect(ok.body.data.reply.content).to.equal('Back again');
  });

  it('offers the model the escalate tool once the organization has an escalation destination, and ends escalated when it calls it', async () => {
    // The turn's own request (an ended conversation's analysis may be asked for meanwhile, without tools).
    let from = 0;
    const turnRequest = () => stub.requests.slice(from).find((r) => r.body.tools)!;
    const toolNames = () => turnRequest().body.tools.map((x: { function: { name: string } }) => x.function.name);
    handler = answerWith({ content: 'Sure.' });
    const before = await session();
    from = stub.requests.length;
    await t.call('POST', `/chat/sessions/${before}/messages`, { key: org.key, json: { content: 'Hi' } });
    expect(toolNames()).to.deep.equal(['hang_up']);
    const dest = await t.call('POST', '/escalation-destinations', { key: org.key, json: { name: 'Concierge desk', kind: 'email', address: 'desk@hotel-nord.test', timeZone: 'UTC' } });
    expect(dest.status, dest.text).to.equal(201);
    handler = answerWith((body: { messages: { role: string }[] }) =>
      body.messages.some((m) => m.role === 'tool') ? { content: 'unused' } : { toolCalls: [{ id: 'call_esc', name: 'escalate', arguments: '{"reason":"wants a person"}' }] },
    );
    const id = await session();
    from = stub.requests.length;
    const res = await t.call('POST', `/chat/sessions/${id}/messages`, { key: org.key, json: { content: 'Someone from the desk, please' } });
    expect(res.status, res.text).to.equal(200);
    expect(toolNames()).to.deep.equal(['hang_up', 'escalate']);
    const offered = turnRequest().body.tools[1].function;
    expect(offered.parameters).to.deep.include({ type: 'object', required: [] });
    expect(res.body.data.session).to.include({ status: 'ended', endReason: 'escalated' });
    expect(res.body.data.reply.content).to.equal("I'll connect you with a member of our team. A member of our team will follow up by e-mail.");
    expect(res.body.data.receipt.toolCalls[0]).to.include({ id: 'call_esc', skill: 'escalate' });
    expect(res.body.data.receipt.toolCalls[0].inputs).to.deep.equal({ reason: 'wants a person' });
    const events = await t.db('events').where({ org_id: org.orgId, type: 'conversation.escalated' }).whereRaw(`data->>'conversationId' = ?`, [id]);
    expect(events[0].data).to.include({ destinationId: dest.body.data.id, reason: 'escalate_tool' });
    expect(events[0].data.destination).to.deep.equal({ kind: 'email', address: 'desk@hotel-nord.test' });
  });
});
