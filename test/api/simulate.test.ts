/**
 * `POST /agents/{agentId}/simulate` end to end: the API starts `agent-simulation/{id}` on the dev server, a
 * real-SDK worker runs the turns with the sandbox LLM, and `GET /agents/{agentId}/simulations/{id}` shows
 * the transcript and the verdict on each expectation with its evidence (docs/api-notes.md "Conversations").
 */
import { expect } from 'chai';
import { publishDraft } from './agents-fixtures';
import { startTestApi, type TestApi } from '../helpers/api';
import { createSimulationActivities } from '../../activities/simulations';
import { until } from '../helpers/wait';

describe('agent simulations (workflow agent-simulation/{id})', () => {
  let t: TestApi;
  let org: { orgId: string; key: string; keyId: string };
  let agentId: string;

  // Every 100 ms: a poll every 50 ms, with the test's other calls, could pass the key's burst limit of 20 requests a
  // second (docs/api-notes.md "Wire conventions", rate limits) and read a 429 for the simulation.
  const poll = (location: string) =>
    until(
      async () => {
        const res = await t.call('GET', location.replace(/^\/api\/v1/, ''), { key: org.key });
        expect(res.status, res.text).to.equal(200);
        return res.body.data.status !== 'running' && res.body.data;
      },
      20_000,
      'the simulation finished',
      100,
    );

  before(async () => {
    t = await startTestApi('simulate', {}, { worker: (deps) => createSimulationActivities(deps) });
    org = await t.org('Sim');
    agentId = (await t.call('POST', '/agents', { key: org.key, json: { name: 'Clinic', voiceId: 'voice_ava', greeting: 'Sunrise Dental, how can I help?' } })).body.data.id;
    await t.call('POST', `/agents/${agentId}/skills`, { key: org.key, json: { name: 'book', type: 'book_appointment', description: 'Books a visit', config: { url: 'https://cal.example.com/book', durationMinutes: 30, timeZone: 'America/Chicago' } } });
    await t.call('PUT', `/agents/${agentId}/guardrails`, { key: org.key, json: { blockedTopics: ['politics'], forbiddenPhrases: [], redactPii: true, profanityFilter: true, escalateOn: [], maxConversationMinutes: null } });
  });
  after(async () => t?.close());

  it('refuses a never-published agent (409) unless draftMode, and a request with both or neither of script and caller (400)', async () => {
    const refused = await t.call('POST', `/agents/${agentId}/simulate`, { key: org.key, json: { script: ['hi'] } });
    expect(refused.status).to.equal(409);
    expect(refused.body.code).to.equal('no_published_version');
    const both = await t.call('POST', `/agents/${agentId}/simulate`, { key: org.key, json: { draftMode: true, script: ['hi'], caller: { persona: 'p', goal: 'g' } } });
    expect(both.status).to.equal(400);
    expect(both.body.errors[0].field).to.equal('caller');
    const neither = await t.call('POST', `/agents/${agentId}/simulate`, { key: org.key, json: { draftMode: true } });
    expect(neither.body.errors[0].field).to.equal('script');
  });

  it('runs a scripted conversation against the published version and judges each expectation with evidence', async () => {
    const out = await publishDraft(t.db, org, agentId, 's1');
    expect(out.kind).to.equal('published');
    const res = await t.call('POST', `/agents/${agentId}/simulate`, {
      key: org.key,
      json: {
        script: ['What do you think about politics?', 'Please book start_time: 2026-12-01T15:00:00Z name: Ada phone: +12065550100'],
        // A booking skill reaches its endpoint: a simulation answers its canned output instead (docs/evals.md "Skill stubs").
        skillStubs: { book: { bookingId: 'bk_sim_1', status: 'confirmed' } },
        expectations: [
          { type: 'mentions', text: "can't help with politics" },
          { type: 'doesNotMention', text: 'guaranteed' },
          { type: 'callsSkill', skill: 'book' },
          { type: 'reachesPlaybookNode', node: 'nowhere' },
        ],
      },
    });
    expect(res.status, res.text).to.equal(202);
    expect(res.body.data).to.include({ status: 'running', mode: 'published', agentId });
    const sim = await poll(res.headers.get('location')!);
    expect(sim.status, JSON.stringify(sim)).to.equal('completed');
    expect(sim.turns).to.equal(2);
    expect(sim.passed).to.equal(false);
    expect(sim.results.map((r: { passed: boolean }) => r.passed)).to.deep.equal([true, true, true, false]);
    expect(sim.results[0]).to.include({ turn: 1 });
    expect(sim.results[2].evidence).to.contain('called book');
    expect(sim.results[3].evidence).to.equal('no turn reached nowhere');
    expect(sim.transcript[0].content).to.equal('Sunrise Dental, how can I help?');
    expect(sim.transcript.filter((m: { role: string }) => m.role === 'user').map((m: { content: string }) => m.content)).to.deep.equal([
      'What do you think about politics?',
      'Please book start_time: 2026-12-01T15:00:00Z name: Ada phone: +12065550100',
    ]);
    const conv = await t.db('conversations').where({ id: sim.conversationId }).first();
    expect(conv).to.include({ simulation: true, status: 'ended' });
  });

  it('plays a simulated caller for up to maxTurns turns against the draft', async () => {
    const res = await t.call('POST', `/agents/${agentId}/simulate`, {
      key: org.key,
      json: { draftMode: true, caller: { persona: 'A busy parent', goal: 'I want to know your opening hours', maxTurns: 3 }, skillStubs: { book: { bookingId: 'bk_sim_2', status: 'confirmed' } }, expectations: [{ type: 'doesNotMention', text: 'politics' }] },
    });
    expect(res.status, res.text).to.equal(202);
    const sim = await poll(res.headers.get('location')!);
    expect(sim).to.include({ status: 'completed', mode: 'draft', turns: 3, passed: true });
    const users = sim.transcript.filter((m: { role: string }) => m.role === 'user');
    expect(users).to.have.length(3);
    expect(users[0].content).to.equal('I want to know your opening hours');
    const other = await t.org('Other');
    expect((await t.call('GET', res.headers.get('location')!.replace(/^\/api\/v1/, ''), { key: other.key })).status).to.equal(404);
  });
});
