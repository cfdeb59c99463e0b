/**
 * Post-conversation analysis (docs/api-notes.md "Conversation analysis") over a real socket, Postgres and the sandbox LLM:
 * extraction fields saved and checked on the agent, a chat that ends analysed once (fields from the transcript,
 * an invalid value dropped with a note), Observe showing it, the `conversation.analyzed` event, a failing LLM
 * recorded as a failed analysis without failing the end, and the `conversation-analysis/{id}` workflow on a worker.
 */
import { expect } from 'chai';
import { QUICK_CLIENT, startTestApi, type TestApi } from '../helpers/api';
import { until } from '../helpers/wait';
import { testTemporal } from '../helpers/temporal';
import { publishDraft } from './agents-fixtures';
import { createActivities } from '../../activities';
import { createSecretKey } from '../../db/repositories/apiKeys';
import { getConversation } from '../../db/repositories/conversations';
import { finishConversation } from '../../services/conversations/service';
import { createLlm, LlmProviderError } from '../../providers/llm';
import { analyzeConversation } from '../../services/conversations/analysis';
import type { LlmProvider } from '../../domain/conversations/llm';

const FIELDS = [
  { name: 'appointment_date', type: 'date', description: 'The day the caller wants to come in' },
  { name: 'party_size', type: 'number', description: 'How many people come' },
  { name: 'visit_type', type: 'enum', values: ['checkup', 'cleaning'] },
  { name: 'new_patient', type: 'boolean' },
];

