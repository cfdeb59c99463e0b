/**
 * The 10DLC registration and text sending end to end on the embedded Temporal dev server with the real
 * SDK: the API starts `sms-registration/{orgId}`, a worker runs workflows/smsRegistration.ts with the
 * real activities and the sandbox carrier, and the sandbox's verdicts come back as real signed HTTP
 * callbacks that the API turns into signals. A second dev server with time skipping drives the hourly
 * polling fallback and the quiet-hours hold.
 */
import crypto from 'node:crypto';
import { expect } from 'chai';
import { Client, Connection } from '@temporalio/client';
import { DefaultLogger, NativeConnection, Runtime, Worker } from '@temporalio/worker';
import type { DevServer } from '../../devserver';
import { startRecordingDevServer } from '../helpers/histories';
import { loadConfig, type AppConfig } from '../../config';
import { createDb, type Db } from '../../db';
import { createOrganization } from '../../db/repositories/organizations';
import { createSecretKey } from '../../db/repositories/apiKeys';
import { startApi, type RunningApi } from '../../api/server';
import { NON_RESERVED_SCOPES } from '../../domain/scopes';
import { callbackSecret, SIGNATURE_HEADER, signCallback } from '../../domain/sms/callbackSignature';
import { quietHoursDecision } from '../../domain/sms/quietHours';
import { usAreaCodes } from '../../domain/sms/nanp';
import { createLogger } from '../../runtime';
import { createSmsActivities } from '../../activities/sms';
import { stopSandboxDispatchers } from '../../providers/carrier/sandbox';
import { sandboxInventory } from '../../providers/telephony/sandbox';
import { workflowIds } from '../../temporal.config';
import { registrationProgressQuery } from '../../workflows/definitions';
import { callWithKey } from '../helpers/api';
import { useResource } from '../helpers/mocha';
import { createMigratedTestDatabase } from '../helpers/postgres';
import { COMPLETE_BRAND } from '../api/sms-fixtures';
import { serviceWorkflowBundle, startWorkerAt } from '../helpers/temporal';

try {
  Runtime.install({ logger: new DefaultLogger('ERROR') });
} catch {
  // already installed by another suite in this process
}


/** A dev server, an API wired to it, and a worker with the real SMS activities (sandbox delays zero). */
interface Env {
  server: DevServer;
  client: Client;
  db: Db;
  api: RunningApi;
  config: AppConfig;
  close(): Promise<void>;
  org(): Promise<{ orgId: string; key: string }>;
  call(key: string, method: string, p: string, json?: unknown, headers?: Record<string, string>): Promise<{ status: number; body: any; headers: Headers }>;
  callback(payload: unknown): Promise<{ status: number; body: any }>;
}

async function startEnv(label: string, opts: { timeSkipping: boolean }): Promise<Env> {
  const server = await startRecordingDevServer({ timeSkipping: opts.timeSkipping });
  const connection = await Connection.connect({ address: server.address });
  const native = await NativeConnection.connect({ address: server.address });
  const client = new Client({ connection });
  const databaseUrl = await createMigratedTestDatabase(label);
  const db = createDb(databaseUrl);
  const config = loadConfig({ port: 0, host: '127.0.0.1', logLevel: 'silent' });
  const logger = createLogger('silent');
  const taskQueue = `sms-${crypto.randomBytes(4).toString('hex')}`;
  const api = await startApi({ db, databaseUrl, config, logger, temporal: { client, taskQueue } });
  const callbackUrl = `${api.baseUrl}/sms/provider-callbacks/sandbox`;
  const worker = await Worker.create({
    connection: native,
    taskQueue,
    workflowBundle: await serviceWorkflowBundle(),
    activities: createSmsActivities({ db, config, logger }, { carrierOptions: { delayMs: 0, callbackUrl }, telephonyOptions: { delayMs: 0, callbackUrl } }),
  });
  const running = worker.run();
  const call = (key: string, method: string, p: string, json?: unknown, headers: Record<string, string> = {}) => callWithKey(api.baseUrl, key, method, p, json, headers);
  return {
    server,
    client,
    db,
    api,
    config,
    call,
    async org() {
      const org = await createOrganization(db, 'SMS Org');
      const { key } = await createSecretKey(db, org.id, { brand: config.keyBrandPrefix, scopes: NON_RESERVED_SCOPES });
      return { orgId: org.id, key };
    },
    async callback(payload: unknown) {
      const body = JSON.stringify(payload);
      const res = await fetch(callbackUrl, { method: 'POST', headers: { 'content-type': 'application/json', [SIGNATURE_HEADER]: signCallback(callbackSecret('sandbox'), body) }, body });
      const text = await res.text();
      return { status: res.status, body: text ? JSON.parse(text) : undefined };
    },
    async close() {
      worker.shutdown();
      await running.catch(() => undefined);
      await api.close();
      await db.destroy();
      await connection.close();
      await native.close();
      await server.stop();
    },
  };
}

