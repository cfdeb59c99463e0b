/**
 * Webhook delivery benchmark (docs/benchmarks.md). Prints:
 *  1. deliveries/s (and p50/p99 per attempt) to a local receiver at 100 concurrent deliveries, through
 *     the real activity function (load → sign → POST through the SSRF guard → record in one transaction);
 *  2. an outage: 10,000 deliveries whose first attempt fails (receiver answers 503), then the time to
 *     drain that backlog once the receiver is back;
 *  3. the workflow path (emitEvent → outbox → dispatcher → `webhook-delivery/{id}` workflows on the
 *     embedded dev server → activity), deliveries/s end to end (BENCH_WEBHOOK_WORKFLOWS=0 skips it).
 * Target: at least 500 deliveries/s on this 2-core machine.
 *
 * Run: `npx tsx bench/webhooks.ts` (sizes: BENCH_WEBHOOK_N, default 5000; BENCH_WEBHOOK_BACKLOG,
 * default 10000; BENCH_WEBHOOK_WF_N, default 1000). The receiver runs in a child process so it does
 * not share the sender's event loop; it verifies every signature with the `standardwebhooks` library.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { createDb, ensureDatabase, migrate, type Db } from '../db';
import { startEmbeddedPostgres } from '../db/embedded';
import { createOrganization } from '../db/repositories/organizations';
import { createEndpoint } from '../db/repositories/webhookEndpoints';
import { createWebhookActivities, createWebhookSender } from '../activities/webhooks';
import { parseAllowList } from '../domain/net/guard';
import { emitEvent } from '../events/emit';
import { generateSecret, sealSecret, secretDisplayPrefix } from '../domain/webhooks/signing';
import { loadWebhookSettings } from '../domain/webhooks/settings';
import { loadConfig } from '../config';
import { Client, Connection } from '@temporalio/client';
import { bundleWorkflowCode, NativeConnection, Worker } from '@temporalio/worker';
import { startDevServer } from '../devserver';
import { ADMISSION_LEASE_MS, startWebhookDispatcher, temporalDeliveryStarter } from '../events/dispatcher';
import { createLogger } from '../runtime';
import { runBench } from './entry';
import { taskQueueName } from '../temporal.config';
import { installBenchRuntime } from './harness';

const CONCURRENCY = 100;
const N = Number(process.env.BENCH_WEBHOOK_N ?? 5000);
const BACKLOG = Number(process.env.BENCH_WEBHOOK_BACKLOG ?? 10_000);
const WF_N = Number(process.env.BENCH_WEBHOOK_WF_N ?? 1000);

/** Child-process receiver: `tsx bench/webhooks.ts receiver <secret>`; POST /mode/<status> switches the answer. */
function runReceiver(secret: string): void {
  const wh = new Webhook(secret);
  let status = 200;
  let bad = 0;
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const m = /^\/mode\/(\d{3})$/.exec(req.url ?? '');
      if (m) {
        status = Number(m[1]);
        res.end(JSON.stringify({ bad }));
        return;
      }
      try {
        wh.verify(Buffer.concat(chunks), req.headers as Record<string, string>);
      } catch {
        bad++;
      }
      res.writeHead(status, { 'content-type': 'application/json' }).end('{"ok":true}');
    });
  });
  server.keepAliveTimeout = 65_000;
  server.listen(0, '127.0.0.1', () => console.log(`PORT ${(server.address() as AddressInfo).port}`));
}

function startReceiver(secret: string): Promise<{ child: ChildProcess; port: number }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', __filename, 'receiver', secret], { stdio: ['ignore', 'pipe', 'inherit'] });
    child.stdout!.on('data', (buf: Buffer) => {
      const m = /PORT (\d+)/.exec(buf.toString());
      if (m) resolve({ child, port: Number(m[1]) });
    });
    child.once('exit', (code) => reject(new Error(`receiver exited with ${code}`)));
  });
}

async function setMode(port: number, status: number): Promise<{ bad: number }> {
  const res = await fetch(`http://127.0.0.1:${port}/mode/${status}`, { method: 'POST' });
  return (await res.json()) as { bad: number };
}

