/**
 * Webhook endpoints that say when they stop, and replay (docs/api-notes.md "Webhooks and audit logs",
 * "Replaying missed events"): through the API (api/server.ts), the service's workflows on a real worker
 * (dev server, time skipping for the replay's pacing) and the outbox dispatcher, against a loopback
 * receiver that verifies every delivery with the `standardwebhooks` library.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import { Webhook } from 'standardwebhooks';
import { startTestApi, type TestApi } from '../helpers/api';
import { testTemporal, withTimeSkipping } from '../helpers/temporal';
import { createWebhookActivities } from '../../activities/webhooks';
import { startWebhookDispatcher, temporalDeliveryStarter, type WebhookDispatcher } from '../../events/dispatcher';
import { emitEvent } from '../../events/emit';
import { createLogger } from '../../runtime';
import { workflowIds } from '../../temporal.config';
import { webhookReplayProgressQuery } from '../../workflows/definitions';
import type { Client } from '@temporalio/client';

/** One path of the receiver: its secret, what it answers, what it got (verified with its secret). */
interface Path {
  secret: string;
  status: number;
  received: Array<{ id: string; type: string; data: any; verified: boolean }>;
}

const ENV: Record<string, string> = {
  WEBHOOK_ALLOW_HTTP_HOSTS: '127.0.0.1',
  HTTP_ALLOW_PRIVATE_HOSTS: '127.0.0.1',
  WEBHOOK_SECRET_KEY: Buffer.alloc(32, 9).toString('base64'),
  WEBHOOK_DISABLE_AFTER_FAILING: '0', // the first failure disables: "failing continuously" with no grace
  WEBHOOK_REPLAY_BATCH: '2', // several paced steps for a handful of events
  WEBHOOK_REPLAY_INTERVAL: '30s',
};