/** Polls GET /sms until `done(registration)` or `ms` pass. */
async function waitFor(env: Env, key: string, done: (r: any) => boolean, ms = 20_000): Promise<any> {
  const end = Date.now() + ms;
  for (;;) {
    const r = (await env.call(key, 'GET', '/sms')).body.data;
    if (done(r)) return r;
    if (Date.now() > end) throw new Error(`registration stuck at ${r.status}/${r.providerStatus}`);
    await new Promise((res) => setTimeout(res, 50));
  }
}
const settled = (r: any) => r.status === 'active' || r.status === 'failed';

/** An environment started for the enclosing `describe` and closed after it, with the sandbox carrier's dispatchers stopped. */
function useEnv(label: string, opts: { timeSkipping: boolean }): Env {
  return useResource(`SMS env ${label}`, () => startEnv(label, opts), async (env) => {
    stopSandboxDispatchers();
    await env.close();
  });
}

describe('SMS registration workflow (dev server, real SDK, sandbox carrier over HTTP)', function () {
  this.timeout(120_000);
  const env = useEnv('sms_wf', { timeSkipping: false });

  it('takes a draft through review and submit to active by real HTTP callbacks, charging the fees once', async () => {
    const { orgId, key } = await env.org();
    expect((await env.call(key, 'PUT', '/sms', COMPLETE_BRAND)).status).to.equal(200);
    expect((await env.call(key, 'POST', '/sms/review')).body.data.verdict).to.equal('pass');
    const sub = await env.call(key, 'POST', '/sms/submit');
    expect(sub.status).to.equal(200);
    expect(sub.body.data.status).to.equal('submitted');
    expect(new Date(sub.body.data.submittedAt).toISOString()).to.equal(sub.body.data.submittedAt);
    const reg = await waitFor(env, key, settled);
    expect(reg).to.include({ status: 'active', providerStatus: 'CAMPAIGN_PROVISIONED', lastError: null });
    expect(reg.brandId).to.match(/^B/);
    expect(reg.campaignId).to.match(/^C/);
    const progress = await env.client.workflow.getHandle(workflowIds.smsRegistration(orgId)).result();
    expect(progress).to.include({ step: 'done', status: 'active', polls: 0 });
    const usage = await env.db('usage_entries').where({ org_id: orgId }).orderBy('kind');
    expect(usage.map((u) => u.kind)).to.deep.equal(['10dlc_brand_registration', '10dlc_campaign_vetting']);
    const ops = (await env.db('provider_requests').where({ org_id: orgId }).orderBy('id')).map((r) => r.operation);
    expect(ops).to.deep.equal(['createBrand', 'createCampaign']);
    const events = await env.db('sms_provider_events').where({ org_id: orgId });
    expect(events.map((e) => e.status).sort()).to.deep.equal(['APPROVED', 'PROVISIONED', 'VERIFIED']);
  });

  it('fails on a rejected brand with providerStatus and lastError, and a resubmission after a fix reuses the brand id', async () => {
    const { orgId, key } = await env.org();
    await env.call(key, 'PUT', '/sms', { ...COMPLETE_BRAND, legalName: 'Reject Brand Dental LLC', displayName: 'Acme Dental' });
    expect((await env.call(key, 'POST', '/sms/submit')).status).to.equal(200);
    const failed = await waitFor(env, key, settled);
    expect(failed).to.include({ status: 'failed', providerStatus: 'BRAND_UNVERIFIED' });
    expect(failed.lastError).to.contain('Reject Brand');
    await env.call(key, 'PUT', '/sms', { legalName: 'Acme Dental LLC' });
    expect((await env.call(key, 'POST', '/sms/submit')).status).to.equal(200);
    const active = await waitFor(env, key, settled);
    expect(active).to.include({ status: 'active', brandId: failed.brandId, lastError: null });
    const ops = (await env.db('provider_requests').where({ org_id: orgId }).orderBy('id')).map((r) => r.operation);
    expect(ops).to.deep.equal(['createBrand', 'updateBrand', 'createCampaign']);
    expect(await env.db('usage_entries').where({ org_id: orgId })).to.have.length(2);
  });

  it('fails on a rejected campaign with CAMPAIGN_REJECTED', async () => {
    const { key } = await env.org();
    await env.call(key, 'PUT', '/sms', { ...COMPLETE_BRAND, description: 'Acme Dental sends account notification texts to opted-in customers. Reject Campaign. Msg & data rates may apply.' });
    expect((await env.call(key, 'POST', '/sms/submit')).status).to.equal(200);
    const reg = await waitFor(env, key, settled);
    expect(reg).to.include({ status: 'failed', providerStatus: 'CAMPAIGN_REJECTED' });
    expect(reg.campaignId).to.match(/^C/);
    expect(reg.lastError).to.contain('Reject Campaign');
  });

  it('replays the first response for the same Idempotency-Key, refuses the key with another body, and answers 409 while submitted', async () => {
    const { orgId, key } = await env.org();
    await env.call(key, 'PUT', '/sms', { ...COMPLETE_BRAND, legalName: 'No Callback Dental LLC' });
    const first = await env.call(key, 'POST', '/sms/submit', {}, { 'idempotency-key': 'submit-1' });
    const again = await env.call(key, 'POST', '/sms/submit', {}, { 'idempotency-key': 'submit-1' });
    expect(first.status).to.equal(200);
    expect(again.status).to.equal(200);
    expect(again.body.data).to.deep.equal(first.body.data);
    expect(again.headers.get('idempotent-replayed')).to.equal('true');
    const other = await env.call(key, 'POST', '/sms/submit', { stockSymbol: 'ACME', stockExchange: 'NYSE' }, { 'idempotency-key': 'submit-1' });
    expect(other.status).to.equal(422);
    expect(other.body.code).to.equal('idempotency_key_reused');
    const fresh = await env.call(key, 'POST', '/sms/submit', {}, { 'idempotency-key': 'submit-2' });
    expect(fresh.status).to.equal(409);
    expect(fresh.body.code).to.equal('registration_in_progress');
    expect(await env.db('usage_entries').where({ org_id: orgId })).to.have.length(2);
    await env.client.workflow.getHandle(workflowIds.smsRegistration(orgId)).terminate('test done');
  });

  it('handles duplicate and out-of-order callbacks: PROVISIONED before APPROVED still ends active, and late ones change nothing', async () => {
    const { orgId, key } = await env.org();
    // "No Callback": the sandbox stays silent, so this test plays the carrier.
    await env.call(key, 'PUT', '/sms', { ...COMPLETE_BRAND, legalName: 'No Callback Dental LLC' });
    await env.call(key, 'POST', '/sms/submit');
    const handle = env.client.workflow.getHandle(workflowIds.smsRegistration(orgId));
    const brandId = (await waitFor(env, key, (r) => !!r.brandId)).brandId;
    const reference = (await env.db('sms_registrations').where({ org_id: orgId }).first()).id;
    expect((await env.callback({ type: 'brand.status', id: brandId, revision: 1, status: 'VERIFIED', reference })).body.data.duplicate).to.equal(false);
    expect((await env.callback({ type: 'brand.status', id: brandId, revision: 1, status: 'VERIFIED', reference })).body.data.duplicate).to.equal(true);
    const campaignId = (await waitFor(env, key, (r) => !!r.campaignId)).campaignId;
    expect((await handle.query(registrationProgressQuery)).step).to.equal('campaign');
    await env.callback({ type: 'campaign.status', id: campaignId, revision: 1, status: 'PROVISIONED', reference });
    const reg = await waitFor(env, key, settled);
    expect(reg).to.include({ status: 'active', providerStatus: 'CAMPAIGN_PROVISIONED' });
    const late = await env.callback({ type: 'campaign.status', id: campaignId, revision: 1, status: 'APPROVED', reference });
    expect(late.status).to.equal(200);
    expect((await env.call(key, 'GET', '/sms')).body.data).to.include({ status: 'active', providerStatus: 'CAMPAIGN_PROVISIONED' });
  });

  it('sends a text from an SMS-enabled number once active, replays an Idempotency-Key, and refuses a recipient who texted STOP', async () => {
    const { orgId, key } = await env.org();
    await env.call(key, 'PUT', '/sms', COMPLETE_BRAND);
    const from = sandboxInventory('312')[0].e164;
    const bought = await env.call(key, 'POST', '/numbers/purchase', { e164: from });
    const to = '+12125550147';
    // not yet enabled, not yet active
    expect((await env.call(key, 'POST', '/sms/messages', { from, to, body: 'Hi', trigger: 'reply' })).body.code).to.equal('number_not_sms_enabled');
    await env.call(key, 'PUT', `/numbers/${bought.body.data.id}/sms`, { enabled: true });
    expect((await env.call(key, 'POST', '/sms/messages', { from, to, body: 'Hi', trigger: 'reply' })).body.code).to.equal('registration_not_active');
    await env.call(key, 'POST', '/sms/submit');
    await waitFor(env, key, settled);
    expect((await env.call(key, 'POST', '/sms/messages', { from, to: '+16045550123', body: 'Hi' })).body.code).to.equal('recipient_not_us');
    const sent = await env.call(key, 'POST', '/sms/messages', { from, to, body: 'Acme Dental: your visit is confirmed.', trigger: 'reply' });
    expect(sent.status).to.equal(202);
    expect(sent.body.data).to.include({ direction: 'outbound', trigger: 'reply', status: 'queued', heldUntil: null });
    const end = Date.now() + 15_000;
    let row: any;
    do {
      await new Promise((r) => setTimeout(r, 50));
      row = await env.db('sms_messages').where({ id: sent.body.data.id }).first();
    } while (row.status !== 'delivered' && Date.now() < end);
    expect(row.status).to.equal('delivered');
    expect(row.provider_message_id).to.match(/^SM/);
    const keyed = { from, to, body: 'Acme Dental: see you soon.', trigger: 'reply' };
    const k1 = await env.call(key, 'POST', '/sms/messages', keyed, { 'idempotency-key': 'msg-1' });
    const k2 = await env.call(key, 'POST', '/sms/messages', keyed, { 'idempotency-key': 'msg-1' });
    expect(k1.status).to.equal(202);
    expect(k2.status).to.equal(202);
    expect(k2.body.data.id).to.equal(k1.body.data.id);
    expect(k2.headers.get('idempotent-replayed')).to.equal('true');
    expect(await env.db('sms_messages').where({ org_id: orgId, body: keyed.body })).to.have.length(1);
    await env.callback({ type: 'message.inbound', id: `SMstop${orgId}`, from: to, to: from, text: 'STOP' });
    const refused = await env.call(key, 'POST', '/sms/messages', { from, to, body: 'Anything else?', trigger: 'reply' });
    expect(refused.status).to.equal(409);
    expect(refused.body.code).to.equal('recipient_opted_out');
  });
});

