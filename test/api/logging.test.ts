/** Structured request logs (pino): one JSON line per request with request id and tenant, never the key. */
import { Writable } from 'node:stream';
import { expect } from 'chai';
import pino from 'pino';
import { startApi } from '../../api/server';
import { bootstrapIfEmpty } from '../../bootstrap';
import { verifyPassword } from '../../services/team/passwords';
import { NON_RESERVED_SCOPES } from '../../domain/scopes';
import { useTestApi } from '../helpers/api';

describe('request logs and first-start bootstrap', () => {
  const t = useTestApi('logging');

  it('logs one JSON line per request with request id, organization and status, and never the key', async () => {
    const lines: string[] = [];
    const sink = new Writable({
      write(chunk, _enc, cb) {
        lines.push(...String(chunk).split('\n').filter(Boolean));
        cb();
      },
    });
    const logged = await startApi({ db: t.db, databaseUrl: t.databaseUrl, config: { ...t.config, port: 0 }, logger: pino({ level: 'info' }, sink) });
    try {
      const { key, orgId } = await t.org();
      const res = await fetch(`${logged.baseUrl}/sms`, { headers: { authorization: `Bearer ${key}`, 'x-request-id': 'log-test-1' } });
      expect(res.status).to.equal(404);
      const entries = lines.map((l) => JSON.parse(l));
      const entry = entries.find((e) => e.requestId === 'log-test-1');
      expect(entry).to.include({ msg: 'request', method: 'GET', path: '/api/v1/sms', status: 404, orgId, operationId: 'getSMSRegistration' });
      expect(entry.durationMs).to.be.a('number');
      expect(lines.join('\n')).to.not.include(key.slice(12));
    } finally {
      await logged.close();
    }
  });

  it('creates one bootstrap organization with a key holding every non-reserved scope, once', async () => {
    await t.db('organizations').del();
    const first = await bootstrapIfEmpty(t.db, 'acp');
    expect(first?.key).to.match(/^acp_sk_live_/);
    const res = await t.call('PUT', '/sms', { key: first!.key, json: { displayName: 'Boot' } });
    expect(res.status).to.equal(200);
    const stored = await t.db('api_keys').where({ org_id: first!.orgId }).first();
    expect([...stored.scopes].sort()).to.deep.equal([...NON_RESERVED_SCOPES].sort());
    // The owner who signs in at /login to approve OAuth apps; the password is printed once, only its hash is kept.
    const owner = await t.db('members').where({ org_id: first!.orgId }).first();
    expect(owner).to.include({ email: first!.owner.email, role: 'owner' });
    expect(owner.password_hash).to.match(/^\$argon2id\$/).and.not.include(first!.owner.password);
    expect(await verifyPassword(owner.password_hash, first!.owner.password)).to.equal(true);
    expect(await bootstrapIfEmpty(t.db, 'acp')).to.equal(undefined);
    expect(await t.db('organizations').count('* as n').first()).to.deep.equal({ n: 1 });
  });
});
