/**
 * Analysis re-runs (docs/api-notes.md "Conversation analysis") over a real socket, Postgres and Temporal: one ended
 * conversation analysed again with the agent's current plan or the fields given, each a new revision (history kept,
 * the latest shown with the transcript, `conversation.analyzed` with its revision, tokens charged per revision), on
 * the sandbox LLM and on the loopback OpenAI-compatible stub; and a bulk run over a filter as the workflow
 * `analysis-run/{id}` on a worker, with its progress and the `analysis.completed` event.
 */
import { expect } from 'chai';
import { QUICK_CLIENT, startTestApi, type TestApi } from '../helpers/api';
import { until } from '../helpers/wait';
import { testTemporal } from '../helpers/temporal';
import { answerWith, startOpenAiStub, type OpenAiStub } from '../helpers/llm';
import { publishDraft } from './agents-fixtures';
import { createActivities } from '../../activities';
import { OpenAiLlm } from '../../providers/llm/openai';

describe('analysis re-runs on the sandbox LLM, with a worker', () => {
  let t: TestApi;
  let org: { orgId: string; key: string; keyId: string };

  const newAgent = async (name: string, fields: unknown[]) => {
    const res = await t.call('POST', '/agents', { key: org.key, json: { name, voiceId: 'voice_ava', greeting: 'Hello!', analysis: { fields } } });
    expect(res.status, res.text).to.equal(201);
    await publishDraft(t.db, org, res.body.data.id, `${name}-1`);
    return res.body.data as { id: string; version: number };
  };
  /** A published chat on `agentId`, with `lines` said, ended, and its first analysis stored by the worker. */
  const endedChat = async (agentId: string, lines: string[]) => {
    const id = (await t.call('POST', '/chat/sessions', { key: org.key, json: { agentId } })).body.data.session.id as string;
    for (const content of lines) expect((await t.call('POST', `/chat/sessions/${id}/messages`, { key: org.key, json: { content } })).status).to.equal(200);
    expect((await t.call('POST', `/chat/sessions/${id}/end`, { key: org.key })).status).to.equal(200);
    await until(async () => (await t.db('conversation_analysis_revisions').where({ conversation_id: id }).first()) ?? undefined, 30_000, 'the first analysis');
    return id;
  };
  const analyzedEvents = async (id: string) =>
    (await t.db('events').where({ org_id: org.orgId, type: 'conversation.analyzed' }).whereRaw(`data->>'conversationId' = ?`, [id]).orderBy('created_at').select('data')).map((r: { data: any }) => r.data);

  before(async () => {
    t = await startTestApi('analysisreruns', QUICK_CLIENT, { worker: (deps) => createActivities(deps) });
    org = await t.org('Reruns');
  });
  after(async () => t?.close());

  it("re-runs one conversation's analysis with the agent's current plan, then with the fields given: new revisions, history kept, the latest shown", async () => {
    const agent = await newAgent('Desk', [{ name: 'appointment_date', type: 'date' }]);
    const id = await endedChat(agent.id, ['I would like to come on 2026-12-03, visit_type: cleaning, thanks']);
    const first = (await t.call('GET', `/conversations/${id}/transcript`, { key: org.key })).body.data.analysis;
    expect(first.fields).to.deep.equal({ appointment_date: '2026-12-03' });

    // The agent's plan changes after the conversation: a re-run uses the current plan.
    const version = (await t.call('GET', `/agents/${agent.id}`, { key: org.key })).body.data.version;
    const plan = [{ name: 'appointment_date', type: 'date' }, { name: 'visit_type', type: 'enum', values: ['checkup', 'cleaning'] }];
    expect((await t.call('PATCH', `/agents/${agent.id}`, { key: org.key, headers: { 'if-match': `"${version}"` }, json: { analysis: { fields: plan } } })).status).to.equal(200);
    const rerun = await t.call('POST', `/conversations/${id}/analysis`, { key: org.key });
    expect(rerun.status, rerun.text).to.equal(201);
    expect(rerun.body.data).to.deep.include({ conversationId: id, revision: 2, trigger: 'rerun', runId: null, status: 'completed', plan });
    expect(rerun.body.data.fields).to.deep.equal({ appointment_date: '2026-12-03', visit_type: 'cleaning' });

    // Fields given in the body win over the agent's plan.
    const given = [{ name: 'new_patient', type: 'boolean' }];
    const custom = await t.call('POST', `/conversations/${id}/analysis`, { key: org.key, json: { fields: given } });
    expect(custom.status, custom.text).to.equal(201);
    expect(custom.body.data).to.deep.include({ revision: 3, plan: given, fields: {} });

    // The latest revision is the conversation's analysis; every revision stays listable, newest first.
    const shown = (await t.call('GET', `/conversations/${id}/transcript`, { key: org.key })).body.data.analysis;
    expect(shown).to.include({ status: 'completed', analyzedAt: custom.body.data.createdAt });
    expect(shown.fields).to.deep.equal({});
    const revisions = await t.call('GET', `/conversations/${id}/analysis/revisions?limit=2`, { key: org.key });
    expect(revisions.status, revisions.text).to.equal(200);
    expect(revisions.body.data.items.map((r: { revision: number; trigger: string }) => [r.revision, r.trigger])).to.deep.equal([[3, 'rerun'], [2, 'rerun']]);
    const rest = await t.call('GET', `/conversations/${id}/analysis/revisions?limit=2&cursor=${revisions.body.data.nextCursor}`, { key: org.key });
    expect(rest.body.data.items.map((r: { revision: number; trigger: string }) => [r.revision, r.trigger])).to.deep.equal([[1, 'end']]);
    expect(rest.body.data.items[0].plan).to.deep.equal([{ name: 'appointment_date', type: 'date' }]);

    expect((await analyzedEvents(id)).map((e) => e.revision)).to.deep.equal([1, 2, 3]);
    const charged = await t.db('usage_entries').where({ org_id: org.orgId }).whereRaw(`details->>'conversationId' = ? AND details->>'purpose' = 'analysis'`, [id]).select('dedupe_key');
    expect(charged).to.have.length(3);
    const audit = await t.db('audit_logs').where({ org_id: org.orgId, operation_id: 'reanalyzeConversation' }).select('resource_type', 'resource_id', 'status_code');
    expect(audit).to.deep.include({ resource_type: 'analysis_revision', resource_id: rerun.body.data.id, status_code: 201 });
  });

  it('answers 409 for an active conversation, 404 for an unknown one, 400 naming a bad field, and 403 without agents:write', async () => {
    const agent = await newAgent('Checks', []);
    const active = (await t.call('POST', '/chat/sessions', { key: org.key, json: { agentId: agent.id } })).body.data.session.id as string;
    const notEnded = await t.call('POST', `/conversations/${active}/analysis`, { key: org.key });
    expect(notEnded.status).to.equal(409);
    expect(notEnded.body.code).to.equal('conversation_not_ended');
    expect((await t.call('POST', '/conversations/cnv_nope/analysis', { key: org.key })).status).to.equal(404);
    const bad = await t.call('POST', `/conversations/${active}/analysis`, { key: org.key, json: { fields: [{ name: 'kind', type: 'enum' }] } });
    expect(bad.status).to.equal(400);
    expect(bad.body.errors.map((e: { field: string }) => e.field)).to.deep.equal(['fields[kind].values']);
    const readOnly = await t.org('Read only', ['calls:read', 'analytics:read']);
    expect((await t.call('POST', `/conversations/${active}/analysis`, { key: readOnly.key })).status).to.equal(403);
    // Another organization's conversation is not found.
    const other = await t.org('Other reruns');
    expect((await t.call('GET', `/conversations/${active}/analysis/revisions`, { key: other.key })).status).to.equal(404);
  });

  it("re-runs the analysis over a filter as the analysis-run workflow: progress, one revision per conversation, analysis.completed; a deleted agent's conversations included", async () => {
    const a = await newAgent('Bulk A', [{ name: 'party_size', type: 'number' }]);
    const b = await newAgent('Bulk B', []);
    const ids = [await endedChat(a.id, ['party_size: 4 please']), await endedChat(a.id, ['party_size: 2, thanks'])];
    const other = await endedChat(b.id, ['hello']);
    // Deleting the agent keeps its conversations analysable.
    expect((await t.call('DELETE', `/agents/${a.id}`, { key: org.key })).status).to.equal(200);

    const bad = await t.call('POST', '/conversations/analysis-runs', { key: org.key, json: { from: '2026-12-02T00:00:00Z', to: '2026-12-01T00:00:00Z' } });
    expect(bad.status).to.equal(400);
    expect(bad.body.errors[0].field).to.equal('to');
    const unknown = await t.call('POST', '/conversations/analysis-runs', { key: org.key, json: { agentId: 'agt_unknown1234' } });
    expect(unknown.status).to.equal(404);
    expect(unknown.body.errors[0].field).to.equal('agentId');

    const created = await t.call('POST', '/conversations/analysis-runs', { key: org.key, json: { agentId: a.id, channel: 'chat', fields: [{ name: 'party_size', type: 'number' }] } });
    expect(created.status, created.text).to.equal(202);
    expect(created.body.data).to.include({ status: 'queued', total: 2, completed: 0, failed: 0, progress: 0 });
    expect(created.body.data.filter).to.deep.equal({ agentId: a.id, channel: 'chat' });
    const runId = created.body.data.id as string;
    expect(created.headers.get('location')).to.equal(`/api/v1/conversations/analysis-runs/${runId}`);

    const result = await (await testTemporal()).client.workflow.getHandle(`analysis-run/${runId}`).result();
    expect(result).to.equal('completed');
    const run = await t.call('GET', `/conversations/analysis-runs/${runId}`, { key: org.key });
    expect(run.status, run.text).to.equal(200);
    expect(run.body.data).to.include({ status: 'completed', total: 2, completed: 2, failed: 0, progress: 1, error: null });
    expect((await t.call('GET', '/conversations/analysis-runs', { key: org.key })).body.data.items.map((r: { id: string }) => r.id)).to.include(runId);

    for (const id of ids) {
      const [latest] = (await t.call('GET', `/conversations/${id}/analysis/revisions`, { key: org.key })).body.data.items;
      expect(latest).to.include({ revision: 2, trigger: 'run', runId, status: 'completed' });
    }
    expect(await t.db('conversation_analysis_revisions').where({ conversation_id: other }).count({ n: '*' }).first()).to.deep.include({ n: 1 });
    const done = await t.db('events').where({ org_id: org.orgId, type: 'analysis.completed' }).select('data');
    expect(done.map((e: { data: any }) => e.data)).to.deep.equal([
      { runId, status: 'completed', total: 2, completed: 2, failed: 0, filter: { agentId: a.id, channel: 'chat' }, completedAt: run.body.data.completedAt },
    ]);
    expect(await t.db('audit_logs').where({ org_id: org.orgId, operation_id: 'createAnalysisRun', resource_type: 'analysis_run', resource_id: runId, status_code: 202 }).first()).to.not.equal(undefined);
  });
});

