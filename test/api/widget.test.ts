/**
 * Widget settings (`GET/PUT /agents/{agentId}/widget`, frozen at publish) and the widget script served at
 * the origin root with its content hash (docs/api-notes.md "Widget").
 */
import { expect } from 'chai';
import { publishDraft } from './agents-fixtures';
import { startTestApi, type TestApi } from '../helpers/api';
import { getVersion } from '../../db/repositories/agentVersions';

describe('widget settings and widget.js', () => {
  let t: TestApi;
  let org: { orgId: string; key: string; keyId: string };
  const origin = () => t.api.baseUrl.replace(/\/api\/v1$/, '');

  before(async () => {
    t = await startTestApi('widget');
    org = await t.org('Widget');
  });
  after(async () => t?.close());

  it('answers defaults, replaces the settings as a draft edit (400 naming fields), and freezes them at publish', async () => {
    const agentId = (await t.call('POST', '/agents', { key: org.key, json: { name: 'Site bot', voiceId: 'voice_ava' } })).body.data.id;
    const first = await t.call('GET', `/agents/${agentId}/widget`, { key: org.key });
    expect(first.body.data).to.include({ enabled: true, position: 'bottom-right', greeting: null });
    const settings = { enabled: true, title: 'Ask Sunrise', greeting: 'Hi from the site!', primaryColor: '#0a7d3b', textColor: '#ffffff', position: 'bottom-left', launcherText: 'Questions?' };
    const put = await t.call('PUT', `/agents/${agentId}/widget`, { key: org.key, json: settings });
    expect(put.status, put.text).to.equal(200);
    expect(put.headers.get('etag')).to.equal('"2"');
    const bad = await t.call('PUT', `/agents/${agentId}/widget`, { key: org.key, json: { ...settings, primaryColor: 'green', position: 'top' } });
    expect(bad.status).to.equal(400);
    expect(bad.body.errors.map((e: { field: string }) => e.field).sort()).to.deep.equal(['position', 'primaryColor']);
    expect((await t.call('GET', `/agents/${agentId}/widget`, { key: org.key })).body.data).to.deep.equal(settings);
    const out = await publishDraft(t.db, org, agentId, 'w1');
    expect(out.kind).to.equal('published');
    if (out.kind !== 'published') return;
    const v = await getVersion(t.db, org.orgId, agentId, out.version.id);
    expect((v!.snapshot as { widget: unknown }).widget).to.deep.equal(settings);
    const reader = await t.org('reader', ['widgets:read']);
    await t.db('api_keys').where({ id: reader.keyId }).update({ org_id: org.orgId });
    expect((await t.call('GET', `/agents/${agentId}/widget`, { key: reader.key })).status).to.equal(200);
    expect((await t.call('PUT', `/agents/${agentId}/widget`, { key: reader.key, json: settings })).status).to.equal(403);
  });

  it('serves /widget.js built with esbuild, with its content hash as ETag (304 when unchanged) and an immutable hashed path', async () => {
    const res = await fetch(`${origin()}/widget.js`);
    expect(res.status).to.equal(200);
    expect(res.headers.get('content-type')).to.match(/^text\/javascript/);
    const etag = res.headers.get('etag')!;
    expect(etag).to.match(/^"[0-9a-f]{16}"$/);
    const code = await res.text();
    expect(code).to.contain('data-acp-widget').and.to.contain('/chat/widget/sessions');
    expect((await fetch(`${origin()}/widget.js`, { headers: { 'if-none-match': etag } })).status).to.equal(304);
    const hashed = await fetch(`${origin()}/widget.${etag.slice(1, -1)}.js`);
    expect(hashed.status).to.equal(200);
    expect(hashed.headers.get('cache-control')).to.contain('immutable');
    expect((await fetch(`${origin()}/widget.0000000000000000.js`)).status).to.equal(404);
  });
});
