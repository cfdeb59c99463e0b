/**
 * POST /sms/submit without a workflow service: the review gate (422 review_failed with findings), the
 * PUBLIC_PROFIT stock details, body validation, and 503 temporal_unavailable changing nothing.
 * The submission itself (workflow, callbacks, fees) is tested in test/workflows/smsRegistration.test.ts.
 */
import { expect } from 'chai';
import { useTestApi } from '../helpers/api';
import { COMPLETE_BRAND, expectNoRegistration } from './sms-fixtures';

describe('POST /sms/submit (submitSMSRegistration) gates', () => {
  const t = useTestApi('smssubmit');

  it('answers 404 sms_registration_not_found before the first save', () => expectNoRegistration(t, 'POST', '/sms/submit'));

  it('refuses a draft that fails the review with 422 review_failed and the findings, stores the verdict, and changes nothing else', async () => {
    const { key, orgId } = await t.org();
    await t.call('PUT', '/sms', { key, json: { ...COMPLETE_BRAND, ein: null, sample1: 'Acme Dental: buy CBD oil today. Reply STOP to opt out.' } });
    const res = await t.call('POST', '/sms/submit', { key });
    expect(res.status).to.equal(422);
    expect(res.headers.get('content-type')).to.match(/problem\+json/);
    expect(res.body.code).to.equal('review_failed');
    expect(res.body.findings.map((f: { code: string }) => f.code)).to.include.members(['required', 'prohibited_content']);
    expect(res.body.errors.map((e: { field: string }) => e.field)).to.include.members(['ein', 'sample1']);
    const row = await t.db('sms_registrations').where({ org_id: orgId }).first();
    expect(row.status).to.equal('draft');
    expect(row.submitted_at).to.equal(null);
    expect(row.last_review.verdict).to.equal('fail');
    expect(await t.db('usage_entries').where({ org_id: orgId })).to.have.length(0);
  });

  it('needs the stock symbol and exchange of a PUBLIC_PROFIT brand with the submission', async () => {
    const { key } = await t.org();
    await t.call('PUT', '/sms', { key, json: { ...COMPLETE_BRAND, entityType: 'PUBLIC_PROFIT' } });
    const res = await t.call('POST', '/sms/submit', { key, json: {} });
    expect(res.status).to.equal(422);
    expect(res.body.findings.filter((f: { severity: string }) => f.severity === 'error').map((f: { field: string }) => f.field)).to.deep.equal(['stockSymbol', 'stockExchange']);
    const bad = await t.call('POST', '/sms/submit', { key, json: { stockSymbol: 'acme!', stockExchange: 'MOON', extra: 1 } });
    expect(bad.status).to.equal(400);
    expect(bad.body.errors.map((e: { field: string }) => e.field).sort()).to.deep.equal(['extra', 'stockExchange', 'stockSymbol']);
  });

  it('answers 503 temporal_unavailable when no workflow service is configured, leaving the draft and billing untouched', async () => {
    const { key, orgId } = await t.org();
    await t.call('PUT', '/sms', { key, json: COMPLETE_BRAND });
    const res = await t.call('POST', '/sms/submit', { key, headers: { 'idempotency-key': 'k-503' } });
    expect(res.status).to.equal(503);
    expect(res.body.code).to.equal('temporal_unavailable');
    const row = await t.db('sms_registrations').where({ org_id: orgId }).first();
    expect(row.status).to.equal('draft');
    expect(await t.db('usage_entries').where({ org_id: orgId })).to.have.length(0);
    expect(await t.db('idempotency_keys').where({ org_id: orgId })).to.have.length(0);
  });
});
