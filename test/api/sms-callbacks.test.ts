/**
 * Provider callbacks (POST /sms/provider-callbacks/{provider}) and the sandbox carrier behind them:
 * HMAC signatures over the raw body, dedupe on (external id, status, revision), unknown ids, delivery
 * receipts that never go backwards, inbound STOP/START/HELP, and the sandbox delivering its verdicts
 * by real HTTP POSTs (also after a restart).
 */
import { expect } from 'chai';
import { signCallback, verifyCallbackSignature, callbackSecret } from '../../domain/sms/callbackSignature';
import { SandboxCarrier, SandboxCallbackDispatcher, stopSandboxDispatchers } from '../../providers/carrier/sandbox';
import type { CarrierBrandRequest } from '../../providers/carrier';
import { setCarrierIds } from '../../db/repositories/smsRegistrations';
import { insertMessage } from '../../db/repositories/smsMessages';
import { scheduleSandboxCallback } from '../../db/repositories/smsProviderEvents';
import type { TestApi } from '../helpers/api';
import { COMPLETE_BRAND, postCallback, startSmsTestApi } from './sms-fixtures';
import { until } from '../helpers/wait';
import { createSmsActivities } from '../../activities/sms';
import { testTemporal } from '../helpers/temporal';


describe('provider callback signatures (verifyCallbackSignature)', () => {
  const body = '{"type":"brand.status","id":"B123456","status":"VERIFIED"}';
  const now = 1_800_000_000;

  it('accepts the signature of the exact body within five minutes', () => {
    expect(verifyCallbackSignature('s3cret', signCallback('s3cret', body, now), body, now + 299)).to.equal(null);
  });

  it('refuses a signature made with another secret, over another body, too old, malformed or missing', () => {
    expect(verifyCallbackSignature('s3cret', signCallback('other', body, now), body, now)).to.equal('mismatch');
    expect(verifyCallbackSignature('s3cret', signCallback('s3cret', body + ' ', now), body, now)).to.equal('mismatch');
    expect(verifyCallbackSignature('s3cret', signCallback('s3cret', body, now), body, now + 301)).to.equal('expired');
    expect(verifyCallbackSignature('s3cret', 'v1=abc', body, now)).to.equal('malformed');
    expect(verifyCallbackSignature('s3cret', undefined, body, now)).to.equal('missing');
  });

  it('accepts any of several v1 signatures (provider-side secret rotation)', () => {
    const good = signCallback('s3cret', body, now).split(',')[1];
    const old = signCallback('old', body, now).split(',')[1];
    expect(verifyCallbackSignature('s3cret', `t=${now},${old},${good}`, body, now)).to.equal(null);
  });
});

