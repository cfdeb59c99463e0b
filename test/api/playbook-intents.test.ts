/**
 * Playbooks by intent and honest outcomes over HTTP and Postgres (docs/api-notes.md "Agents", "Conversations",
 * "Caller verification", "Sandbox LLM"), on the sandbox LLM by its documented rules and on the OpenAI-compatible
 * adapter against a loopback server speaking chat completions: the playbook offered as `start_playbook_<name>`
 * and started by calling it ("I'd like to book an appointment"), its ask nodes driving the next turns, a failing
 * skill ending on the error path (never the confirmation, never a placeholder), leaving with "never mind"; and
 * the playbook fields on the API — 400 problem+json naming the field, the version diff, the pre-publish report,
 * `callerVerification.required`.
 */
import { expect } from 'chai';
import { chain, publishDraft } from './agents-fixtures';
import { QUICK_CLIENT, startTestApi, type TestApi } from '../helpers/api';
import { answerWith, startOpenAiStub, type OpenAiStub } from '../helpers/llm';
import { OpenAiLlm } from '../../providers/llm/openai';
import { SKILL_ERROR_REPLY } from '../../domain/conversations/playbook';
import * as intentsMigration from '../../db/migrations/20261126000700_playbook_intents';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createSkillHttpClient } from '../../providers/http/request';
import { parseAllowList } from '../../domain/net/guard';

/** A loopback booking endpoint speaking the booking contract (docs/api-notes.md "Booking skills"), started once. */
let endpoint: Promise<string> | undefined;
function bookingEndpoint(): Promise<string> {
  endpoint ??= new Promise((resolve) => {
    const server = http.createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        res.setHeader('content-type', 'application/json');
        res.end(JSON.stringify({ bookingId: 'bk_clinic_1', status: 'confirmed' }));
      });
    });
    server.listen(0, '127.0.0.1', () => resolve(`http://127.0.0.1:${(server.address() as AddressInfo).port}/book`));
    server.unref();
  });
  return endpoint;
}

/** Lists 127.0.0.1 in HTTP_ALLOW_PRIVATE_HOSTS for a suite (before), and puts the old value back (after). */
function allowLoopback(): void {
  const saved = process.env.HTTP_ALLOW_PRIVATE_HOSTS;
  before(() => {
    process.env.HTTP_ALLOW_PRIVATE_HOSTS = '127.0.0.1';
  });
  after(() => {
    if (saved === undefined) delete process.env.HTTP_ALLOW_PRIVATE_HOSTS;
    else process.env.HTTP_ALLOW_PRIVATE_HOSTS = saved;
  });
}

/** The API's skill client, allowed to reach the loopback endpoint. */
const loopbackSkills = () => createSkillHttpClient({ allow: parseAllowList('127.0.0.1') });

/** ask name → ask start_time → book_visit → say confirmation → end (the graph of the reported problem). */
const bookingGraph = {
  nodes: [
    { id: 'start', type: 'start' },
    { id: 'ask_name', type: 'ask', prompt: 'May I have your name?', gathers: 'name' },
    { id: 'ask_date', type: 'ask', prompt: 'Thanks {{name}}. When would you like to come?', gathers: 'start_time' },
    { id: 'book', type: 'skill', skill: 'book_visit' },
    { id: 'confirm', type: 'say', prompt: "You're all set, {{name}}: your confirmation code is {{book_visit_confirmation}}." },
    { id: 'end', type: 'end' },
  ],
  edges: chain('start', 'ask_name', 'ask_date', 'book', 'confirm', 'end'),
};