describe('analysis re-run on the loopback OpenAI-compatible stub', () => {
  let stub: OpenAiStub;
  let t: TestApi;

  before(async () => {
    stub = await startOpenAiStub(
      answerWith((body: any) =>
        body.response_format?.type === 'json_object'
          ? { content: JSON.stringify({ summary: 'Asked about Sunday hours.', outcome: 'resolved', sentiment: 'positive', fields: { weekday: 'sunday' } }) }
          : { content: 'We are open on Sunday from ten.' },
      ),
    );
    t = await startTestApi('analysisstub', QUICK_CLIENT, { providers: { llm: new OpenAiLlm({ baseUrl: stub.baseUrl, apiKey: 'sk-test', model: 'gpt-test', timeoutMs: 5000, maxRetries: 0 }) } });
  });
  after(async () => {
    await t?.close();
    await stub?.close();
  });

  it('sends the transcript and the given fields to the model and stores its answer as the new revision', async () => {
    const org = await t.org('Stub reruns');
    const agent = (await t.call('POST', '/agents', { key: org.key, json: { name: 'Hours', voiceId: 'voice_ava' } })).body.data;
    await publishDraft(t.db, org, agent.id, 'h1');
    const id = (await t.call('POST', '/chat/sessions', { key: org.key, json: { agentId: agent.id } })).body.data.session.id as string;
    await t.call('POST', `/chat/sessions/${id}/messages`, { key: org.key, json: { content: 'Are you open on Sunday?' } });
    await t.call('POST', `/chat/sessions/${id}/end`, { key: org.key });
    const before = stub.requests.length;

    const res = await t.call('POST', `/conversations/${id}/analysis`, { key: org.key, json: { fields: [{ name: 'weekday', type: 'enum', values: ['saturday', 'sunday'] }] } });
    expect(res.status, res.text).to.equal(201);
    expect(res.body.data).to.deep.include({ revision: 2, status: 'completed', summary: 'Asked about Sunday hours.', outcome: 'resolved', sentiment: 'positive', fields: { weekday: 'sunday' }, model: 'gpt-test' });
    const asked = stub.requests.slice(before);
    expect(asked).to.have.length(1);
    const wire = JSON.stringify(asked[0].body.messages);
    expect(wire).to.contain('Are you open on Sunday?').and.contain('weekday');
    expect(asked[0].body.response_format).to.deep.equal({ type: 'json_object' });
  });
});
