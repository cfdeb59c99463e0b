/**
 * Webhook events of the SMS hub (docs/sms.md "Numbers, consent and sending" and docs/api-notes.md "Webhooks and audit logs"): `sms.registration.updated` for every move of the
 * registration's status or providerStatus, `sms.message.received` for an inbound text and
 * `sms.message.updated` for every status move of a message, each written once, in the transaction of
 * the change, with one delivery per subscribed endpoint; nothing for a duplicate, a retried write, a
 * stale submission or a refused (lower-ranked) status report. The last suite runs the whole path on the
 * dev server: submit → active and a send → delivered.
 */
import crypto from 'node:crypto';
import { expect } from 'chai';
import { Worker } from '@temporalio/worker';
import { startTestApi, type TestApi } from '../helpers/api';
import { startTestWorker, testTemporal } from '../helpers/temporal';
import { createMigratedTestDatabase } from '../helpers/postgres';
import { createSmsActivities } from '../../activities/sms';
import type { CarrierAdapter } from '../../providers/carrier';
import type { TelephonyAdapter } from '../../providers/telephony';
import { stopSandboxDispatchers } from '../../providers/carrier/sandbox';
import { sandboxInventory } from '../../providers/telephony/sandbox';
import { markSubmitted, transitionSubmission } from '../../db/repositories/smsRegistrations';
import { advanceMessage, insertMessage } from '../../db/repositories/smsMessages';
import { applyKeyword } from '../../db/repositories/smsContacts';
import { messageChanged, registrationChanged } from '../../events/sms';
import { startApi, type RunningApi } from '../../api/server';
import { createDb, type Db } from '../../db';
import { loadConfig } from '../../config';
import { createLogger } from '../../runtime';
import { createOrganization } from '../../db/repositories/organizations';
import { createSecretKey } from '../../db/repositories/apiKeys';
import { NON_RESERVED_SCOPES } from '../../domain/scopes';
import { callbackSecret, SIGNATURE_HEADER, signCallback } from '../../domain/sms/callbackSignature';
import { COMPLETE_BRAND, postCallback } from './sms-fixtures';
import { until } from '../helpers/wait';

const ENV: Record<string, string> = {
  WEBHOOK_ALLOW_HTTP_HOSTS: '127.0.0.1',
  HTTP_ALLOW_PRIVATE_HOSTS: '127.0.0.1',
  WEBHOOK_SECRET_KEY: Buffer.alloc(32, 7).toString('base64'),
};

function setEnv(): () => void {
  const saved: Record<string, string | undefined> = {};
  for (const [k, v] of Object.entries(ENV)) {
    saved[k] = process.env[k];
    process.env[k] = v;
  }
  return () => {
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  };
}

type Call = (method: string, path: string, opts: { key: string; json?: unknown }) => Promise<{ status: number; body: any }>;

/** Subscribes a webhook endpoint of the organization (never reached: deliveries are only read from the DB). */
async function subscribe(call: Call, key: string, eventTypes: string[] = []): Promise<string> {
  const res = await call('POST', '/webhooks', { key, json: { url: 'http://127.0.0.1:9/hooks', eventTypes } });
  expect(res.status, JSON.stringify(res.body)).to.equal(201);
  return res.body.data.id;
}

/**
 * The organization's events of `type`, oldest first, each with the endpoints it was delivered to.
 */
async function eventsOf(db: Db, orgId: string, type: string): Promise<Array<{ data: any; endpoints: string[] }>> {
  const rows = await db('events').where({ org_id: orgId, type }).orderBy([{ column: 'created_at' }, { column: 'id' }]);
  const out = [];
  for (const r of rows) {
    const d = await db('webhook_deliveries').where({ org_id: orgId, event_id: r.id });
    out.push({ data: r.data, endpoints: d.map((x: { endpoint_id: string }) => x.endpoint_id) });
  }
  return out;
}

const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