/** A published clinic agent with the booking playbook (its skill fails unless start_time is ISO 8601). */
async function clinicAgent(t: TestApi, org: { orgId: string; key: string; keyId: string }, name: string): Promise<string> {
  const a = await t.call('POST', '/agents', { key: org.key, json: { name, voiceId: 'voice_ava', variables: [{ name: 'phone', defaultValue: '+12065550100' }] } });
  expect(a.status, a.text).to.equal(201);
  const agentId = a.body.data.id as string;
  // A plain-http loopback endpoint is accepted (and published) only while HTTP_ALLOW_PRIVATE_HOSTS lists it: allowLoopback().
  const skill = await t.call('POST', `/agents/${agentId}/skills`, {
    key: org.key,
    json: { name: 'book_visit', type: 'book_appointment', description: 'Books a visit', config: { url: await bookingEndpoint(), durationMinutes: 30, timeZone: 'America/Chicago' } },
  });
  expect(skill.status, skill.text).to.equal(201);
  const pb = await t.call('POST', `/agents/${agentId}/playbooks`, {
    key: org.key,
    json: { name: 'book_appointment', description: 'Books a visit at the clinic', whenToUse: 'The caller wants to book an appointment', triggerPhrases: ['see the dentist'], graph: bookingGraph },
  });
  expect(pb.status, pb.text).to.equal(201);
  expect(pb.body.data).to.include({ whenToUse: 'The caller wants to book an appointment', requiresVerifiedCaller: false });
  expect(pb.body.data.triggerPhrases).to.deep.equal(['see the dentist']);
  expect((await publishDraft(t.db, org, agentId, `${name}-1`)).kind).to.equal('published');
  return agentId;
}

