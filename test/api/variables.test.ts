/**
 * Organization variables (docs/api-notes.md "Variables, escalation, onboarding, meta and settings"): CRUD with
 * write-only secrets sealed at rest, `{{vars.x}}` references checked when a skill is saved and resolved
 * at publish (secrets by reference only: never in a version, a diff or an answer), filled in when a skill
 * runs. Real HTTP on a real Postgres; the publish step is the `agent-publish` activity.
 */
import { expect } from 'chai';
import { QUICK_CLIENT, startTestApi, type TestApi } from '../helpers/api';
import { publishDraft } from './agents-fixtures';
import { withSecretValues } from '../../services/settings/references';

const SECRET = 'sk_test_51Hplaintext-Secret-Value';

describe('organization variables (/variables)', () => {
  let t: TestApi;
  let org: { orgId: string; key: string; keyId: string };
  let other: { orgId: string; key: string; keyId: string };

  before(async () => {
    t = await startTestApi('variables', QUICK_CLIENT);
    org = await t.org('Vars');
    other = await t.org('Other');
  });
  after(async () => t?.close());

  const create = (json: unknown, key = org.key) => t.call('POST', '/variables', { key, json });

  it('creates plain and secret variables; a secret value is never answered and is stored only sealed', async () => {
    const plain = await create({ name: 'support_email', value: 'help@acme.test', description: 'Where to write' });
    expect(plain.status).to.equal(201);
    expect(plain.body.data).to.include({ name: 'support_email', value: 'help@acme.test', secret: false, reference: '{{vars.support_email}}', revision: 1 });
    expect(plain.body.data.id).to.match(/^var_/);
    const secret = await create({ name: 'api_token', value: SECRET, secret: true });
    expect(secret.status).to.equal(201);
    expect(secret.body.data).to.include({ secret: true, value: null });
    expect(secret.text).to.not.include(SECRET);
    const row = await t.db('org_variables').where({ id: secret.body.data.id }).first();
    expect(row.value).to.equal(null);
    expect(row.value_sealed).to.match(/^v1:/);
    expect(JSON.stringify(row)).to.not.include(SECRET);
    for (const path of ['/variables', `/variables/${secret.body.data.id}`]) {
      const r = await t.call('GET', path, { key: org.key });
      expect(r.status).to.equal(200);
      expect(r.text).to.not.include(SECRET);
    }
    const patched = await t.call('PATCH', `/variables/${secret.body.data.id}`, { key: org.key, json: { value: `${SECRET}-2` } });
    expect(patched.status).to.equal(200);
    expect(patched.body.data).to.include({ revision: 2, value: null });
    expect(patched.text).to.not.include(SECRET);
  });

  it('refuses a bad name naming it, a taken name with 409, and an unknown field', async () => {
    const bad = await create({ name: 'Bad-Name', value: 'x' });
    expect(bad.status).to.equal(400);
    expect(bad.body.code).to.equal('validation_error');
    expect(bad.body.errors.map((e: { field: string }) => e.field)).to.include('name');
    const dup = await create({ name: 'support_email', value: 'other' });
    expect(dup.status).to.equal(409);
    expect(dup.body.code).to.equal('variable_name_taken');
    expect((await create({ name: 'ok_name', value: 'x', colour: 'red' })).status).to.equal(400);
    const noValue = await create({ name: 'empty_one', value: '' });
    expect(noValue.status).to.equal(400);
    expect(noValue.body.errors[0].field).to.equal('value');
  });

  it("hides another organization's variables (404) and checks scopes", async () => {
    const mine = (await t.call('GET', '/variables', { key: org.key })).body.data.items[0];
    for (const [method, json] of [['GET', undefined], ['PATCH', { value: 'x' }], ['DELETE', undefined]] as const) {
      const r = await t.call(method, `/variables/${mine.id}`, { key: other.key, json });
      expect(r.status, method).to.equal(404);
      expect(r.body.code).to.equal('variable_not_found');
    }
    expect((await t.call('GET', '/variables', { key: other.key })).body.data.items).to.deep.equal([]);
    const reader = await t.org('Reader', ['agents:read']);
    expect((await t.call('GET', '/variables', { key: reader.key })).status).to.equal(200);
    const refused = await create({ name: 'nope', value: 'x' }, reader.key);
    expect(refused.status).to.equal(403);
    expect(refused.body.code).to.equal('insufficient_scope');
  });

  describe('in agent drafts and versions', () => {
    let agentId: string;
    const http = (authorization: string) => ({
      name: 'crm_lookup',
      type: 'http_request',
      config: { url: 'https://crm.example.com/lookup', method: 'POST', headers: { Authorization: authorization } },
    });

    before(async () => {
      agentId = (await t.call('POST', '/agents', { key: org.key, json: { name: 'Desk', voiceId: 'voice_ava', greeting: 'Hi', instructions: 'Tell callers to write to {{vars.support_email}}.' } })).body.data.id;
    });

    it('refuses a skill config that references an unknown variable, naming the field', async () => {
      const r = await t.call('POST', `/agents/${agentId}/skills`, { key: org.key, json: http('Bearer {{vars.no_such}}') });
      expect(r.status).to.equal(400);
      expect(r.body.errors[0].field).to.equal('config.headers.Authorization');
      expect(r.body.errors[0].message).to.include('vars.no_such');
    });

    it('publishes non-secret values into the version and a secret only by reference (never in the version or a diff)', async () => {
      expect((await t.call('POST', `/agents/${agentId}/skills`, { key: org.key, json: http('Bearer {{vars.api_token}}') })).status).to.equal(201);
      const out = await publishDraft(t.db, org, agentId, 'vars-1');
      expect(out.kind).to.equal('published');
      if (out.kind !== 'published') return;
      const row = await t.db('agent_versions').where({ id: out.version.id }).first();
      const text = JSON.stringify(row.snapshot);
      expect(row.snapshot.instructions).to.equal('Tell callers to write to help@acme.test.');
      expect(row.snapshot.skills[0].config.headers.Authorization).to.equal('Bearer {{vars.api_token}}');
      expect(text).to.not.include(SECRET);
      const ids = Object.fromEntries((await t.call('GET', '/variables', { key: org.key })).body.data.items.map((v: { name: string; id: string }) => [v.name, v.id]));
      expect(row.snapshot.orgVariables).to.deep.equal([
        { name: 'api_token', id: ids.api_token, secret: true },
        { name: 'support_email', id: ids.support_email, secret: false, value: 'help@acme.test' },
      ]);
      // A new plain value shows in the diff; the secret's never does.
      await t.call('PATCH', `/variables/${ids.support_email}`, { key: org.key, json: { value: 'desk@acme.test' } });
      const diff = await t.call('GET', `/agents/${agentId}/versions/${out.version.id}/diff`, { key: org.key });
      expect(diff.status).to.equal(200);
      expect(diff.text).to.include('desk@acme.test');
      expect(diff.text).to.not.include(SECRET);
      // The skill executor fills the secret in, right before the call.
      const filled = await withSecretValues(t.db, org.orgId, row.snapshot.skills[0].config);
      expect(filled.headers.Authorization).to.equal(`Bearer ${SECRET}-2`);
    });

    it('refuses to publish a secret in the instructions and an unknown reference, naming the fields', async () => {
      const v = (await t.call('GET', `/agents/${agentId}`, { key: org.key })).body.data.version;
      await t.call('PATCH', `/agents/${agentId}`, { key: org.key, json: { instructions: 'Token {{vars.api_token}}', greeting: 'Hi {{vars.missing}}' }, headers: { 'if-match': `"${v}"` } });
      const out = await publishDraft(t.db, org, agentId, 'vars-2');
      expect(out.kind).to.equal('invalid');
      if (out.kind !== 'invalid') return;
      const fields = out.errors.map((e) => e.field);
      expect(fields).to.include.members(['instructions', 'greeting']);
      expect(JSON.stringify(out.errors)).to.not.include(SECRET);
    });

    it('refuses to delete a variable an agent refers to (409) and deletes an unused one', async () => {
      const ids = Object.fromEntries((await t.call('GET', '/variables', { key: org.key })).body.data.items.map((v: { name: string; id: string }) => [v.name, v.id]));
      const inUse = await t.call('DELETE', `/variables/${ids.api_token}`, { key: org.key });
      expect(inUse.status).to.equal(409);
      expect(inUse.body.code).to.equal('variable_in_use');
      expect(inUse.body.agentIds).to.deep.equal([agentId]);
      // Referenced only by the published version (the draft no longer mentions it): still in use.
      const live = (await create({ name: 'opening_line', value: 'Welcome!' })).body.data.id;
      const agent2 = (await t.call('POST', '/agents', { key: org.key, json: { name: 'Live', voiceId: 'voice_ava', greeting: '{{vars.opening_line}}' } })).body.data;
      expect((await publishDraft(t.db, org, agent2.id, 'vars-live')).kind).to.equal('published');
      const v2 = (await t.call('GET', `/agents/${agent2.id}`, { key: org.key })).body.data.version;
      expect((await t.call('PATCH', `/agents/${agent2.id}`, { key: org.key, json: { greeting: 'Hello' }, headers: { 'if-match': `"${v2}"` } })).status).to.equal(200);
      const liveOnly = await t.call('DELETE', `/variables/${live}`, { key: org.key });
      expect(liveOnly.status).to.equal(409);
      expect(liveOnly.body.agentIds).to.deep.equal([agent2.id]);
      const unused = (await create({ name: 'unused_one', value: 'x' })).body.data.id;
      expect((await t.call('DELETE', `/variables/${unused}`, { key: org.key })).status).to.equal(200);
      expect((await t.call('GET', `/variables/${unused}`, { key: org.key })).status).to.equal(404);
    });
  });
});
