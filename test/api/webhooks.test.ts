/**
 * Webhooks (docs/api-notes.md "Webhooks and audit logs"): endpoints, Standard Webhooks signing verified by the `standardwebhooks` library
 * (a real peer, not our verifier), 410 handling, retries, the failing-period cut-off, SSRF refusals,
 * manual retry, the transactional outbox, and tenancy. Deliveries run through the real activity
 * function against a local receiver; the Temporal workflow path is in test/workflows/.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import { Webhook } from 'standardwebhooks';
import { QUICK_CLIENT, startTestApi, type TestApi } from '../helpers/api';
import { ROUTES } from '../../api/routes/table';
import { createWebhookActivities, createWebhookSender } from '../../activities/webhooks';
import { startWebhookDispatcher, type DeliveryStarter } from '../../events/dispatcher';
import { emitEvent, InvalidEventError } from '../../events/emit';
import { createEndpoint } from '../../db/repositories/webhookEndpoints';
import { generateSecret, sealSecret, secretDisplayPrefix } from '../../domain/webhooks/signing';
import { createLogger } from '../../runtime';
import type { WebhookDeliveryInput } from '../../workflows/webhookDelivery';
import { loadWebhookSettings } from '../../domain/webhooks/settings';


/** A local receiver that verifies every delivery with the standardwebhooks library. */
interface Receiver {
  url: string;
  port: number;
  /** What the next requests answer: a status code, or 'hang' (never answers). */
  mode: number | 'hang';
  /** Secrets to verify with (any one must verify). */
  secrets: string[];
  received: Array<{ headers: http.IncomingHttpHeaders; body: string; verifiedWith: string[] }>;
  close(): Promise<void>;
}

async function startReceiver(): Promise<Receiver> {
  const rec: Receiver = {
    url: '',
    port: 0,
    mode: 200,
    secrets: [],
    received: [],
    close: async () => undefined,
  };
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const verifiedWith = rec.secrets.filter((s) => {
        try {
          new Webhook(s).verify(body, req.headers as Record<string, string>);
          return true;
        } catch {
          return false;
        }
      });
      rec.received.push({ headers: req.headers, body, verifiedWith });
      if (rec.mode === 'hang') return;
      res.writeHead(rec.mode, { 'content-type': 'text/plain' });
      res.end('x'.repeat(2000));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  rec.port = (server.address() as AddressInfo).port;
  rec.url = `http://127.0.0.1:${rec.port}/hooks`;
  rec.close = async () => {
    server.closeAllConnections();
    await new Promise<void>((r) => server.close(() => r()));
  };
  return rec;
}



const ENV = {
  WEBHOOK_ALLOW_HTTP_HOSTS: '127.0.0.1',
  HTTP_ALLOW_PRIVATE_HOSTS: '127.0.0.1',
  WEBHOOK_SECRET_KEY: Buffer.alloc(32, 7).toString('base64'),
};