const noInternals = (text: string) => {
  expect(text).to.not.match(/\{\{|\(source:|\{"|book_visit|start_playbook|invalid_input|skill_failed/);
};

describe('playbooks by intent on the sandbox LLM (its documented rules)', () => {
  allowLoopback();
  let t: TestApi;
  let org: { orgId: string; key: string; keyId: string };
  let agentId: string;
  const session = async () => (await t.call('POST', '/chat/sessions', { key: org.key, json: { agentId } })).body.data.session.id as string;
  const say = async (id: string, content: string) => {
    const res = await t.call('POST', `/chat/sessions/${id}/messages`, { key: org.key, json: { content } });
    expect(res.status, res.text).to.equal(200);
    return res.body.data;
  };

  before(async () => {
    t = await startTestApi('pbintent', QUICK_CLIENT, { providers: { skillHttp: loopbackSkills() } });
    org = await t.org('Clinic');
    agentId = await clinicAgent(t, org, 'Front desk');
  });
  after(async () => t?.close());

  it('starts the playbook from "I\'d like to book an appointment", books, and confirms with the booking', async () => {
    const id = await session();
    const first = await say(id, "I'd like to book an appointment");
    expect(first.reply.content).to.equal('May I have your name?');
    expect(first.session.playbook).to.deep.equal({ name: 'book_appointment', node: 'ask_name' });
    expect(first.messages.map((m: { role: string }) => m.role)).to.deep.equal(['user', 'assistant', 'tool', 'assistant']);
    expect((await say(id, 'Ada Lovelace')).reply.content).to.equal('Thanks Ada Lovelace. When would you like to come?');
    const done = await say(id, '2026-12-01T15:00:00Z');
    // The booking's output has no `confirmation`: the confirmation line is not said rather than said with a placeholder.
    expect(done.reply.content).to.equal("That's done. Is there anything else I can help with?");
    expect(done.receipt.playbook.skipped).to.deep.equal(['confirm']);
    expect(done.receipt.toolCalls[0]).to.include({ skill: 'book_visit', source: 'playbook' });
    expect(done.receipt.toolCalls[0].output).to.include({ bookingId: 'bk_clinic_1', status: 'confirmed' });
  });

  it('a failing skill ends on the error path: an apology and an offer of a person, never "You\'re all set" or a placeholder', async () => {
    const id = await session();
    await say(id, 'Could I see the dentist?');
    await say(id, 'Ada');
    const failed = await say(id, 'next Tuesday afternoon');
    expect(failed.reply.content).to.equal(SKILL_ERROR_REPLY);
    noInternals(failed.reply.content);
    expect(failed.session.playbook).to.equal(null);
    expect(failed.receipt.toolCalls[0].error).to.match(/start_time/);
  });

  it('lets the person leave with "never mind" and says the request was not completed', async () => {
    const id = await session();
    await say(id, 'book appointment');
    const left = await say(id, 'never mind');
    expect(left.reply.content).to.match(/^No problem, I've stopped there: your book appointment request was not completed\./);
    expect(left.session.playbook).to.equal(null);
    expect(left.receipt.toolCalls).to.deep.equal([]);
  });
});

describe('playbooks by intent on the OpenAI-compatible adapter (loopback chat completions)', () => {
  allowLoopback();
  let t: TestApi;
  let stub: OpenAiStub;
  let org: { orgId: string; key: string; keyId: string };
  let agentId: string;
  const say = async (id: string, content: string) => {
    const res = await t.call('POST', `/chat/sessions/${id}/messages`, { key: org.key, json: { content } });
    expect(res.status, res.text).to.equal(200);
    return res.body.data;
  };

  before(async () => {
    // A model that calls the playbook's tool when asked to book, and otherwise answers in words.
    stub = await startOpenAiStub(
      answerWith((body: { messages: { role: string; content: string | null }[] }) => {
        const last = body.messages[body.messages.length - 1];
        return last.role === 'user' && /book an appointment/i.test(last.content ?? '')
          ? { toolCalls: [{ id: 'call_pb1', name: 'start_playbook_book_appointment', arguments: '{}' }] }
          : { content: 'Happy to help.' };
      }),
    );
    t = await startTestApi('pbintentoai', QUICK_CLIENT, { providers: { skillHttp: loopbackSkills(), llm: new OpenAiLlm({ baseUrl: stub.baseUrl, apiKey: 'sk-test', model: 'gpt-test', timeoutMs: 5000, maxRetries: 0 }) } });
    org = await t.org('Clinic upstream');
    agentId = await clinicAgent(t, org, 'Upstream desk');
  });
  after(async () => {
    await t?.close();
    await stub?.close();
  });

  it('offers the playbook as a tool; the model calling it starts the playbook, whose ask nodes then drive the turns; a failing skill ends on the error path', async () => {
    const id = (await t.call('POST', '/chat/sessions', { key: org.key, json: { agentId } })).body.data.session.id as string;
    stub.requests.length = 0;
    const first = await say(id, "Hi, I'd like to book an appointment");
    const offered = stub.requests[0].body.tools.map((x: { function: { name: string; description: string } }) => x.function);
    expect(offered.map((f: { name: string }) => f.name)).to.deep.equal(['book_visit', 'start_playbook_book_appointment']);
    expect(offered[1].description).to.contain('The caller wants to book an appointment').and.contain('"see the dentist"');
    expect(first.reply.content).to.equal('May I have your name?');
    expect(first.session.playbook).to.deep.equal({ name: 'book_appointment', node: 'ask_name' });
    expect(stub.requests).to.have.length(1);

    expect((await say(id, 'Ada')).reply.content).to.equal('Thanks Ada. When would you like to come?');
    const failed = await say(id, 'whenever suits');
    expect(failed.reply.content).to.equal(SKILL_ERROR_REPLY);
    noInternals(failed.reply.content);
    // The playbook turns did not ask the model.
    expect(stub.requests).to.have.length(1);
    // The tool exchange is stored as the model expects it on the next turn: the call answered by a tool message.
    const next = await say(id, 'What time are you open?');
    expect(next.reply.content).to.equal('Happy to help.');
    const history = stub.requests[1].body.messages as { role: string; tool_call_id?: string; tool_calls?: { id: string }[] }[];
    const callIdx = history.findIndex((m) => m.tool_calls?.[0]?.id === 'call_pb1');
    expect(history[callIdx + 1]).to.include({ role: 'tool', tool_call_id: 'call_pb1' });
  });

  it('a trigger phrase starts the playbook before the model is asked (this model would only answer in words)', async () => {
    const id = (await t.call('POST', '/chat/sessions', { key: org.key, json: { agentId } })).body.data.session.id as string;
    stub.requests.length = 0;
    const first = await say(id, 'Hello! Could I SEE the dentist, on Monday?');
    expect(first.reply.content).to.equal('May I have your name?');
    expect(first.session.playbook).to.deep.equal({ name: 'book_appointment', node: 'ask_name' });
    expect(first.receipt.playbook).to.include({ name: 'book_appointment' });
    expect(first.messages.map((m: { role: string }) => m.role)).to.deep.equal(['user', 'assistant']);
    expect(stub.requests).to.have.length(0);
    // Words that are not the phrase (nor the name) go to the model, which answers in words.
    const other = await (async () => {
      const s2 = (await t.call('POST', '/chat/sessions', { key: org.key, json: { agentId } })).body.data.session.id as string;
      return say(s2, 'Does the dentist see children?');
    })();
    expect(other.reply.content).to.equal('Happy to help.');
    expect(other.session.playbook).to.equal(null);
    expect(stub.requests).to.have.length(1);
  });
});

describe('playbook fields and callerVerification.required on the API', () => {
  allowLoopback();
  let t: TestApi;
  let org: { orgId: string; key: string; keyId: string };

  before(async () => {
    t = await startTestApi('pbfields', QUICK_CLIENT);
    org = await t.org('Fields');
  });
  after(async () => t?.close());

  it('answers bad input with 400 problem+json naming the field', async () => {
    const agentId = (await t.call('POST', '/agents', { key: org.key, json: { name: 'Strict', voiceId: 'voice_ava' } })).body.data.id;
    const bad = [
      { path: `/agents/${agentId}/playbooks`, method: 'POST', json: { name: 'x', whenToUse: 5 }, field: 'whenToUse' },
      { path: `/agents/${agentId}/playbooks`, method: 'POST', json: { name: 'y', triggerPhrases: 'book' }, field: 'triggerPhrases' },
      { path: `/agents/${agentId}/playbooks`, method: 'POST', json: { name: 'z', triggerPhrases: ['book', '  '] }, field: 'triggerPhrases[1]' },
      { path: `/agents/${agentId}/playbooks`, method: 'POST', json: { name: 'w', requiresVerifiedCaller: 'yes' }, field: 'requiresVerifiedCaller' },
      { path: `/agents/${agentId}/caller-verification`, method: 'PUT', json: { enabled: true, method: 'pin', requiredForSkills: [], maxAttempts: 3, required: 'sometimes' }, field: 'required' },
    ];
    for (const b of bad) {
      const res = await t.call(b.method, b.path, { key: org.key, json: b.json });
      expect(res.status, `${b.field}: ${res.text}`).to.equal(400);
      expect(res.headers.get('content-type')).to.match(/application\/problem\+json/);
      expect(res.body.code).to.equal('validation_error');
      expect(res.body.errors.map((e: { field: string }) => e.field), res.text).to.include(b.field);
    }
    const pb = await t.call('POST', `/agents/${agentId}/playbooks`, { key: org.key, json: { name: 'ok' } });
    expect(pb.status, pb.text).to.equal(201);
    const patch = await t.call('PATCH', `/agents/${agentId}/playbooks/${pb.body.data.id}`, { key: org.key, json: { whenToUse: ['no'] } });
    expect(patch.status).to.equal(400);
    expect(patch.body.errors.map((e: { field: string }) => e.field)).to.include('whenToUse');
    expect((await t.call('PATCH', `/agents/${agentId}/playbooks/pbk_missing0000`, { key: org.key, json: { whenToUse: 'x' } })).body.code).to.equal('playbook_not_found');
    const graph = { nodes: [{ id: 'start', type: 'start' }, { id: 'end', type: 'end' }], edges: [{ from: 'start', to: 'end', onError: true }] };
    const edge = await t.call('PUT', `/agents/${agentId}/playbooks/${pb.body.data.id}/graph`, { key: org.key, json: graph });
    expect(edge.status).to.equal(400);
    expect(edge.body.errors.map((e: { field: string }) => e.field)).to.deep.equal(['graph.edges[0].onError']);
  });

  it('versions whenToUse, triggerPhrases and requiresVerifiedCaller: PATCH is a draft edit that shows in the version diff', async () => {
    const agentId = await clinicAgent(t, org, 'Versioned');
    const versions = (await t.call('GET', `/agents/${agentId}/versions`, { key: org.key })).body.data.items;
    const pbs = (await t.call('GET', `/agents/${agentId}/playbooks`, { key: org.key })).body.data.items;
    const same = await t.call('GET', `/agents/${agentId}/versions/${versions[0].id}/diff`, { key: org.key });
    expect(same.body.data.items).to.deep.equal([]);
    const patch = await t.call('PATCH', `/agents/${agentId}/playbooks/${pbs[0].id}`, {
      key: org.key,
      json: { whenToUse: '  The caller wants a check-up  ', triggerPhrases: ['check-up', 'cleaning'], requiresVerifiedCaller: true },
    });
    expect(patch.status, patch.text).to.equal(200);
    expect(patch.body.data).to.include({ whenToUse: 'The caller wants a check-up', requiresVerifiedCaller: true });
    expect(patch.headers.get('etag')).to.be.a('string');
    const diff = (await t.call('GET', `/agents/${agentId}/versions/${versions[0].id}/diff`, { key: org.key })).body.data.items;
    const byField = Object.fromEntries(diff.map((d: { field: string }) => [d.field, d]));
    expect(byField['playbooks[book_appointment].whenToUse']).to.include({ kind: 'changed', before: 'The caller wants to book an appointment', after: 'The caller wants a check-up' });
    expect(byField['playbooks[book_appointment].triggerPhrases']).to.include({ kind: 'changed' });
    expect(byField['playbooks[book_appointment].requiresVerifiedCaller']).to.include({ kind: 'added', after: true });
  });

  it('the pre-publish report names each playbook and when it starts, and what is protected', async () => {
    const agentId = await clinicAgent(t, org, 'Reported');
    await t.call('POST', `/agents/${agentId}/skills`, { key: org.key, json: { name: 'find_account', type: 'lookup_record', config: { matchOn: ['phone'] } } });
    const cv = await t.call('PUT', `/agents/${agentId}/caller-verification`, { key: org.key, json: { enabled: true, method: 'pin', requiredForSkills: ['book_visit'], maxAttempts: 3 } });
    expect(cv.status, cv.text).to.equal(200);
    expect(cv.body.data.required).to.equal('for_protected_actions');
    const report = (await t.call('GET', `/agents/${agentId}/prepublish-report`, { key: org.key })).body.data;
    expect(report.playbooks).to.have.length(1);
    expect(report.playbooks[0]).to.include({ name: 'book_appointment', tool: 'start_playbook_book_appointment', whenToUse: 'The caller wants to book an appointment', requiresVerifiedCaller: true });
    expect(report.playbooks[0].triggerPhrases).to.deep.equal(['see the dentist']);
    expect(report.playbooks[0].asks).to.deep.equal(['name', 'start_time']);
    expect(report.playbooks[0].startsWhen).to.contain('"see the dentist"').and.contain('the model judges that the caller wants to book an appointment').and.contain('verified caller');
    expect(report.callerVerificationRequired).to.equal('for_protected_actions');
    expect(report.protectedActions).to.deep.equal([
      { kind: 'skill', name: 'book_visit', reason: 'listed in requiredForSkills' },
      { kind: 'record_lookup', name: 'find_account', reason: 'looks up customer records' },
      { kind: 'playbook', name: 'book_appointment', reason: 'runs the protected skill book_visit' },
    ]);
    expect(report.warnings.map((w: { code: string }) => w.code)).to.include('playbook_skill_without_error_path');
  });

  it('callerVerification.required: for_protected_actions for new agents; a PUT without it keeps the stored value', async () => {
    const agentId = (await t.call('POST', '/agents', { key: org.key, json: { name: 'Defaults', voiceId: 'voice_ava' } })).body.data.id;
    expect((await t.call('GET', `/agents/${agentId}/caller-verification`, { key: org.key })).body.data.required).to.equal('for_protected_actions');
    const body = { enabled: true, method: 'pin', requiredForSkills: [], maxAttempts: 3 };
    expect((await t.call('PUT', `/agents/${agentId}/caller-verification`, { key: org.key, json: { ...body, required: 'always' } })).body.data.required).to.equal('always');
    const kept = await t.call('PUT', `/agents/${agentId}/caller-verification`, { key: org.key, json: body });
    expect(kept.body.data.required).to.equal('always');
    expect((await t.call('GET', `/agents/${agentId}/caller-verification`, { key: org.key })).body.data.required).to.equal('always');
  });

  it('the migration stamps agents stored before `required` existed with `always` (new ones keep the new default)', async () => {
    const before = (await t.call('POST', '/agents', { key: org.key, json: { name: 'Stored earlier', voiceId: 'voice_ava' } })).body.data.id;
    const configured = (await t.call('POST', '/agents', { key: org.key, json: { name: 'Configured earlier', voiceId: 'voice_ava' } })).body.data.id;
    await t.db('agents').where({ id: configured }).update({ caller_verification: JSON.stringify({ enabled: true, method: 'pin', requiredForSkills: [], maxAttempts: 3 }) });
    await intentsMigration.down(t.db);
    await intentsMigration.up(t.db);
    for (const id of [before, configured]) expect((await t.call('GET', `/agents/${id}/caller-verification`, { key: org.key })).body.data.required, id).to.equal('always');
    const after = (await t.call('POST', '/agents', { key: org.key, json: { name: 'Created later', voiceId: 'voice_ava' } })).body.data.id;
    expect((await t.call('GET', `/agents/${after}/caller-verification`, { key: org.key })).body.data.required).to.equal('for_protected_actions');
  });
});
