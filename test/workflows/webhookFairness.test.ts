/**
 * Webhook deliveries cannot monopolize anything (docs/operations.md "Fair sharing"): at most
 * WEBHOOK_MAX_IN_FLIGHT_PER_ENDPOINT attempts in flight per endpoint and WEBHOOK_MAX_IN_FLIGHT_PER_ORG
 * per organization, the rest deferred without a worker slot; a connect timeout and DNS failures end an
 * attempt at once (retried on the schedule); one organization's test events leave room for another's.
 * Test events go through the API (api/server.ts), deliveries through the outbox dispatcher and the
 * service's worker (worker.ts `startWorker`, every queue) on the dev server, to loopback receivers.
 */
import http from 'node:http';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import type { Client } from '@temporalio/client';
import { startTestApi, type TestApi } from '../helpers/api';
import { serviceWorkflowBundle, testTemporal, uniqueTaskQueue, withTimeSkipping } from '../helpers/temporal';
import { until } from '../helpers/wait';
import { startWorker, type RunningWorker } from '../../worker';
import { startWebhookDispatcher, temporalDeliveryStarter, type WebhookDispatcher } from '../../events/dispatcher';
import { createLogger } from '../../runtime';
import { workflowIds } from '../../temporal.config';
import { webhookDeliveryProgressQuery } from '../../workflows/definitions';
import { classifyPostError, deferralDelayMs } from '../../activities/webhooks';
import { loadWebhookSettings } from '../../domain/webhooks/settings';
import { HostUnresolvableError } from '../../domain/net/guard';
import type { WebhookDeliveryResult } from '../../workflows/webhookDelivery';

const ENV: Record<string, string> = {
  WEBHOOK_ALLOW_HTTP_HOSTS: '127.0.0.1,nowhere.invalid',
  HTTP_ALLOW_PRIVATE_HOSTS: '127.0.0.1',
  WEBHOOK_SECRET_KEY: Buffer.alloc(32, 5).toString('base64'),
  WEBHOOK_WORKER_SLOTS: '8',
  WEBHOOK_MAX_IN_FLIGHT_PER_ORG: '6',
  WEBHOOK_CONNECT_TIMEOUT: '300ms',
  WEBHOOK_TIMEOUT_MS: '120s',
  // Far longer than any test: a deferred attempt goes out only when a freed place wakes it.
  WEBHOOK_DEFERRAL_DELAY: '10m',
};

/** A receiver whose paths hold each request until released, counting requests in flight per path. */
class HoldingReceiver {
  readonly server: http.Server;
  inFlight = new Map<string, number>();
  maxInFlight = new Map<string, number>();
  /** Most requests in flight at once across the paths of one group (an organization's endpoints). */
  maxTogether = new Map<string, number>();
  private held: Array<{ path: string; res: http.ServerResponse }> = [];
  private holding = new Set<string>();
  constructor(private readonly groups: Map<string, string> = new Map()) {
    this.server = http.createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        const path = req.url ?? '';
        if (!this.holding.has(path)) return void res.writeHead(200).end('ok');
        this.inFlight.set(path, (this.inFlight.get(path) ?? 0) + 1);
        this.maxInFlight.set(path, Math.max(this.maxInFlight.get(path) ?? 0, this.inFlight.get(path)!));
        const group = this.groups.get(path);
        if (group) this.maxTogether.set(group, Math.max(this.maxTogether.get(group) ?? 0, this.together(group)));
        this.held.push({ path, res });
      });
    });
  }
  /** Requests in flight now across the paths of `group`. */
  together(group: string): number {
    let n = 0;
    for (const [p, g] of this.groups) if (g === group) n += this.inFlight.get(p) ?? 0;
    return n;
  }
  hold(path: string): void {
    this.holding.add(path);
  }
  /** Answers 200 to every held request of `path` and to its later ones. */
  release(path: string): void {
    this.holding.delete(path);
    for (const h of this.held.filter((x) => x.path === path)) {
      this.inFlight.set(path, this.inFlight.get(path)! - 1);
      h.res.writeHead(200).end('ok');
    }
    this.held = this.held.filter((x) => x.path !== path);
  }
}

