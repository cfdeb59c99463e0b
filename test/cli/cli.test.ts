/** Operator CLI: organizations and keys, against a real database; a minted key works over HTTP. */
import { expect } from 'chai';
import { runCli } from '../../cli';
import { startTestApi, type TestApi } from '../helpers/api';
import crypto from 'node:crypto';
import { createEndpoint } from '../../db/repositories/webhookEndpoints';
import { upsertConnection } from '../../db/repositories/integrations';
import { openSecret, sealSecret, secretDisplayPrefix, generateSecret } from '../../domain/webhooks/signing';

describe('operator CLI (npm run cli)', () => {
  let t: TestApi;
  let saved: string | undefined;
  before(async () => {
    t = await startTestApi('cli');
    saved = process.env.DATABASE_URL;
    process.env.DATABASE_URL = t.databaseUrl;
  });
  after(async () => {
    if (saved === undefined) delete process.env.DATABASE_URL;
    else process.env.DATABASE_URL = saved;
    await t.close();
  });

  async function cli(...args: string[]): Promise<{ code: number; out: string[] }> {
    const out: string[] = [];
    const code = await runCli(args, (l) => out.push(l), (l) => out.push(l));
    return { code, out };
  }

  it('creates an organization, mints a key printed once, lists and revokes it', async () => {
    const created = await cli('orgs', 'create', 'CLI', 'Org');
    expect(created.code).to.equal(0);
    const org = JSON.parse(created.out[0]);
    expect(org).to.include({ name: 'CLI Org' });
    expect(org.id).to.match(/^org_/);
    expect((await cli('orgs', 'list')).out.join('\n')).to.include(org.id);

    const minted = await cli('keys', 'create', '--org', org.id, '--scopes', 'sms:read,sms:write');
    expect(minted.code).to.equal(0);
    const secret = minted.out.find((l) => l.startsWith('secret:'))!.split(/\s+/)[1];
    const keyId = minted.out.find((l) => l.startsWith('key id:'))!.split(/\s+/)[2];
    expect(secret).to.match(/^acp_sk_live_[A-Za-z0-9]{32,}$/);
    const stored = await t.db('api_keys').where({ id: keyId }).first();
    expect(JSON.stringify(stored)).to.not.include(secret.slice(12));

    const put = await t.call('PUT', '/sms', { key: secret, json: { displayName: 'From CLI' } });
    expect(put.status).to.equal(200);
    expect(put.body.data.displayName).to.equal('From CLI');

    const listed = await cli('keys', 'list', '--org', org.id);
    expect(listed.out.join('\n')).to.include(keyId).and.include('active').and.not.include(secret);
    expect((await cli('keys', 'revoke', keyId)).code).to.equal(0);
    expect((await cli('keys', 'list', '--org', org.id)).out.join('\n')).to.include('revoked');
  });

  it('refuses unknown scopes and unknown organizations with a non-zero exit', async () => {
    const org = JSON.parse((await cli('orgs', 'create', 'Scopes Org')).out[0]);
    const bad = await cli('keys', 'create', '--org', org.id, '--scopes', 'sms:read,sms:everything');
    expect(bad.code).to.equal(1);
    expect(bad.out.join()).to.include('sms:everything');
    expect((await cli('keys', 'create', '--org', 'org_missing', '--scopes', 'sms:read')).code).to.equal(1);
    expect((await cli('keys', 'revoke', 'key_missing')).code).to.equal(1);
    const reserved = await cli('keys', 'create', '--org', org.id, '--scopes', 'sms:read,escalations:claim');
    expect(reserved.code).to.equal(1);
    expect(reserved.out.join()).to.include('reserved scopes cannot be granted: escalations:claim');
  });

  it('re-seals every stored webhook signing secret secret variable and integration credential with the new WEBHOOK_SECRET_KEY after a key rotation', async () => {
    const org = JSON.parse((await cli('orgs', 'create', 'Reseal Org')).out[0]);
    const oldKey = crypto.randomBytes(32);
    const newKey = crypto.randomBytes(32);
    const [s1, s2] = [generateSecret(), generateSecret()];
    const sealed = await createEndpoint(t.db, org.id, { url: 'https://example.com/a', description: null, eventTypes: [], enabled: true, secretSealed: sealSecret(s1, oldKey), secretPrefix: secretDisplayPrefix(s1) });
    // A row written before sealing was mandatory.
    const legacy = await createEndpoint(t.db, org.id, { url: 'https://example.com/b', description: null, eventTypes: [], enabled: true, secretSealed: `plain:${s2}`, secretPrefix: secretDisplayPrefix(s2) });
    // A secret organization variable is sealed with the same key (docs/api-notes.md "Variables, escalation, onboarding, meta and settings").
    await t.db('org_variables').insert({ id: 'var_reseal0000000001', org_id: org.id, name: 'api_token', secret: true, value_sealed: sealSecret('tok-1', oldKey) });
    // An integration connection's credentials are sealed the same way and re-sealed with them.
    await upsertConnection(t.db, org.id, { kind: 'hubspot', accountLabel: 'portal', scopes: [], credentialsSealed: sealSecret('{"accessToken":"pat-1"}', oldKey) });
    // A sensitive record field is sealed the same way too (docs/security.md "Sensitive record fields").
    await t.db('records').insert({ id: 'rec_reseal0000000001', org_id: org.id, name: 'Pat', source: 'api', sealed_fields: JSON.stringify({ pin: { sealed: sealSecret('4321', oldKey), mask: '••21' } }) });
    const saved = { key: process.env.WEBHOOK_SECRET_KEY, previous: process.env.WEBHOOK_SECRET_KEY_PREVIOUS };
    process.env.WEBHOOK_SECRET_KEY = newKey.toString('base64');
    process.env.WEBHOOK_SECRET_KEY_PREVIOUS = oldKey.toString('base64');
    try {
      const r = await cli('secrets', 'reseal-webhooks');
      expect(r.code, r.out.join()).to.equal(0);
    } finally {
      process.env.WEBHOOK_SECRET_KEY = saved.key;
      if (saved.previous === undefined) delete process.env.WEBHOOK_SECRET_KEY_PREVIOUS;
      else process.env.WEBHOOK_SECRET_KEY_PREVIOUS = saved.previous;
    }
    const rows = await t.db('webhook_endpoints').whereIn('id', [sealed.id, legacy.id]).orderBy('url');
    expect(rows.map((row) => openSecret(row.secret_sealed, [newKey]))).to.deep.equal([s1, s2]);
    for (const row of rows) expect(row.secret_sealed).to.match(/^v1:/);
    expect(() => openSecret(rows[0].secret_sealed, [oldKey])).to.throw();
    const variable = await t.db('org_variables').where({ id: 'var_reseal0000000001' }).first();
    expect(openSecret(variable.value_sealed, [newKey])).to.equal('tok-1');
    const conn = await t.db('integration_connections').where({ org_id: org.id }).first();
    expect(openSecret(conn.credentials_sealed, [newKey])).to.equal('{"accessToken":"pat-1"}');
    const record = await t.db('records').where({ id: 'rec_reseal0000000001' }).first();
    expect(openSecret(record.sealed_fields.pin.sealed, [newKey])).to.equal('4321');
    expect(record.sealed_fields.pin.mask).to.equal('••21');
  });

  it('prints fresh secrets for a production environment without touching a database', async () => {
    const r = await cli('secrets', 'generate');
    expect(r.code).to.equal(0);
    expect(r.out.map((l) => l.split('=')[0])).to.deep.equal(['MEDIA_URL_SECRET', 'CARRIER_CALLBACK_SECRET', 'WEBHOOK_SECRET_KEY']);
  });
});
