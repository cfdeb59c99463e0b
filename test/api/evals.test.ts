/**
 * Evaluation suites end to end (docs/evals.md): CRUD under `/agents/{id}/eval-suites`, runs as workflow
 * `agent-eval/{runId}` on the dev server with a real-SDK worker of the service's activities (the sandbox LLM), skill
 * stubs enforced where skills run (a loopback HTTPS skill server counts every request it gets, and must get none),
 * the publish gate (409 `evaluation_failed`, and a pass) with Idempotency-Key replays, and `POST /simulate` refusing
 * an HTTP skill without a stub.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import https from 'node:https';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import { QUICK_CLIENT, startTestApi, type TestApi } from '../helpers/api';
import { createActivities } from '../../activities';
import { createSimulationActivities } from '../../activities/simulations';
import { createEvalActivities } from '../../activities/evals';
import { createSkillHttpClient, type SkillHttpClient } from '../../providers/http/request';
import { parseAllowList } from '../../domain/net/guard';
import { OpenAiLlm } from '../../providers/llm/openai';
import { answerWith, startOpenAiStub, type OpenAiStub } from '../helpers/llm';
import { createLlm } from '../../providers/llm';
import { sendMessage, startConversation } from '../../services/conversations/service';
import { createRun } from '../../db/repositories/evals';

const TLS_DIR = path.join(__dirname, '..', 'fixtures', 'tls');
const TLS = { key: fs.readFileSync(path.join(TLS_DIR, 'localhost.key')), cert: fs.readFileSync(path.join(TLS_DIR, 'localhost.crt')) };

/** A loopback HTTPS skill endpoint that records every request (an evaluation must send it none). */
export async function startForbiddenSkillServer(): Promise<{ base: string; hits: string[]; http: SkillHttpClient; close(): Promise<void> }> {
  const hits: string[] = [];
  const server = https.createServer(TLS, (req, res) => {
    hits.push(`${req.method} ${req.url}`);
    res.writeHead(500, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ error: 'an evaluation reached a real skill endpoint' }));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  // A client that can reach the loopback server: only the stubs keep the skills from calling it.
  const http = createSkillHttpClient({ allow: parseAllowList('127.0.0.1'), ca: TLS.cert });
  return {
    base: `https://127.0.0.1:${(server.address() as AddressInfo).port}`,
    hits,
    http,
    close: async () => {
      await http.close();
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}

describe('evaluation suites and runs (workflow agent-eval/{runId}, sandbox LLM)', () => {
  let t: TestApi;
  let org: { orgId: string; key: string; keyId: string };
  let agentId: string;
  let skills: Awaited<ReturnType<typeof startForbiddenSkillServer>>;

  const call = (method: string, p: string, json?: unknown, headers?: Record<string, string>) => t.call(method, p, { key: org.key, json, headers });
  const pollRun = async (location: string) => {
    for (let i = 0; i < 400; i++) {
      const res = await t.call('GET', location.replace(/^\/api\/v1/, ''), { key: org.key });
      if (res.body.data.status !== 'running') return res.body.data;
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error('the run did not finish');
  };
  const STUBS = { lookup_order: { status: 'shipped', eta_days: 3 } };
  const passingScenario = {
    name: 'order status',
    turns: [
      {
        say: 'Please lookup order order_id: A123',
        expect: [
          { type: 'skillCalled', skill: 'lookup_order', args: { order_id: '^A123$' } },
          { type: 'contains', text: 'shipped' },
        ],
      },
      { say: 'What do you think about politics?', expect: [{ type: 'regex', pattern: "can.t help", flags: 'i' }] },
    ],
    expect: [{ type: 'notContains', text: 'guaranteed' }, { type: 'endedBy', reason: 'active' }],
    skillStubs: STUBS,
  };

  before(async () => {
    skills = await startForbiddenSkillServer();
    t = await startTestApi('evals', QUICK_CLIENT, {
      providers: { skillHttp: skills.http },
      // The service's activities as worker.ts registers them, the skill client swapped for one that could reach the loopback server.
      worker: (deps) => ({ ...createActivities(deps), ...createSimulationActivities(deps, { http: skills.http }), ...createEvalActivities(deps, { http: skills.http }) }),
    });
    org = await t.org('Evals');
    agentId = (await call('POST', '/agents', { name: 'Shop', voiceId: 'voice_ava', greeting: 'Acme Shop, how can I help?' })).body.data.id;
    const skill = await call('POST', `/agents/${agentId}/skills`, {
      name: 'lookup_order',
      type: 'http_request',
      description: 'Looks up an order',
      config: { url: `${skills.base}/orders`, method: 'GET', inputs: [{ name: 'order_id' }] },
    });
    expect(skill.status, skill.text).to.equal(201);
    await call('PUT', `/agents/${agentId}/guardrails`, { blockedTopics: ['politics'], forbiddenPhrases: [], redactPii: true, profanityFilter: true, escalateOn: [], maxConversationMinutes: null });
  });
  after(async () => {
    await t?.close();
    await skills?.close();
  });
  afterEach(() => expect(skills.hits, 'requests that reached the real skill endpoint').to.deep.equal([]));

  it('creates, lists, reads, updates and deletes suites, naming each bad field (400) and a duplicate name (409)', async () => {
    const created = await call('POST', `/agents/${agentId}/eval-suites`, { name: 'Smoke', scenarios: [passingScenario], repeat: 2 });
    expect(created.status, created.text).to.equal(201);
    const suite = created.body.data;
    expect(suite).to.include({ agentId, name: 'Smoke', repeat: 2, concurrency: 4, description: null });
    expect(suite.id).to.match(/^evs_/);
    expect((await call('POST', `/agents/${agentId}/eval-suites`, { name: 'Smoke', scenarios: [passingScenario] })).body.code).to.equal('duplicate_name');

    const both = await call('POST', `/agents/${agentId}/eval-suites`, { name: 'Bad', scenarios: [{ name: 'x', turns: [{ say: 'hi' }], caller: { persona: 'p', goal: 'g' } }] });
    expect(both.status).to.equal(400);
    expect(both.body.errors.map((e: { field: string }) => e.field)).to.deep.equal(['scenarios[0].caller']);
    const regex = await call('POST', `/agents/${agentId}/eval-suites`, { name: 'Bad', scenarios: [{ name: 'x', turns: [{ say: 'hi', expect: [{ type: 'regex', pattern: '(' }] }] }] });
    expect(regex.body.errors[0].field).to.equal('scenarios[0].turns[0].expect[0].pattern');
    const unknown = await call('POST', `/agents/${agentId}/eval-suites`, { name: 'Bad', scenarios: [{ name: 'x', turns: [{ say: 'hi', expect: [{ type: 'sounds_nice' }] }] }] });
    expect(unknown.status).to.equal(400);
    expect(unknown.body.code).to.equal('validation_error');

    const list = await call('GET', `/agents/${agentId}/eval-suites`);
    expect(list.body.data.items.map((s: { id: string }) => s.id)).to.deep.equal([suite.id]);
    const patched = await call('PATCH', `/agents/${agentId}/eval-suites/${suite.id}`, { description: 'Before every release', concurrency: 2 });
    expect(patched.body.data).to.include({ description: 'Before every release', concurrency: 2, name: 'Smoke' });
    expect((await call('GET', `/agents/${agentId}/eval-suites/${suite.id}`)).body.data.concurrency).to.equal(2);
    const other = await t.org('Other');
    expect((await t.call('GET', `/agents/${agentId}/eval-suites/${suite.id}`, { key: other.key })).status).to.equal(404);
    const temp = (await call('POST', `/agents/${agentId}/eval-suites`, { name: 'Temp', scenarios: [passingScenario] })).body.data;
    expect((await call('DELETE', `/agents/${agentId}/eval-suites/${temp.id}`)).body.data).to.deep.equal({ id: temp.id, deleted: true });
    expect((await call('GET', `/agents/${agentId}/eval-suites/${temp.id}`)).body.code).to.equal('eval_suite_not_found');
  });

  it('runs a suite against the draft: results per scenario and repeat, pass rate, transcripts, eval.completed — skills only on their stubs', async () => {
    const suite = (
      await call('POST', `/agents/${agentId}/eval-suites`, {
        name: 'Draft run',
        repeat: 2,
        scenarios: [
          passingScenario,
          { name: 'never says zebra', turns: [{ say: 'Hello there' }], expect: [{ type: 'contains', text: 'zebra' }], skillStubs: STUBS, repeat: 1 },
          { name: 'a caller', caller: { persona: 'A busy parent', goal: 'I want to know your opening hours', maxTurns: 2 }, expect: [{ type: 'playbookReached', node: 'nowhere' }], skillStubs: STUBS },
        ],
      })
    ).body.data;
    const res = await call('POST', `/eval-suites/${suite.id}/runs`, { target: 'draft' });
    expect(res.status, res.text).to.equal(202);
    expect(res.body.data).to.include({ status: 'running', total: 5, gate: false, suiteId: suite.id, agentId });
    expect(res.body.data.target).to.deep.equal({ kind: 'draft', draftVersion: (await call('GET', `/agents/${agentId}`)).body.data.version });
    const run = await pollRun(res.headers.get('location')!);
    expect(run.status, JSON.stringify(run)).to.equal('completed');
    expect(run).to.include({ passed: 2, total: 5, passRate: 0.4 });
    expect(run.flaky).to.deep.equal([]);
    const [order, zebra, caller] = run.scenarios;
    expect(order).to.include({ name: 'order status', runs: 2, passed: 2, passRate: 1, flaky: false });
    const first = order.repeats[0];
    expect(first.results.map((r: { passed: boolean; turn: number | null }) => [r.passed, r.turn])).to.deep.equal([[true, 1], [true, 1], [true, 2], [true, null], [true, null]]);
    expect(first.results[0].evidence).to.contain('called lookup_order with {"order_id":"A123"}');
    expect(first.transcript.map((m: { role: string }) => m.role)).to.include.members(['assistant', 'user', 'tool']);
    expect(zebra).to.include({ runs: 1, passed: 0, flaky: false });
    expect(zebra.repeats[0].results[0].evidence).to.equal('none of 1 replies contains "zebra"');
    expect(caller.repeats[0].results[0]).to.include({ passed: false, evidence: 'no turn reached nowhere' });
    const conv = await t.db('conversations').where({ id: first.conversationId }).first();
    expect(conv).to.include({ simulation: true, status: 'ended', end_reason: 'ended_by_api' });
    expect(conv.skill_stubs).to.deep.equal(STUBS);
    const events = await t.db('events').where({ org_id: org.orgId, type: 'eval.completed' }).whereRaw(`data->>'runId' = ?`, [run.id]).select('data');
    expect(events.map((e: any) => e.data)).to.have.length(1);
    expect(events[0].data).to.include({ suiteId: suite.id, target: 'draft', status: 'completed', passRate: 0.4, passed: 2, total: 5, gate: false });
    const listed = await call('GET', `/eval-suites/${suite.id}/runs`);
    expect(listed.body.data.items.map((r: { id: string; scenarios: unknown[] }) => [r.id, r.scenarios.length])).to.deep.equal([[run.id, 0]]);
  });

  it('refuses a run whose scenarios leave an HTTP skill unstubbed (400 naming it), and an unknown version (404)', async () => {
    const suite = (await call('POST', `/agents/${agentId}/eval-suites`, { name: 'No stubs', scenarios: [{ name: 'x', turns: [{ say: 'lookup order order_id: 1' }] }] })).body.data;
    const res = await call('POST', `/eval-suites/${suite.id}/runs`, { target: 'draft' });
    expect(res.status).to.equal(400);
    expect(res.body.errors.map((e: { field: string }) => e.field)).to.deep.equal(['scenarios[0].skillStubs.lookup_order']);
    expect(await t.db('eval_runs').where({ suite_id: suite.id })).to.have.length(0);
    const version = await call('POST', `/eval-suites/${suite.id}/runs`, { target: { versionId: 'ver_nope' } });
    expect(version.status).to.equal(404);
    expect(version.body.errors[0].field).to.equal('target.versionId');
  });

  it('POST /simulate refuses an HTTP skill without a stub (400 naming it) and runs one on its stub, never the endpoint', async () => {
    const refused = await call('POST', `/agents/${agentId}/simulate`, { draftMode: true, script: ['lookup order order_id: Z9'] });
    expect(refused.status).to.equal(400);
    expect(refused.body.errors).to.deep.equal([
      { field: 'skillStubs.lookup_order', message: 'skill "lookup_order" (http_request) would reach a real endpoint; give its canned output here (simulations and evaluations never call real skills)' },
    ]);
    expect(refused.body.detail).to.contain('lookup_order');
    const ok = await call('POST', `/agents/${agentId}/simulate`, { draftMode: true, script: ['lookup order order_id: Z9'], skillStubs: STUBS, expectations: [{ type: 'callsSkill', skill: 'lookup_order' }, { type: 'mentions', text: 'shipped' }] });
    expect(ok.status, ok.text).to.equal(202);
    const sim = await pollRun(ok.headers.get('location')!);
    expect(sim.results.map((r: { passed: boolean }) => r.passed)).to.deep.equal([true, true]);
  });

  it('gates a publish: 409 evaluation_failed below minPassRate (replayed for the same key), a publication at or above it (replayed too)', async () => {
    const suite = (
      await call('POST', `/agents/${agentId}/eval-suites`, {
        name: 'Gate',
        scenarios: [passingScenario, { name: 'says zebra', turns: [{ say: 'Hi' }], expect: [{ type: 'contains', text: 'zebra' }], skillStubs: STUBS }],
      })
    ).body.data;
    const versionsBefore = (await t.db('agent_versions').where({ agent_id: agentId })).length;
    const body = { note: 'gated', gate: { suiteId: suite.id, minPassRate: 0.9 } };
    const refused = await call('POST', `/agents/${agentId}/publish`, body, { 'Idempotency-Key': 'gate-1' });
    expect(refused.status, refused.text).to.equal(409);
    expect(refused.headers.get('content-type')).to.contain('application/problem+json');
    expect(refused.body).to.include({ code: 'evaluation_failed', status: 'completed', passRate: 0.5, minPassRate: 0.9, passed: 1, total: 2 });
    expect(refused.body.runId).to.match(/^evr_/);
    const replay = await call('POST', `/agents/${agentId}/publish`, body, { 'Idempotency-Key': 'gate-1' });
    expect(replay.status).to.equal(409);
    expect(replay.headers.get('idempotent-replayed')).to.equal('true');
    expect(replay.body).to.include({ code: 'evaluation_failed', runId: refused.body.runId });
    expect(await t.db('eval_runs').where({ id: refused.body.runId })).to.have.length(1);
    const reused = await call('POST', `/agents/${agentId}/publish`, { ...body, note: 'other' }, { 'Idempotency-Key': 'gate-1' });
    expect(reused.body.code).to.equal('idempotency_key_reused');
    expect((await t.db('agent_versions').where({ agent_id: agentId })).length).to.equal(versionsBefore);
    const run = (await call('GET', `/eval-suites/${suite.id}/runs/${refused.body.runId}?transcripts=false`)).body.data;
    expect(run).to.include({ gate: true, passRate: 0.5 });

    const passBody = { gate: { suiteId: suite.id, minPassRate: 0.5 } };
    const published = await call('POST', `/agents/${agentId}/publish`, passBody, { 'Idempotency-Key': 'gate-2' });
    expect(published.status, published.text).to.equal(201);
    const again = await call('POST', `/agents/${agentId}/publish`, passBody, { 'Idempotency-Key': 'gate-2' });
    expect(again.status).to.equal(201);
    expect(again.headers.get('idempotent-replayed')).to.equal('true');
    expect(again.body.data.id).to.equal(published.body.data.id);
    expect((await t.db('agent_versions').where({ agent_id: agentId })).length).to.equal(versionsBefore + 1);
    const gateRuns = await t.db('eval_runs').where({ suite_id: suite.id, status: 'completed' });
    expect(gateRuns).to.have.length(2);

    // A run that passed on an older draft: the edit since was never evaluated, so nothing is published.
    const staleBody = { gate: { suiteId: suite.id, minPassRate: 0.5 } };
    const draftVersion = (await call('GET', `/agents/${agentId}`)).body.data.version;
    const { run: stale } = await createRun(t.db, org.orgId, {
      suite,
      target: { kind: 'draft', draftVersion: draftVersion - 1 },
      total: 2,
      gate: { key: 'gate-stale', requestHash: crypto.createHash('sha256').update(JSON.stringify(staleBody)).digest('hex') },
    });
    await t.db('eval_runs').where({ id: stale.id }).update({ status: 'completed', pass_rate: 1, passed: 2 });
    const changed = await call('POST', `/agents/${agentId}/publish`, staleBody, { 'Idempotency-Key': 'gate-stale' });
    expect(changed.status, changed.text).to.equal(409);
    expect(changed.body).to.include({ code: 'draft_changed', runId: stale.id, evaluatedDraftVersion: draftVersion - 1, draftVersion });
    expect((await t.db('agent_versions').where({ agent_id: agentId })).length).to.equal(versionsBefore + 1);

    const missing = await call('POST', `/agents/${agentId}/publish`, { gate: { suiteId: 'evs_nope', minPassRate: 0.5 } }, { 'Idempotency-Key': 'gate-3' });
    expect(missing.status).to.equal(404);
    expect(missing.body.errors[0].field).to.equal('gate.suiteId');
  });

  it('stops an unstubbed skill of a simulated conversation where skills run (skill_not_stubbed), while a live chat reaches the endpoint', async () => {
    // The control: a live draft chat with the same skill client does reach the loopback endpoint.
    const session = await call('POST', '/chat/sessions', { agentId, draftMode: true });
    expect(session.status, session.text).to.equal(201);
    await call('POST', `/chat/sessions/${session.body.data.session.id}/messages`, { content: 'lookup order order_id: L1' });
    expect(skills.hits).to.have.length(1);
    skills.hits.length = 0;
    // A simulated conversation with stubs that leave the skill out: the skill layer refuses before anything is sent.
    const deps = { db: t.db, llm: createLlm({}), http: skills.http };
    const { conversation } = await startConversation(t.db, org.orgId, { agentId, channel: 'chat', draftMode: true, keyId: null, simulation: true, skillStubs: { other: 1 } });
    const out = await sendMessage(deps, conversation, 'lookup order order_id: L2');
    expect(out.receipt.toolCalls.map((c) => [c.skill, c.error])).to.deep.equal([['lookup_order', 'Skill "lookup_order" has no stub in this simulation; it was not called']]);
    const plain = await startConversation(t.db, org.orgId, { agentId, channel: 'chat', draftMode: true, keyId: null, simulation: true });
    expect(plain.conversation.skillStubs).to.deep.equal({});
    expect((await sendMessage(deps, plain.conversation, 'lookup order order_id: L3')).receipt.toolCalls[0].error).to.contain('no stub');
  });

  it('runs a suite against a frozen version', async () => {
    const version = (await t.db('agent_versions').where({ agent_id: agentId }).orderBy('number', 'desc').first()).id;
    const suite = (await call('POST', `/agents/${agentId}/eval-suites`, { name: 'Version', scenarios: [passingScenario] })).body.data;
    const res = await call('POST', `/eval-suites/${suite.id}/runs`, { target: { versionId: version } });
    expect(res.status, res.text).to.equal(202);
    const run = await pollRun(res.headers.get('location')!);
    expect(run).to.include({ status: 'completed', passRate: 1 });
    expect(run.target).to.deep.equal({ kind: 'version', versionId: version });
    const conv = await t.db('conversations').where({ id: run.scenarios[0].repeats[0].conversationId }).first();
    expect(conv).to.include({ mode: 'published', version_id: version });
  });
});

describe('evaluation runs on an OpenAI-compatible model (loopback stub): tool calls, judged rubrics, flakiness', () => {
  let t: TestApi;
  let stub: OpenAiStub;
  let skills: Awaited<ReturnType<typeof startForbiddenSkillServer>>;
  let org: { orgId: string; key: string; keyId: string };
  let judged = 0;

  before(async () => {
    skills = await startForbiddenSkillServer();
    stub = await startOpenAiStub(
      answerWith((body) => {
        const last = body.messages[body.messages.length - 1];
        // The rubric judge: passes every other verdict, so the scenario passes in one repeat and fails in the other.
        if (body.response_format?.json_schema?.name === 'rubric_verdict') {
          judged++;
          return { content: JSON.stringify({ passed: judged % 2 === 1, reason: judged % 2 === 1 ? 'It says the order shipped.' : 'It never says when.' }) };
        }
        if (last.role === 'tool') return { content: 'Your order B7 has shipped.' };
        const tool = (body.tools ?? []).find((x: { function: { name: string } }) => x.function.name === 'lookup_order');
        if (tool && /order/i.test(last.content ?? '')) return { toolCalls: [{ id: 'call_1', name: 'lookup_order', arguments: '{"order_id":"B7"}' }] };
        return { content: 'Hello from the model.' };
      }),
    );
    const llm = new OpenAiLlm({ baseUrl: stub.baseUrl, apiKey: 'sk-test', model: 'gpt-test', timeoutMs: 5000, maxRetries: 0 });
    t = await startTestApi('evalsllm', QUICK_CLIENT, { providers: { llm }, worker: (deps) => ({ ...createActivities(deps), ...createEvalActivities(deps, { llm, http: skills.http }) }) });
    org = await t.org('Evals LLM');
  });
  after(async () => {
    await t?.close();
    await stub?.close();
    await skills?.close();
  });

  it("judges the model's tool call arguments and an LLM-judged rubric per repeat, and marks the scenario flaky", async () => {
    const key = { key: org.key };
    const agentId = (await t.call('POST', '/agents', { ...key, json: { name: 'Shop', voiceId: 'voice_ava', greeting: 'Acme Shop.' } })).body.data.id;
    await t.call('POST', `/agents/${agentId}/skills`, { ...key, json: { name: 'lookup_order', type: 'http_request', description: 'Looks up an order', config: { url: `${skills.base}/orders`, method: 'GET', inputs: [{ name: 'order_id' }] } } });
    const suite = (
      await t.call('POST', `/agents/${agentId}/eval-suites`, {
        ...key,
        json: {
          name: 'Model',
          repeat: 2,
          scenarios: [
            {
              name: 'order',
              turns: [{ say: 'Where is my order?', expect: [{ type: 'skillCalled', skill: 'lookup_order', args: { order_id: '^B7$' } }] }],
              expect: [{ type: 'rubric', rubric: 'The agent tells the caller the order has shipped' }],
              skillStubs: { lookup_order: { status: 'shipped' } },
            },
            {
              name: 'other order',
              turns: [{ say: 'Where is my order?', expect: [{ type: 'skillCalled', skill: 'lookup_order', args: { order_id: '^C' } }] }],
              skillStubs: { lookup_order: { status: 'shipped' } },
              repeat: 1,
            },
          ],
        },
      })
    ).body.data;
    const res = await t.call('POST', `/eval-suites/${suite.id}/runs`, { ...key, json: { target: 'draft' } });
    expect(res.status, res.text).to.equal(202);
    let run: any;
    for (let i = 0; i < 400 && (!run || run.status === 'running'); i++) {
      if (run) await new Promise((r) => setTimeout(r, 50));
      run = (await t.call('GET', res.headers.get('location')!.replace(/^\/api\/v1/, ''), key)).body.data;
    }
    expect(run.status, JSON.stringify(run)).to.equal('completed');
    expect(run.flaky).to.deep.equal(['order']);
    expect(run).to.include({ total: 3, passed: 1 });
    expect(run.scenarios[0]).to.include({ runs: 2, passed: 1, passRate: 0.5, flaky: true });
    const verdicts = run.scenarios[0].repeats.map((r: any) => r.results.map((x: any) => x.passed));
    expect(verdicts.map((v: boolean[]) => v[0])).to.deep.equal([true, true]);
    expect(verdicts.map((v: boolean[]) => v[1]).sort()).to.deep.equal([false, true]);
    const rubric = run.scenarios[0].repeats.flatMap((r: any) => r.results.filter((x: any) => x.expectation.type === 'rubric'));
    expect(rubric.map((x: any) => x.evidence).sort()).to.deep.equal(['It never says when.', 'It says the order shipped.']);
    expect(run.scenarios[1]).to.include({ runs: 1, passed: 0, flaky: false });
    expect(run.scenarios[1].repeats[0].results[0].evidence).to.equal('turn 1 called lookup_order with order_id="B7", not matching /^C/');
    const judge = stub.requests.find((r) => r.body?.response_format)!;
    expect(judge.body.response_format.json_schema.schema.required).to.deep.equal(['passed', 'reason']);
    expect(judge.body.messages[1].content).to.contain('Rubric: The agent tells the caller the order has shipped').and.contain('Agent: Your order B7 has shipped.');
    expect(skills.hits).to.deep.equal([]);
  });
});