describe('POST /sms/provider-callbacks/{provider}', () => {
  let t: TestApi;
  before(async () => {
    // Keyword replies go out through workflow sms-message/{id}, so this API has a worker.
    t = await startSmsTestApi('smscallbacks', {}, {
      worker: ({ db, config, logger, baseUrl }) => createSmsActivities({ db, config, logger }, { telephonyOptions: { delayMs: 0, callbackUrl: `${baseUrl}/sms/provider-callbacks/sandbox` } }),
    });
    process.env.SANDBOX_CALLBACK_URL = `${t.api.baseUrl}/sms/provider-callbacks/sandbox`;
  });
  after(async () => {
    stopSandboxDispatchers();
    delete process.env.SANDBOX_CALLBACK_URL;
    await t.close();
  });

  /** An organization with a saved draft and the carrier brand id `brandId`. */
  async function orgWithBrand(brandId: string) {
    const o = await t.org();
    await t.call('PUT', '/sms', { key: o.key, json: COMPLETE_BRAND });
    await setCarrierIds(t.db, o.orgId, { brandId });
    return o;
  }
  const events = (orgId: string) => t.db('sms_provider_events').where({ org_id: orgId }).orderBy('id');

  it('answers 401 invalid_signature to a forged, missing or stale signature, and stores nothing', async () => {
    const { orgId } = await orgWithBrand('BFORGE1');
    const payload = { type: 'brand.status', id: 'BFORGE1', revision: 1, status: 'VERIFIED' };
    const forged = await postCallback(t, payload, { secret: 'not-the-secret' });
    expect(forged.status).to.equal(401);
    expect(forged.body.code).to.equal('invalid_signature');
    expect((await postCallback(t, payload, { signature: null })).status).to.equal(401);
    const stale = signCallback(callbackSecret('sandbox'), JSON.stringify(payload), Math.floor(Date.now() / 1000) - 3600);
    expect((await postCallback(t, payload, { signature: stale })).status).to.equal(401);
    // a signature over another body does not cover this one
    const other = signCallback(callbackSecret('sandbox'), JSON.stringify({ ...payload, status: 'UNVERIFIED' }));
    expect((await postCallback(t, payload, { signature: other })).status).to.equal(401);
    expect(await events(orgId)).to.have.length(0);
  });

  it('stores a signed brand verdict once and answers a duplicate as duplicate without storing it again', async () => {
    const { orgId } = await orgWithBrand('BDUPE01');
    const payload = { type: 'brand.status', id: 'BDUPE01', revision: 1, status: 'VERIFIED' };
    const first = await postCallback(t, payload);
    expect(first.status).to.equal(200);
    expect(first.body.data).to.deep.equal({ received: true, duplicate: false });
    const again = await postCallback(t, { ...payload, eventId: 'evt_other_delivery' });
    expect(again.status).to.equal(200);
    expect(again.body.data).to.deep.equal({ received: true, duplicate: true });
    expect(await events(orgId)).to.have.length(1);
  });

  it('dedupes on external id and status, not id alone: another status or revision of the same brand is stored', async () => {
    const { orgId } = await orgWithBrand('BREV001');
    await postCallback(t, { type: 'brand.status', id: 'BREV001', revision: 1, status: 'UNVERIFIED' });
    await postCallback(t, { type: 'brand.status', id: 'BREV001', revision: 2, status: 'UNVERIFIED' });
    await postCallback(t, { type: 'brand.status', id: 'BREV001', revision: 2, status: 'VERIFIED' });
    const rows = await events(orgId);
    expect(rows.map((r) => `${r.status}@${r.revision}`)).to.deep.equal(['UNVERIFIED@1', 'UNVERIFIED@2', 'VERIFIED@2']);
  });

  it('answers 404 unknown_external_id for an id no registration knows, and 404 unknown_provider for another provider', async () => {
    const res = await postCallback(t, { type: 'campaign.status', id: 'CNOBODY', revision: 1, status: 'APPROVED' });
    expect(res.status).to.equal(404);
    expect(res.body.code).to.equal('unknown_external_id');
    const p = await postCallback(t, { type: 'brand.status', id: 'B1', status: 'VERIFIED' }, { provider: 'acme' });
    expect(p.status).to.equal(404);
    expect(p.body.code).to.equal('unknown_provider');
  });

  it('answers 400 for a signed body of the wrong shape', async () => {
    const res = await postCallback(t, { type: 'brand.bogus', id: '' });
    expect(res.status).to.equal(400);
    expect(res.body.errors.map((e: { field: string }) => e.field)).to.include.members(['type', 'id']);
  });

  it('moves a message to delivered and never back (a late FAILED after DELIVERED changes nothing)', async () => {
    const { orgId } = await t.org();
    await insertMessage(t.db, orgId, { id: 'msg_receipt1', direction: 'outbound', trigger: 'agent', from: '+14155550100', to: '+14155550101', body: 'hi', status: 'sent', providerMessageId: 'SMreceipt1' });
    expect((await postCallback(t, { type: 'message.status', id: 'SMreceipt1', status: 'DELIVERED' })).status).to.equal(200);
    expect((await postCallback(t, { type: 'message.status', id: 'SMreceipt1', status: 'FAILED', reason: 'late' })).status).to.equal(200);
    const m = await t.db('sms_messages').where({ id: 'msg_receipt1' }).first();
    expect(m.status).to.equal('delivered');
    expect(m.error).to.equal(null);
  });

  describe('inbound keywords', () => {
    let org: { orgId: string; key: string };
    let ours: string;
    const customer = '+14155550142';
    const outbound = () => t.db('sms_messages').where({ org_id: org.orgId, direction: 'outbound', trigger: 'keyword' }).orderBy('created_at');
    let seq = 0;
    const inbound = (text: string, id = `SMin${++seq}`) => postCallback(t, { type: 'message.inbound', id, from: customer, to: ours, text });

    before(async () => {
      org = await t.org();
      await t.call('PUT', '/sms', { key: org.key, json: COMPLETE_BRAND });
      const search = await t.call('GET', '/numbers/search?areaCode=415&limit=1', { key: org.key });
      ours = search.body.data.items[0].e164;
      expect((await t.call('POST', '/numbers/purchase', { key: org.key, json: { e164: ours } })).status).to.equal(200);
    });

    it('opts the sender out on " stop " and sends exactly one confirmation, even when STOP comes again', async () => {
      expect((await inbound(' stop ')).status).to.equal(200);
      const contact = await t.db('sms_contacts').where({ org_id: org.orgId, e164: customer }).first();
      expect(contact.opted_out).to.equal(true);
      expect(contact.opt_out_source).to.equal('keyword');
      expect((await inbound('Opt Out')).status).to.equal(200);
      const replies = await outbound();
      expect(replies).to.have.length(1);
      expect(replies[0].body).to.contain('unsubscribed');
      expect(replies[0].to_e164).to.equal(customer);
      expect(replies[0].from_e164).to.equal(ours);
    });

    it('sends the confirmation through workflow sms-message/{id}, like every other text', async () => {
      const [reply] = await outbound();
      const { client } = await testTemporal();
      expect(await client.workflow.getHandle(`sms-message/${reply.id}`).result()).to.deep.equal({ status: 'sent', error: null });
      expect((await t.db('sms_messages').where({ id: reply.id }).first()).status).to.be.oneOf(['sent', 'delivered']);
    });

    it('ignores a keyword that is not alone in the message', async () => {
      await inbound('please START sending again');
      const contact = await t.db('sms_contacts').where({ org_id: org.orgId, e164: customer }).first();
      expect(contact.opted_out).to.equal(true);
    });

    it('opts back in on UNSTOP with one confirmation, and answers HELP with the help message', async () => {
      await inbound('UNSTOP');
      const contact = await t.db('sms_contacts').where({ org_id: org.orgId, e164: customer }).first();
      expect(contact.opted_out).to.equal(false);
      await inbound('help');
      const reg = await t.call('GET', '/sms', { key: org.key });
      const replies = await outbound();
      expect(replies.map((r) => r.body)).to.deep.equal([replies[0].body, replies[1].body, reg.body.data.helpMessage]);
      expect(replies[1].body).to.contain('resubscribed');
    });

    it('keeps an inbound text with a NUL character, storing U+FFFD in its place', async () => {
      const res = await inbound('see you at 9\u0000pm', 'SMinNul');
      expect(res.status).to.equal(200);
      const stored = await t.db('sms_messages').where({ org_id: org.orgId, direction: 'inbound', provider_message_id: 'SMinNul' }).first();
      expect(stored.body).to.equal('see you at 9\uFFFDpm');
    });

    it('treats a redelivered inbound text (same provider id) as a duplicate and does nothing twice', async () => {
      const before = (await outbound()).length;
      const first = await inbound('INFO', 'SMinDup');
      const dup = await inbound('INFO', 'SMinDup');
      expect(first.body.data.duplicate).to.equal(false);
      expect(dup.body.data.duplicate).to.equal(true);
      expect((await outbound()).length).to.equal(before + 1);
      expect(await t.db('sms_messages').where({ org_id: org.orgId, direction: 'inbound', provider_message_id: 'SMinDup' })).to.have.length(1);
    });

    it('answers 404 for an inbound text to a number nobody owns', async () => {
      const res = await postCallback(t, { type: 'message.inbound', id: 'SMnobody', from: customer, to: '+14155550000', text: 'STOP' });
      expect(res.status).to.equal(404);
    });
  });

  describe('sandbox carrier', () => {
    const brandRequest = (reference: string, legalName: string): CarrierBrandRequest => ({
      ...COMPLETE_BRAND, legalName, stockSymbol: null, stockExchange: null, reference,
    });
    async function draft(legalName: string) {
      const o = await t.org();
      await t.call('PUT', '/sms', { key: o.key, json: { ...COMPLETE_BRAND, legalName } });
      const row = await t.db('sms_registrations').where({ org_id: o.orgId }).first();
      return { ...o, registrationId: row.id as string };
    }

    it('answers with an id at once, logs the request, and delivers the signed verdict through the callback endpoint', async () => {
      const o = await draft('Acme Dental LLC');
      const carrier = new SandboxCarrier({ db: t.db, config: t.config }, { delayMs: 0 });
      const sub = await carrier.createOrUpdateBrand(o.orgId, brandRequest(o.registrationId, 'Acme Dental LLC'));
      expect(sub.id).to.match(/^B[0-9A-Z]{6}$/);
      expect(sub).to.include({ revision: 1, status: 'PENDING' });
      const ev = await until(async () => (await events(o.orgId))[0]);
      expect(ev).to.include({ external_id: sub.id, status: 'VERIFIED', revision: 1, object_type: 'brand' });
      const log = await t.db('provider_requests').where({ org_id: o.orgId });
      expect(log.map((r) => r.operation)).to.deep.equal(['createBrand']);
      // marked delivered once the endpoint answered 200
      await until(async () => (await t.db('sandbox_callbacks').where({ org_id: o.orgId }).whereNull('delivered_at')).length === 0);
    });

    it('rejects a brand whose legal name contains "Reject Brand", and an update keeps the id with a new revision', async () => {
      const o = await draft('Reject Brand Inc');
      const carrier = new SandboxCarrier({ db: t.db, config: t.config }, { delayMs: 0 });
      const sub = await carrier.createOrUpdateBrand(o.orgId, brandRequest(o.registrationId, 'Reject Brand Inc'));
      await until(async () => (await events(o.orgId)).length === 1);
      expect((await events(o.orgId))[0].status).to.equal('UNVERIFIED');
      const again = await carrier.createOrUpdateBrand(o.orgId, brandRequest(o.registrationId, 'Fixed Brand Inc'), sub.id);
      expect(again).to.include({ id: sub.id, revision: 2 });
      await until(async () => (await events(o.orgId)).length === 2);
      expect((await events(o.orgId))[1]).to.include({ status: 'VERIFIED', revision: 2 });
      expect((await t.db('provider_requests').where({ org_id: o.orgId })).map((r) => r.operation)).to.deep.equal(['createBrand', 'updateBrand']);
    });

    it('rejects a campaign whose description contains "Reject Campaign"; approves and provisions otherwise', async () => {
      const o = await draft('Acme Dental LLC');
      const carrier = new SandboxCarrier({ db: t.db, config: t.config }, { delayMs: 0 });
      const brand = await carrier.createOrUpdateBrand(o.orgId, brandRequest(o.registrationId, 'Acme Dental LLC'));
      const base = { brandId: brand.id, useCase: 'MIXED', sample1: 's1', sample2: 's2', messageFlow: 'f', helpMessage: 'h', sendsLinks: false, optInMethod: 'WEB_FORM', reference: o.registrationId };
      const bad = await carrier.createOrUpdateCampaign(o.orgId, { ...base, description: 'Please Reject Campaign now' });
      await until(async () => (await events(o.orgId)).some((e) => e.external_id === bad.id));
      expect((await events(o.orgId)).filter((e) => e.external_id === bad.id).map((e) => e.status)).to.deep.equal(['REJECTED']);
      const good = await carrier.createOrUpdateCampaign(o.orgId, { ...base, description: 'Fine campaign' }, bad.id);
      await until(async () => (await events(o.orgId)).filter((e) => e.external_id === good.id && e.revision === 2).length === 2);
      expect((await events(o.orgId)).filter((e) => e.revision === 2).map((e) => e.status).sort()).to.deep.equal(['APPROVED', 'PROVISIONED']);
      expect((await carrier.getCampaignStatus(o.orgId, good.id)).status).to.equal('PROVISIONED');
    });

    it('sends no callback for "No Callback" but reports the verdict when polled', async () => {
      const o = await draft('No Callback LLC');
      const carrier = new SandboxCarrier({ db: t.db, config: t.config }, { delayMs: 0 });
      const sub = await carrier.createOrUpdateBrand(o.orgId, brandRequest(o.registrationId, 'No Callback LLC'));
      expect(await t.db('sandbox_callbacks').where({ org_id: o.orgId })).to.have.length(0);
      expect(await carrier.getBrandStatus(o.orgId, sub.id)).to.include({ status: 'VERIFIED', revision: 1 });
      const slow = new SandboxCarrier({ db: t.db, config: t.config }, { delayMs: 60_000 });
      await slow.createOrUpdateBrand(o.orgId, brandRequest(o.registrationId, 'No Callback LLC'), sub.id);
      expect((await carrier.getBrandStatus(o.orgId, sub.id)).status).to.equal('PENDING');
    });

    it('delivers a callback left pending by a stopped process once a new dispatcher resumes', async () => {
      const o = await draft('Acme Dental LLC');
      await setCarrierIds(t.db, o.orgId, { brandId: 'BRESUME' });
      stopSandboxDispatchers(); // this process's dispatchers are gone, as after a crash
      // A sweep already in flight when they stopped may still finish its loop: let it drain first.
      await new Promise((r) => setTimeout(r, 500));
      // Scheduled, but no dispatcher of this process was told (as if the process died right after).
      await scheduleSandboxCallback(t.db, o.orgId, 'sandbox', { eventId: 'evt_resume', type: 'brand.status', id: 'BRESUME', revision: 1, status: 'VERIFIED', occurredAt: new Date().toISOString() }, 0);
      await new Promise((r) => setTimeout(r, 200));
      expect(await events(o.orgId)).to.have.length(0);
      const restarted = new SandboxCallbackDispatcher(t.db, process.env.SANDBOX_CALLBACK_URL!);
      await restarted.resume();
      // The dispatcher marks the callback delivered after the endpoint answered, so wait for that mark.
      await until(async () => (await t.db('sandbox_callbacks').where({ org_id: o.orgId }).first()).delivered_at !== null);
      restarted.stop();
      expect(await events(o.orgId)).to.have.length(1);
    });
  });
});