describe('SMS workflows with time skipping (polling fallback, quiet hours)', function () {
  this.timeout(120_000);
  const env = useEnv('sms_wf_skip', { timeSkipping: true });

  it('reaches active by hourly polling when the carrier never calls back', async () => {
    const { orgId, key } = await env.org();
    await env.call(key, 'PUT', '/sms', { ...COMPLETE_BRAND, legalName: 'No Callback Dental LLC' });
    await env.call(key, 'POST', '/sms/submit');
    const progress = await env.client.workflow.getHandle(workflowIds.smsRegistration(orgId)).result();
    expect(progress).to.include({ status: 'active', step: 'done' });
    expect(progress.polls).to.be.at.least(2);
    expect((await env.call(key, 'GET', '/sms')).body.data.status).to.equal('active');
    expect(await env.db('sms_provider_events').where({ org_id: orgId })).to.have.length(0);
  });

  it('holds an agent-initiated text to the recipient-local window, and lets a reply through while replies are exempt', async () => {
    const { orgId, key } = await env.org();
    await env.call(key, 'PUT', '/sms', COMPLETE_BRAND);
    const from = sandboxInventory('415')[0].e164;
    const bought = await env.call(key, 'POST', '/numbers/purchase', { e164: from });
    await env.call(key, 'PUT', `/numbers/${bought.body.data.id}/sms`, { enabled: true });
    await env.call(key, 'POST', '/sms/submit');
    await env.client.workflow.getHandle(workflowIds.smsRegistration(orgId)).result();
    // A recipient whose window is closed now, if any area code is (there always is outside ~22:00–01:00 UTC).
    const closed = usAreaCodes().map((c) => `+1${c}5550147`).find((n) => !quietHoursDecision(n, new Date()).allowed);
    const to = closed ?? '+12125550147';
    const expected = quietHoursDecision(to, new Date());
    const agent = await env.call(key, 'POST', '/sms/messages', { from, to, body: 'Acme Dental: reminder for [date].' });
    expect(agent.status).to.equal(202);
    if (closed) {
      expect(new Date(agent.body.data.heldUntil).getTime()).to.be.closeTo(expected.sendAt.getTime(), 60_000);
    } else {
      expect(agent.body.data.heldUntil).to.equal(null);
    }
    const result = await env.client.workflow.getHandle(workflowIds.smsMessage(agent.body.data.id)).result();
    expect(result).to.deep.equal({ status: 'sent', error: null });
    const row = await env.db('sms_messages').where({ id: agent.body.data.id }).first();
    expect(row.held_until === null).to.equal(!closed);
    const reply = await env.call(key, 'POST', '/sms/messages', { from, to, body: 'Acme Dental: yes, we are open.', trigger: 'reply' });
    expect(reply.body.data.heldUntil).to.equal(null);
    // Strict posture (set directly: a PUT /sms would return the registration to draft).
    await env.db('sms_registrations').where({ org_id: orgId }).update({ quiet_hours_replies_exempt: false });
    const strict = await env.call(key, 'POST', '/sms/messages', { from, to, body: 'Acme Dental: yes, we are open.', trigger: 'reply' });
    expect(strict.body.data.heldUntil === null).to.equal(!closed);
  });
});