describe('Webhook deliveries cannot monopolize anything', function () {
  this.timeout(180_000);
  let t: TestApi;
  let client: Client;
  let worker: RunningWorker;
  let dispatcher: WebhookDispatcher;
  let admitting: WebhookDispatcher;
  let taskQueue: string;
  let receiver: HoldingReceiver;
  let base: string;
  let blackHole: net.Server;
  const blackHoleSockets = new Set<net.Socket>();
  const groups = new Map<string, string>();
  const saved: Record<string, string | undefined> = {};

  before(async () => {
    for (const [k, v] of Object.entries(ENV)) {
      saved[k] = process.env[k];
      process.env[k] = v;
    }
    receiver = new HoldingReceiver(groups);
    await new Promise<void>((r) => receiver.server.listen(0, '127.0.0.1', () => r()));
    base = `http://127.0.0.1:${(receiver.server.address() as AddressInfo).port}`;
    // Accepts TCP and never says a word: a TLS handshake to it never completes (a connect that hangs).
    blackHole = net.createServer((s) => {
      blackHoleSockets.add(s);
      s.on('close', () => blackHoleSockets.delete(s));
    });
    await new Promise<void>((r) => blackHole.listen(0, '127.0.0.1', () => r()));
    t = await startTestApi('whfair');
    client = (await testTemporal()).client;
    taskQueue = uniqueTaskQueue('whfair');
    // The service's worker as npm start and start:worker build it: every queue, the service's activities.
    worker = await startWorker({ address: (await testTemporal()).address, namespace: 'default', taskQueue, db: t.db, config: t.config, logger: createLogger('silent'), workflowBundle: await serviceWorkflowBundle() });
    // Without admission, so that the places of attempts themselves are what the tests below meet; admission is tested on its own.
    dispatcher = await startWebhookDispatcher({ db: t.db, logger: createLogger('silent'), starter: temporalDeliveryStarter(client, taskQueue), intervalMs: 0, retryScheduleMs: [0, 5000], admission: false });
    admitting = await startWebhookDispatcher({ db: t.db, logger: createLogger('silent'), starter: temporalDeliveryStarter(client, taskQueue), intervalMs: 0, retryScheduleMs: [0, 5000] });
  });
  after(async () => {
    await dispatcher?.stop();
    await admitting?.stop();
    await worker?.stop();
    await t?.close();
    receiver?.server.closeAllConnections();
    await new Promise<void>((r) => (receiver ? receiver.server.close(() => r()) : r()));
    for (const s of blackHoleSockets) s.destroy();
    await new Promise<void>((r) => (blackHole ? blackHole.close(() => r()) : r()));
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  });

  async function endpoint(key: string, url: string): Promise<string> {
    const res = await t.call('POST', '/webhooks', { key, json: { url, eventTypes: ['call.completed'] } });
    expect(res.status, res.text).to.equal(201);
    return res.body.data.id;
  }

  /** Sends `n` test events to endpoint `id` through the API and starts their deliveries (`sweep` false: leaves them in the outbox). @returns the delivery ids */
  async function testEvents(key: string, id: string, n: number, sweep = true): Promise<string[]> {
    const ids: string[] = [];
    for (let i = 0; i < n; i++) {
      const res = await t.call('POST', `/webhooks/${id}/test`, { key });
      expect(res.status, res.text).to.equal(202);
      ids.push(res.body.data.id);
    }
    if (sweep) await dispatcher.sweep();
    return ids;
  }

  const result = (deliveryId: string) => client.workflow.getHandle(workflowIds.webhookDelivery(deliveryId)).result() as Promise<WebhookDeliveryResult>;
  const progress = (deliveryId: string) => client.workflow.getHandle(workflowIds.webhookDelivery(deliveryId)).query(webhookDeliveryProgressQuery);

  it("runs the service's bulk queues with their rates of activities per second (the SDK's maxActivitiesPerSecond) and no eager activities, the main queue without", () => {
    expect(worker.workers.map((w) => w.options.maxActivitiesPerSecond)).to.deep.equal([undefined, 50, 20]);
    // Eager activities would bypass the rate (they are not polled): off on the bulk queues, the SDK's default on the main queue.
    expect(worker.workers.map((w) => w.options.maxEagerActivityReservationsPerWorkflowTask)).to.deep.equal([undefined, 0, 0]);
  });

  it('reads a 5 s connect timeout, 4 attempts per endpoint, 8 per organization and a 10 s longest first deferral by default, and defers with growing, jittered waits', () => {
    const d = loadWebhookSettings({}, {});
    expect(d).to.include({ connectTimeoutMs: 5000, maxInFlightPerEndpoint: 4, maxInFlightPerOrg: 8, deferralDelayMs: 10_000 });
    expect(() => loadWebhookSettings({}, { WEBHOOK_MAX_IN_FLIGHT_PER_ORG: '0' })).to.throw(/WEBHOOK_MAX_IN_FLIGHT_PER_ORG/);
    expect(deferralDelayMs(1000, 0, () => 0)).to.equal(500);
    expect(deferralDelayMs(1000, 0, () => 1)).to.equal(1000);
    expect(deferralDelayMs(1000, 3, () => 1)).to.equal(8000);
    expect(deferralDelayMs(1000, 40, () => 1)).to.equal(60_000);
  });

  it('keeps at most 4 attempts in flight to one endpoint; the others wait without a worker slot and go out once places free', async () => {
    const org = await t.org('One busy endpoint');
    receiver.hold('/slow');
    const id = await endpoint(org.key, `${base}/slow`);
    const deliveries = await testEvents(org.key, id, 10);
    await until(async () => receiver.inFlight.get('/slow') === 4, 30_000, '4 attempts in flight');
    // The other six are deferred: their workflows wait (a signal or a long timer), no activity holds a slot.
    await until(async () => (await Promise.all(deliveries.map(progress))).filter((p) => p.deferrals >= 1 && p.waitingMs !== null).length === 6, 30_000, 'six deliveries deferred');
    expect(receiver.maxInFlight.get('/slow')).to.equal(4);
    receiver.release('/slow');
    // Each attempt that ends wakes one waiter (no timer needs to fire: time skipping stays locked).
    const results = await Promise.all(deliveries.map(result));
    expect(results.map((r) => r.outcome)).to.deep.equal(Array(10).fill('succeeded'));
    expect(results.every((r) => r.attempts === 1), 'a deferral is not an attempt').to.equal(true);
    expect(receiver.maxInFlight.get('/slow')).to.equal(4);
    const attempts = await t.db('webhook_delivery_attempts').where({ org_id: org.orgId }).count({ n: '*' });
    expect(Number(attempts[0].n)).to.equal(10);
  });

  it("one organization's test events take at most its share of places: another organization's delivery goes out meanwhile", async () => {
    // 27 requests at once (3 endpoints, 24 test events): past the default burst limit (docs/api-notes.md "Rate
    // limits"), so this key has a higher one; what is tested is the places the deliveries take.
    const a = await t.org('Noisy', undefined, { rateLimitPoints: 100_000 });
    const b = await t.org('Quiet');
    for (const p of ['/a1', '/a2', '/a3']) {
      receiver.hold(p);
      groups.set(p, 'noisy');
    }
    const aIds = await Promise.all(['/a1', '/a2', '/a3'].map((p) => endpoint(a.key, `${base}${p}`)));
    const noisy = (await Promise.all(aIds.map((id) => testEvents(a.key, id, 8)))).flat();
    await until(async () => receiver.together('noisy') === 6, 30_000, 'the noisy organization at its 6 places');
    const bId = await endpoint(b.key, `${base}/quiet`);
    const [quiet] = await testEvents(b.key, bId, 1);
    // The worker has 8 webhook slots and the noisy organization holds 6 of them, waiting on its receivers.
    expect(await result(quiet)).to.include({ outcome: 'succeeded', attempts: 1 });
    expect(receiver.together('noisy')).to.equal(6);
    expect(receiver.maxTogether.get('noisy')).to.equal(6);
    for (const p of ['/a1', '/a2', '/a3']) expect(receiver.maxInFlight.get(p)).to.be.at.most(4);
    for (const p of ['/a1', '/a2', '/a3']) receiver.release(p);
    const results = await Promise.all(noisy.map(result));
    expect(results.filter((r) => r.outcome === 'succeeded')).to.have.length(24);
    expect(receiver.maxTogether.get('noisy')).to.equal(6);
  });

  it("starts an endpoint's deliveries only while it has fewer than 4 waiting for their first attempt; the rest wait in the outbox, not as workflows, and another organization's row behind them starts at once", async () => {
    const a = await t.org('Admitted');
    const b = await t.org('Behind');
    receiver.hold('/admit');
    const id = await endpoint(a.key, `${base}/admit`);
    const deliveries = await testEvents(a.key, id, 10, false);
    const bId = await endpoint(b.key, `${base}/behind`);
    const [quiet] = await testEvents(b.key, bId, 1, false);
    // One sweep starts 4 of A's rows and B's, which is younger than all of A's.
    expect(await admitting.sweep()).to.equal(5);
    const waiting = async () => Number((await t.db('webhook_outbox').where({ org_id: a.orgId }).count({ n: '*' }))[0].n);
    expect(await waiting()).to.equal(6);
    expect(await result(quiet)).to.include({ outcome: 'succeeded', attempts: 1 });
    await until(async () => receiver.inFlight.get('/admit') === 4, 30_000, '4 attempts in flight');
    // Admitted deliveries are calling their receiver (still pending): nothing more starts.
    expect(await admitting.sweep()).to.equal(0);
    const exists = await Promise.all(deliveries.map((d) => client.workflow.getHandle(workflowIds.webhookDelivery(d)).describe().then(() => true, () => false)));
    expect(exists.filter(Boolean)).to.have.length(4);
    // A dispatcher that only listens (no timer): each first attempt that ends NOTIFYs it, and it starts the next rows.
    const listening = await startWebhookDispatcher({ db: t.db, logger: createLogger('silent'), starter: temporalDeliveryStarter(client, taskQueue), intervalMs: 0, retryScheduleMs: [0, 5000], databaseUrl: t.databaseUrl });
    try {
      receiver.release('/admit');
      await until(async () => (await waiting()) === 0, 60_000, 'every row admitted');
    } finally {
      await listening.stop();
    }
    const results = await Promise.all(deliveries.map(result));
    expect(results.map((r) => r.outcome)).to.deep.equal(Array(10).fill('succeeded'));
    // No delivery met a full endpoint: admission kept them out, so none went through a deferral.
    expect((await Promise.all(deliveries.map(progress))).map((p) => p.deferrals)).to.deep.equal(Array(10).fill(0));
    expect(receiver.maxInFlight.get('/admit')).to.equal(4);
  });

  it('a receiver that never completes the connection fails the attempt after the connect timeout, retried on the schedule', async () => {
    const org = await t.org('Black hole');
    const id = await endpoint(org.key, `https://127.0.0.1:${(blackHole.address() as AddressInfo).port}/hook`);
    const [delivery] = await testEvents(org.key, id, 1);
    const outcome = await withTimeSkipping(() => result(delivery));
    expect(outcome).to.include({ outcome: 'failed', attempts: 2 });
    const attempts = await t.db('webhook_delivery_attempts').where({ org_id: org.orgId, delivery_id: delivery }).orderBy('attempt');
    expect(attempts.map((x) => x.error)).to.deep.equal(['connect timeout after 300 ms', 'connect timeout after 300 ms']);
    // The attempt ended at the connect timeout, far from the 120 s attempt timeout.
    for (const x of attempts) expect(x.duration_ms).to.be.below(60_000);
  });

  it('a host name that does not resolve fails the attempt at once, retried on the schedule', async () => {
    const org = await t.org('Typo');
    const id = await endpoint(org.key, 'http://nowhere.invalid/hook');
    const [delivery] = await testEvents(org.key, id, 1);
    const outcome = await withTimeSkipping(() => result(delivery));
    expect(outcome).to.include({ outcome: 'failed', attempts: 2 });
    const attempts = await t.db('webhook_delivery_attempts').where({ org_id: org.orgId, delivery_id: delivery }).orderBy('attempt');
    for (const x of attempts) expect(x.error).to.match(/^dns lookup failed: (ENOTFOUND|EAI_AGAIN)/);
  });

  it('classifies a resolver that did not answer (EAI_AGAIN) as a DNS failure, and a connect timeout apart from a response timeout', () => {
    const timeouts = { connectTimeoutMs: 5000, timeoutMs: 15000 };
    const again = Object.assign(new Error('getaddrinfo EAI_AGAIN hooks.example'), { code: 'EAI_AGAIN', hostname: 'hooks.example' });
    expect(classifyPostError(new TypeError('fetch failed', { cause: again }), timeouts)).to.deep.equal({ error: 'dns lookup failed: EAI_AGAIN hooks.example', errorCode: 'dns' });
    expect(classifyPostError(new HostUnresolvableError('hooks.example', 'ENOTFOUND'), timeouts).errorCode).to.equal('dns');
    const connect = Object.assign(new Error('Connect Timeout Error'), { code: 'UND_ERR_CONNECT_TIMEOUT' });
    expect(classifyPostError(connect, timeouts)).to.deep.equal({ error: 'connect timeout after 5000 ms', errorCode: 'timeout' });
    const headers = Object.assign(new Error('Headers Timeout Error'), { code: 'UND_ERR_HEADERS_TIMEOUT' });
    expect(classifyPostError(headers, timeouts)).to.deep.equal({ error: 'timeout after 15000 ms', errorCode: 'timeout' });
  });
});
