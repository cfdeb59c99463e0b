/**
 * Consent and opt-out (PUT/DELETE /sms/contacts/{e164}/consent, the roster, the opt-out list and the
 * proof-of-consent CSV export) and the inbound keyword parser.
 */
import { expect } from 'chai';
import { parseInboundKeyword } from '../../domain/sms/keywords';
import { csvField } from '../../domain/sms/consentCsv';
import { useTestApi } from '../helpers/api';

describe('inbound keyword parsing (parseInboundKeyword)', () => {
  it('opts out on every STOP word, alone in the message, in any case and spacing', () => {
    for (const w of ['STOP', 'stop', ' Stop ', 'STOPALL', 'stop all', 'UNSUBSCRIBE', 'cancel', 'End', 'QUIT', 'revoke', 'OPTOUT', 'opt out', 'OPT  OUT', '\tstop\n', 'STOP.', 'Stop!']) {
      expect(parseInboundKeyword(w), JSON.stringify(w)).to.equal('STOP');
    }
  });

  it('opts in on START and UNSTOP, and answers HELP and INFO', () => {
    for (const w of ['START', 'start', ' UnStop ']) expect(parseInboundKeyword(w), w).to.equal('START');
    for (const w of ['HELP', 'help', 'Info']) expect(parseInboundKeyword(w), w).to.equal('HELP');
  });

  it('ignores keywords inside longer messages and other words', () => {
    for (const w of ['please stop', 'STOP texting me', 'stopped', 'I need help', 'started', '', 'STOP STOP', 'yes']) {
      expect(parseInboundKeyword(w), JSON.stringify(w)).to.equal(null);
    }
  });
});

describe('SMS consent, roster, opt-out list and export', () => {
  const t = useTestApi('smsconsent');

  const consent = { source: 'web_form', consentedAt: '2026-11-01T15:04:05.000Z', proofText: 'I agree to receive account texts from Acme Dental. Msg & data rates may apply. Reply STOP to opt out.' };

  it('records express consent with source, time and proof', async () => {
    const { key } = await t.org();
    const res = await t.call('PUT', '/sms/contacts/+14155550101/consent', { key, json: consent });
    expect(res.status).to.equal(200);
    expect(res.body.data).to.include({ e164: '+14155550101', consentStatus: 'granted', consentSource: 'web_form', consentedAt: consent.consentedAt, proofText: consent.proofText, optedOut: false });
  });

  it('answers 400 naming each bad field: the number, the source, the proof and a future time', async () => {
    const { key } = await t.org();
    const bad = await t.call('PUT', '/sms/contacts/12345/consent', { key, json: consent });
    expect(bad.status).to.equal(400);
    expect(bad.body.errors[0].field).to.equal('e164');
    const body = await t.call('PUT', '/sms/contacts/+14155550101/consent', { key, json: { source: 'carrier_pigeon' } });
    expect(body.status).to.equal(400);
    expect(body.body.errors.map((e: { field: string }) => e.field)).to.include.members(['source', 'proofText']);
    const future = await t.call('PUT', '/sms/contacts/+14155550101/consent', { key, json: { ...consent, consentedAt: '2099-01-01T00:00:00Z' } });
    expect(future.status).to.equal(400);
    expect(future.body.errors[0].field).to.equal('consentedAt');
  });

  it('withdraws consent, which puts the contact on the opt-out list; 404 for an unknown contact', async () => {
    const { key } = await t.org();
    await t.call('PUT', '/sms/contacts/+14155550102/consent', { key, json: consent });
    const res = await t.call('DELETE', '/sms/contacts/+14155550102/consent', { key });
    expect(res.status).to.equal(200);
    expect(res.body.data).to.include({ consentStatus: 'withdrawn', optedOut: true, optOutSource: 'api' });
    expect(res.body.data.withdrawnAt).to.be.a('string');
    expect((await t.call('DELETE', '/sms/contacts/+14155550199/consent', { key })).status).to.equal(404);
    const optOuts = await t.call('GET', '/sms/opt-outs', { key });
    expect(optOuts.body.data.items.map((c: { e164: string }) => c.e164)).to.deep.equal(['+14155550102']);
  });

  it("lists the roster page by page for sms:read, without another organization's contacts", async () => {
    const a = await t.org();
    const b = await t.org();
    for (const n of ['+14155550111', '+14155550112', '+14155550113']) await t.call('PUT', `/sms/contacts/${n}/consent`, { key: a.key, json: consent });
    await t.call('PUT', '/sms/contacts/+14155550114/consent', { key: b.key, json: consent });
    const p1 = await t.call('GET', '/sms/contacts?limit=2', { key: a.key });
    expect(p1.status).to.equal(200);
    expect(p1.body.data.items.map((c: { e164: string }) => c.e164)).to.deep.equal(['+14155550111', '+14155550112']);
    expect(p1.body.data.hasMore).to.equal(true);
    const p2 = await t.call('GET', `/sms/contacts?limit=2&cursor=${encodeURIComponent(p1.body.data.nextCursor)}`, { key: a.key });
    expect(p2.body.data).to.deep.include({ hasMore: false, nextCursor: null });
    expect(p2.body.data.items.map((c: { e164: string }) => c.e164)).to.deep.equal(['+14155550113']);
    expect((await t.call('GET', '/sms/contacts?limit=0', { key: a.key })).status).to.equal(400);
  });

  it('exports the proof-of-consent history as CSV, with formula-like text neutralized', async () => {
    const { key } = await t.org();
    await t.call('PUT', '/sms/contacts/+14155550121/consent', { key, json: { ...consent, proofText: '=HYPERLINK("x"), "quoted"' } });
    await t.call('DELETE', '/sms/contacts/+14155550121/consent', { key });
    const res = await t.call('GET', '/sms/consent-export', { key });
    expect(res.status).to.equal(200);
    expect(res.headers.get('content-type')).to.match(/^text\/csv/);
    expect(res.headers.get('content-disposition')).to.contain('attachment');
    const lines = res.text.trim().split('\r\n');
    expect(lines[0]).to.equal('e164,event,source,occurredAt,recordedAt,proofText');
    expect(lines).to.have.length(3);
    expect(lines[1].startsWith('+14155550121,consent_granted,web_form,2026-11-01T15:04:05.000Z,')).to.equal(true);
    expect(lines[1].endsWith(`"'=HYPERLINK(""x""), ""quoted"""`)).to.equal(true);
    expect(lines[2]).to.match(/^\+14155550121,consent_withdrawn,api,/);
    expect(csvField(null)).to.equal('');
  });

  it('lets sms:read list and export but not record consent', async () => {
    const { key } = await t.org('reader', ['sms:read']);
    expect((await t.call('GET', '/sms/contacts', { key })).status).to.equal(200);
    expect((await t.call('GET', '/sms/consent-export', { key })).status).to.equal(200);
    expect((await t.call('PUT', '/sms/contacts/+14155550101/consent', { key, json: consent })).status).to.equal(403);
  });
});