/** A carrier that answers at once and never calls back (the tests play the verdicts). */
const silentCarrier: CarrierAdapter = {
  provider: 'sandbox',
  createOrUpdateBrand: async () => ({ id: 'BEVT001', revision: 1, status: 'PENDING' }),
  createOrUpdateCampaign: async () => ({ id: 'CEVT001', revision: 1, status: 'PENDING' }),
  getBrandStatus: async () => ({ revision: 1, status: 'PENDING', reason: null }),
  getCampaignStatus: async () => ({ revision: 1, status: 'PENDING', reason: null }),
} as unknown as CarrierAdapter;

describe('SMS webhook events (sms.registration.updated, sms.message.received, sms.message.updated)', function () {
  let t: TestApi;
  let restoreEnv: () => void;
  let sent = 0;
  /** A telephony provider that accepts every text and sends no receipt (the tests post receipts). */
  const telephony = {
    provider: 'sandbox',
    sendMessage: async () => ({ providerMessageId: `SMevt${++sent}${crypto.randomBytes(3).toString('hex')}`, status: 'SENT' as const }),
  } as unknown as TelephonyAdapter;
  let acts: ReturnType<typeof createSmsActivities>;

  before(async () => {
    restoreEnv = setEnv();
    // Keyword replies go out through workflow sms-message/{id}: the worker runs these same activities.
    t = await startTestApi('smsevents', {}, {
      worker: ({ db, config }) => (acts = createSmsActivities({ db, config, logger: createLogger('silent') }, { carrier: silentCarrier, telephony })),
    });
    process.env.SANDBOX_CALLBACK_URL = `${t.api.baseUrl}/sms/provider-callbacks/sandbox`;
  });
  after(async () => {
    stopSandboxDispatchers();
    delete process.env.SANDBOX_CALLBACK_URL;
    await t?.close();
    restoreEnv?.();
  });

  it('emits sms.registration.updated once per status or providerStatus move, and nothing for a retried write, a same-status save or a stale submission', async () => {
    const org = await t.org();
    const hook = await subscribe(t.call, org.key, ['sms.registration.updated']);
    const other = await subscribe(t.call, org.key, ['sms.message.updated']);

    expect((await t.call('PUT', '/sms', { key: org.key, json: COMPLETE_BRAND })).status).to.equal(200);
    expect((await t.call('PUT', '/sms', { key: org.key, json: { displayName: 'Acme Dental Care' } })).status).to.equal(200);
    const registrationId = (await t.db('sms_registrations').where({ org_id: org.orgId }).first()).id;

    await t.db.transaction((trx) => markSubmitted(trx, org.orgId, { submissionId: 'smssub_evt1' }, registrationChanged(org.orgId)));
    expect(await acts.smsSubmitBrand(org.orgId, 'smssub_evt1')).to.deep.equal({ id: 'BEVT001', revision: 1 });
    const verified = { status: 'submitted' as const, providerStatus: 'BRAND_VERIFIED', lastError: null };
    expect(await acts.smsMarkRegistration(org.orgId, 'smssub_evt1', verified)).to.equal(true);
    expect(await acts.smsMarkRegistration(org.orgId, 'smssub_evt1', verified)).to.equal(true); // a retried activity
    await acts.smsSubmitCampaign(org.orgId, 'smssub_evt1', 'BEVT001');
    await acts.smsMarkRegistration(org.orgId, 'smssub_evt1', { status: 'registered', providerStatus: 'CAMPAIGN_APPROVED', lastError: null });
    await acts.smsMarkRegistration(org.orgId, 'smssub_evt1', { status: 'active', providerStatus: 'CAMPAIGN_PROVISIONED', lastError: null });
    // An older submission's run never writes, so never emits.
    expect(await acts.smsMarkRegistration(org.orgId, 'smssub_stale', { status: 'failed', providerStatus: 'BRAND_UNVERIFIED', lastError: 'x' })).to.equal(false);
    // A save returns the registration to draft; the workflow of the old submission is then stale too.
    expect((await t.call('PUT', '/sms', { key: org.key, json: { displayName: 'Acme Dental' } })).body.data.status).to.equal('draft');
    expect(await acts.smsMarkRegistration(org.orgId, 'smssub_evt1', { status: 'failed', providerStatus: 'CAMPAIGN_REJECTED', lastError: 'late' })).to.equal(false);

    const events = await eventsOf(t.db, org.orgId, 'sms.registration.updated');
    expect(events.map((e) => `${e.data.previousStatus}→${e.data.status} ${e.data.providerStatus}`)).to.deep.equal([
      'null→draft null',
      'draft→submitted null',
      'submitted→submitted BRAND_PENDING',
      'submitted→submitted BRAND_VERIFIED',
      'submitted→submitted CAMPAIGN_PENDING',
      'submitted→registered CAMPAIGN_APPROVED',
      'registered→active CAMPAIGN_PROVISIONED',
      'active→draft CAMPAIGN_PROVISIONED',
    ]);
    for (const e of events) expect(e.endpoints).to.deep.equal([hook]);
    expect(events[6].data).to.deep.equal({
      registrationId,
      status: 'active',
      previousStatus: 'registered',
      providerStatus: 'CAMPAIGN_PROVISIONED',
      lastError: null,
      brandId: 'BEVT001',
      campaignId: 'CEVT001',
    });
    expect(await t.db('webhook_deliveries').where({ endpoint_id: other })).to.have.length(0);
  });

  it('keeps the status unchanged when its event cannot be written (one transaction)', async () => {
    const org = await t.org();
    await t.call('PUT', '/sms', { key: org.key, json: COMPLETE_BRAND });
    await t.db.transaction((trx) => markSubmitted(trx, org.orgId, { submissionId: 'smssub_evt2' }));
    const failing = async () => {
      throw new Error('event store down');
    };
    let err: unknown;
    try {
      await transitionSubmission(t.db, org.orgId, 'smssub_evt2', { status: 'active', providerStatus: 'CAMPAIGN_PROVISIONED' }, failing);
    } catch (e) {
      err = e;
    }
    expect(String(err)).to.contain('event store down');
    expect((await t.db('sms_registrations').where({ org_id: org.orgId }).first()).status).to.equal('submitted');
  });

  describe('messages', () => {
    let org: { orgId: string; key: string };
    let hook: string;
    let ours: string;
    const customer = '+14155550177';
    const updated = async () => eventsOf(t.db, org.orgId, 'sms.message.updated');

    before(async () => {
      org = await t.org();
      hook = await subscribe(t.call, org.key, ['sms.message.received', 'sms.message.updated']);
      await t.call('PUT', '/sms', { key: org.key, json: COMPLETE_BRAND });
      ours = sandboxInventory('415')[3].e164;
      const bought = await t.call('POST', '/numbers/purchase', { key: org.key, json: { e164: ours } });
      expect(bought.status).to.equal(200);
      expect((await t.call('PUT', `/numbers/${bought.body.data.id}/sms`, { key: org.key, json: { enabled: true } })).status).to.equal(200);
      await t.db('sms_registrations').where({ org_id: org.orgId }).update({ status: 'active' });
    });

    it('emits sms.message.received once for an inbound text, with attachmentIds [], and nothing for a redelivery', async () => {
      const inbound = { type: 'message.inbound', id: 'SMevtIn1', from: customer, to: ours, text: 'Is Tuesday still OK?' };
      expect((await postCallback(t, inbound)).body.data).to.deep.equal({ received: true, duplicate: false });
      expect((await postCallback(t, inbound)).body.data).to.deep.equal({ received: true, duplicate: true });
      const row = await t.db('sms_messages').where({ org_id: org.orgId, provider_message_id: 'SMevtIn1' }).first();
      const events = await eventsOf(t.db, org.orgId, 'sms.message.received');
      expect(events).to.have.length(1);
      expect(events[0].endpoints).to.deep.equal([hook]);
      const { receivedAt, ...rest } = events[0].data;
      expect(rest).to.deep.equal({ messageId: row.id, from: customer, to: ours, body: 'Is Tuesday still OK?', attachmentIds: [] });
      expect(receivedAt).to.match(ISO);
    });

    it('emits sms.message.updated for queued → held → sent → delivered with the attachment ids, and nothing for a duplicate receipt, a late FAILED or a retried delivery', async () => {
      const id = `msg_evt${crypto.randomBytes(4).toString('hex')}`;
      await t.db.transaction((trx) =>
        insertMessage(trx, org.orgId, { id, direction: 'outbound', trigger: 'agent', from: ours, to: customer, body: 'Reminder', mediaIds: ['upl_a', 'upl_b'], status: 'queued' }, messageChanged(org.orgId)),
      );
      await acts.smsHoldMessage(org.orgId, id, new Date(Date.now() + 3_600_000).toISOString());
      await acts.smsHoldMessage(org.orgId, id, new Date(Date.now() + 3_600_000).toISOString()); // retried
      expect(await acts.smsDeliverMessage(org.orgId, id)).to.deep.equal({ status: 'sent', error: null });
      expect(await acts.smsDeliverMessage(org.orgId, id)).to.deep.equal({ status: 'sent', error: null }); // retried
      const providerId = (await t.db('sms_messages').where({ id }).first()).provider_message_id;
      expect((await postCallback(t, { type: 'message.status', id: providerId, status: 'DELIVERED' })).body.data.duplicate).to.equal(false);
      expect((await postCallback(t, { type: 'message.status', id: providerId, status: 'DELIVERED' })).body.data.duplicate).to.equal(true);
      expect((await postCallback(t, { type: 'message.status', id: providerId, status: 'FAILED', reason: 'late' })).status).to.equal(200);

      const events = (await updated()).filter((e) => e.data.messageId === id);
      expect(events.map((e) => `${e.data.previousStatus}→${e.data.status}`)).to.deep.equal(['null→queued', 'queued→held', 'held→sent', 'sent→delivered']);
      for (const e of events) {
        expect(e.endpoints).to.deep.equal([hook]);
        expect(e.data).to.include({ direction: 'outbound', from: ours, to: customer, errorCode: null, errorMessage: null });
        expect(e.data.attachmentIds).to.deep.equal(['upl_a', 'upl_b']);
        expect(e.data.updatedAt).to.match(ISO);
      }
    });

    it('reports a refused send with its error code and a carrier failure with its reason; an insert of an existing id emits nothing', async () => {
      const refusedId = `msg_evt${crypto.randomBytes(4).toString('hex')}`;
      const optedOut = '+14155550178';
      await applyKeyword(t.db, org.orgId, optedOut, 'STOP', 'STOP');
      const m = { id: refusedId, direction: 'outbound' as const, trigger: 'agent', from: ours, to: optedOut, body: 'Hello', status: 'queued' as const };
      await insertMessage(t.db, org.orgId, m, messageChanged(org.orgId));
      await insertMessage(t.db, org.orgId, m, messageChanged(org.orgId)); // same id again: nothing
      expect(await acts.smsDeliverMessage(org.orgId, refusedId)).to.deep.equal({ status: 'failed', error: 'recipient_opted_out' });

      const failId = `msg_evt${crypto.randomBytes(4).toString('hex')}`;
      await insertMessage(t.db, org.orgId, { ...m, id: failId, to: customer, providerMessageId: null }, messageChanged(org.orgId));
      await advanceMessage(t.db, org.orgId, failId, { status: 'sent', providerMessageId: `SMfail${failId}` }, messageChanged(org.orgId));
      await postCallback(t, { type: 'message.status', id: `SMfail${failId}`, status: 'UNDELIVERED', reason: 'Handset unreachable' });

      const events = await updated();
      const refused = events.filter((e) => e.data.messageId === refusedId);
      expect(refused.map((e) => e.data.status)).to.deep.equal(['queued', 'failed']);
      expect(refused[1].data).to.include({ previousStatus: 'queued', errorCode: 'recipient_opted_out', errorMessage: null });
      const failed = events.filter((e) => e.data.messageId === failId);
      expect(failed.map((e) => e.data.status)).to.deep.equal(['queued', 'sent', 'failed']);
      expect(failed[2].data).to.include({ previousStatus: 'sent', errorCode: null, errorMessage: 'Handset unreachable' });
    });

    it('finds a message by the echoed reference when its receipt overtakes the write of the provider id, and a late sent changes nothing', async () => {
      const id = `msg_evt${crypto.randomBytes(4).toString('hex')}`;
      await insertMessage(t.db, org.orgId, { id, direction: 'outbound', trigger: 'reply', from: ours, to: customer, body: 'Quick', status: 'queued' }, messageChanged(org.orgId));
      const res = await postCallback(t, { type: 'message.status', id: `SMearly${id}`, status: 'DELIVERED', reference: id });
      expect(res.status).to.equal(200);
      expect(await advanceMessage(t.db, org.orgId, id, { status: 'sent', providerMessageId: `SMearly${id}` }, messageChanged(org.orgId))).to.equal(false);
      const row = await t.db('sms_messages').where({ id }).first();
      expect(row).to.include({ status: 'delivered', provider_message_id: `SMearly${id}` });
      const events = (await updated()).filter((e) => e.data.messageId === id);
      expect(events.map((e) => `${e.data.previousStatus}→${e.data.status}`)).to.deep.equal(['null→queued', 'queued→delivered']);
    });

    it('emits the keyword confirmation as queued → sent after the STOP is received, once even when STOP comes again', async () => {
      const texter = '+14155550179';
      await postCallback(t, { type: 'message.inbound', id: 'SMevtKw1', from: texter, to: ours, text: 'STOP' });
      await postCallback(t, { type: 'message.inbound', id: 'SMevtKw2', from: texter, to: ours, text: 'stop' });
      const received = (await eventsOf(t.db, org.orgId, 'sms.message.received')).filter((e) => e.data.from === texter);
      expect(received.map((e) => e.data.body)).to.deep.equal(['STOP', 'stop']);
      // (the sandbox's delivery receipt may add sent → delivered later; the reply is sent by its workflow)
      await until(async () => (await updated()).some((e) => e.data.to === texter && e.data.status === 'sent'), 20_000, 'the keyword reply sent');
      const replies = (await updated()).filter((e) => e.data.to === texter && e.data.status !== 'delivered');
      expect(replies.map((e) => `${e.data.previousStatus}→${e.data.status}`)).to.deep.equal(['null→queued', 'queued→sent']);
      expect(replies[0].data.from).to.equal(ours);
    });
  });
});