/** Emits `n` call.completed events (batches of 500 per transaction). @returns the delivery ids */
async function emitMany(db: Db, orgId: string, n: number): Promise<string[]> {
  const ids: string[] = [];
  const now = new Date().toISOString();
  for (let done = 0; done < n; done += 500) {
    await db.transaction(async (trx) => {
      for (let i = done; i < Math.min(n, done + 500); i++) {
        const r = await emitEvent(trx, orgId, 'call.completed', { callId: `call_${i}`, direction: 'outbound', from: '+15550001111', to: '+15550002222', startedAt: now, endedAt: now, durationSeconds: i % 300 });
        ids.push(...r.deliveryIds);
      }
    });
  }
  return ids;
}

/** Runs `fn` over `items` with `concurrency` in flight. @returns wall ms and per-item latencies (ms) */
async function pool<T>(items: T[], concurrency: number, fn: (item: T) => Promise<unknown>): Promise<{ ms: number; lat: number[] }> {
  const lat: number[] = [];
  let next = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < items.length) {
        const item = items[next++];
        const s = performance.now();
        await fn(item);
        lat.push(performance.now() - s);
      }
    }),
  );
  return { ms: performance.now() - t0, lat };
}

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] : 0;
};

/** Runs the webhook section and prints its figures. */
export async function runWebhooksBench(): Promise<void> {
  const pg = await startEmbeddedPostgres({ dataDir: path.join(os.tmpdir(), `acp-bench-wh-pg-${process.pid}`), ephemeral: true, durable: false });
  let receiver: ChildProcess | undefined;
  try {
    const url = new URL(pg.url);
    url.pathname = '/bench_webhooks';
    const databaseUrl = url.toString();
    await ensureDatabase(databaseUrl);
    const db = createDb(databaseUrl, { poolMax: 40 });
    await migrate(db);
    const logger = createLogger('silent');
    const org = await createOrganization(db, 'Bench webhooks');
    const secret = generateSecret();
    const rx = await startReceiver(secret);
    receiver = rx.child;
    await createEndpoint(db, org.id, {
      url: `http://127.0.0.1:${rx.port}/hook`,
      description: 'bench',
      eventTypes: [],
      enabled: true,
      secretSealed: sealSecret(secret, loadWebhookSettings().secretKey),
      secretPrefix: secretDisplayPrefix(secret),
    });
    // The raw path's throughput: the per-endpoint and per-organization limits of attempts in flight
    // (docs/operations.md "Fair sharing") are raised to the bench's concurrency; the noisy-neighbour section measures them.
    const settings = { allowHttpHosts: ['127.0.0.1'], allowPrivate: parseAllowList('127.0.0.1'), timeoutMs: 15_000, maxInFlightPerEndpoint: CONCURRENCY, maxInFlightPerOrg: CONCURRENCY };
    const sender = createWebhookSender(settings, { connections: CONCURRENCY });
    const acts = createWebhookActivities({ db, config: loadConfig({ logLevel: 'silent' }), logger }, settings, sender);
    const attempt = (deliveryId: string, n: number) => acts.attemptWebhookDelivery({ orgId: org.id, deliveryId, run: 1, attempt: n, final: false });

    // 1. Throughput at 100 concurrent deliveries.
    const warm = await emitMany(db, org.id, 200);
    await pool(warm, CONCURRENCY, (id) => attempt(id, 1));
    const ids = await emitMany(db, org.id, N);
    const r1 = await pool(ids, CONCURRENCY, async (id) => {
      const r = await attempt(id, 1);
      if (r.outcome !== 'succeeded') throw new Error(`delivery ${id}: ${r.outcome} ${r.error}`);
    });
    const rate1 = N / (r1.ms / 1000);
    console.log(`activity path: ${N} deliveries, ${CONCURRENCY} concurrent: ${rate1.toFixed(0)} deliveries/s; attempt p50 ${pct(r1.lat, 50).toFixed(1)} ms, p99 ${pct(r1.lat, 99).toFixed(1)} ms ${rate1 >= 500 ? '(target ≥ 500/s met)' : '(BELOW the 500/s target)'}`);

    // 2. Outage, then drain a backlog of BACKLOG.
    await setMode(rx.port, 503);
    const backlog = await emitMany(db, org.id, BACKLOG);
    const down = await pool(backlog, CONCURRENCY, async (id) => {
      const r = await attempt(id, 1);
      if (r.outcome !== 'retry') throw new Error(`expected retry, got ${r.outcome}`);
    });
    await setMode(rx.port, 200);
    const drain = await pool(backlog, CONCURRENCY, async (id) => {
      const r = await attempt(id, 2);
      if (r.outcome !== 'succeeded') throw new Error(`delivery ${id}: ${r.outcome} ${r.error}`);
    });
    const [{ n: succeeded }] = await db('webhook_deliveries').whereIn('status', ['succeeded']).count({ n: '*' });
    console.log(`outage: ${BACKLOG} first attempts failed (503) in ${(down.ms / 1000).toFixed(1)} s (${(BACKLOG / (down.ms / 1000)).toFixed(0)}/s)`);
    console.log(`backlog drain after the outage: ${BACKLOG} deliveries in ${(drain.ms / 1000).toFixed(1)} s (${(BACKLOG / (drain.ms / 1000)).toFixed(0)} deliveries/s; p99 ${pct(drain.lat, 99).toFixed(1)} ms); ${succeeded} deliveries succeeded in total`);
    const { bad } = await setMode(rx.port, 200);
    console.log(`receiver: ${bad} signature verification failures (standardwebhooks)`);

    // 3. Workflow path on the embedded dev server.
    // Sections 1-2 drove the activity directly; their outbox rows would only start no-op workflows.
    await db('webhook_outbox').delete();
    if (process.env.BENCH_WEBHOOK_WORKFLOWS !== '0' && WF_N > 0) await workflowPath(db, databaseUrl, org.id, settings, sender, logger, WF_N);
    await sender.close();
    await db.destroy();
  } finally {
    receiver?.kill();
    await pg.stop();
  }
}

