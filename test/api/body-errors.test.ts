/**
 * Every body parser error is a 4xx problem naming its cause, on every route of the route table that takes
 * a body (docs/api-notes.md: wire conventions): prototype keys at any depth (400 `validation_error`
 * naming the key's path), malformed JSON (400 `malformed_json`), another media type (415
 * `unsupported_media_type`), nesting deeper than 64 levels (400 `validation_error` on `(body)`), a body
 * over the limit (413 `payload_too_large`). Each runs before authorization-dependent handler logic, so
 * the route's ids need not exist.
 */
import { expect } from 'chai';
import { ROUTES } from '../../api/routes/table';
import { openAiErrorType, speaksOpenAi } from '../../api/middleware/problem';
import { useTestApi, type TestResponse } from '../helpers/api';

/** Routes that take a body from an API key (provider callbacks verify a signature first; uploads are multipart). */
const BODY_ROUTES = ROUTES.filter((r) => r.method !== 'GET' && !r.reserved && r.auth !== 'none' && r.auth !== 'publishable');

const pathOf = (p: string) => p.replace(/\{[^}]+\}/g, 'x_1');

/** The same failure in the shape of its route: OpenAI's on the OpenAI-compatible routes (docs/api-notes.md "OpenAI compatibility"), else a problem. */
function expectProblem(res: TestResponse, status: number, code: string, what: string) {
  expect(res.status, `${what}: ${res.text.slice(0, 300)}`).to.equal(status);
  const route = ROUTES.find((r) => r.operationId === what.split(' ')[0]);
  if (route && speaksOpenAi(`/api/v1${pathOf(route.path)}`)) {
    expect(res.headers.get('content-type'), what).to.match(/^application\/json/);
    expect(res.body.error, what).to.include({ code, type: openAiErrorType(status) });
    expect(res.body.error.message, what).to.be.a('string');
    return;
  }
  expect(res.headers.get('content-type'), what).to.match(/^application\/problem\+json/);
  expect(res.body, what).to.include({ type: 'about:blank', status, code });
  expect(res.body.title, what).to.be.a('string');
}

describe('body parser errors on every route that takes a body', function () {
  this.timeout(120_000);
  const t = useTestApi('body-errors', { bodyLimitBytes: 4096, rateLimitPoints: 1_000_000 });
  let key: string;
  before(async () => {
    key = (await t.org('Body Org')).key;
  });

  it('covers the write routes', () => {
    expect(BODY_ROUTES.length).to.be.greaterThan(30);
  });

  for (const [name, raw, field] of [
    ['__proto__ at the top', '{"__proto__":{"admin":true}}', '__proto__'],
    ['constructor at the top', '{"constructor":{"prototype":{"x":1}}}', 'constructor'],
    ['prototype nested', '{"name":"a","config":{"prototype":1}}', 'config.prototype'],
    ['__proto__ deep in an array', '{"variables":[{"name":"a"},{"x":{"__proto__":null}}]}', 'variables.1.x.__proto__'],
  ] as const) {
    it(`answers 400 validation_error naming the path for ${name}`, async () => {
      for (const r of BODY_ROUTES) {
        const res = await t.call(r.method, pathOf(r.path), { key, raw, headers: { 'content-type': 'application/json' } });
        const what = `${r.operationId} ${name}`;
        expectProblem(res, 400, 'validation_error', what);
        if (res.body.error) expect(res.body.error.message, what).to.contain(field);
        else expect(res.body.errors.map((e: { field: string }) => e.field), what).to.include(field);
      }
    });
  }

  it('answers 400 malformed_json for broken JSON, a bare value other than an object or array', async () => {
    for (const raw of ['{"a":', '{a:1}', "{'a':1}", '{"a":1}}', 'nul', '"str"', '12', '{"a":NaN}']) {
      for (const r of BODY_ROUTES) {
        const res = await t.call(r.method, pathOf(r.path), { key, raw, headers: { 'content-type': 'application/json' } });
        expectProblem(res, 400, 'malformed_json', `${r.operationId} ${JSON.stringify(raw)}`);
      }
    }
  });

  it('reads a body that starts with a UTF-8 byte order mark, and names a prototype key and unstorable text together', async () => {
    const bom = await t.call('PUT', '/sms', { key, raw: '\uFEFF{"displayName":"Bom Brand","useCase":"MIXED"}', headers: { 'content-type': 'application/json' } });
    expect(bom.status, bom.text).to.equal(200);
    expect(bom.body.data.displayName).to.equal('Bom Brand');
    const both = await t.call('PUT', '/sms', { key, raw: '{"__proto__":{"x":1},"displayName":"a\\u0000b"}', headers: { 'content-type': 'application/json' } });
    expectProblem(both, 400, 'validation_error', 'prototype key and NUL');
    expect(both.body.errors.map((e: { field: string }) => e.field).sort()).to.deep.equal(['__proto__', 'displayName']);
  });

  it('answers 415 for another media type or an unsupported charset or encoding', async () => {
    for (const headers of <Record<string, string>[]>[
      { 'content-type': 'text/plain' },
      { 'content-type': 'application/x-www-form-urlencoded' },
      { 'content-type': 'application/xml' },
      { 'content-type': 'application/json; charset=latin1' },
      { 'content-type': 'application/json; charset=utf-16' },
      { 'content-type': 'application/json', 'content-encoding': 'br' },
    ]) {
      for (const r of BODY_ROUTES.filter((x) => x.operationId !== 'createUpload')) {
        const res = await t.call(r.method, pathOf(r.path), { key, raw: '{"a":1}', headers });
        expectProblem(res, 415, 'unsupported_media_type', `${r.operationId} ${JSON.stringify(headers)}`);
      }
    }
  });

  it('answers 400 for nesting deeper than 64 levels', async () => {
    const raw = `${'['.repeat(100)}${']'.repeat(100)}`;
    const rawObj = `${'{"a":'.repeat(100)}1${'}'.repeat(100)}`;
    for (const r of BODY_ROUTES) {
      for (const body of [raw, rawObj]) {
        const res = await t.call(r.method, pathOf(r.path), { key, raw: body, headers: { 'content-type': 'application/json' } });
        expectProblem(res, 400, 'validation_error', `${r.operationId} deep`);
        expect(res.body.errors?.[0].field ?? res.body.error.param).to.equal('(body)');
      }
    }
  });

  it('answers 413 over the body limit, with or without Content-Length', async () => {
    const big = JSON.stringify({ name: 'x'.repeat(10_000) });
    for (const r of BODY_ROUTES.filter((x) => x.operationId !== 'createUpload')) {
      const res = await t.call(r.method, pathOf(r.path), { key, raw: big, headers: { 'content-type': 'application/json' } });
      expectProblem(res, 413, 'payload_too_large', `${r.operationId} large`);
      const chunked = await fetch(`${t.api.baseUrl}${pathOf(r.path)}`, {
        method: r.method,
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: new Blob([big]).stream(),
        duplex: 'half',
      } as RequestInit);
      expect(chunked.status, `${r.operationId} chunked`).to.equal(413);
      expect(chunked.headers.get('content-type')).to.match(speaksOpenAi(`/api/v1${pathOf(r.path)}`) ? /^application\/json/ : /^application\/problem\+json/);
    }
  });
});
