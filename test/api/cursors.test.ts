/**
 * Cursors are checked before any query (docs/api-notes.md: a cursor the list did not issue answers 400
 * `invalid_cursor` naming `cursor`, never a 5xx). The test finds every cursor-paginated operation of the
 * OpenAPI document (the operations declaring a `cursor` query parameter), fills each list with more rows
 * than one page of `limit=1` holds, checks that the issued cursor walks to a second page, then sends cursors
 * with the list's own tag but forged keys: wrong types, out-of-range numbers, NUL, unpaired surrogates,
 * non-ISO timestamps, tuples of the wrong arity, and garbage.
 */
import { expect } from 'chai';
import { createConversation } from '../../db/repositories/conversations';
import { newId } from '../../db/ids';
import { startOutboundEnv, type OutboundEnv } from './outbound-fixtures';

type Json = Record<string, any>;

/** Forged keys: none is a key any list issues. */
const FORGED_KEYS: unknown[] = [
  'abc',
  '12',
  '',
  1e300,
  2 ** 63,
  -1,
  0.5,
  Number.MAX_SAFE_INTEGER + 2,
  'a\u0000b',
  '\ud800',
  'x'.repeat(600),
  '2026-13-45T99:00:00Z',
  'yesterday',
  [1, 2],
  [],
  ['a'],
  null,
  true,
  { $gt: 0 },
];

const b64 = (v: unknown) => Buffer.from(typeof v === 'string' ? v : JSON.stringify(v)).toString('base64url');

