/**
 * Publishable keys (spec "Authentication" 3; docs/api-notes.md "Credentials and tenancy"): pinned to
 * an agent of the organization, allowed origins validated and normalized, shown once, revocable, and
 * refused (403) on every route that is not a publishable-key route. Real HTTP on a real Postgres.
 */
import { expect } from 'chai';
import { startTestApi, type TestApi } from '../helpers/api';
import { hashKey } from '../../db/repositories/apiKeys';
import { ROUTES } from '../../api/routes/table';

describe('publishable keys (/publishable-keys)', () => {
  let t: TestApi;
  let key: string;
  let agentId: string;

  before(async () => {
    t = await startTestApi('publishable_keys');
    ({ key } = await t.org('Widget Org'));
    agentId = (await t.call('POST', '/agents', { key, json: { name: 'Front desk' } })).body.data.id;
  });
  after(async () => t?.close());

  const create = (json: unknown, k = key) => t.call('POST', '/publishable-keys', { key: k, json });

  it('creates a key pinned to the agent, shown once, with normalized origins, and lists it without the key', async () => {
    const res = await create({ name: 'site', agentId, allowedOrigins: ['https://Example.com:443', 'http://localhost:3000', 'http://localhost:*', 'https://example.com'] });
    expect(res.status).to.equal(201);
    const k = res.body.data;
    expect(k.key).to.match(/^acp_pk_live_[A-Za-z0-9]{30,40}$/);
    expect(k).to.include({ name: 'site', agentId, prefix: k.key.slice(0, 16), lastUsedAt: null });
    expect(k.allowedOrigins).to.deep.equal(['https://example.com', 'http://localhost:3000', 'http://localhost:*']);
    expect(k.id).to.match(/^pk_/);
    const row = await t.db('api_keys').where({ id: k.id }).first();
    expect(row).to.include({ kind: 'publishable', key_hash: hashKey(k.key), agent_id: agentId });
    const list = await t.call('GET', '/publishable-keys', { key });
    expect(list.status).to.equal(200);
    expect(list.body.data.items.map((i: { id: string }) => i.id)).to.include(k.id);
    expect(list.text).to.not.include(k.key);
    // Secret keys and publishable keys are listed apart.
    expect((await t.call('GET', '/api-keys', { key })).body.data.items.map((i: { id: string }) => i.id)).to.not.include(k.id);
  });

  it('refuses origins that are not exact scheme://host[:port], naming each one', async () => {
    const bad = [
      'https://example.com/',
      'https://example.com/path',
      'https://*.example.com',
      'http://localhost:3*',
      'ftp://example.com',
      'example.com',
      'https://user@example.com',
      'https://example.com?x=1',
      'http://127.0.0.1:*',
    ];
    const res = await create({ name: 'bad', agentId, allowedOrigins: ['https://ok.example', ...bad] });
    expect(res.status).to.equal(400);
    expect(res.body.code).to.equal('validation_error');
    expect(res.body.errors.map((e: { field: string }) => e.field)).to.deep.equal(bad.map((_, i) => `allowedOrigins.${i + 1}`));
    expect((await create({ name: 'none', agentId, allowedOrigins: [] })).body.errors[0].field).to.equal('allowedOrigins');
    expect((await create({ name: 'x', allowedOrigins: ['https://a.example'] })).body.errors[0].field).to.equal('agentId');
  });

  it("answers 404 naming agentId for an unknown agent or another organization's", async () => {
    const other = await t.org('Other');
    const theirAgent = (await t.call('POST', '/agents', { key: other.key, json: { name: 'Theirs' } })).body.data.id;
    for (const id of [theirAgent, 'agt_doesnotexist']) {
      const res = await create({ name: 'x', agentId: id, allowedOrigins: ['https://a.example'] });
      expect(res.status).to.equal(404);
      expect(res.body.code).to.equal('agent_not_found');
      expect(res.body.errors).to.deep.equal([{ field: 'agentId', message: 'is not an agent of this organization' }]);
    }
  });

  it('answers 403 publishable_key_not_allowed on every route that is not a publishable-key route', async () => {
    const pk = (await create({ name: 'p', agentId, allowedOrigins: ['https://a.example'] })).body.data.key;
    for (const [method, path] of [['GET', '/agents'], ['GET', `/agents/${agentId}`], ['GET', '/publishable-keys'], ['POST', '/api-keys'], ['GET', '/sms']]) {
      const res = await t.call(method, path, { key: pk, json: method === 'POST' ? { name: 'x', scopes: ['agents:read'] } : undefined });
      expect(res.status, `${method} ${path}`).to.equal(403);
      expect(res.body.code).to.equal('publishable_key_not_allowed');
    }
    // The widget route authenticates it: past authentication, a request with no page Origin is refused.
    const widget = ROUTES.find((r) => r.operationId === 'createWidgetSession')!;
    expect(widget.auth).to.equal('publishable');
    const res = await t.call('POST', '/chat/widget/sessions', { key: pk, json: {} });
    expect(res.status).to.equal(403);
    expect(res.body.code).to.equal('origin_not_allowed');
    // And a secret key cannot stand in for it there.
    expect((await t.call('POST', '/chat/widget/sessions', { key, json: {} })).status).to.equal(401);
  });

  it('revokes at once; 404 for a secret key id or another organization’s key; needs pubkeys scopes', async () => {
    const k = (await create({ name: 'gone', agentId, allowedOrigins: ['https://a.example'] })).body.data;
    expect((await t.call('POST', '/chat/widget/sessions', { key: k.key, json: {} })).body.code, 'authenticated before the revocation').to.equal('origin_not_allowed');
    const other = await t.org('Other 2');
    expect((await t.call('DELETE', `/publishable-keys/${k.id}`, { key: other.key })).status).to.equal(404);
    expect((await t.call('DELETE', `/publishable-keys/${other.keyId}`, { key: other.key })).body.code).to.equal('publishable_key_not_found');
    const res = await t.call('DELETE', `/publishable-keys/${k.id}`, { key });
    expect(res.status).to.equal(200);
    let status = 0;
    for (let i = 0; i < 50 && status !== 401; i++) {
      status = (await t.call('POST', '/chat/widget/sessions', { key: k.key, json: {} })).status;
      if (status !== 401) await new Promise((r) => setTimeout(r, 20));
    }
    expect(status).to.equal(401);
    expect((await t.call('GET', '/publishable-keys', { key })).body.data.items.map((i: { id: string }) => i.id)).to.not.include(k.id);

    const reader = (await t.call('POST', '/api-keys', { key, json: { name: 'reader', scopes: ['pubkeys:read'] } })).body.data.secret;
    expect((await t.call('GET', '/publishable-keys', { key: reader })).status).to.equal(200);
    const refused = await create({ name: 'no', agentId, allowedOrigins: ['https://a.example'] }, reader);
    expect(refused.status).to.equal(403);
    expect(refused.body.missingScopes).to.deep.equal(['pubkeys:write']);
  });
});