describe('post-conversation analysis', () => {
  let t: TestApi;
  let org: { orgId: string; key: string; keyId: string };

  const newAgent = async (json: Record<string, unknown>) => {
    const res = await t.call('POST', '/agents', { key: org.key, json: { voiceId: 'voice_ava', greeting: 'Hello!', ...json } });
    expect(res.status, res.text).to.equal(201);
    return res.body.data as { id: string; version: number; analysis: unknown };
  };
  const start = async (agentId: string) => {
    const res = await t.call('POST', '/chat/sessions', { key: org.key, json: { agentId } });
    expect(res.status, res.text).to.equal(201);
    return res.body.data.session.id as string;
  };
  const say = async (id: string, content: string) => expect((await t.call('POST', `/chat/sessions/${id}/messages`, { key: org.key, json: { content } })).status).to.equal(200);
  /** The usage entries charged for a conversation's analysis tokens. */
  const analysisTokens = (id: string) => t.db('usage_entries').where({ org_id: org.orgId, dedupe_key: `conversation:${id}:analysis:tokens` });
  /** A chat of one message on a new published agent, ended with `complete` as the analysing model. */
  const endedWithModel = async (name: string, complete: LlmProvider['complete']) => {
    const agent = await newAgent({ name, analysis: { fields: FIELDS } });
    await publishDraft(t.db, org, agent.id, `${name}-1`);
    const id = await start(agent.id);
    await say(id, 'hello');
    const llm: LlmProvider = {
      name,
      complete,
      stream: () => {
        throw new Error('not used');
      },
    };
    const ended = await finishConversation(t.db, (await getConversation(t.db, org.orgId, id))!, 'ended_by_api', { db: t.db, llm });
    return { id, ended };
  };
  const analyzedEvents = (id: string) => t.db('events').where({ org_id: org.orgId, type: 'conversation.analyzed' }).whereRaw(`data->>'conversationId' = ?`, [id]).select('data');

  before(async () => {
    t = await startTestApi('analysis', QUICK_CLIENT);
    org = await t.org('Analysis');
  });
  after(async () => t?.close());

  it('saves extraction fields on the draft and refuses an enum without values, repeated names and values on other types', async () => {
    const agent = await newAgent({ name: 'Fields', analysis: { fields: FIELDS } });
    expect(agent.analysis).to.deep.equal({ fields: FIELDS });
    const bad = await t.call('PATCH', `/agents/${agent.id}`, {
      key: org.key,
      headers: { 'if-match': `"${agent.version}"` },
      json: { analysis: { fields: [{ name: 'kind', type: 'enum' }, { name: 'kind', type: 'string' }, { name: 'size', type: 'number', values: ['a'] }] } },
    });
    expect(bad.status, bad.text).to.equal(400);
    expect(bad.body.code).to.equal('validation_error');
    expect(bad.body.errors.map((e: { field: string }) => e.field)).to.have.members(['analysis.fields[kind].values', 'analysis.fields[kind]', 'analysis.fields[size].values']);
    const badType = await t.call('PATCH', `/agents/${agent.id}`, { key: org.key, headers: { 'if-match': `"${agent.version}"` }, json: { analysis: { fields: [{ name: 'x', type: 'datetime' }] } } });
    expect(badType.status).to.equal(400);
    expect(badType.body.errors[0].field).to.match(/^analysis\.fields/);
  });

  it('analyses an ended chat once: summary, outcome, sentiment and fields from the transcript, an invalid value dropped, shown by Observe and sent as an event', async () => {
    const agent = await newAgent({ name: 'Dental desk', analysis: { fields: FIELDS } });
    await publishDraft(t.db, org, agent.id, 'a1');
    // The published version froze the fields: a later draft edit does not change what this conversation extracts.
    const patched = await t.call('PATCH', `/agents/${agent.id}`, { key: org.key, headers: { 'if-match': `"${agent.version}"` }, json: { analysis: { fields: [] } } });
    expect(patched.status, patched.text).to.equal(200);
    const id = await start(agent.id);
    await say(id, 'Hi, I would like a visit_type: cleaning on 2026-12-03, party_size: several, new_patient: yes');
    await say(id, 'Great, thanks, that is all');

    const ended = await t.call('POST', `/chat/sessions/${id}/end`, { key: org.key });
    expect(ended.status, ended.text).to.equal(200);
    expect(ended.body.data.status).to.equal('ended');

    const transcript = await t.call('GET', `/conversations/${id}/transcript`, { key: org.key });
    expect(transcript.status, transcript.text).to.equal(200);
    const a = transcript.body.data.analysis;
    expect(a).to.include({ status: 'completed', outcome: 'resolved', sentiment: 'positive', error: null, model: 'sandbox' });
    expect(a.summary).to.equal('The user wrote 2 message(s), first: "Hi, I would like a visit_type: cleaning on 2026-12-03, party_size: several, new_patient: yes"; the agent answered 3 time(s); ended: ended_by_user.');
    expect(a.fields).to.deep.equal({ appointment_date: '2026-12-03', visit_type: 'cleaning', new_patient: true });
    expect(a.notes).to.deep.equal(['party_size: dropped "several" (not a number)']);
    expect(Date.parse(a.analyzedAt)).to.be.greaterThan(0);

    const list = await t.call('GET', `/conversations?agentId=${agent.id}`, { key: org.key });
    expect(list.body.data.items[0]).to.include({ id });
    expect(list.body.data.items[0].analysis).to.deep.equal({ status: 'completed', outcome: 'resolved', sentiment: 'positive' });

    const events = await analyzedEvents(id);
    expect(events).to.have.length(1);
    expect(events[0].data).to.include({ conversationId: id, agentId: agent.id, channel: 'chat', status: 'completed', outcome: 'resolved' });
    expect(events[0].data.fields).to.deep.equal(a.fields);

    // The analysis's tokens are usage of the conversation, beside its turns' (docs/api-notes.md "Billing").
    const [spent] = await analysisTokens(id);
    expect(spent.kind).to.equal('llm_tokens');
    expect(spent.quantity).to.be.greaterThan(0);
    expect(spent.details).to.include({ conversationId: id, agentId: agent.id, purpose: 'analysis', model: 'sandbox' });
    expect(spent.details.promptTokens + spent.details.completionTokens).to.equal(spent.quantity);

    // A second end changes nothing and analyses nothing.
    expect((await t.call('POST', `/chat/sessions/${id}/end`, { key: org.key })).status).to.equal(200);
    expect(await analysisTokens(id)).to.have.length(1);
    expect(await analyzedEvents(id)).to.have.length(1);
    expect(await t.db('conversation_analyses').where({ conversation_id: id }).count({ n: '*' }).first()).to.deep.include({ n: 1 });
  });

  it('marks a caller who never spoke as abandoned with no fields, and hides the whole analysis from a key without calls:read', async () => {
    const agent = await newAgent({ name: 'Silent', analysis: { fields: FIELDS } });
    await publishDraft(t.db, org, agent.id, 's1');
    const id = await start(agent.id);
    await t.call('POST', `/chat/sessions/${id}/end`, { key: org.key });
    const a = (await t.call('GET', `/conversations/${id}/transcript`, { key: org.key })).body.data.analysis;
    expect(a).to.include({ status: 'completed', outcome: 'abandoned', sentiment: 'neutral', summary: 'The user said nothing; ended: ended_by_user.' });
    expect(a.fields).to.deep.equal({});
    const { key: analyticsOnly } = await createSecretKey(t.db, org.orgId, { brand: t.config.keyBrandPrefix, scopes: ['analytics:read'] });
    const redacted = (await t.call('GET', `/conversations/${id}/transcript`, { key: analyticsOnly })).body.data;
    expect(redacted).to.include({ redacted: true, analysis: null });
    expect(redacted.conversation.analysis).to.deep.equal({ status: 'completed', outcome: 'abandoned', sentiment: 'neutral' });
    // Another organization's conversation stays 404.
    const other = await t.org('Other');
    expect((await t.call('GET', `/conversations/${id}/transcript`, { key: other.key })).status).to.equal(404);
  });

  it('records a failed analysis when the LLM fails, without failing the end', async () => {
    const { id, ended } = await endedWithModel('Flaky', () => Promise.reject(new LlmProviderError('unavailable', 'the LLM answered 503')));
    expect(ended.status).to.equal('ended');
    const a = (await t.call('GET', `/conversations/${id}/transcript`, { key: org.key })).body.data.analysis;
    expect(a).to.include({ status: 'failed', outcome: null, sentiment: null, summary: null, error: 'the LLM answered 503' });
    const events = await analyzedEvents(id);
    expect(events).to.have.length(1);
    expect(events[0].data).to.include({ status: 'failed', error: 'the LLM answered 503' });
    // The model never answered: no tokens to charge.
    expect(await analysisTokens(id)).to.have.length(0);
  });

  it('charges the tokens of an answer it cannot use, and stores the analysis as failed', async () => {
    const { id } = await endedWithModel('Garbled', async () => ({
      content: 'not json at all',
      toolCalls: [],
      finishReason: 'stop',
      usage: { promptTokens: 40, completionTokens: 4, totalTokens: 44 },
      model: 'garbler-1',
    }));
    const a = (await t.call('GET', `/conversations/${id}/transcript`, { key: org.key })).body.data.analysis;
    expect(a.status).to.equal('failed');
    const spent = await analysisTokens(id);
    expect(spent).to.have.length(1);
    expect(spent[0]).to.include({ kind: 'llm_tokens', quantity: 44 });
    expect(spent[0].details).to.include({ purpose: 'analysis', promptTokens: 40, completionTokens: 4, model: 'garbler-1' });
  });

  it('leaves a running analysis to its owner, and a retried activity takes over one its dead attempt left running', async () => {
    const agent = await newAgent({ name: 'Retake', analysis: { fields: FIELDS } });
    await publishDraft(t.db, org, agent.id, 'r1');
    const id = await start(agent.id);
    await say(id, 'tier check, thanks');
    await t.db('conversations').where({ id }).update({ status: 'ended', end_reason: 'ended_by_api', ended_at: t.db.fn.now() });
    // An attempt claimed the row and died before finishing.
    await t.db('conversation_analyses').insert({ org_id: org.orgId, conversation_id: id, status: 'running' });
    const llm = createLlm({});
    expect(await analyzeConversation({ db: t.db, llm }, org.orgId, id)).to.include({ status: 'running' });
    expect(await analyzeConversation({ db: t.db, llm }, org.orgId, id, { retake: true })).to.include({ status: 'completed', outcome: 'resolved' });
    // Finished: a retake changes nothing more.
    expect(await analyzeConversation({ db: t.db, llm }, org.orgId, id, { retake: true })).to.include({ status: 'completed' });
    expect(await analyzedEvents(id)).to.have.length(1);
    // Another organization's id is not found.
    const other = await t.org('Other retake');
    expect(await analyzeConversation({ db: t.db, llm }, other.orgId, id, { retake: true })).to.equal(undefined);
  });

  it('does not analyse simulations', async () => {
    const agent = await newAgent({ name: 'Sim', analysis: { fields: FIELDS } });
    const res = await t.call('POST', '/chat/sessions', { key: org.key, json: { agentId: agent.id, draftMode: true } });
    const id = res.body.data.session.id as string;
    await t.db('conversations').where({ id }).update({ simulation: true });
    await t.call('POST', `/chat/sessions/${id}/end`, { key: org.key });
    expect(await t.db('conversation_analyses').where({ conversation_id: id }).first()).to.equal(undefined);
  });
});

