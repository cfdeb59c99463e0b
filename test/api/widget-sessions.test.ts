/**
 * Widget sessions over HTTP (docs/api-notes.md "Widget"; spec "Authentication" 3): the publishable key's origin list
 * on the session start and on the CORS preflight, the session token bound to its session and origin,
 * the published-version rule, and the conversation recorded on the `web` channel.
 */
import { expect } from 'chai';
import { publishDraft } from './agents-fixtures';
import { startTestApi, type TestApi } from '../helpers/api';

const SITE = 'https://shop.example.com';

describe('widget sessions (publishable key, session token, CORS)', () => {
  let t: TestApi;
  let org: { orgId: string; key: string; keyId: string };
  let agentId: string;
  let pk: string;

  const publish = (id: string, k: string) =>
    publishDraft(t.db, org, id, k);
  const raw = (method: string, path: string, headers: Record<string, string>, body?: unknown) =>
    fetch(`${t.api.baseUrl}${path}`, { method, headers: { ...(body ? { 'content-type': 'application/json' } : {}), ...headers }, body: body ? JSON.stringify(body) : undefined });
  const startSession = (origin: string | null, key = pk) => raw('POST', '/chat/widget/sessions', { authorization: `Bearer ${key}`, ...(origin ? { origin } : {}) }, {});

  before(async () => {
    t = await startTestApi('widgetsessions');
    org = await t.org('Widget Co');
    agentId = (await t.call('POST', '/agents', { key: org.key, json: { name: 'Shop helper', voiceId: 'voice_ava', greeting: 'Hello from the agent' } })).body.data.id;
    await t.call('PUT', `/agents/${agentId}/widget`, { key: org.key, json: { enabled: true, title: 'Shop help', greeting: 'Hi! Ask me about your order.', primaryColor: '#0a7d3b', textColor: '#ffffff', position: 'bottom-right', launcherText: 'Help' } });
    const created = await t.call('POST', '/publishable-keys', { key: org.key, json: { name: 'shop', agentId, allowedOrigins: [SITE] } });
    expect(created.status, created.text).to.equal(201);
    pk = created.body.data.key;
  });
  after(async () => t?.close());

  it('refuses to start before the agent is published (409), then starts a web session from an allowed origin with the widget greeting and a session token', async () => {
    const early = await startSession(SITE);
    expect(early.status).to.equal(409);
    expect(((await early.json()) as { code: string }).code).to.equal('no_published_version');
    await publish(agentId, 'w1');
    const res = await startSession(SITE);
    expect(res.status).to.equal(201);
    expect(res.headers.get('access-control-allow-origin')).to.equal(SITE);
    const data = ((await res.json()) as { data: any }).data;
    expect(data.session).to.include({ agentId, channel: 'web', mode: 'published', status: 'active' });
    expect(data.greeting.content).to.equal('Hi! Ask me about your order.');
    expect(data.widget).to.include({ title: 'Shop help', launcherText: 'Help' });
    expect(data.sessionToken).to.match(/^wst_/);
    const listed = await t.call('GET', '/conversations?channel=web', { key: org.key });
    expect(listed.body.data.items.map((c: { id: string }) => c.id)).to.include(data.session.id);
  });

  it('refuses another origin, or none, with 403 origin_not_allowed, and answers the CORS preflight only for allowed origins', async () => {
    for (const origin of ['https://evil.example.com', 'http://shop.example.com', null]) {
      const res = await startSession(origin);
      expect(res.status, String(origin)).to.equal(403);
      expect(((await res.json()) as { code: string }).code).to.equal('origin_not_allowed');
      expect(res.headers.get('access-control-allow-origin')).to.equal(null);
    }
    const ok = await raw('OPTIONS', '/chat/widget/sessions', { origin: SITE, 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization, content-type' });
    expect(ok.status).to.equal(204);
    expect(ok.headers.get('access-control-allow-origin')).to.equal(SITE);
    expect(ok.headers.get('access-control-allow-headers')).to.match(/Authorization/i);
    const refused = await raw('OPTIONS', '/chat/widget/sessions', { origin: 'https://evil.example.com', 'access-control-request-method': 'POST' });
    expect(refused.status).to.equal(403);
    expect(refused.headers.get('access-control-allow-origin')).to.equal(null);
  });

  it('lets the session token continue only its own session, from its own origin, and nothing else', async () => {
    const a = ((await (await startSession(SITE)).json()) as { data: any }).data;
    const b = ((await (await startSession(SITE)).json()) as { data: any }).data;
    const auth = { authorization: `Bearer ${a.sessionToken}`, origin: SITE };
    const turn = await raw('POST', `/chat/sessions/${a.session.id}/messages`, auth, { content: 'Where is my order?' });
    expect(turn.status).to.equal(200);
    expect(((await turn.json()) as { data: any }).data.reply.content.length).to.be.greaterThan(0);
    expect((await raw('GET', `/chat/sessions/${a.session.id}`, auth)).status).to.equal(200);
    const replayed = await raw('POST', `/chat/sessions/${b.session.id}/messages`, auth, { content: 'hi' });
    expect(replayed.status).to.equal(403);
    expect(((await replayed.json()) as { code: string }).code).to.equal('session_token_mismatch');
    expect((await raw('POST', `/chat/sessions/${a.session.id}/messages`, { ...auth, origin: 'https://evil.example.com' }, { content: 'hi' })).status).to.equal(403);
    expect((await raw('GET', '/agents', auth)).status).to.equal(401);
    expect((await raw('POST', '/chat/sessions', auth, { agentId })).status).to.equal(401);
    const forged = a.sessionToken.slice(0, -2) + (a.sessionToken.endsWith('AA') ? 'BB' : 'AA');
    expect((await raw('POST', `/chat/sessions/${a.session.id}/messages`, { ...auth, authorization: `Bearer ${forged}` }, { content: 'hi' })).status).to.equal(401);
  });

  it('refuses a publishable key on a secret-key route, a secret key on the widget route, and a disabled widget', async () => {
    expect((await raw('GET', '/agents', { authorization: `Bearer ${pk}` })).status).to.equal(403);
    expect((await startSession(SITE, org.key)).status).to.equal(401);
    await t.call('PUT', `/agents/${agentId}/widget`, { key: org.key, json: { enabled: false, title: 'Shop help', greeting: null, primaryColor: '#0a7d3b', textColor: '#ffffff', position: 'bottom-right', launcherText: 'Help' } });
    expect((await startSession(SITE)).status, 'the published version still has the widget on').to.equal(201);
    await publish(agentId, 'w2');
    const off = await startSession(SITE);
    expect(off.status).to.equal(403);
    expect(((await off.json()) as { code: string }).code).to.equal('widget_disabled');
  });
});