describe('Webhooks (endpoints, signed delivery, retries, SSRF, tenancy)', function () {
  let t: TestApi;
  let rx: Receiver;
  let acts: ReturnType<typeof createWebhookActivities>;
  const saved: Record<string, string | undefined> = {};
  let a: { orgId: string; key: string; keyId: string };
  let b: { orgId: string; key: string; keyId: string };

  before(async () => {
    for (const [k, v] of Object.entries(ENV)) {
      saved[k] = process.env[k];
      process.env[k] = v;
    }
    t = await startTestApi('webhooks', QUICK_CLIENT);
    rx = await startReceiver();
    acts = createWebhookActivities({ db: t.db, config: t.config, logger: createLogger('silent') });
    a = await t.org('Org A');
    b = await t.org('Org B');
  });
  after(async () => {
    await rx?.close();
    await t?.close();
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  });
  beforeEach(() => {
    rx.mode = 200;
    rx.received = [];
  });

  async function createHook(key: string, extra: Record<string, unknown> = {}) {
    const res = await t.call('POST', '/webhooks', { key, json: { url: rx.url, ...extra } });
    expect(res.status, res.text).to.equal(201);
    rx.secrets = [res.body.data.secret];
    return res.body.data as { id: string; secret: string };
  }

  async function sendTest(key: string, id: string) {
    const res = await t.call('POST', `/webhooks/${id}/test`, { key });
    expect(res.status, res.text).to.equal(202);
    return res.body.data as { id: string; status: string; run: number };
  }

  const attempt = (orgId: string, deliveryId: string, n: number, extra: { run?: number; final?: boolean; clockMs?: number } = {}) =>
    acts.attemptWebhookDelivery({ orgId, deliveryId, run: extra.run ?? 1, attempt: n, final: extra.final ?? false, clockMs: extra.clockMs });

  async function deliveries(key: string, id: string, query = '') {
    const res = await t.call('GET', `/webhooks/${id}/deliveries${query}`, { key });
    expect(res.status, res.text).to.equal(200);
    return res.body.data as { items: any[]; nextCursor: string | null; hasMore: boolean };
  }

  describe('endpoints', () => {
    it('creates an endpoint and shows its whsec_ secret only in the creation answer', async () => {
      const res = await t.call('POST', '/webhooks', { key: a.key, json: { url: rx.url, description: 'CRM', eventTypes: ['agent.published'] } });
      expect(res.status).to.equal(201);
      const ep = res.body.data;
      expect(ep.id).to.match(/^whk_/);
      expect(ep.secret).to.match(/^whsec_[A-Za-z0-9+/]+=*$/);
      expect(Buffer.from(ep.secret.slice(6), 'base64').length).to.be.at.least(24);
      expect(ep).to.include({ url: rx.url, description: 'CRM', enabled: true, disabledReason: null });
      expect(ep.eventTypes).to.deep.equal(['agent.published']);
      const got = await t.call('GET', `/webhooks/${ep.id}`, { key: a.key });
      expect(got.status).to.equal(200);
      expect(got.body.data).to.not.have.property('secret');
      expect(got.text).to.not.include(ep.secret.slice(6));
      const list = await t.call('GET', '/webhooks', { key: a.key });
      expect(list.text).to.not.include(ep.secret.slice(6));
      expect(list.body.data.items.map((e: { id: string }) => e.id)).to.include(ep.id);
      const row = await t.db('webhook_endpoints').where({ id: ep.id }).first();
      expect(row.secret_sealed).to.match(/^v1:/);
      expect(row.secret_sealed).to.not.include(ep.secret.slice(6));
    });

    it('refuses plain http to a host the operator has not listed, naming url', async () => {
      const res = await t.call('POST', '/webhooks', { key: a.key, json: { url: 'http://example.com/hook' } });
      expect(res.status).to.equal(400);
      expect(res.body.code).to.equal('validation_error');
      expect(res.body.errors.map((e: { field: string }) => e.field)).to.deep.equal(['url']);
    });

    for (const url of ['https://10.1.2.3/h', 'https://169.254.169.254/latest/meta-data', 'https://localhost/h', 'https://[::1]/h', 'https://user:pw@example.com/h', 'ftp://example.com/h']) {
      it(`refuses ${url} at creation (SSRF), naming url`, async () => {
        const res = await t.call('POST', '/webhooks', { key: a.key, json: { url } });
        expect(res.status).to.equal(400);
        expect(res.body.errors[0].field).to.equal('url');
      });
    }

    it('validates event types against the catalog and refuses unknown fields', async () => {
      const res = await t.call('POST', '/webhooks', { key: a.key, json: { url: 'https://example.com/h', eventTypes: ['nope'], colour: 'red' } });
      expect(res.status).to.equal(400);
      const fields = res.body.errors.map((e: { field: string }) => e.field);
      expect(fields).to.include('colour');
      expect(fields.some((f: string) => f.startsWith('eventTypes'))).to.equal(true);
    });

    it('updates, disables (enabled: false), re-enables and deletes an endpoint', async () => {
      const ep = await createHook(a.key);
      const off = await t.call('PATCH', `/webhooks/${ep.id}`, { key: a.key, json: { enabled: false, description: 'paused' } });
      expect(off.status, off.text).to.equal(200);
      expect(off.body.data).to.include({ enabled: false, disabledReason: 'manual', description: 'paused' });
      const refused = await t.call('POST', `/webhooks/${ep.id}/test`, { key: a.key });
      expect(refused.status).to.equal(409);
      expect(refused.body.code).to.equal('webhook_disabled');
      const on = await t.call('PATCH', `/webhooks/${ep.id}`, { key: a.key, json: { enabled: true } });
      expect(on.body.data).to.include({ enabled: true, disabledReason: null, disabledAt: null });
      const badUrl = await t.call('PATCH', `/webhooks/${ep.id}`, { key: a.key, json: { url: 'http://example.org/x' } });
      expect(badUrl.status).to.equal(400);
      expect(badUrl.body.errors[0].field).to.equal('url');
      const del = await t.call('DELETE', `/webhooks/${ep.id}`, { key: a.key });
      expect(del.status).to.equal(200);
      expect((await t.call('GET', `/webhooks/${ep.id}`, { key: a.key })).status).to.equal(404);
      const list = await t.call('GET', '/webhooks', { key: a.key });
      expect(list.body.data.items.map((e: { id: string }) => e.id)).to.not.include(ep.id);
    });
  });

  describe('delivery', () => {
    it('delivers webhook.test signed so that the standardwebhooks library verifies it, and records the attempt', async () => {
      const ep = await createHook(a.key);
      const d = await sendTest(a.key, ep.id);
      expect(d).to.include({ status: 'pending', run: 1 });
      const r = await attempt(a.orgId, d.id, 1);
      expect(r.outcome).to.equal('succeeded');
      expect(rx.received).to.have.length(1);
      const got = rx.received[0];
      expect(got.verifiedWith).to.deep.equal([ep.secret]);
      const body = JSON.parse(got.body);
      expect(body).to.include({ type: 'webhook.test', organizationId: a.orgId });
      expect(body.id).to.match(/^evt_/);
      expect(got.headers['webhook-id']).to.equal(body.id);
      expect(Number(got.headers['webhook-timestamp'])).to.be.closeTo(Date.now() / 1000, 30);
      expect(got.headers['webhook-signature']).to.match(/^v1,[A-Za-z0-9+/]+=*$/);
      expect(body.data).to.deep.equal({ webhookId: ep.id, message: 'This is a test event from the Agent Control-Plane.' });

      const page = await deliveries(a.key, ep.id);
      const item = page.items.find((x) => x.id === d.id);
      expect(item).to.include({ status: 'succeeded', attemptCount: 1, lastStatusCode: 200, eventType: 'webhook.test', webhookId: ep.id });
      expect(item.attempts).to.have.length(1);
      expect(item.attempts[0]).to.include({ attempt: 1, run: 1, statusCode: 200, outcome: 'succeeded', error: null });
      expect(item.attempts[0].durationMs).to.be.a('number').and.at.least(0);
      expect(item.attempts[0].responseBody).to.have.length(1024); // the receiver answered 2000 bytes
      expect(Date.parse(item.attempts[0].attemptedAt)).to.be.closeTo(Date.now(), 60_000);
    });

    it('a receiver tampering with the body fails verification (the library is really checking)', async () => {
      const ep = await createHook(a.key);
      const d = await sendTest(a.key, ep.id);
      await attempt(a.orgId, d.id, 1);
      const got = rx.received[0];
      expect(() => new Webhook(ep.secret).verify(got.body.replace('test', 'tEst'), got.headers as Record<string, string>)).to.throw();
      expect(() => new Webhook(generateSecret()).verify(got.body, got.headers as Record<string, string>)).to.throw();
    });

    it('signs with the new and the previous secret during a rotation, so either verifies', async () => {
      const ep = await createHook(a.key);
      const rot = await t.call('POST', `/webhooks/${ep.id}/rotate-secret`, { key: a.key, json: { previousSecretTtlSeconds: 3600 } });
      expect(rot.status, rot.text).to.equal(200);
      expect(rot.body.data.secret).to.match(/^whsec_/).and.not.equal(ep.secret);
      expect(Date.parse(rot.body.data.previousSecretExpiresAt)).to.be.greaterThan(Date.now());
      rx.secrets = [rot.body.data.secret, ep.secret];
      const d = await sendTest(a.key, ep.id);
      await attempt(a.orgId, d.id, 1);
      expect(rx.received[0].verifiedWith).to.have.members([rot.body.data.secret, ep.secret]);
      expect(String(rx.received[0].headers['webhook-signature']).split(' ')).to.have.length(2);

      const revoke = await t.call('POST', `/webhooks/${ep.id}/rotate-secret`, { key: a.key, json: { previousSecretTtlSeconds: 0 } });
      expect(revoke.body.data.previousSecretExpiresAt).to.equal(null);
      rx.secrets = [revoke.body.data.secret, rot.body.data.secret];
      const d2 = await sendTest(a.key, ep.id);
      await attempt(a.orgId, d2.id, 1);
      expect(rx.received[1].verifiedWith).to.deep.equal([revoke.body.data.secret]);
    });

    it('a 410 Gone answer disables the endpoint and gives the delivery up', async () => {
      const ep = await createHook(a.key);
      const d = await sendTest(a.key, ep.id);
      rx.mode = 410;
      const r = await attempt(a.orgId, d.id, 1);
      expect(r).to.include({ outcome: 'failed', statusCode: 410, endpointDisabled: 'gone' });
      const got = await t.call('GET', `/webhooks/${ep.id}`, { key: a.key });
      expect(got.body.data).to.include({ enabled: false, disabledReason: 'gone' });
      const item = (await deliveries(a.key, ep.id)).items.find((x) => x.id === d.id);
      expect(item).to.include({ status: 'failed', lastStatusCode: 410 });
    });

    it('retries a receiver that is down and records exactly one success once it is up', async () => {
      const ep = await createHook(a.key);
      const d = await sendTest(a.key, ep.id);
      rx.mode = 503;
      expect((await attempt(a.orgId, d.id, 1)).outcome).to.equal('retry');
      const closed = await startReceiver();
      await closed.close(); // a port nobody listens on: connection refused
      await t.db('webhook_endpoints').where({ id: ep.id }).update({ url: closed.url });
      const refused = await attempt(a.orgId, d.id, 2);
      expect(refused.outcome).to.equal('retry');
      expect(refused.error).to.match(/connection failed/);
      await t.db('webhook_endpoints').where({ id: ep.id }).update({ url: rx.url });
      rx.mode = 200;
      expect((await attempt(a.orgId, d.id, 3)).outcome).to.equal('succeeded');
      // A duplicate of the last attempt (activity retried after a crash) changes nothing.
      expect((await attempt(a.orgId, d.id, 4)).outcome).to.equal('stale');
      const item = (await deliveries(a.key, ep.id)).items.find((x) => x.id === d.id);
      expect(item.status).to.equal('succeeded');
      expect(item.attempts.map((x: { statusCode: number | null; outcome: string }) => [x.statusCode, x.outcome])).to.deep.equal([
        [503, 'failed'],
        [null, 'failed'],
        [200, 'succeeded'],
      ]);
      expect((await t.call('GET', `/webhooks/${ep.id}`, { key: a.key })).body.data.failingSince).to.equal(null);
    });

    it('the last attempt of the schedule failing fails the delivery, which can then be retried on demand', async () => {
      const ep = await createHook(a.key);
      const d = await sendTest(a.key, ep.id);
      rx.mode = 500;
      expect((await attempt(a.orgId, d.id, 1, { final: true })).outcome).to.equal('failed');
      const notFailed = await sendTest(a.key, ep.id);
      const early = await t.call('POST', `/webhooks/${ep.id}/deliveries/${notFailed.id}/retry`, { key: a.key });
      expect(early.status).to.equal(409);
      expect(early.body.code).to.equal('delivery_not_failed');

      const res = await t.call('POST', `/webhooks/${ep.id}/deliveries/${d.id}/retry`, { key: a.key });
      expect(res.status, res.text).to.equal(202);
      expect(res.body.data).to.include({ status: 'pending', run: 2 });
      const outbox = await t.db('webhook_outbox').where({ delivery_id: d.id, run: 2 });
      expect(outbox).to.have.length(1);
      rx.mode = 200;
      expect((await attempt(a.orgId, d.id, 1, { run: 1 })).outcome).to.equal('stale'); // the old run can no longer act
      expect((await attempt(a.orgId, d.id, 1, { run: 2 })).outcome).to.equal('succeeded');
      const item = (await deliveries(a.key, ep.id)).items.find((x) => x.id === d.id);
      expect(item.attempts.map((x: { run: number; outcome: string }) => `${x.run}:${x.outcome}`)).to.deep.equal(['1:failed', '2:succeeded']);
    });

    it('disables an endpoint that keeps failing for longer than the configured period', async () => {
      const shortActs = createWebhookActivities({ db: t.db, config: t.config, logger: createLogger('silent') }, { disableAfterFailingMs: 60_000 });
      const ep = await createHook(a.key);
      const d = await sendTest(a.key, ep.id);
      rx.mode = 502;
      const t0 = Date.now();
      const first = await shortActs.attemptWebhookDelivery({ orgId: a.orgId, deliveryId: d.id, run: 1, attempt: 1, final: false, clockMs: t0 });
      expect(first).to.include({ outcome: 'retry', endpointDisabled: null });
      const mid = await shortActs.attemptWebhookDelivery({ orgId: a.orgId, deliveryId: d.id, run: 1, attempt: 2, final: false, clockMs: t0 + 30_000 });
      expect(mid.outcome).to.equal('retry');
      const last = await shortActs.attemptWebhookDelivery({ orgId: a.orgId, deliveryId: d.id, run: 1, attempt: 3, final: false, clockMs: t0 + 61_000 });
      expect(last).to.include({ outcome: 'failed', endpointDisabled: 'failing' });
      const got = (await t.call('GET', `/webhooks/${ep.id}`, { key: a.key })).body.data;
      expect(got).to.include({ enabled: false, disabledReason: 'failing' });
      expect(Date.parse(got.failingSince)).to.equal(t0);
    });

    it('gives up queued deliveries of an endpoint deleted meanwhile without calling it', async () => {
      const ep = await createHook(a.key);
      const d = await sendTest(a.key, ep.id);
      await t.call('DELETE', `/webhooks/${ep.id}`, { key: a.key });
      const r = await attempt(a.orgId, d.id, 1);
      expect(r).to.include({ outcome: 'failed', error: 'endpoint deleted' });
      expect(rx.received).to.have.length(0);
    });
  });

  describe('SSRF at delivery time', () => {
    it('refuses a stored URL to a private address once the operator no longer allows it, without connecting', async () => {
      const ep = await createHook(a.key);
      const d = await sendTest(a.key, ep.id);
      const strict = createWebhookActivities({ db: t.db, config: t.config, logger: createLogger('silent') }, { allowPrivate: { ranges: [] } });
      const r = await strict.attemptWebhookDelivery({ orgId: a.orgId, deliveryId: d.id, run: 1, attempt: 1, final: false });
      expect(r.outcome).to.equal('failed');
      expect(r.error).to.match(/url refused: must point to a public address/);
      expect(rx.received).to.have.length(0);
    });

    it('refuses a host name that resolves to loopback (checked on the DNS answer), without connecting', async () => {
      const secret = generateSecret();
      const ep = await createEndpoint(t.db, a.orgId, {
        url: `http://localhost:${rx.port}/hooks`,
        description: null,
        eventTypes: [],
        enabled: true,
        secretSealed: sealSecret(secret, loadWebhookSettings().secretKey),
        secretPrefix: secretDisplayPrefix(secret),
      });
      const { deliveryIds } = await t.db.transaction((trx) => emitEvent(trx, a.orgId, 'webhook.test', { webhookId: ep.id, message: 'ssrf' }, { onlyEndpointId: ep.id }));
      const strict = createWebhookActivities({ db: t.db, config: t.config, logger: createLogger('silent') }, { allowPrivate: { ranges: [] }, allowHttpHosts: ['localhost'] });
      const r = await strict.attemptWebhookDelivery({ orgId: a.orgId, deliveryId: deliveryIds[0], run: 1, attempt: 1, final: false });
      expect(r.outcome).to.equal('failed');
      expect(r.error).to.match(/Refused to connect to localhost/);
      expect(rx.received).to.have.length(0);
      const [row] = await t.db('webhook_delivery_attempts').where({ delivery_id: deliveryIds[0] });
      expect(row.status_code).to.equal(null);
      expect(row.error).to.match(/loopback/);
    });

    it('the sender alone refuses loopback literals (guard of providers/http)', async () => {
      const strict = createWebhookSender({ allowPrivate: { ranges: [] }, timeoutMs: 2000 });
      try {
        const r = await strict.post(rx.url, {}, '{}');
        expect(r).to.include({ statusCode: null, errorCode: 'ssrf_refused' });
        expect(rx.received).to.have.length(0);
      } finally {
        await strict.close();
      }
    });
  });

  describe('events and the outbox', () => {
    it('emitEvent writes the event, deliveries to subscribed enabled endpoints and outbox rows in the caller transaction', async () => {
      const org = await t.org('Emitter');
      const all = await createHook(org.key);
      const onlyAgents = await createHook(org.key, { eventTypes: ['agent.published'] });
      const onlyCalls = await createHook(org.key, { eventTypes: ['call.completed'] });
      const off = await createHook(org.key, { enabled: false });
      const data = { agentId: 'agt_1', versionId: 'ver_1', version: 1, publishedAt: new Date().toISOString() };

      await t.db
        .transaction(async (trx) => {
          await emitEvent(trx, org.orgId, 'agent.published', data);
          throw new Error('the change failed');
        })
        .catch(() => undefined);
      expect(await t.db('events').where({ org_id: org.orgId })).to.have.length(0);
      expect(await t.db('webhook_deliveries').where({ org_id: org.orgId })).to.have.length(0);
      expect(await t.db('webhook_outbox').where({ org_id: org.orgId })).to.have.length(0);

      const { event, deliveryIds } = await t.db.transaction((trx) => emitEvent(trx, org.orgId, 'agent.published', data));
      expect(event.id).to.match(/^evt_/);
      const rows = await t.db('webhook_deliveries').whereIn('id', deliveryIds);
      expect(rows.map((r) => r.endpoint_id)).to.have.members([all.id, onlyAgents.id]);
      expect(rows.map((r) => r.endpoint_id)).to.not.include.members([onlyCalls.id, off.id]);
      expect(await t.db('webhook_outbox').whereIn('delivery_id', deliveryIds)).to.have.length(2);
    });

    it('emitEvent refuses a payload that does not match the catalog schema, rolling the change back', async () => {
      let err: unknown;
      try {
        await t.db.transaction((trx) => emitEvent(trx, a.orgId, 'sms.message.received', { messageId: 'm1', from: '+1', to: '+2', body: 'hi' } as never));
      } catch (e) {
        err = e;
      }
      expect(err).to.be.instanceOf(InvalidEventError);
      expect((err as InvalidEventError).problems.map((p) => p.field)).to.include.members(['attachmentIds', 'receivedAt']);
    });

    it('the dispatcher keeps a row whose start failed (crash between commit and start) and starts it on the next sweep; a double start is harmless', async () => {
      const org = await t.org('Dispatch');
      const ep = await createHook(org.key);
      const d = await sendTest(org.key, ep.id);
      const started: WebhookDeliveryInput[] = [];
      let fail = true;
      const starter: DeliveryStarter = async (job) => {
        if (fail) throw new Error('temporal unavailable');
        started.push(job);
        await acts.attemptWebhookDelivery({ orgId: job.orgId, deliveryId: job.deliveryId, run: job.run, attempt: 1, final: false });
        return 'started';
      };
      const dispatcher = await startWebhookDispatcher({ db: t.db, logger: createLogger('silent'), starter, intervalMs: 0, retryScheduleMs: [0, 5000] });
      try {
        expect(await dispatcher.sweep()).to.equal(0);
        expect(await t.db('webhook_outbox').where({ delivery_id: d.id })).to.have.length(1);
        fail = false;
        await dispatcher.sweep();
        const mine = started.filter((j) => j.deliveryId === d.id);
        expect(mine).to.have.length(1);
        expect(mine[0]).to.deep.equal({ orgId: org.orgId, deliveryId: d.id, run: 1, retryScheduleMs: [0, 5000] });
        expect(await t.db('webhook_outbox').where({ delivery_id: d.id })).to.have.length(0);
        // (the sweep also drained rows other tests left; count this endpoint's receipts only)
        const mineReceived = () => rx.received.filter((x) => JSON.parse(x.body).data.webhookId === ep.id);
        expect(mineReceived()).to.have.length(1);
        // The same run started again (e.g. the row survived a crash after the start): nothing is sent.
        expect((await acts.attemptWebhookDelivery({ orgId: org.orgId, deliveryId: d.id, run: 1, attempt: 1, final: false })).outcome).to.equal('stale');
        expect(mineReceived()).to.have.length(1);
      } finally {
        await dispatcher.stop();
      }
    });
  });

  describe('configuration', () => {
    it('retries immediately, then after 5 s, 5 min, 30 min, 2 h, 5 h, 10 h and 10 h by default, and reads WEBHOOK_RETRY_SCHEDULE', () => {
      expect(loadWebhookSettings({}, {}).retryScheduleMs).to.deep.equal([0, 5_000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000, 36_000_000]);
      expect(loadWebhookSettings({}, {}).timeoutMs).to.equal(15_000);
      const custom = loadWebhookSettings({}, { WEBHOOK_RETRY_SCHEDULE: '0,1s,250ms', WEBHOOK_DISABLE_AFTER_FAILING: '2h' });
      expect(custom.retryScheduleMs).to.deep.equal([0, 1000, 250]);
      expect(custom.disableAfterFailingMs).to.equal(7_200_000);
      expect(() => loadWebhookSettings({}, { WEBHOOK_RETRY_SCHEDULE: '0,soon' })).to.throw(/not a duration/);
    });
  });

  describe('listing and tenancy', () => {
    it('lists deliveries newest first with cursor pagination and a status filter', async () => {
      const org = await t.org('Pager');
      const ep = await createHook(org.key);
      const ids = [];
      for (let i = 0; i < 3; i++) ids.push((await sendTest(org.key, ep.id)).id);
      const p1 = await deliveries(org.key, ep.id, '?limit=2');
      expect(p1.items.map((x) => x.id)).to.deep.equal([ids[2], ids[1]]);
      expect(p1.hasMore).to.equal(true);
      const p2 = await deliveries(org.key, ep.id, `?limit=2&cursor=${encodeURIComponent(p1.nextCursor!)}`);
      expect(p2.items.map((x) => x.id)).to.deep.equal([ids[0]]);
      expect(p2).to.include({ hasMore: false, nextCursor: null });
      expect((await deliveries(org.key, ep.id, '?status=succeeded')).items).to.have.length(0);
      const bad = await t.call('GET', `/webhooks/${ep.id}/deliveries?status=weird`, { key: org.key });
      expect(bad.status).to.equal(400);
      expect(bad.body.errors[0].field).to.equal('status');
      const badCursor = await t.call('GET', `/webhooks/${ep.id}/deliveries?cursor=garbage`, { key: org.key });
      expect(badCursor.status).to.equal(400);
    });

    it("one organization never sees another's endpoints or deliveries (404, exactly like missing)", async () => {
      const ep = await createHook(a.key);
      const d = await sendTest(a.key, ep.id);
      const missing = await t.call('GET', '/webhooks/whk_doesnotexist', { key: b.key });
      for (const [method, path, json] of [
        ['GET', `/webhooks/${ep.id}`],
        ['PATCH', `/webhooks/${ep.id}`, { enabled: false }],
        ['DELETE', `/webhooks/${ep.id}`],
        ['POST', `/webhooks/${ep.id}/test`],
        ['POST', `/webhooks/${ep.id}/rotate-secret`],
        ['GET', `/webhooks/${ep.id}/deliveries`],
        ['POST', `/webhooks/${ep.id}/deliveries/${d.id}/retry`],
      ] as Array<[string, string, unknown?]>) {
        const res = await t.call(method, path, { key: b.key, json });
        expect(res.status, `${method} ${path}`).to.equal(404);
        expect(res.body.code).to.equal(missing.body.code);
      }
      const list = await t.call('GET', '/webhooks', { key: b.key });
      expect(list.body.data.items.map((e: { id: string }) => e.id)).to.not.include(ep.id);
      // B's activity call with A's delivery id finds nothing either.
      expect((await attempt(b.orgId, d.id, 1)).outcome).to.equal('stale');
      expect((await t.call('GET', `/webhooks/${ep.id}`, { key: a.key })).body.data.enabled).to.equal(true);
    });

    it('needs the webhooks:write scope', async () => {
      const reader = await t.org('Reader', ['agents:read']);
      const res = await t.call('GET', '/webhooks', { key: reader.key });
      expect(res.status).to.equal(403);
    });
  });
});