describe('SMS registration across a restart of the worker and the dev server', function () {
  this.timeout(120_000);

  it('still reaches active when the worker and a durable dev server restart mid-registration', async () => {
    const databaseUrl = await createMigratedTestDatabase('sms_restart');
    const db = createDb(databaseUrl);
    let server = await startRecordingDevServer({ databaseUrl });
    const port = server.port;
    const connection = await Connection.connect({ address: server.address });
    const client = new Client({ connection });
    const config = loadConfig({ port: 0, host: '127.0.0.1', logLevel: 'silent' });
    const logger = createLogger('silent');
    const taskQueue = `sms-restart-${crypto.randomBytes(4).toString('hex')}`;
    const api = await startApi({ db, databaseUrl, config, logger, temporal: { client, taskQueue } });
    const callbackUrl = `${api.baseUrl}/sms/provider-callbacks/sandbox`;
    const startWorker = (address: string) => startWorkerAt(address, taskQueue, createSmsActivities({ db, config, logger }, { carrierOptions: { delayMs: 0, callbackUrl } }));
    const org = await createOrganization(db, 'Restart Org');
    const { key } = await createSecretKey(db, org.id, { brand: config.keyBrandPrefix, scopes: NON_RESERVED_SCOPES });
    const call = async (method: string, p: string, json?: unknown) => (await callWithKey(api.baseUrl, key, method, p, json)).body;
    const callback = async (payload: unknown) => {
      const body = JSON.stringify(payload);
      const res = await fetch(callbackUrl, { method: 'POST', headers: { 'content-type': 'application/json', [SIGNATURE_HEADER]: signCallback(callbackSecret('sandbox'), body) }, body });
      return res.status;
    };
    const until = async (done: (r: any) => boolean) => {
      const end = Date.now() + 20_000;
      for (;;) {
        const r = (await call('GET', '/sms')).data;
        if (done(r)) return r;
        if (Date.now() > end) throw new Error(`stuck at ${r.status}/${r.providerStatus}`);
        await new Promise((res) => setTimeout(res, 50));
      }
    };
    let worker = await startWorker(server.address);
    try {
      await call('PUT', '/sms', { ...COMPLETE_BRAND, legalName: 'No Callback Dental LLC' });
      await call('POST', '/sms/submit');
      const { brandId } = await until((r) => !!r.brandId);
      const reference = (await db('sms_registrations').where({ org_id: org.id }).first()).id;
      expect(await callback({ type: 'brand.status', id: brandId, revision: 1, status: 'VERIFIED', reference })).to.equal(200);
      const { campaignId } = await until((r) => !!r.campaignId);

      await worker.stop();
      await server.stop();
      server = await startRecordingDevServer({ databaseUrl, port });
      worker = await startWorker(server.address);

      expect(await callback({ type: 'campaign.status', id: campaignId, revision: 1, status: 'APPROVED', reference })).to.equal(200);
      await until((r) => r.status === 'registered');
      expect(await callback({ type: 'campaign.status', id: campaignId, revision: 1, status: 'PROVISIONED', reference })).to.equal(200);
      const reg = await until((r) => r.status === 'active' || r.status === 'failed');
      expect(reg).to.include({ status: 'active', brandId, campaignId, providerStatus: 'CAMPAIGN_PROVISIONED' });
    } finally {
      stopSandboxDispatchers();
      await worker.stop();
      await api.close();
      await connection.close();
      await server.stop();
      await db.destroy();
    }
  });
});
