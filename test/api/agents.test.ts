/**
 * Agents over HTTP (real socket, real Postgres): create/list/get/PATCH with If-Match optimistic
 * concurrency, duplicate names, unsupported languages, tenancy and scopes.
 */
import { expect } from 'chai';
import { QUICK_CLIENT, useTestApi } from '../helpers/api';

describe('agents API', () => {
  const t = useTestApi('agents', QUICK_CLIENT);
  let key: string;

  before(async () => {
    ({ key } = await t.org('Acme'));
  });

  const create = (json: unknown, k = key) => t.call('POST', '/agents', { key: k, json });

  it('creates an agent at draft version 1 with ETag "1" and documented defaults', async () => {
    const r = await create({ name: 'Front desk', greeting: 'Hi, this is Acme.', persona: 'Warm receptionist' });
    expect(r.status).to.equal(201);
    expect(r.headers.get('etag')).to.equal('"1"');
    expect(r.headers.get('location')).to.match(/\/agents\/agt_/);
    const a = r.body.data;
    expect(a.id).to.match(/^agt_/);
    expect(a).to.include({ name: 'Front desk', language: 'en-US', version: 1, publishedVersionId: null, hasUnpublishedChanges: true, voiceId: null });
    expect(a.dtmf).to.deep.equal({ enabled: false, interDigitTimeoutMs: 3000, terminator: '#', maxDigits: 16 });
    expect(a.attachments).to.deep.equal({ skills: [], playbooks: [], knowledgeSources: 0, guardrails: ['redactPii', 'profanityFilter'], callerVerification: false });
  });

  it('answers 409 duplicate_name for a name already used in the organization (case-insensitive)', async () => {
    await create({ name: 'Sales line' });
    const r = await create({ name: 'SALES LINE' });
    expect(r.status).to.equal(409);
    expect(r.body.code).to.equal('duplicate_name');
    expect(r.headers.get('content-type')).to.contain('application/problem+json');
  });

  it('allows the same name in another organization', async () => {
    const other = await t.org('Other');
    expect((await create({ name: 'Sales line' }, other.key)).status).to.equal(201);
  });

  it('answers 422 unsupported_language for a well-formed tag the speech engine does not support', async () => {
    const r = await create({ name: 'Klingon desk', language: 'tlh-QQ' });
    expect(r.status).to.equal(422);
    expect(r.body.code).to.equal('unsupported_language');
    expect(r.body.errors).to.deep.equal([{ field: 'language', message: 'is not supported by the speech engine' }]);
  });

  it('answers 400 naming each invalid field', async () => {
    const r = await create({ name: '', language: 'english', dtmf: { enabled: 'yes' }, bogus: 1, variables: [{ name: 'a' }, { name: 'a' }] });
    expect(r.status).to.equal(400);
    expect(r.body.code).to.equal('validation_error');
    expect(r.body.errors.map((e: any) => e.field)).to.include.members(['name', 'language', 'dtmf.enabled', 'bogus', 'variables[a]']);
  });

  it('answers 422 voice_language_mismatch for a voice that does not speak the language', async () => {
    const r = await create({ name: 'Berlin', language: 'de-DE', voiceId: 'voice_ava' });
    expect(r.status).to.equal(422);
    expect(r.body.code).to.equal('voice_language_mismatch');
  });

  it('lists agents with cursor pagination that is stable under inserts', async () => {
    const { key: k } = await t.org('Lister');
    for (const n of ['a1', 'a2', 'a3']) await create({ name: n }, k);
    const p1 = await t.call('GET', '/agents?limit=2', { key: k });
    expect(p1.status).to.equal(200);
    expect(p1.body.data.items.map((a: any) => a.name)).to.deep.equal(['a1', 'a2']);
    expect(p1.body.data.hasMore).to.equal(true);
    await create({ name: 'a4' }, k);
    const p2 = await t.call('GET', `/agents?limit=2&cursor=${encodeURIComponent(p1.body.data.nextCursor)}`, { key: k });
    expect(p2.body.data.items.map((a: any) => a.name)).to.deep.equal(['a3', 'a4']);
    expect(p2.body.data.hasMore).to.equal(false);
    expect(p2.body.data.nextCursor).to.equal(null);
    const bad = await t.call('GET', '/agents?cursor=garbage', { key: k });
    expect(bad.status).to.equal(400);
    expect(bad.body.code).to.equal('invalid_cursor');
  });

  describe('PATCH with If-Match', () => {
    let id: string;
    before(async () => {
      id = (await create({ name: 'Patch me' })).body.data.id;
    });

    it('answers 428 precondition_required without If-Match and changes nothing', async () => {
      const r = await t.call('PATCH', `/agents/${id}`, { key, json: { greeting: 'x' } });
      expect(r.status).to.equal(428);
      expect(r.body.code).to.equal('precondition_required');
      expect((await t.call('GET', `/agents/${id}`, { key })).body.data.greeting).to.equal(null);
    });

    it('applies the edit to the draft and bumps the version and ETag', async () => {
      const r = await t.call('PATCH', `/agents/${id}`, { key, json: { greeting: 'Hello', dtmf: { enabled: true, maxDigits: 4 } }, headers: { 'if-match': '"1"' } });
      expect(r.status).to.equal(200);
      expect(r.headers.get('etag')).to.equal('"2"');
      expect(r.body.data).to.include({ greeting: 'Hello', version: 2 });
      expect(r.body.data.dtmf).to.include({ enabled: true, maxDigits: 4 });
      const g = await t.call('GET', `/agents/${id}`, { key });
      expect(g.headers.get('etag')).to.equal('"2"');
    });

    it('answers 409 version_conflict with the current agent and version when If-Match is stale', async () => {
      const r = await t.call('PATCH', `/agents/${id}`, { key, json: { greeting: 'Stale' }, headers: { 'if-match': '"1"' } });
      expect(r.status).to.equal(409);
      expect(r.body.code).to.equal('version_conflict');
      expect(r.body.version).to.equal(2);
      expect(r.body.current).to.include({ id, greeting: 'Hello', version: 2 });
      expect(r.headers.get('etag')).to.equal('"2"');
    });

    it('lets exactly one of two concurrent PATCHes with the same version win', async () => {
      const cur = (await t.call('GET', `/agents/${id}`, { key })).body.data.version;
      const [a, b] = await Promise.all(
        ['A', 'B'].map((g) => t.call('PATCH', `/agents/${id}`, { key, json: { greeting: g }, headers: { 'if-match': `"${cur}"` } })),
      );
      expect([a.status, b.status].sort()).to.deep.equal([200, 409]);
      const final = (await t.call('GET', `/agents/${id}`, { key })).body.data;
      expect(final.version).to.equal(cur + 1);
      expect(final.greeting).to.equal((a.status === 200 ? a : b).body.data.greeting);
    });

    it('answers 409 duplicate_name when renaming onto another agent', async () => {
      const v = (await t.call('GET', `/agents/${id}`, { key })).body.data.version;
      const r = await t.call('PATCH', `/agents/${id}`, { key, json: { name: 'front DESK' }, headers: { 'if-match': `"${v}"` } });
      expect(r.status).to.equal(409);
      expect(r.body.code).to.equal('duplicate_name');
    });

    it('answers 422 unsupported_language on PATCH', async () => {
      const v = (await t.call('GET', `/agents/${id}`, { key })).body.data.version;
      const r = await t.call('PATCH', `/agents/${id}`, { key, json: { language: 'xx-XX' }, headers: { 'if-match': `"${v}"` } });
      expect(r.status).to.equal(422);
      expect(r.body.code).to.equal('unsupported_language');
    });

    it('answers 400 invalid_if_match for an If-Match that names no version', async () => {
      const r = await t.call('PATCH', `/agents/${id}`, { key, json: { greeting: 'x' }, headers: { 'if-match': '"abc"' } });
      expect(r.status).to.equal(400);
      expect(r.body.code).to.equal('invalid_if_match');
    });
  });

  describe('tenancy and scopes', () => {
    it("answers 404 for another organization's agent, exactly like a missing one", async () => {
      const mine = (await create({ name: 'Private' })).body.data.id;
      const other = await t.org('Intruder');
      const seen = await t.call('GET', `/agents/${mine}`, { key: other.key });
      const missing = await t.call('GET', '/agents/agt_doesnotexist', { key: other.key });
      expect(seen.status).to.equal(404);
      expect(seen.body.code).to.equal(missing.body.code);
      const patched = await t.call('PATCH', `/agents/${mine}`, { key: other.key, json: { greeting: 'pwned' }, headers: { 'if-match': '"1"' } });
      expect(patched.status).to.equal(404);
      for (const path of [`/agents/${mine}/skills`, `/agents/${mine}/guardrails`, `/agents/${mine}/versions`, `/agents/${mine}/prepublish-report`]) {
        expect((await t.call('GET', path, { key: other.key })).status, path).to.equal(404);
      }
      expect((await t.call('GET', '/agents', { key: other.key })).body.data.items).to.deep.equal([]);
      expect((await t.call('GET', `/agents/${mine}`, { key })).body.data.greeting).to.equal(null);
    });

    it('answers 403 without agents:write and allows reads with agents:read', async () => {
      const ro = await t.org('Read only', ['agents:read']);
      expect((await create({ name: 'Nope' }, ro.key)).status).to.equal(403);
      expect((await t.call('GET', '/agents', { key: ro.key })).status).to.equal(200);
      expect((await t.call('GET', '/skill-types', { key: ro.key })).status).to.equal(403);
    });
  });
});