describe('post-conversation analysis on the worker (conversation-analysis/{id})', () => {
  let t: TestApi;

  before(async () => {
    t = await startTestApi('analysiswf', QUICK_CLIENT, { worker: (deps) => createActivities(deps) });
  });
  after(async () => t?.close());

  it('starts the workflow when a chat ends, and the worker stores the analysis and its event', async () => {
    const org = await t.org('Worker analysis');
    const agent = (await t.call('POST', '/agents', { key: org.key, json: { name: 'Desk', voiceId: 'voice_ava', analysis: { fields: [{ name: 'appointment_date', type: 'date' }] } } })).body.data;
    await publishDraft(t.db, org, agent.id, 'w1');
    const id = (await t.call('POST', '/chat/sessions', { key: org.key, json: { agentId: agent.id } })).body.data.session.id as string;
    await t.call('POST', `/chat/sessions/${id}/messages`, { key: org.key, json: { content: 'Can I come on 2026-12-24? I am frustrated with the wait' } });
    expect((await t.call('POST', `/chat/sessions/${id}/end`, { key: org.key })).status).to.equal(200);
    const a = await until(async () => {
      const res = await t.call('GET', `/conversations/${id}/transcript`, { key: org.key });
      return res.body.data.analysis?.status === 'completed' ? res.body.data.analysis : undefined;
    }, 30_000, 'the analysis');
    expect(a).to.include({ outcome: 'unresolved', sentiment: 'negative' });
    expect(a.fields).to.deep.equal({ appointment_date: '2026-12-24' });
    const events = await t.db('events').where({ org_id: org.orgId, type: 'conversation.analyzed' }).select('data');
    expect(events).to.have.length(1);
    // The workflow finishes before its worker stops (nothing is left on a queue nobody polls).
    expect(await (await testTemporal()).client.workflow.getHandle(`conversation-analysis/${id}`).result()).to.equal('completed');
  });
});
