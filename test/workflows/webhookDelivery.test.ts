/**
 * Workflow `webhook-delivery/{deliveryId}` (docs/api-notes.md "Webhooks and audit logs") on the embedded dev server with a real SDK worker
 * and time skipping: the whole path emitEvent → outbox → dispatcher → workflow → activity → local
 * receiver verifying signatures with the `standardwebhooks` library.
 */
import http from 'node:http';
import crypto from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import { Webhook } from 'standardwebhooks';
import { Client, Connection } from '@temporalio/client';
import { DefaultLogger, NativeConnection, Runtime, Worker } from '@temporalio/worker';
import type { DevServer } from '../../devserver';
import { startRecordingDevServer } from '../helpers/histories';
import { createDb, type Db } from '../../db';
import { createMigratedTestDatabase } from '../helpers/postgres';
import { createOrganization } from '../../db/repositories/organizations';
import { createEndpoint } from '../../db/repositories/webhookEndpoints';
import { getDelivery, retryDelivery } from '../../db/repositories/webhookDeliveries';
import { createWebhookActivities, createWebhookSender } from '../../activities/webhooks';
import { emitEvent } from '../../events/emit';
import { startWebhookDispatcher, temporalDeliveryStarter, type WebhookDispatcher } from '../../events/dispatcher';
import { generateSecret, sealSecret, secretDisplayPrefix } from '../../domain/webhooks/signing';
import { loadWebhookSettings } from '../../domain/webhooks/settings';
import { loadConfig } from '../../config';
import { createLogger } from '../../runtime';
import { taskQueueName, workflowIds } from '../../temporal.config';
import { parseAllowList } from '../../domain/net/guard';
import type { WebhookDeliveryResult } from '../../workflows/webhookDelivery';
import { serviceWorkflowBundle } from '../helpers/temporal';

const DEFAULT_SCHEDULE = [0, 5_000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000, 36_000_000];

