/**
 * Parts of the agent draft over HTTP: skill types and skills, guardrails and caller verification,
 * playbooks and their graphs, voices. Every edit bumps the agent's draft version.
 */
import { expect } from 'chai';
import { QUICK_CLIENT, startTestApi, type TestApi } from '../helpers/api';
import { intakeGraph } from './agents-fixtures';

const BOOK = { name: 'book_appointment', type: 'book_appointment', description: 'Books a visit', config: { url: 'https://cal.example.com/book', durationMinutes: 30, timeZone: 'America/Chicago' } };

describe('agent draft parts API', () => {
  let t: TestApi;
  let key: string;
  let agentId: string;

  const version = async () => Number((await t.call('GET', `/agents/${agentId}`, { key })).body.data.version);

  before(async () => {
    t = await startTestApi('agentparts', QUICK_CLIENT);
    ({ key } = await t.org('Clinic'));
    agentId = (await t.call('POST', '/agents', { key, json: { name: 'Clinic desk' } })).body.data.id;
  });
  after(async () => t?.close());

  describe('skills', () => {
    it('lists skill types with a JSON Schema per type', async () => {
      const r = await t.call('GET', '/skill-types', { key });
      expect(r.status).to.equal(200);
      const types = r.body.data.items.map((x: any) => x.type);
      expect(types).to.include.members(['http_request', 'book_appointment', 'send_sms', 'transfer_call', 'end_call']);
      const http = r.body.data.items.find((x: any) => x.type === 'http_request');
      expect(http.configSchema).to.include({ type: 'object' });
      expect(http.configSchema.required).to.deep.equal(['url', 'method']);
    });

    it('creates a skill, bumping the draft version', async () => {
      const before = await version();
      const r = await t.call('POST', `/agents/${agentId}/skills`, { key, json: BOOK });
      expect(r.status).to.equal(201);
      expect(r.body.data.id).to.match(/^skl_/);
      expect(r.body.data).to.include({ name: 'book_appointment', agentId });
      expect(r.headers.get('etag')).to.equal(`"${before + 1}"`);
      expect(await version()).to.equal(before + 1);
      const agent = (await t.call('GET', `/agents/${agentId}`, { key })).body.data;
      expect(agent.attachments.skills.map((s: any) => s.name)).to.deep.equal(['book_appointment']);
    });

    it('answers 400 naming config fields that break the type schema, and changes nothing', async () => {
      const before = await version();
      const r = await t.call('POST', `/agents/${agentId}/skills`, { key, json: { name: 'lookup', type: 'http_request', config: { url: 'ftp://x', method: 'FETCH', extra: 1 } } });
      expect(r.status).to.equal(400);
      expect(r.body.errors.map((e: any) => e.field).sort()).to.deep.equal(['config.extra', 'config.method', 'config.url']);
      expect(await version()).to.equal(before);
    });

    it('answers 400 on type for an unknown skill type', async () => {
      const r = await t.call('POST', `/agents/${agentId}/skills`, { key, json: { name: 'warp', type: 'teleport', config: {} } });
      expect(r.status).to.equal(400);
      expect(r.body.errors[0].field).to.equal('type');
    });

    it('answers 409 duplicate_name for a second skill with the same name', async () => {
      const r = await t.call('POST', `/agents/${agentId}/skills`, { key, json: BOOK });
      expect(r.status).to.equal(409);
      expect(r.body.code).to.equal('duplicate_name');
    });

    it('updates and deletes a skill; a stale If-Match on a part edit is 409', async () => {
      const created = await t.call('POST', `/agents/${agentId}/skills`, { key, json: { name: 'hang_up', type: 'end_call', config: {} } });
      const id = created.body.data.id;
      const patched = await t.call('PATCH', `/agents/${agentId}/skills/${id}`, { key, json: { config: { closingLine: 'Bye!' } } });
      expect(patched.status).to.equal(200);
      expect(patched.body.data.config).to.deep.equal({ closingLine: 'Bye!' });
      const badConfig = await t.call('PATCH', `/agents/${agentId}/skills/${id}`, { key, json: { config: { closingLine: 5 } } });
      expect(badConfig.status).to.equal(400);
      expect(badConfig.body.errors[0].field).to.equal('config.closingLine');
      const stale = await t.call('DELETE', `/agents/${agentId}/skills/${id}`, { key, headers: { 'if-match': '"1"' } });
      expect(stale.status).to.equal(409);
      expect(stale.body.code).to.equal('version_conflict');
      const del = await t.call('DELETE', `/agents/${agentId}/skills/${id}`, { key });
      expect(del.status).to.equal(200);
      expect((await t.call('DELETE', `/agents/${agentId}/skills/${id}`, { key })).status).to.equal(404);
      const list = await t.call('GET', `/agents/${agentId}/skills`, { key });
      expect(list.body.data.items.map((s: any) => s.name)).to.deep.equal(['book_appointment']);
    });
  });

  describe('guardrails and caller verification', () => {
    it('answers defaults before the first PUT', async () => {
      const r = await t.call('GET', `/agents/${agentId}/guardrails`, { key });
      expect(r.body.data).to.deep.equal({ blockedTopics: [], forbiddenPhrases: [], redactPii: true, profanityFilter: true, escalateOn: [], maxConversationMinutes: null });
      expect((await t.call('GET', `/agents/${agentId}/caller-verification`, { key })).body.data).to.deep.equal({ enabled: false, method: null, requiredForSkills: [], maxAttempts: 3, required: 'for_protected_actions' });
    });

    it('replaces guardrails as a draft edit', async () => {
      const before = await version();
      const g = { blockedTopics: ['medical advice'], forbiddenPhrases: ['guaranteed cure'], redactPii: true, profanityFilter: false, escalateOn: ['angry caller'], maxConversationMinutes: 20 };
      const r = await t.call('PUT', `/agents/${agentId}/guardrails`, { key, json: g });
      expect(r.status).to.equal(200);
      expect(r.body.data).to.deep.equal(g);
      expect(await version()).to.equal(before + 1);
      expect((await t.call('GET', `/agents/${agentId}/guardrails`, { key })).body.data).to.deep.equal(g);
      const bad = await t.call('PUT', `/agents/${agentId}/guardrails`, { key, json: { ...g, maxConversationMinutes: 0, redactPii: 'yes' } });
      expect(bad.status).to.equal(400);
      expect(bad.body.errors.map((e: any) => e.field).sort()).to.deep.equal(['maxConversationMinutes', 'redactPii']);
    });

    it('refuses caller verification naming an unknown skill or enabled without a method', async () => {
      const r = await t.call('PUT', `/agents/${agentId}/caller-verification`, { key, json: { enabled: true, method: null, requiredForSkills: ['nope'], maxAttempts: 3 } });
      expect(r.status).to.equal(400);
      expect(r.body.errors.map((e: any) => e.field)).to.deep.equal(['method', 'requiredForSkills[nope]']);
      const ok = await t.call('PUT', `/agents/${agentId}/caller-verification`, { key, json: { enabled: true, method: 'pin', requiredForSkills: ['book_appointment'], maxAttempts: 3 } });
      expect(ok.status).to.equal(200);
    });

    it('refuses deleting a skill that caller verification requires (409 skill_in_use)', async () => {
      const skills = (await t.call('GET', `/agents/${agentId}/skills`, { key })).body.data.items;
      const r = await t.call('DELETE', `/agents/${agentId}/skills/${skills[0].id}`, { key });
      expect(r.status).to.equal(409);
      expect(r.body.code).to.equal('skill_in_use');
    });
  });

  describe('playbooks', () => {
    let playbookId: string;
    const graph = intakeGraph();

    it('creates a playbook with the default start → end graph', async () => {
      const r = await t.call('POST', `/agents/${agentId}/playbooks`, { key, json: { name: 'intake', description: 'New patients' } });
      expect(r.status).to.equal(201);
      playbookId = r.body.data.id;
      expect(playbookId).to.match(/^pbk_/);
      expect(r.body.data.graph.nodes.map((n: any) => n.type)).to.deep.equal(['start', 'end']);
      const list = await t.call('GET', `/agents/${agentId}/playbooks`, { key });
      expect(list.body.data.items.map((p: any) => p.name)).to.deep.equal(['intake']);
    });

    it('replaces the graph and reads it back', async () => {
      const before = await version();
      const r = await t.call('PUT', `/agents/${agentId}/playbooks/${playbookId}/graph`, { key, json: graph });
      expect(r.status).to.equal(200);
      expect(await version()).to.equal(before + 1);
      expect((await t.call('GET', `/agents/${agentId}/playbooks/${playbookId}/graph`, { key })).body.data).to.deep.equal(graph);
    });

    it('answers 400 naming node ids for an invalid graph and keeps the old one', async () => {
      const bad = {
        nodes: [...graph.nodes.filter((n) => n.id !== 'ask_phone'), { id: 'island', type: 'say', prompt: 'hi' }, { id: 'ghost_skill', type: 'skill', skill: 'nope' }],
        edges: [...graph.edges.filter((e) => e.from !== 'ask_phone' && e.to !== 'ask_phone'), { from: 'ask_name', to: 'ask_time' }, { from: 'book', to: 'missing' }, { from: 'ask_time', to: 'ghost_skill' }],
      };
      const r = await t.call('PUT', `/agents/${agentId}/playbooks/${playbookId}/graph`, { key, json: bad });
      expect(r.status).to.equal(400);
      const fields = r.body.errors.map((e: any) => e.field);
      expect(fields).to.include.members(['graph.nodes[island]', 'graph.nodes[ghost_skill].skill', 'graph.nodes[book].inputs.phone']);
      expect(fields.some((f: string) => /^graph\.edges\[\d+\]$/.test(f))).to.equal(true);
      expect((await t.call('GET', `/agents/${agentId}/playbooks/${playbookId}/graph`, { key })).body.data).to.deep.equal(graph);
    });

    it('refuses renaming a skill a playbook uses (409 skill_in_use)', async () => {
      const skills = (await t.call('GET', `/agents/${agentId}/skills`, { key })).body.data.items;
      const r = await t.call('PATCH', `/agents/${agentId}/skills/${skills[0].id}`, { key, json: { name: 'book' } });
      expect(r.status).to.equal(409);
      expect(r.body.code).to.equal('skill_in_use');
    });

    it('answers 404 for an unknown playbook', async () => {
      expect((await t.call('GET', `/agents/${agentId}/playbooks/pbk_nope/graph`, { key })).status).to.equal(404);
    });
  });

  describe('voices', () => {
    it('lists voices with pagination and filters by language', async () => {
      const p1 = await t.call('GET', '/voices?limit=5', { key });
      expect(p1.status).to.equal(200);
      expect(p1.body.data.items).to.have.length(5);
      const p2 = await t.call('GET', `/voices?limit=5&cursor=${p1.body.data.nextCursor}`, { key });
      expect(p2.body.data.items[0].id > p1.body.data.items[4].id).to.equal(true);
      const de = await t.call('GET', '/voices?language=de-DE', { key });
      expect(de.body.data.items.map((v: any) => v.id)).to.deep.equal(['voice_hans']);
    });

    it('searches voices by words, gender and tags', async () => {
      const r = await t.call('POST', '/voices/search', { key, json: { query: 'calm', language: 'en-US', gender: 'male' } });
      expect(r.status).to.equal(200);
      expect(r.body.data.items.map((v: any) => v.id)).to.deep.equal(['voice_leo']);
      expect((await t.call('POST', '/voices/search', { key, json: { gender: 'robot' } })).status).to.equal(400);
    });

    it("sets the draft's voice, refusing unknown voices and other languages", async () => {
      const before = await version();
      const ok = await t.call('PUT', `/agents/${agentId}/voice`, { key, json: { voiceId: 'voice_leo' } });
      expect(ok.status).to.equal(200);
      expect(ok.body.data).to.include({ voiceId: 'voice_leo', version: before + 1 });
      const unknown = await t.call('PUT', `/agents/${agentId}/voice`, { key, json: { voiceId: 'voice_nobody' } });
      expect(unknown.status).to.equal(400);
      const mismatch = await t.call('PUT', `/agents/${agentId}/voice`, { key, json: { voiceId: 'voice_hans' } });
      expect(mismatch.status).to.equal(422);
      expect(mismatch.body.code).to.equal('voice_language_mismatch');
      expect(await version()).to.equal(before + 1);
    });
  });
});