describe('cursors are validated before the query on every cursor-paginated list', function () {
  this.timeout(180_000);
  let env: OutboundEnv;
  let key: string;
  /** Path of each list operation (with ids filled in), by operationId. */
  const paths: Record<string, { method: string; path: string; body?: Json }> = {};

  before(async function () {
    this.timeout(180_000);
    env = await startOutboundEnv('cursors');
    const org = await env.org('Cursor Org');
    key = org.key;
    const orgId = org.orgId;
    const db = env.db;
    // Two of everything, so `limit=1` issues a cursor that a second page has to use.
    const agentId = await env.publishedAgent(orgId);
    await env.publishedAgent(orgId);
    const firstVersion = await db('agent_versions').where({ agent_id: agentId }).first();
    await db('agent_versions').insert({ ...firstVersion, id: newId('ver'), number: 2, idempotency_key: 'k2' });
    for (const name of ['one', 'two']) {
      expect((await env.call(key, 'POST', `/agents/${agentId}/skills`, { name: `skill_${name}`, type: 'end_call', config: {} })).status).to.equal(201);
      expect((await env.call(key, 'POST', `/agents/${agentId}/playbooks`, { name: `book_${name}` })).status).to.equal(201);
      await db('knowledge_sources').insert({ id: newId('ks'), org_id: orgId, agent_id: agentId, kind: 'text', name, text_content: name, status: 'ready' });
    }
    // A crawling URL source with two pages (GET …/sources/{id}/pages), as the crawl stores them.
    const crawlSourceId = newId('ks');
    await db('knowledge_sources').insert({ id: crawlSourceId, org_id: orgId, agent_id: agentId, kind: 'url', name: 'site', url: 'https://site.example/', crawl: JSON.stringify({ maxPages: 10, sameOrigin: true }), status: 'ready' });
    for (const page of ['a', 'b']) await db('knowledge_source_pages').insert({ id: newId('kpg'), org_id: orgId, source_id: crawlSourceId, url: `https://site.example/${page}`, status: 'ready' });
    // An evaluation suite with two runs (GET /eval-suites/{id}/runs), stored as a run starts them.
    const suite = (await env.call(key, 'POST', `/agents/${agentId}/eval-suites`, { name: 'Smoke', scenarios: [{ name: 'hello', turns: [{ say: 'Hello' }] }] })).body.data;
    await env.call(key, 'POST', `/agents/${agentId}/eval-suites`, { name: 'Smoke two', scenarios: [{ name: 'hello', turns: [{ say: 'Hello' }] }] });
    for (let i = 0; i < 2; i++) {
      await db('eval_runs').insert({ id: newId('evr'), org_id: orgId, agent_id: agentId, suite_id: suite.id, target: JSON.stringify({ kind: 'version', versionId: firstVersion.id }), suite: JSON.stringify(suite), total: 1 });
    }
    // A conversation with two analysis revisions, and two bulk analysis runs, as the analysis stores them.
    const { conversation } = await createConversation(db, orgId, { agentId, channel: 'chat', mode: 'published', versionId: firstVersion.id, draftVersion: null, draftSnapshot: null, variables: {}, metadata: {}, keyId: null, greeting: null });
    const conversationId = conversation.id;
    for (const revision of [1, 2]) {
      await db('conversation_analysis_revisions').insert({ id: newId('anr'), org_id: orgId, conversation_id: conversationId, revision, trigger: revision === 1 ? 'end' : 'rerun', status: 'completed' });
    }
    for (let i = 0; i < 2; i++) await db('analysis_runs').insert({ id: newId('arn'), org_id: orgId, cutoff: new Date() });
    await env.ownNumber(key);
    const numberId = await env.ownNumber(key);
    const list = await env.importList(key, 'phone\n+14155550101\n+14155550102\n+14155550103\n');
    await env.importList(key, 'phone\n+14155550104\n');
    const campaign = (await env.call(key, 'POST', '/campaigns', { name: 'C1', agentId, callerIdNumberId: numberId, contactListId: list.id, purpose: 'informational' })).body.data;
    await env.call(key, 'POST', '/campaigns', { name: 'C2', agentId, callerIdNumberId: numberId, contactListId: list.id, purpose: 'informational' });
    const contacts = await db('contacts').where({ list_id: list.id }).orderBy('row_number');
    for (const c of contacts.slice(0, 2)) {
      await db('call_attempts').insert({ id: newId('att'), org_id: orgId, campaign_id: campaign.id, contact_id: c.id, e164: c.e164, zones: ['America/Los_Angeles'] });
    }
    const hookId = newId('whe');
    await db('webhook_endpoints').insert({ id: hookId, org_id: orgId, url: 'https://hooks.example.com/a', secret_sealed: 'x', secret_prefix: 'whsec_x' });
    await db('webhook_endpoints').insert({ id: newId('whe'), org_id: orgId, url: 'https://hooks.example.com/b', secret_sealed: 'x', secret_prefix: 'whsec_x' });
    for (let i = 0; i < 2; i++) {
      const eventId = newId('evt');
      await db('events').insert({ id: eventId, org_id: orgId, type: 'webhook.test', data: {} });
      await db('webhook_deliveries').insert({ id: newId('dlv'), org_id: orgId, endpoint_id: hookId, event_id: eventId, event_type: 'webhook.test' });
    }
    for (const e164 of ['+14155550111', '+14155550112', '+14155550113']) {
      expect((await env.call(key, 'PUT', `/sms/contacts/${encodeURIComponent(e164)}/consent`, { source: 'web_form', proofText: 'Yes' })).status).to.equal(200);
    }
    for (const e164 of ['+14155550111', '+14155550112']) {
      expect((await env.call(key, 'DELETE', `/sms/contacts/${encodeURIComponent(e164)}/consent`)).status).to.equal(200);
    }
    expect((await env.call(key, 'POST', '/api-keys', { name: 'second', scopes: ['agents:read'] })).status).to.equal(201);
    for (const name of ['pk1', 'pk2']) {
      expect((await env.call(key, 'POST', '/publishable-keys', { name, agentId, allowedOrigins: ['https://a.example'] })).status).to.equal(201);
    }
    for (const period of ['2025-01', '2025-02']) {
      await db('invoices').insert({ id: newId('inv'), org_id: orgId, period, period_start: `${period}-01T00:00:00Z`, period_end: `${period}-28T00:00:00Z`, lines: '[]', total_cents: 0 });
    }
    // Variables, escalation destinations, presence, dashboards and reports (docs/api-notes.md
    // "Variables, escalation, onboarding, meta and settings"); the reports as rows, so no workflow starts.
    for (const n of ['one', 'two']) {
      expect((await env.call(key, 'POST', '/variables', { name: `var_${n}`, value: n })).status).to.equal(201);
      expect((await env.call(key, 'POST', '/escalation-destinations', { name: `desk ${n}`, kind: 'email', address: `${n}@acme.test`, timeZone: 'UTC' })).status).to.equal(201);
      expect((await env.call(key, 'PUT', `/presence/${n}@acme.test`, { status: 'available' })).status).to.equal(200);
      expect((await env.call(key, 'POST', '/dashboards', { name: n, widgets: [{ title: n, metric: 'conversations', rangeDays: 1 }] })).status).to.equal(201);
      await db('reports').insert({ id: newId('rpt'), org_id: orgId, kind: 'usage', format: 'csv', time_zone: 'UTC', status: 'ready' });
    }
    const clientIds: string[] = [];
    for (const name of ['app1', 'app2']) {
      const res = await env.call(key, 'POST', '/oauth-clients', { name, redirectUris: ['https://app.example/cb'], scopes: ['agents:read'] });
      expect(res.status).to.equal(201);
      clientIds.push(res.body.data.id);
    }
    for (const n of [1, 2]) {
      const memberId = newId('mem');
      await db('members').insert({ id: memberId, org_id: orgId, email: `m${n}@cursor.example`, role: 'viewer' });
      await db('invitations').insert({ id: newId('inv'), org_id: orgId, email: `i${n}@cursor.example`, role: 'viewer', token_hash: `cursor-invitation-${n}`, expires_at: db.raw("now() + interval '1 day'") });
      await db('oauth_grants').insert({ id: newId('ogr'), org_id: orgId, client_id: clientIds[n - 1], member_id: memberId, scopes: ['agents:read'] });
    }
    for (const name of ['Rec One', 'Rec Two']) expect((await env.call(key, 'POST', '/records', { name })).status).to.equal(201);
    // Calls (GET /calls), as the voice webhook stores them.
    for (const sid of ['CAcursor1', 'CAcursor2']) {
      await db('voice_calls').insert({ id: newId('call'), org_id: orgId, provider: 'sandbox', provider_call_id: sid, direction: 'inbound', from_e164: '+12065550142', to_e164: '+14155550101', status: 'ringing', agent_id: agentId });
    }
    const ids: Record<string, string> = { agentId, id: agentId };
    const specific: Record<string, Record<string, string>> = {
      listContactListContacts: { id: list.id },
      listCampaignAttempts: { id: campaign.id },
      listWebhookDeliveries: { id: hookId },
      listKnowledgeSourcePages: { id: crawlSourceId },
      listEvalRuns: { id: suite.id },
      listAnalysisRevisions: { id: conversationId },
    };
    const doc = (await (await fetch(`${env.api.baseUrl}/openapi.json`)).json()) as Json;
    for (const [path, item] of Object.entries<Json>(doc.paths)) {
      for (const [method, op] of Object.entries<Json>(item)) {
        if (!(op.parameters ?? []).some((p: Json) => p.in === 'query' && p.name === 'cursor')) continue;
        const filled = path.replace(/\{([^}]+)\}/g, (_m, name: string) => specific[op.operationId]?.[name] ?? ids[name]);
        const query = op.operationId === 'searchNumbers' ? 'areaCode=415&' : '';
        paths[op.operationId] = { method: method.toUpperCase(), path: `${filled}?${query}`, body: op.operationId === 'searchVoices' ? {} : undefined };
      }
    }
  });
  after(async () => env?.close());

  it('the OpenAPI document declares a cursor on every list (each answers a page with nextCursor)', async () => {
    expect(Object.keys(paths).length).to.be.greaterThan(15);
    for (const [op, p] of Object.entries(paths)) {
      const res = await env.call(key, p.method, `${p.path}limit=1`, p.body);
      expect(res.status, `${op} ${JSON.stringify(res.body)}`).to.equal(200);
      expect(res.body.data, op).to.include.keys('items', 'nextCursor', 'hasMore');
    }
  });

  it('every list issues a cursor at limit=1 that a second page uses', async () => {
    for (const [op, p] of Object.entries(paths)) {
      const first = await env.call(key, p.method, `${p.path}limit=1`, p.body);
      expect(first.body.data.hasMore, `${op} has fewer than two rows`).to.equal(true);
      const second = await env.call(key, p.method, `${p.path}limit=1&cursor=${first.body.data.nextCursor}`, p.body);
      expect(second.status, op).to.equal(200);
      expect(second.body.data.items, op).to.have.length(1);
      expect(second.body.data.items[0], op).to.not.deep.equal(first.body.data.items[0]);
    }
  });

  it('answers 400 invalid_cursor problem+json for forged keys with the right tag, never a 5xx', async () => {
    for (const [op, p] of Object.entries(paths)) {
      const first = await env.call(key, p.method, `${p.path}limit=1`, p.body);
      const tag = JSON.parse(Buffer.from(first.body.data.nextCursor, 'base64url').toString('utf8')).c as string;
      const forged = [
        ...FORGED_KEYS.map((k) => b64({ c: tag, k })),
        b64({ c: tag }),
        b64({ c: 'other', k: 1 }),
        b64([tag, 1]),
        b64('not json'),
        b64(`{"c":${JSON.stringify(tag)},"k":1e999}`),
        '%00',
        '!!!',
        'A'.repeat(5000),
      ];
      for (const cursor of forged) {
        const raw = await fetch(`${env.api.baseUrl}${p.path}limit=1&cursor=${encodeURIComponent(cursor)}`, {
          method: p.method,
          headers: { authorization: `Bearer ${key}`, ...(p.body ? { 'content-type': 'application/json' } : {}) },
          body: p.body ? JSON.stringify(p.body) : undefined,
        });
        const res = { status: raw.status, body: JSON.parse(await raw.text()) };
        expect(raw.headers.get('content-type'), `${op} ${cursor.slice(0, 60)}`).to.match(/^application\/problem\+json/);
        const what = `${op} cursor ${cursor.slice(0, 60)} → ${res.status} ${JSON.stringify(res.body)?.slice(0, 200)}`;
        if (cursor === '%00') {
          // U+0000 in a query parameter is refused before the route (docs/api-notes.md: unstorable text).
          expect(res.status, what).to.equal(400);
          continue;
        }
        expect(res.status, what).to.equal(400);
        expect(res.body.code, what).to.equal('invalid_cursor');
        expect(res.body.errors?.[0]?.field, what).to.equal('cursor');
        expect(res.body.type, what).to.equal('about:blank');
      }
    }
  });
});