async function workflowPath(
  db: Db,
  databaseUrl: string,
  orgId: string,
  settings: Parameters<typeof createWebhookActivities>[1],
  sender: ReturnType<typeof createWebhookSender>,
  logger: ReturnType<typeof createLogger>,
  n: number,
): Promise<void> {
  installBenchRuntime();
  const server = await startDevServer({});
  const connection = await Connection.connect({ address: server.address });
  const native = await NativeConnection.connect({ address: server.address });
  const client = new Client({ connection });
  const taskQueue = 'bench-webhooks';
  try {
    const workflowBundle = await bundleWorkflowCode({
      workflowsPath: path.resolve(__dirname, '../workflows/webhookDelivery.ts'),
      logger: { trace() {}, debug() {}, info() {}, warn() {}, error() {}, log() {} } as never,
    });
    const activities = createWebhookActivities({ db, config: loadConfig({ logLevel: 'silent' }), logger }, settings, sender);
    const worker = await Worker.create({
      connection: native,
      // Deliveries run on the webhooks queue of the base task queue (temporal.config.ts WORKFLOW_ROUTES).
      taskQueue: taskQueueName(taskQueue, 'webhooks'),
      workflowBundle,
      activities,
      maxConcurrentActivityTaskExecutions: CONCURRENCY,
      maxConcurrentWorkflowTaskExecutions: CONCURRENCY,
    });
    await worker.runUntil(async () => {
      // Admission at the bench's raised limits of attempts in flight, woken by each first attempt's NOTIFY, as in production.
      const admission = { perEndpoint: CONCURRENCY, perOrg: CONCURRENCY, leaseMs: ADMISSION_LEASE_MS };
      const dispatcher = await startWebhookDispatcher({ db, logger, starter: temporalDeliveryStarter(client, taskQueue), intervalMs: 200, concurrency: 32, databaseUrl, admission });
      try {
        const t0 = performance.now();
        await emitMany(db, orgId, n);
        for (;;) {
          const [{ open }] = await db('webhook_deliveries').whereIn('status', ['pending', 'retrying']).count({ open: '*' });
          if (Number(open) === 0) break;
          if (performance.now() - t0 > 300_000) throw new Error(`workflow path: ${open} deliveries still open after 5 min`);
          await new Promise((r) => setTimeout(r, 100));
        }
        const s = (performance.now() - t0) / 1000;
        console.log(`workflow path (dev server, emit → outbox → dispatcher → workflow → activity): ${n} deliveries in ${s.toFixed(1)} s = ${(n / s).toFixed(0)} deliveries/s`);
      } finally {
        await dispatcher.stop();
      }
    });
  } finally {
    await connection.close();
    await native.close();
    await server.stop();
  }
}

if (require.main === module) {
  if (process.argv[2] === 'receiver') {
    runReceiver(process.argv[3]);
  } else {
    runBench('bench webhooks', runWebhooksBench);
  }
}
