/** Idempotency-Key on creating POSTs (DESIGN.md "Wire conventions"), shown on POST /agents and POST /webhooks. */
import { expect } from 'chai';
import { usesIdempotencyKeys } from '../../api/middleware/idempotency';
import { ROUTES } from '../../api/routes/table';
import { useTestApi } from '../helpers/api';

describe('Idempotency-Key on creating POSTs', () => {
  const t = useTestApi('idempotency');

  it('replays the first response for the same key and body, creating one resource', async () => {
    const { key, orgId } = await t.org();
    const headers = { 'idempotency-key': 'create-front-desk-1' };
    const first = await t.call('POST', '/agents', { key, json: { name: 'Front Desk' }, headers });
    expect(first.status).to.equal(201);
    const again = await t.call('POST', '/agents', { key, json: { name: 'Front Desk' }, headers });
    expect(again.status).to.equal(201);
    expect(again.headers.get('idempotent-replayed')).to.equal('true');
    expect(again.body).to.deep.equal(first.body);
    expect(await t.db('agents').where({ org_id: orgId })).to.have.length(1);
  });

  it('refuses the same key with another body (422 idempotency_key_reused) and keeps keys per organization', async () => {
    const a = await t.org('A');
    const b = await t.org('B');
    const headers = { 'idempotency-key': 'shared-key' };
    expect((await t.call('POST', '/agents', { key: a.key, json: { name: 'One' }, headers })).status).to.equal(201);
    const reused = await t.call('POST', '/agents', { key: a.key, json: { name: 'Two' }, headers });
    expect(reused.status).to.equal(422);
    expect(reused.body.code).to.equal('idempotency_key_reused');
    expect((await t.call('POST', '/agents', { key: b.key, json: { name: 'Two' }, headers })).status).to.equal(201);
  });

  it('lets a retry run again after a refused first request', async () => {
    const { key } = await t.org();
    const headers = { 'idempotency-key': 'fix-and-retry' };
    const bad = await t.call('POST', '/webhooks', { key, json: { url: 'ftp://nope' }, headers });
    expect(bad.status).to.equal(400);
    const good = await t.call('POST', '/webhooks', { key, json: { url: 'https://hooks.example.com/in' }, headers });
    expect(good.status).to.equal(201);
  });

  it('answers 400 naming the header for a malformed key, and covers every creating POST, publish and SMS submit (not multipart uploads)', async () => {
    const { key } = await t.org();
    const res = await t.call('POST', '/agents', { key, json: { name: 'X' }, headers: { 'idempotency-key': 'x'.repeat(300) } });
    expect(res.status).to.equal(400);
    expect(res.body.errors[0].field).to.equal('Idempotency-Key');
    const covered = ROUTES.filter(usesIdempotencyKeys).map((r) => r.operationId);
    expect(covered).to.include.members(['createAgent', 'createWebhook', 'createCampaign', 'createKnowledgeSource']);
    expect(covered).to.include.members(['publishAgent', 'submitSMSRegistration', 'sendSMSMessage']);
    expect(covered).to.not.include('createUpload');
  });
});