describe('SMS webhook events end to end (dev server: submit → active, send → delivered)', function () {
  this.timeout(60_000);
  let db: Db;
  let api: RunningApi;
  let worker: { worker: Worker; stop(): Promise<void> } | undefined;
  let restoreEnv: () => void;
  let call: Call;
  let callbackUrl: string;

  before(async () => {
    restoreEnv = setEnv();
    const { client } = await testTemporal();
    const databaseUrl = await createMigratedTestDatabase('smsevents_e2e');
    db = createDb(databaseUrl);
    const config = loadConfig({ port: 0, host: '127.0.0.1', logLevel: 'silent' });
    const logger = createLogger('silent');
    const taskQueue = `sms-events-${crypto.randomBytes(4).toString('hex')}`;
    api = await startApi({ db, databaseUrl, config, logger, temporal: { client, taskQueue } });
    callbackUrl = `${api.baseUrl}/sms/provider-callbacks/sandbox`;
    worker = await startTestWorker(taskQueue, createSmsActivities({ db, config, logger }, { carrierOptions: { delayMs: 0, callbackUrl }, telephonyOptions: { delayMs: 300, callbackUrl } }));
    call = async (method, p, opts) => {
      const res = await fetch(`${api.baseUrl}${p}`, {
        method,
        headers: { authorization: `Bearer ${opts.key}`, ...(opts.json !== undefined ? { 'content-type': 'application/json' } : {}) },
        body: opts.json !== undefined ? JSON.stringify(opts.json) : undefined,
      });
      const text = await res.text();
      return { status: res.status, body: text ? JSON.parse(text) : undefined };
    };
  });
  after(async () => {
    stopSandboxDispatchers();
    await worker?.stop();
    await api?.close();
    await db?.destroy();
    restoreEnv?.();
  });

  it('writes each registration and message status move once, with one delivery to the subscribed endpoint', async () => {
    const org = await createOrganization(db, 'Events E2E');
    const { key } = await createSecretKey(db, org.id, { brand: loadConfig({ logLevel: 'silent' }).keyBrandPrefix, scopes: NON_RESERVED_SCOPES });
    const hook = await subscribe(call, key);
    await call('PUT', '/sms', { key, json: COMPLETE_BRAND });
    const from = sandboxInventory('312')[5].e164;
    const bought = await call('POST', '/numbers/purchase', { key, json: { e164: from } });
    await call('PUT', `/numbers/${bought.body.data.id}/sms`, { key, json: { enabled: true } });
    expect((await call('POST', '/sms/submit', { key })).status).to.equal(200);
    // Polled as a client would, within the key's burst limit (20 requests a second): a faster poll is answered 429.
    await until(async () => ['active', 'failed'].includes((await call('GET', '/sms', { key })).body.data?.status), 20_000, 'the registration active', 100);

    const reg = await eventsOf(db, org.id, 'sms.registration.updated');
    expect(reg.map((e) => `${e.data.status}/${e.data.providerStatus}`)).to.deep.equal([
      'draft/null',
      'submitted/null',
      'submitted/BRAND_PENDING',
      'submitted/BRAND_VERIFIED',
      'submitted/CAMPAIGN_PENDING',
      'registered/CAMPAIGN_APPROVED',
      'active/CAMPAIGN_PROVISIONED',
    ]);
    for (const e of reg) expect(e.endpoints).to.deep.equal([hook]);

    const to = '+12125550148';
    const sent = await call('POST', '/sms/messages', { key, json: { from, to, body: 'Acme Dental: confirmed.', trigger: 'reply' } });
    expect(sent.status).to.equal(202);
    const id = sent.body.data.id;
    await until(async () => (await db('sms_messages').where({ id }).first()).status === 'delivered');
    // A redelivered receipt from the carrier changes nothing.
    const providerId = (await db('sms_messages').where({ id }).first()).provider_message_id;
    const body = JSON.stringify({ type: 'message.status', id: providerId, status: 'DELIVERED' });
    const again = await fetch(callbackUrl, { method: 'POST', headers: { 'content-type': 'application/json', [SIGNATURE_HEADER]: signCallback(callbackSecret('sandbox'), body) }, body });
    expect(((await again.json()) as any).data.duplicate).to.equal(true);
    const msg = (await eventsOf(db, org.id, 'sms.message.updated')).filter((e) => e.data.messageId === id);
    expect(msg.map((e) => `${e.data.previousStatus}→${e.data.status}`)).to.deep.equal(['null→queued', 'queued→sent', 'sent→delivered']);
    for (const e of msg) {
      expect(e.endpoints).to.deep.equal([hook]);
      expect(e.data.attachmentIds).to.deep.equal([]);
    }
  });
});
