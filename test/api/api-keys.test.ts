/**
 * Secret keys through the API (spec "Authentication" 1; docs/api-notes.md "Credentials and tenancy"):
 * create shown once, list, rotate with a grace period, revoke at once in every API process, escalation
 * refused, tenancy, batched lastUsedAt, expiry. Real HTTP over a socket on a real Postgres; the end of a
 * grace period is reached by moving `expires_at` in the database, not by sleeping.
 */
import { expect } from 'chai';
import { useTestApi } from '../helpers/api';
import { startApi } from '../../api/server';
import { createLogger } from '../../runtime';
import { hashKey } from '../../db/repositories/apiKeys';

/** Retries `fn` every 20 ms (at most 1 s) until it returns `want` (change-feed delivery). */
async function eventually<T>(fn: () => Promise<T>, want: T): Promise<T> {
  let got = await fn();
  for (let i = 0; i < 50 && got !== want; i++) {
    await new Promise((r) => setTimeout(r, 20));
    got = await fn();
  }
  return got;
}

describe('API keys (/api-keys)', () => {
  const t = useTestApi('api_keys', { keyLastUsedFlushMs: 60_000 });
  let key: string;

  before(async () => {
    ({ key } = await t.org('Keys Org'));
  });

  const create = (json: unknown, k = key) => t.call('POST', '/api-keys', { key: k, json });

  it('creates a key whose secret is shown once and then works, and lists it without the secret', async () => {
    const res = await create({ name: 'billing sync', scopes: ['agents:read', 'keys:write'] });
    expect(res.status).to.equal(201);
    const k = res.body.data;
    expect(k.secret).to.match(/^acp_sk_live_[A-Za-z0-9]{30,40}$/);
    expect(k).to.include({ name: 'billing sync', prefix: k.secret.slice(0, 16), lastUsedAt: null, expiresAt: null, rotatedFrom: null });
    expect(k.scopes).to.deep.equal(['agents:read', 'keys:write']);
    expect(k.id).to.match(/^key_/);
    expect((await t.call('GET', '/agents', { key: k.secret })).status).to.equal(200);
    expect((await t.call('GET', '/sms', { key: k.secret })).status).to.equal(403); // sms:read not granted

    const list = await t.call('GET', '/api-keys', { key });
    expect(list.status).to.equal(200);
    const listed = list.body.data.items.find((i: { id: string }) => i.id === k.id);
    expect(listed).to.deep.include({ name: 'billing sync', prefix: k.prefix });
    expect(listed).to.not.have.property('secret');
    expect(list.text).to.not.include(k.secret);
    const row = await t.db('api_keys').where({ id: k.id }).first();
    expect(row.key_hash).to.equal(hashKey(k.secret));
    expect(JSON.stringify(row)).to.not.include(k.secret.slice(12));
  });

  it('pages the list with a cursor', async () => {
    const { key: k } = await t.org('Paged');
    for (let i = 0; i < 3; i++) expect((await create({ name: `k${i}`, scopes: ['agents:read'] }, k)).status).to.equal(201);
    const first = await t.call('GET', '/api-keys?limit=2', { key: k });
    expect(first.body.data.items).to.have.length(2);
    expect(first.body.data.hasMore).to.equal(true);
    const second = await t.call('GET', `/api-keys?limit=2&cursor=${first.body.data.nextCursor}`, { key: k });
    expect(second.body.data.items).to.have.length(2);
    expect(second.body.data.hasMore).to.equal(false);
    const ids = [...first.body.data.items, ...second.body.data.items].map((i: { id: string }) => i.id);
    expect(new Set(ids).size).to.equal(4);
    expect((await t.call('GET', '/api-keys?cursor=garbage', { key: k })).body.code).to.equal('invalid_cursor');
  });

  it('refuses to grant a scope the calling key does not hold: 403 insufficient_scope naming the scopes', async () => {
    const limited = (await create({ name: 'limited', scopes: ['keys:write', 'agents:read'] })).body.data.secret;
    const res = await create({ name: 'escalate', scopes: ['agents:read', 'agents:write', 'sms:send'] }, limited);
    expect(res.status).to.equal(403);
    expect(res.body.code).to.equal('insufficient_scope');
    expect(res.body.missingScopes).to.deep.equal(['agents:write', 'sms:send']);
    expect(res.body.detail).to.include('agents:write').and.include('sms:send');
    const ok = await create({ name: 'narrower', scopes: ['agents:read'] }, limited);
    expect(ok.status).to.equal(201);
  });

  it('refuses to rotate a key holding scopes the caller lacks', async () => {
    const broad = (await create({ name: 'broad', scopes: ['agents:read', 'sms:read'] })).body.data;
    const limited = (await create({ name: 'limited2', scopes: ['keys:write', 'agents:read'] })).body.data.secret;
    const res = await t.call('POST', `/api-keys/${broad.id}/rotate`, { key: limited, json: {} });
    expect(res.status).to.equal(403);
    expect(res.body.missingScopes).to.deep.equal(['sms:read']);
    expect((await t.call('GET', '/agents', { key: broad.secret ?? '' })).status).to.not.equal(401);
  });

  it('refuses to revoke a key holding scopes the caller lacks (it keeps working)', async () => {
    const broad = (await create({ name: 'broad-r', scopes: ['agents:read', 'sms:read'] })).body.data;
    const limited = (await create({ name: 'limited3', scopes: ['keys:write', 'agents:read'] })).body.data.secret;
    const res = await t.call('DELETE', `/api-keys/${broad.id}`, { key: limited });
    expect(res.status).to.equal(403);
    expect(res.body.code).to.equal('insufficient_scope');
    expect(res.body.missingScopes).to.deep.equal(['sms:read']);
    expect((await t.call('GET', '/agents', { key: broad.secret })).status).to.equal(200);
    const narrower = (await create({ name: 'narrower-r', scopes: ['agents:read'] })).body.data;
    expect((await t.call('DELETE', `/api-keys/${narrower.id}`, { key: limited })).status).to.equal(200);
  });

  it('answers 400 naming the field for reserved or unknown scopes and a past expiry', async () => {
    const reserved = await create({ name: 'r', scopes: ['agents:read', 'escalations:read'] });
    expect(reserved.status).to.equal(400);
    expect(reserved.body.errors).to.deep.include({ field: 'scopes.1', message: '"escalations:read" is reserved and cannot be granted' });
    const unknown = await create({ name: 'u', scopes: ['agents:fly'] });
    expect(unknown.status).to.equal(400);
    expect(unknown.body.errors[0].field).to.equal('scopes.0');
    const past = await create({ name: 'p', scopes: ['agents:read'], expiresAt: '2001-01-01T00:00:00Z' });
    expect(past.status).to.equal(400);
    expect(past.body.errors).to.deep.equal([{ field: 'expiresAt', message: 'must be in the future' }]);
    const empty = await create({ name: 'e', scopes: [] });
    expect(empty.status).to.equal(400);
    expect(empty.body.errors[0].field).to.equal('scopes');
  });

  it('rotates: a new secret with the same scopes; the old one works during the grace period, then answers 401', async () => {
    const old = (await create({ name: 'rotating', scopes: ['agents:read'] })).body.data;
    const res = await t.call('POST', `/api-keys/${old.id}/rotate`, { key, json: { gracePeriodSeconds: 3600 } });
    expect(res.status).to.equal(200);
    const { key: fresh, previous } = res.body.data;
    expect(fresh.secret).to.match(/^acp_sk_live_/).and.not.equal(old.secret);
    expect(fresh).to.include({ name: 'rotating', rotatedFrom: old.id });
    expect(fresh.scopes).to.deep.equal(['agents:read']);
    const graceEnd = Date.parse(previous.expiresAt);
    expect(graceEnd).to.be.within(Date.now() + 3590_000, Date.now() + 3610_000);
    expect((await t.call('GET', '/agents', { key: old.secret })).status).to.equal(200);
    expect((await t.call('GET', '/agents', { key: fresh.secret })).status).to.equal(200);
    const listed = (await t.call('GET', '/api-keys?limit=200', { key })).body.data.items;
    expect(listed.find((i: { id: string }) => i.id === old.id).expiresAt).to.equal(previous.expiresAt);

    // The grace period ends: move the expiry into the past instead of waiting an hour.
    await t.db('api_keys').where({ id: old.id }).update({ expires_at: new Date(Date.now() - 1000) });
    const stale = await eventually(async () => (await t.call('GET', '/agents', { key: old.secret })).status, 401);
    expect(stale).to.equal(401);
    expect((await t.call('GET', '/agents', { key: fresh.secret })).status).to.equal(200);
    expect((await t.call('GET', '/api-keys?limit=200', { key })).body.data.items.map((i: { id: string }) => i.id)).to.not.include(old.id);
    expect((await t.call('POST', `/api-keys/${old.id}/rotate`, { key, json: {} })).status).to.equal(404);
  });

  it('stops a cached key at its expiry without any notification (expiry is checked per request)', async () => {
    const k = (await create({ name: 'short', scopes: ['agents:read'] })).body.data;
    expect((await t.call('GET', '/agents', { key: k.secret })).status).to.equal(200); // now cached
    // Rotation with a 1 s grace: the old key's cached entry carries its expiry.
    const r = await t.call('POST', `/api-keys/${k.id}/rotate`, { key, json: { gracePeriodSeconds: 1 } });
    expect(r.status).to.equal(200);
    expect((await t.call('GET', '/agents', { key: k.secret })).status).to.equal(200);
    // Let the clock pass the expiry without touching the row: the cache entry must not outlive it.
    const until = Date.parse(r.body.data.previous.expiresAt) + 50;
    await new Promise((res) => setTimeout(res, Math.max(0, until - Date.now())));
    expect((await t.call('GET', '/agents', { key: k.secret })).status).to.equal(401);
  });

  it('rotation with gracePeriodSeconds 0 stops the old key at once; out-of-range grace answers 400', async () => {
    const k = (await create({ name: 'zero', scopes: ['agents:read'] })).body.data;
    expect((await t.call('POST', `/api-keys/${k.id}/rotate`, { key, json: { gracePeriodSeconds: 604_801 } })).body.errors[0].field).to.equal('gracePeriodSeconds');
    expect((await t.call('POST', `/api-keys/${k.id}/rotate`, { key, json: { gracePeriodSeconds: 0 } })).status).to.equal(200);
    expect(await eventually(async () => (await t.call('GET', '/agents', { key: k.secret })).status, 401)).to.equal(401);
  });

  it('a key with an expiry answers 401 once it has passed', async () => {
    const res = await create({ name: 'expiring', scopes: ['agents:read'], expiresAt: new Date(Date.now() + 3600_000).toISOString() });
    const k = res.body.data;
    expect(Date.parse(k.expiresAt)).to.be.greaterThan(Date.now());
    expect((await t.call('GET', '/agents', { key: k.secret })).status).to.equal(200);
    await t.db('api_keys').where({ id: k.id }).update({ expires_at: new Date(Date.now() - 1000) });
    const res401 = await eventually(async () => (await t.call('GET', '/agents', { key: k.secret })).status, 401);
    expect(res401).to.equal(401);
  });

  it('revokes at once in every API process', async () => {
    const second = await startApi({ db: t.db, databaseUrl: t.databaseUrl, config: t.config, logger: createLogger('silent') });
    try {
      const k = (await create({ name: 'doomed', scopes: ['agents:read'] })).body.data;
      const viaSecond = async () => (await fetch(`${second.baseUrl}/agents`, { headers: { authorization: `Bearer ${k.secret}` } })).status;
      expect(await viaSecond()).to.equal(200); // cached in the second process
      const res = await t.call('DELETE', `/api-keys/${k.id}`, { key });
      expect(res.status).to.equal(200);
      expect(res.body.data.id).to.equal(k.id);
      expect(Date.parse(res.body.data.revokedAt)).to.be.closeTo(Date.now(), 60_000);
      expect(await eventually(viaSecond, 401)).to.equal(401);
      expect((await t.call('GET', '/agents', { key: k.secret })).status).to.equal(401);
      expect((await t.call('GET', '/api-keys?limit=200', { key })).body.data.items.map((i: { id: string }) => i.id)).to.not.include(k.id);
    } finally {
      await second.close();
    }
  });

  it("answers 404 for another organization's key and never touches it", async () => {
    const other = await t.org('Other Org');
    const foreign = (await create({ name: 'theirs', scopes: ['agents:read'] }, other.key)).body.data;
    const rot = await t.call('POST', `/api-keys/${foreign.id}/rotate`, { key, json: {} });
    expect(rot.status).to.equal(404);
    expect(rot.body.code).to.equal('api_key_not_found');
    expect((await t.call('DELETE', `/api-keys/${foreign.id}`, { key })).status).to.equal(404);
    expect((await t.call('GET', '/agents', { key: foreign.secret })).status).to.equal(200);
    const mine = (await t.call('GET', '/api-keys?limit=200', { key })).body.data.items.map((i: { id: string }) => i.id);
    expect(mine).to.not.include(foreign.id);
    expect(mine).to.not.include(other.keyId);
    // The created key belongs to the creator's organization, whatever the body says.
    expect((await t.db('api_keys').where({ id: foreign.id }).first()).org_id).to.equal(other.orgId);
  });

  it('needs keys:write', async () => {
    const noKeys = (await create({ name: 'nokeys', scopes: ['agents:read'] })).body.data.secret;
    const res = await t.call('GET', '/api-keys', { key: noKeys });
    expect(res.status).to.equal(403);
    expect(res.body.missingScopes).to.deep.equal(['keys:write']);
  });

  it('updates lastUsedAt in batches, not with a write per request', async () => {
    const k = (await create({ name: 'used', scopes: ['agents:read'] })).body.data;
    const before = Date.now();
    for (let i = 0; i < 3; i++) expect((await t.call('GET', '/agents', { key: k.secret })).status).to.equal(200);
    // The flush interval is a minute here: nothing is written until the batch goes out.
    expect((await t.db('api_keys').where({ id: k.id }).first()).last_used_at).to.equal(null);
    await t.api.flushKeyUsage();
    const row = await t.db('api_keys').where({ id: k.id }).first();
    expect(row.last_used_at.getTime()).to.be.within(before - 5, Date.now() + 5);
    const listed = (await t.call('GET', '/api-keys?limit=200', { key })).body.data.items.find((i: { id: string }) => i.id === k.id);
    expect(Date.parse(listed.lastUsedAt)).to.equal(row.last_used_at.getTime());
  });

  it('flushes lastUsedAt on its own interval', async () => {
    const fast = await startApi({ db: t.db, databaseUrl: t.databaseUrl, config: { ...t.config, keyLastUsedFlushMs: 50 }, logger: createLogger('silent') });
    try {
      const k = (await create({ name: 'interval', scopes: ['agents:read'] })).body.data;
      expect((await fetch(`${fast.baseUrl}/agents`, { headers: { authorization: `Bearer ${k.secret}` } })).status).to.equal(200);
      const written = await eventually(async () => (await t.db('api_keys').where({ id: k.id }).first()).last_used_at !== null, true);
      expect(written).to.equal(true);
    } finally {
      await fast.close();
    }
  });
});