describe('Webhook endpoints report being disabled, and replay missed events', function () {
  this.timeout(120_000);
  let t: TestApi;
  let client: Client;
  let dispatcher: WebhookDispatcher;
  let server: http.Server;
  let base: string;
  const paths = new Map<string, Path>();
  const saved: Record<string, string | undefined> = {};

  before(async () => {
    for (const [k, v] of Object.entries(ENV)) {
      saved[k] = process.env[k];
      process.env[k] = v;
    }
    server = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c) => chunks.push(c));
      req.on('end', () => {
        const p = paths.get(req.url ?? '');
        const body = Buffer.concat(chunks).toString('utf8');
        if (!p) return void res.writeHead(404).end();
        let verified = false;
        try {
          new Webhook(p.secret).verify(body, req.headers as Record<string, string>);
          verified = true;
        } catch {
          verified = false;
        }
        const e = JSON.parse(body);
        p.received.push({ id: e.id, type: e.type, data: e.data, verified });
        res.writeHead(p.status).end('ok');
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    t = await startTestApi('whreplay', {}, { worker: (deps) => createWebhookActivities(deps) });
    client = (await testTemporal()).client;
    // The worker's dispatcher (worker.ts), swept on demand so the test knows when deliveries started.
    dispatcher = await startWebhookDispatcher({ db: t.db, logger: createLogger('silent'), starter: temporalDeliveryStarter(client, t.taskQueue!), intervalMs: 0, retryScheduleMs: [0] });
  });
  after(async () => {
    await dispatcher?.stop();
    await t?.close();
    server?.closeAllConnections();
    await new Promise<void>((r) => (server ? server.close(() => r()) : r()));
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  });

  async function endpoint(key: string, path: string, eventTypes: string[]): Promise<{ id: string; path: Path }> {
    const res = await t.call('POST', '/webhooks', { key, json: { url: `${base}${path}`, eventTypes } });
    expect(res.status, res.text).to.equal(201);
    const p: Path = { secret: res.body.data.secret, status: 200, received: [] };
    paths.set(path, p);
    return { id: res.body.data.id, path: p };
  }

  /** Starts what the outbox holds and waits for every delivery of `deliveryIds` to finish (latest run). */
  async function deliver(deliveryIds: string[]): Promise<void> {
    await dispatcher.sweep();
    await Promise.all(deliveryIds.map((id) => client.workflow.getHandle(workflowIds.webhookDelivery(id)).result()));
  }

  /** Delivers everything queued, including what deliveries themselves emit (the disabled event). */
  async function deliverAll(orgId: string): Promise<void> {
    for (let i = 0; i < 5; i++) {
      const open = await t.db('webhook_deliveries').where({ org_id: orgId }).whereIn('status', ['pending', 'retrying']).pluck('id');
      if (!open.length) return;
      await deliver(open);
    }
  }

  const callCompleted = (callId: string) => {
    const now = new Date().toISOString();
    return { callId, direction: 'inbound' as const, from: '+15550001111', to: '+15550002222', startedAt: now, endedAt: now, durationSeconds: 12 };
  };
  const emitCall = (orgId: string, callId: string) => t.db.transaction((trx) => emitEvent(trx, orgId, 'call.completed', callCompleted(callId)));
  const emitRollback = (orgId: string) =>
    t.db.transaction((trx) =>
      emitEvent(trx, orgId, 'agent.rolled_back', { agentId: 'agt_1', versionId: 'ver_2', version: 2, previousVersionId: 'ver_3', rolledBackAt: new Date().toISOString() }),
    );

  async function replay(key: string, id: string, json: Record<string, unknown>) {
    const res = await t.call('POST', `/webhooks/${id}/replay`, { key, json });
    expect(res.status, res.text).to.equal(202);
    const r = res.body.data;
    expect(r.id).to.match(/^rpl_/);
    expect(res.headers.get('location')).to.equal(`/api/v1/webhooks/${id}/replays/${r.id}`);
    const handle = client.workflow.getHandle(workflowIds.webhookReplay(r.id));
    await withTimeSkipping(() => handle.result());
    const after = await t.call('GET', `/webhooks/${id}/replays/${r.id}`, { key });
    expect(after.status, after.text).to.equal(200);
    // Paced: a timer of WEBHOOK_REPLAY_INTERVAL between two batches of WEBHOOK_REPLAY_BATCH (time skipped).
    const history = await handle.fetchHistory();
    const timers = history.events!.filter((e) => e.timerStartedEventAttributes).map((e) => Number(e.timerStartedEventAttributes!.startToFireTimeout!.seconds));
    const steps = (await handle.query(webhookReplayProgressQuery)).steps;
    expect(timers).to.deep.equal(Array(steps - 1).fill(30));
    return { ...after.body.data, steps } as { id: string; status: string; total: number; processed: number; queued: number; skipped: number; completedAt: string | null; steps: number };
  }

  it('an endpoint answering 410 is disabled, and the other endpoint receives a signed webhook.endpoint.disabled, with an audit entry', async () => {
    const org = await t.org('Gone org');
    const gone = await endpoint(org.key, '/gone', ['call.completed']);
    const watcher = await endpoint(org.key, '/watcher', ['webhook.endpoint.disabled']);
    gone.path.status = 410;
    const { deliveryIds } = await emitCall(org.orgId, 'call_410');
    await deliver(deliveryIds);
    await deliverAll(org.orgId);

    const ep = await t.call('GET', `/webhooks/${gone.id}`, { key: org.key });
    expect(ep.body.data).to.include({ enabled: false, disabledReason: 'gone' });
    expect(gone.path.received.map((r) => r.type)).to.deep.equal(['call.completed']);
    expect(watcher.path.received).to.have.length(1);
    const notice = watcher.path.received[0];
    expect(notice.verified).to.equal(true);
    expect(notice.type).to.equal('webhook.endpoint.disabled');
    expect(notice.data).to.deep.include({ webhookId: gone.id, url: `${base}/gone`, reason: 'gone', lastStatusCode: 410 });
    expect(Date.parse(notice.data.disabledAt)).to.equal(Date.parse(ep.body.data.disabledAt));

    const audit = await t.call('GET', `/audit-logs?resourceType=webhook&resourceId=${gone.id}`, { key: org.key });
    expect(audit.status, audit.text).to.equal(200);
    const entry = audit.body.data.items.find((e: any) => e.operationId === 'disableWebhook');
    expect(entry, JSON.stringify(audit.body.data.items)).to.not.equal(undefined);
    expect(entry).to.deep.include({ actor: { id: deliveryIds[0], kind: 'system' }, requestId: notice.id, statusCode: 410 });

    const refused = await t.call('POST', `/webhooks/${gone.id}/replay`, { key: org.key, json: { since: new Date(Date.now() - 60_000).toISOString() } });
    expect(refused.status, refused.text).to.equal(409);
    expect(refused.body.code).to.equal('webhook_disabled');
    expect(refused.body.detail).to.contain('disabled (gone)');
  });

  it('after a receiver was down, re-enabled, a replay sends exactly the missed events once; eventTypes filters; a second replay sends nothing', async () => {
    const org = await t.org('Replay org');
    const since = new Date(Date.now() - 1000).toISOString();
    const target = await endpoint(org.key, '/target', []);
    const watcher = await endpoint(org.key, '/watcher2', ['webhook.endpoint.disabled']);

    target.path.status = 503; // down: the first failure disables it (failing)
    const first = await emitCall(org.orgId, 'call_down');
    await deliver(first.deliveryIds);
    await deliverAll(org.orgId);
    expect((await t.call('GET', `/webhooks/${target.id}`, { key: org.key })).body.data).to.include({ enabled: false, disabledReason: 'failing' });
    expect(watcher.path.received.map((r) => [r.type, r.data.reason, r.data.lastStatusCode, r.verified])).to.deep.equal([['webhook.endpoint.disabled', 'failing', 503, true]]);

    // Missed while disabled: no delivery is even created for the endpoint.
    const missed = [await emitCall(org.orgId, 'call_m1'), await emitCall(org.orgId, 'call_m2'), await emitRollback(org.orgId)];
    expect(missed.flatMap((m) => m.deliveryIds)).to.deep.equal([]);

    target.path.status = 200;
    target.path.received = [];
    const patched = await t.call('PATCH', `/webhooks/${target.id}`, { key: org.key, json: { enabled: true } });
    expect(patched.status, patched.text).to.equal(200);

    const onlyRollbacks = await replay(org.key, target.id, { since, eventTypes: ['agent.rolled_back'] });
    await deliverAll(org.orgId);
    expect(onlyRollbacks).to.include({ status: 'completed', total: 1, processed: 1, queued: 1, skipped: 0 });
    expect(target.path.received.map((r) => r.type)).to.deep.equal(['agent.rolled_back']);

    const full = await replay(org.key, target.id, { since });
    await deliverAll(org.orgId);
    // The failed one (a new run), the two calls missed while disabled; the rollback already arrived. Never
    // the endpoint's own disabled notice (meant for the others).
    expect(full).to.include({ status: 'completed', total: 4, processed: 4, queued: 3, skipped: 1 });
    expect(full.steps).to.equal(3); // 2 + 2 events, then an empty step ends it
    const ids = target.path.received.map((r) => r.id);
    const expected = [first.event.id, ...missed.map((m) => m.event.id)];
    expect([...ids].sort()).to.deep.equal([...expected].sort());
    expect(target.path.received.every((r) => r.verified)).to.equal(true);
    const deliveries = await t.call('GET', `/webhooks/${target.id}/deliveries`, { key: org.key });
    expect(deliveries.body.data.items.map((d: any) => d.status)).to.deep.equal(['succeeded', 'succeeded', 'succeeded', 'succeeded']);
    expect(deliveries.body.data.items.find((d: any) => d.eventId === first.event.id).run).to.equal(2);

    const again = await replay(org.key, target.id, { since });
    await deliverAll(org.orgId);
    expect(again).to.include({ status: 'completed', total: 4, processed: 4, queued: 0, skipped: 4 });
    expect(target.path.received).to.have.length(4);

    // Another organization sees neither the endpoint nor its replays (404, exactly like missing).
    const other = await t.org('Other org');
    expect((await t.call('GET', `/webhooks/${target.id}/replays/${again.id}`, { key: other.key })).status).to.equal(404);
    expect((await t.call('POST', `/webhooks/${target.id}/replay`, { key: other.key, json: { since } })).status).to.equal(404);
  });

  it('replay steps are idempotent: running a step again after it committed queues nothing twice', async () => {
    const org = await t.org('Step org');
    const target = await endpoint(org.key, '/steps', ['call.completed']);
    const since = new Date(Date.now() - 1000).toISOString();
    await t.call('PATCH', `/webhooks/${target.id}`, { key: org.key, json: { enabled: false } });
    await emitCall(org.orgId, 'call_s1');
    await t.call('PATCH', `/webhooks/${target.id}`, { key: org.key, json: { enabled: true } });
    const res = await t.call('POST', `/webhooks/${target.id}/replay`, { key: org.key, json: { since } });
    expect(res.status, res.text).to.equal(202);
    await withTimeSkipping(() => client.workflow.getHandle(workflowIds.webhookReplay(res.body.data.id)).result());
    const acts = createWebhookActivities({ db: t.db, config: t.config, logger: createLogger('silent') });
    const retried = await acts.replayWebhookEvents({ orgId: org.orgId, replayId: res.body.data.id, step: 0 });
    expect(retried).to.include({ status: 'completed', queued: 1 });
    expect(await t.db('webhook_deliveries').where({ org_id: org.orgId, endpoint_id: target.id }).count({ n: '*' })).to.deep.equal([{ n: 1 }]);
    expect(await t.db('webhook_outbox').where({ org_id: org.orgId }).count({ n: '*' })).to.deep.equal([{ n: 1 }]);
  });

  it('answers 400 naming since when it is before the retention or not before until, naming eventTypes outside the catalog', async () => {
    const org = await t.org('Bad replay org');
    const target = await endpoint(org.key, '/bad', []);
    const call = (json: Record<string, unknown>) => t.call('POST', `/webhooks/${target.id}/replay`, { key: org.key, json });
    const fields = (res: { body: any }) => res.body.errors.map((e: any) => e.field);

    const old = await call({ since: new Date(Date.now() - 31 * 86_400_000).toISOString() });
    expect(old.status).to.equal(400);
    expect(fields(old)).to.deep.equal(['since']);
    expect(old.body.errors[0].message).to.contain('retention');

    const inverted = await call({ since: new Date(Date.now() - 60_000).toISOString(), until: new Date(Date.now() - 120_000).toISOString() });
    expect(inverted.status).to.equal(400);
    expect(fields(inverted)).to.deep.equal(['since']);

    const unknown = await call({ since: new Date(Date.now() - 60_000).toISOString(), eventTypes: ['call.exploded'] });
    expect(unknown.status).to.equal(400);
    expect(fields(unknown)[0]).to.match(/^eventTypes/);

    const missing = await t.call('GET', `/webhooks/${target.id}/replays/rpl_nope`, { key: org.key });
    expect(missing.status).to.equal(404);
    expect(await t.db('webhook_replays').where({ org_id: org.orgId }).count({ n: '*' })).to.deep.equal([{ n: 0 }]);
  });
});