describe('webhookDelivery workflow (dev server, time skipping)', function () {
  this.timeout(60_000);
  let server: DevServer;
  let connection: Connection;
  let native: NativeConnection;
  let client: Client;
  let db: Db;
  let bundle: { code: string };
  let orgId: string;
  const receiver = { statuses: [] as number[], received: [] as Array<{ verified: boolean; headers: http.IncomingHttpHeaders }>, secret: '' };
  let rxServer: http.Server;
  let rxUrl: string;
  const logger = createLogger('silent');

  before(async function () {
    this.timeout(120_000);
    try {
      Runtime.install({ logger: new DefaultLogger('ERROR') });
    } catch {
      // installed by another suite
    }
    const url = await createMigratedTestDatabase('whwf');
    db = createDb(url);
    orgId = (await createOrganization(db, 'Workflow org')).id;
    server = await startRecordingDevServer({ timeSkipping: true });
    connection = await Connection.connect({ address: server.address });
    native = await NativeConnection.connect({ address: server.address });
    client = new Client({ connection });
    bundle = await serviceWorkflowBundle();
    rxServer = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c) => chunks.push(c));
      req.on('end', () => {
        let verified = false;
        try {
          new Webhook(receiver.secret).verify(Buffer.concat(chunks).toString('utf8'), req.headers as Record<string, string>);
          verified = true;
        } catch {
          verified = false;
        }
        receiver.received.push({ verified, headers: req.headers });
        res.writeHead(receiver.statuses.shift() ?? 200).end('ok');
      });
    });
    await new Promise<void>((r) => rxServer.listen(0, '127.0.0.1', () => r()));
    rxUrl = `http://127.0.0.1:${(rxServer.address() as AddressInfo).port}/hook`;
  });
  after(async () => {
    rxServer?.closeAllConnections();
    await new Promise<void>((r) => (rxServer ? rxServer.close(() => r()) : r()));
    await connection?.close();
    await native?.close();
    await server?.stop();
    await db?.destroy();
  });
  beforeEach(() => {
    receiver.statuses = [];
    receiver.received = [];
  });

  /** Runs `fn` with a worker (fresh task queue) and a dispatcher that starts workflows on it. */
  async function withWorker<T>(schedule: number[], fn: (ctx: { dispatcher: WebhookDispatcher; taskQueue: string }) => Promise<T>): Promise<T> {
    const taskQueue = `webhooks-${crypto.randomBytes(4).toString('hex')}`;
    const settings = { allowHttpHosts: ['127.0.0.1'], allowPrivate: parseAllowList('127.0.0.1'), timeoutMs: 5000 };
    const sender = createWebhookSender(settings);
    const activities = createWebhookActivities({ db, config: loadConfig({ logLevel: 'silent' }), logger }, settings, sender);
    // Deliveries run on the webhooks queue of the base task queue (temporal.config.ts WORKFLOW_ROUTES).
    const worker = await Worker.create({ connection: native, taskQueue: taskQueueName(taskQueue, 'webhooks'), workflowBundle: bundle, activities });
    const dispatcher = await startWebhookDispatcher({ db, logger, starter: temporalDeliveryStarter(client, taskQueue), intervalMs: 0, retryScheduleMs: schedule });
    try {
      return await worker.runUntil(fn({ dispatcher, taskQueue }));
    } finally {
      await dispatcher.stop();
      await sender.close();
    }
  }

  async function newEndpoint(): Promise<string> {
    const secret = generateSecret();
    receiver.secret = secret;
    await db('webhook_endpoints').where({ org_id: orgId }).update({ enabled: false }); // one subscriber per test
    const ep = await createEndpoint(db, orgId, {
      url: rxUrl,
      description: null,
      eventTypes: ['call.completed'],
      enabled: true,
      secretSealed: sealSecret(secret, loadWebhookSettings().secretKey),
      secretPrefix: secretDisplayPrefix(secret),
    });
    return ep.id;
  }

  async function emitCall(): Promise<string> {
    const now = new Date().toISOString();
    const { deliveryIds } = await db.transaction((trx) =>
      emitEvent(trx, orgId, 'call.completed', { callId: 'call_1', direction: 'inbound', from: '+15550001111', to: '+15550002222', startedAt: now, endedAt: now, durationSeconds: 42 }),
    );
    expect(deliveryIds).to.have.length(1);
    return deliveryIds[0];
  }

  const result = (deliveryId: string) => client.workflow.getHandle(workflowIds.webhookDelivery(deliveryId)).result() as Promise<WebhookDeliveryResult>;

  it('delivers after retries once a receiver that was down is up (time skipped), recording exactly one success', async () => {
    const endpointId = await newEndpoint();
    receiver.statuses = [503, 503]; // down for the immediate attempt and the 5 s retry; up for the 5 min one
    await withWorker(DEFAULT_SCHEDULE, async ({ dispatcher }) => {
      const deliveryId = await emitCall();
      const t0 = Date.now();
      expect(await dispatcher.sweep()).to.be.at.least(1);
      const r = await result(deliveryId);
      expect(r).to.deep.equal({ outcome: 'succeeded', attempts: 3, lastStatusCode: 200 });
      expect(Date.now() - t0).to.be.lessThan(20_000); // 5 min 5 s of timers, skipped
      const d = (await getDelivery(db, orgId, deliveryId, endpointId))!;
      expect(d.status).to.equal('succeeded');
      expect(d.attempts.map((a) => a.statusCode)).to.deep.equal([503, 503, 200]);
      expect(d.attempts.filter((a) => a.outcome === 'succeeded')).to.have.length(1);
      expect(receiver.received).to.have.length(3);
      expect(receiver.received.every((x) => x.verified)).to.equal(true);
      expect(new Set(receiver.received.map((x) => x.headers['webhook-id'])).size).to.equal(1); // same id on every retry
    });
  });

  it('stops at a 410 Gone and disables the endpoint', async () => {
    const endpointId = await newEndpoint();
    receiver.statuses = [410];
    await withWorker(DEFAULT_SCHEDULE, async ({ dispatcher }) => {
      const deliveryId = await emitCall();
      await dispatcher.sweep();
      expect(await result(deliveryId)).to.deep.equal({ outcome: 'failed', attempts: 1, lastStatusCode: 410 });
      const ep = await db('webhook_endpoints').where({ id: endpointId }).first();
      expect(ep).to.include({ enabled: false, disabled_reason: 'gone' });
    });
  });

  it('fails after the whole schedule, and a manual retry runs again under the same workflow id', async () => {
    const endpointId = await newEndpoint();
    receiver.statuses = [500, 500, 500];
    await withWorker([0, 3_600_000, 3_600_000], async ({ dispatcher }) => {
      const deliveryId = await emitCall();
      await dispatcher.sweep();
      expect(await result(deliveryId)).to.deep.equal({ outcome: 'failed', attempts: 3, lastStatusCode: 500 });
      expect((await getDelivery(db, orgId, deliveryId))!.status).to.equal('failed');

      const retry = await retryDelivery(db, orgId, endpointId, deliveryId);
      expect(retry.kind).to.equal('queued');
      await dispatcher.sweep();
      expect(await result(deliveryId)).to.deep.equal({ outcome: 'succeeded', attempts: 1, lastStatusCode: 200 });
      const d = (await getDelivery(db, orgId, deliveryId))!;
      expect(d).to.include({ status: 'succeeded', run: 2 });
      expect(d.attempts.map((a) => `${a.run}.${a.attempt}:${a.statusCode}`)).to.deep.equal(['1.1:500', '1.2:500', '1.3:500', '2.1:200']);
    });
  });

  it('starting the same delivery twice sends it once', async () => {
    await newEndpoint();
    await withWorker(DEFAULT_SCHEDULE, async ({ taskQueue }) => {
      const deliveryId = await emitCall();
      const start = temporalDeliveryStarter(client, taskQueue);
      const job = { orgId, deliveryId, run: 1, retryScheduleMs: DEFAULT_SCHEDULE };
      const first = await start(job);
      const second = await start(job);
      expect(first).to.equal('started');
      expect(['duplicate', 'started']).to.include(second);
      await result(deliveryId);
      await new Promise((r) => setTimeout(r, 200));
      expect(receiver.received).to.have.length(1);
      expect((await getDelivery(db, orgId, deliveryId))!.attempts).to.have.length(1);
    });
  });
});
