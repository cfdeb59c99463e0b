/**
 * Wire conventions over a real socket (docs/api-notes.md: wire conventions): request ids, envelope, problem details for every
 * failure class, authentication challenges, scopes, reserved endpoints, rate limits, tenancy.
 */
import { expect } from 'chai';
import { startApi } from '../../api/server';
import { revokeKey } from '../../db/repositories/apiKeys';
import { createLogger } from '../../runtime';
import { useTestApi, type TestResponse } from '../helpers/api';

function expectProblem(res: TestResponse, status: number, code: string): void {
  expect(res.status, res.text).to.equal(status);
  expect(res.headers.get('content-type')).to.match(/^application\/problem\+json/);
  expect(res.body).to.include({ type: 'about:blank', status, code });
  expect(res.body.title).to.be.a('string').and.not.empty;
  expect(res.body.detail).to.be.a('string').and.not.empty;
  expect(res.body.instance).to.be.a('string').and.match(/^\/api\/v1|^\//);
}

describe('wire conventions', () => {
  const t = useTestApi('wire', { bodyLimitBytes: 4096 });
  let key: string;
  before(async () => {
    ({ key } = await t.org('Wire Org'));
  });

  it('echoes a sane X-Request-Id and mints one otherwise', async () => {
    const given = await t.call('GET', '/sms', { key, headers: { 'x-request-id': 'abc-123' } });
    expect(given.headers.get('x-request-id')).to.equal('abc-123');
    const minted = await t.call('GET', '/sms', { key, headers: { 'x-request-id': 'bad id with spaces' } });
    expect(minted.headers.get('x-request-id')).to.match(/^req_[0-9a-f]{32}$/);
  });

  it('wraps success in the envelope {success, data}', async () => {
    const res = await t.call('PUT', '/sms', { key, json: { displayName: 'Envelope Co' } });
    expect(res.status).to.equal(200);
    expect(res.headers.get('content-type')).to.match(/^application\/json/);
    expect(res.body.success).to.equal(true);
    expect(res.body.data).to.be.an('object');
  });

  it('answers 401 with WWW-Authenticate Bearer realm="api" when no key is sent', async () => {
    const res = await t.call('GET', '/sms');
    expectProblem(res, 401, 'unauthorized');
    expect(res.headers.get('www-authenticate')).to.equal('Bearer realm="api"');
  });

  it('adds error="invalid_token" when a key was sent but is unknown or malformed', async () => {
    for (const bad of ['acp_sk_live_' + 'x'.repeat(32), 'nonsense', key + 'x']) {
      const res = await t.call('GET', '/sms', { key: bad });
      expectProblem(res, 401, 'invalid_token');
      expect(res.headers.get('www-authenticate')).to.equal('Bearer realm="api", error="invalid_token"');
    }
  });

  it('answers 403 insufficient_scope naming the missing scope', async () => {
    const { key: readOnly } = await t.org('Read Only', ['sms:read']);
    const res = await t.call('PUT', '/sms', { key: readOnly, json: { displayName: 'x' } });
    expectProblem(res, 403, 'insufficient_scope');
    expect(res.body.detail).to.include('sms:write');
    expect(res.body.missingScopes).to.deep.equal(['sms:write']);
    expect(res.headers.get('www-authenticate')).to.include('error="insufficient_scope"');
  });

  it('answers 403 reserved_endpoint for reserved endpoints even with the reserved scope', async () => {
    const { key: reservedKey } = await t.org('Reserved', ['escalations:read']);
    const res = await t.call('GET', '/escalations', { key: reservedKey });
    expectProblem(res, 403, 'reserved_endpoint');
  });

  it('authenticates a declared operation before its handler runs (every operation now has one: test/api/spec-coverage.test.ts)', async () => {
    expectProblem(await t.call('GET', '/integrations'), 401, 'unauthorized');
    expect((await t.call('GET', '/integrations', { key })).status).to.equal(200);
  });

  it('answers 404 route_not_found for unknown paths', async () => {
    expectProblem(await t.call('GET', '/no/such/route', { key }), 404, 'route_not_found');
    const outside = await fetch(t.api.baseUrl.replace('/api/v1', '/elsewhere'));
    expect(outside.status).to.equal(404);
    expect(outside.headers.get('content-type')).to.match(/problem\+json/);
  });

  it('answers 405 with Allow for a known path with another method', async () => {
    const res = await t.call('DELETE', '/sms', { key });
    expectProblem(res, 405, 'method_not_allowed');
    expect(res.headers.get('allow')).to.include('GET').and.include('PUT');
  });

  it('routes by path whatever the case of the prefix and first segment, as the route patterns match', async () => {
    const lower = await t.call('GET', '/sms', { key });
    const base = t.api.baseUrl.replace('/api/v1', '/API/V1');
    const upper = await fetch(`${base}/SMS`, { headers: { authorization: `Bearer ${key}` } });
    expect(upper.status).to.equal(lower.status);
    expect(lower.body?.code).to.not.equal('route_not_found');
    expectProblem(await t.call('GET', '/sms/no-such-thing', { key }), 404, 'route_not_found');
    // `/api/v1/` itself is the API's index (docs/api-notes.md "Reference, landing page and index").
    expect((await t.call('GET', '/', { key })).body.data.links.openapi).to.match(/\/api\/v1\/openapi\.json$/);
    expectProblem(await t.call('GET', '/no-such-segment', { key }), 404, 'route_not_found');
    const doc = await fetch(`${t.api.baseUrl}/openapi.json`);
    expect(doc.status).to.equal(200);
  });

  it('answers 400 malformed_json for a broken JSON body', async () => {
    const res = await t.call('PUT', '/sms', { key, raw: '{"displayName": ', headers: { 'content-type': 'application/json' } });
    expectProblem(res, 400, 'malformed_json');
  });

  it('answers 400 validation_error naming each field whose text Postgres cannot store, and keeps the stored draft', async () => {
    expect((await t.call('PUT', '/sms', { key, json: { displayName: 'Kept Brand' } })).status).to.equal(200);
    // JSON escapes: U+0000, and a high surrogate with no low surrogate after it.
    const raw = '{"displayName": "A\\u0000B", "city": "\\ud800x", "website": "https://example.com"}';
    const res = await t.call('PUT', '/sms', { key, raw, headers: { 'content-type': 'application/json' } });
    expectProblem(res, 400, 'validation_error');
    expect(res.body.errors.map((e: { field: string }) => e.field)).to.deep.equal(['displayName', 'city']);
    const stored = await t.call('GET', '/sms', { key });
    expect(stored.body.data).to.include({ displayName: 'Kept Brand', city: null });
  });

  it('answers 400 validation_error on (body) for JSON nested deeper than 64 levels, however deep', async () => {
    for (const depth of [65, 2000]) { // the test API's body limit is 4 KiB
      const raw = `{"displayName":"x","extra":${'['.repeat(depth)}${']'.repeat(depth)}}`;
      const res = await t.call('PUT', '/sms', { key, raw, headers: { 'content-type': 'application/json' } });
      expectProblem(res, 400, 'validation_error');
      expect(res.body.errors).to.deep.equal([{ field: '(body)', message: 'must not nest arrays or objects deeper than 64 levels' }]);
    }
  });

  it('answers 415 for a body that is not JSON', async () => {
    const res = await t.call('PUT', '/sms', { key, raw: 'displayName=x', headers: { 'content-type': 'application/x-www-form-urlencoded' } });
    expectProblem(res, 415, 'unsupported_media_type');
  });

  it('answers 413 for a body over the limit, and stores nothing from it', async () => {
    const before = await t.call('GET', '/sms', { key });
    const res = await t.call('PUT', '/sms', { key, json: { description: 'x'.repeat(5000) } });
    expectProblem(res, 413, 'payload_too_large');
    // A body refused before it all arrived: the connection ends with the answer (RFC 9110 §15.5.14), or
    // the unread rest would be read as the next request on it.
    const big = await t.call('PUT', '/sms', { key, json: { description: 'x'.repeat(2_000_000) } });
    expectProblem(big, 413, 'payload_too_large');
    expect(big.headers.get('connection')).to.equal('close');
    expect((await t.call('GET', '/sms', { key })).status).to.equal(200);
    const after = await t.call('GET', '/sms', { key });
    expect(after.body.data.description).to.equal(before.body.data.description);
  });

  it('carries RateLimit-Policy and RateLimit fields on authenticated responses', async () => {
    const res = await t.call('GET', '/sms', { key });
    expect(res.headers.get('ratelimit-policy')).to.equal('"default";q=600;w=60, "burst";q=20;w=1');
    expect(res.headers.get('ratelimit')).to.match(/^"default";r=\d+;t=\d+, "burst";r=\d+;t=\d+$/);
  });

  it('answers 429 with Retry-After past a per-key limit shared by every API process', async () => {
    const { key: limited } = await t.org('Limited', ['sms:read'], { rateLimitPoints: 3, rateLimitWindowSeconds: 60 });
    const second = await startApi({ db: t.db, databaseUrl: t.databaseUrl, config: { ...t.config, port: 0 }, logger: createLogger('silent') });
    try {
      const viaSecond = async () => {
        const r = await fetch(`${second.baseUrl}/sms`, { headers: { authorization: `Bearer ${limited}` } });
        return { status: r.status, headers: r.headers, body: (await r.json()) as { code: string } };
      };
      expect((await t.call('GET', '/sms', { key: limited })).status).to.equal(404);
      expect((await viaSecond()).status).to.equal(404);
      const third = await t.call('GET', '/sms', { key: limited });
      expect(third.headers.get('ratelimit')).to.match(/^"default";r=0;/);
      const refused = await viaSecond();
      expect(refused.status).to.equal(429);
      expect(refused.body.code).to.equal('rate_limited');
      expect(Number(refused.headers.get('retry-after'))).to.be.within(1, 60);
      expect(refused.headers.get('ratelimit-policy')).to.equal('"default";q=3;w=60');
    } finally {
      await second.close();
    }
  });

  it("answers 429 past a key's burst limit, shared by every API process, while its minute budget remains, and goes on when the second passes", async () => {
    const { key: bursty } = await t.org('Bursty', ['sms:read']);
    const second = await startApi({ db: t.db, databaseUrl: t.databaseUrl, config: { ...t.config, port: 0 }, logger: createLogger('silent') });
    const realNow = Date.now;
    const start = realNow();
    let now = start;
    Date.now = () => now; // the wall clock stands still inside one burst window, then skips past it: no real sleep
    try {
      const get = async (i: number) => {
        if (i % 2) return t.call('GET', '/sms', { key: bursty });
        const r = await fetch(`${second.baseUrl}/sms`, { headers: { authorization: `Bearer ${bursty}` } });
        return { status: r.status, headers: r.headers, body: (await r.json()) as { code: string; detail: string } };
      };
      const answers = [];
      for (let i = 0; i < 21; i++) answers.push(await get(i));
      expect(answers.slice(0, 20).map((r) => r.status)).to.deep.equal(Array(20).fill(404));
      expect(answers[19].headers.get('ratelimit')).to.match(/^"default";r=580;t=\d+, "burst";r=0;t=1$/);
      const refused = answers[20];
      expect(refused.status).to.equal(429);
      expect(refused.body.code).to.equal('rate_limited');
      expect(refused.body.detail).to.match(/^Burst limit of 20 requests per 1 s exceeded/);
      expect(refused.headers.get('retry-after')).to.equal('1');
      expect(refused.headers.get('ratelimit')).to.equal('"burst";r=0;t=1');
      expect(refused.headers.get('ratelimit-policy')).to.equal('"default";q=600;w=60, "burst";q=20;w=1');
      now = start + 1000;
      const after = await get(1);
      expect(after.status).to.equal(404);
      expect(after.headers.get('ratelimit')).to.match(/^"default";r=578;t=\d+, "burst";r=19;t=1$/);
    } finally {
      Date.now = realNow;
      await second.close();
    }
  });

  it('stops accepting a revoked key at once', async () => {
    const { orgId, key: doomed, keyId } = await t.org('Revoked');
    expect((await t.call('GET', '/sms', { key: doomed })).status).to.equal(404); // now cached
    await revokeKey(t.db, orgId, keyId);
    let status = 0;
    for (let i = 0; i < 50 && status !== 401; i++) {
      status = (await t.call('GET', '/sms', { key: doomed })).status;
      if (status !== 401) await new Promise((r) => setTimeout(r, 20));
    }
    expect(status).to.equal(401);
  });

  it('serves the OpenAPI 3.1 document and the docs page without a key', async () => {
    const doc = await t.call('GET', '/openapi.json');
    expect(doc.status).to.equal(200);
    expect(doc.body.openapi).to.equal('3.1.0');
    expect(doc.body.paths['/sms'].put.operationId).to.equal('saveSMSRegistration');
    expect(doc.body.paths['/sms'].put.requestBody.content['application/json'].schema.$ref).to.equal('#/components/schemas/SmsRegistrationDraft');
    expect(doc.body.components.schemas.SmsRegistrationDraft.properties.ein).to.be.an('object');
    // /docs renders this document in the browser (test/browser/pages.test.ts).
    const page = await fetch(t.api.baseUrl.replace('/api/v1', '/docs'));
    expect(page.status).to.equal(200);
    expect(await page.text()).to.include('data-url="/api/v1/openapi.json"');
  });

  it('documents the OAuth endpoints at the origin root, where the authorization server metadata (RFC 8414) names them', async () => {
    const doc = (await t.call('GET', '/openapi.json')).body;
    const meta = (await (await fetch(t.api.baseUrl.replace('/api/v1', '/.well-known/oauth-authorization-server'))).json()) as Record<string, string>;
    const documented = (path: string) => `${doc.paths[path].servers[0].url}${path}`;
    expect(documented('/oauth/authorize')).to.equal(meta.authorization_endpoint);
    expect(documented('/oauth/token')).to.equal(meta.token_endpoint);
    expect(documented('/oauth/revoke')).to.equal(meta.revocation_endpoint);
    expect(documented('/.well-known/oauth-authorization-server')).to.equal(`${meta.issuer}/.well-known/oauth-authorization-server`);
    // The rest of the document stays under /api/v1 of the same origin.
    expect(doc.servers[0].url).to.equal(`${doc.paths['/oauth/token'].servers[0].url}/api/v1`);
    expect(doc.paths['/oauth/token'].post.requestBody.content).to.have.key('application/x-www-form-urlencoded');
    expect(doc.paths['/oauth/token'].post.tags).to.deep.equal(['OAuth2']);
    expect(Object.keys(doc.paths['/oauth/authorize'])).to.include.members(['get', 'post']);
  });

  it('answers 500 internal_error without a stack when something unexpected breaks', async () => {
    const { key: k } = await t.org('Broken');
    await t.db.schema.renameTable('sms_registrations', 'sms_registrations_moved');
    try {
      const res = await t.call('GET', '/sms', { key: k });
      expectProblem(res, 500, 'internal_error');
      expect(res.text).to.not.match(/at .*\.ts:\d+|stack|sms_registrations/);
    } finally {
      await t.db.schema.renameTable('sms_registrations_moved', 'sms_registrations');
    }
  });
});

describe('tenancy', () => {
  const t = useTestApi('tenancy');

  it("never shows or changes another organization's registration", async () => {
    const a = await t.org('Org A');
    const b = await t.org('Org B');
    await t.call('PUT', '/sms', { key: a.key, json: { displayName: 'Alpha Brand', legalName: 'Alpha LLC' } });
    const bGet = await t.call('GET', '/sms', { key: b.key });
    expect(bGet.status).to.equal(404);
    expect(bGet.body.code).to.equal('sms_registration_not_found');
    const bPut = await t.call('PUT', '/sms', { key: b.key, json: { displayName: 'Beta Brand' } });
    expect(bPut.body.data.legalName).to.equal(null);
    const aGet = await t.call('GET', '/sms', { key: a.key });
    expect(aGet.body.data.displayName).to.equal('Alpha Brand');
    expect(aGet.body.data.legalName).to.equal('Alpha LLC');
    const rows = await t.db('sms_registrations').select('org_id');
    expect(rows.map((r) => r.org_id).sort()).to.deep.equal([a.orgId, b.orgId].sort());
  });
});
