/**
 * The production shape as separate OS processes (docs/operations.md "Scaling out"): the Temporal dev server
 * (`npm run devserver`, persisted to Postgres, standing in for a Temporal frontend), two `npm run start:api`
 * and two `npm run start:worker` processes, all on one Postgres database and one task queue, the workers
 * loading the workflow bundle built once (docs/operations.md "Workflow bundle"). Through both APIs in turn
 * the test drives an outbound campaign over the sandbox telephony, a 10DLC registration over the sandbox
 * carrier (its signed callbacks reach both APIs) and webhook deliveries to a loopback receiver; mid-campaign
 * it SIGKILLs the process group of a worker holding dials in flight and starts it again, as a supervisor
 * would. Then: every contact was dialed exactly once (the sandbox's ledger of dials, docs/operations.md
 * "Provider calls happen once"), the registration is active, and every webhook delivery reached the receiver
 * exactly once, signed.
 */
import { expect } from 'chai';
import { Client, Connection } from '@temporalio/client';
import { temporal as proto } from '@temporalio/proto';
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { Webhook } from 'standardwebhooks';
import { createDb, migrate, type Db } from '../db';
import { freePort } from '../db/embedded';
import { newId } from '../db/ids';
import { createAgent } from '../db/repositories/agents';
import { createSecretKey } from '../db/repositories/apiKeys';
import { createOrganization } from '../db/repositories/organizations';
import { listIntents } from '../db/repositories/providerIntents';
import { sandboxDials } from '../db/repositories/sandboxProviders';
import { NON_RESERVED_SCOPES } from '../domain/scopes';
import { SERVICE_SECRETS } from '../secrets';
import { buildWorkflowBundle } from '../scripts/build-workflow-bundle';
import { workflowIds } from '../temporal.config';
import { COMPLETE_BRAND } from './api/sms-fixtures';
import { callWithKey } from './helpers/api';
import { createTestDatabase } from './helpers/postgres';
import { uniqueTaskQueue } from './helpers/temporal';
import { until } from './helpers/wait';

const ROOT = path.resolve(__dirname, '..');
/** Contacts of the campaign: enough that dialing is under way for seconds when the worker dies. */
const CONTACTS = 150;
/** The sandbox's dial latency (SANDBOX_DIAL_LATENCY_MS) and the campaign's concurrency. */
const DIAL_LATENCY_MS = 250;
const MAX_CONCURRENT_CALLS = 8;
/** Dials placed before the kill. */
const KILL_AFTER_DIALS = 30;
/** Event types the receiver subscribes to. */
const EVENT_TYPES = ['sms.registration.updated', 'campaign.updated'];
const STARTED = proto.api.enums.v1.PendingActivityState.PENDING_ACTIVITY_STATE_STARTED;

/** A JSON log line of an entry point (runtime.ts `createLogger`). */
interface LogLine {
  msg: string;
  pid?: number;
  url?: string;
  keyId?: string;
  sha256?: string;
}

/** One `npm run …` process, in its own process group. */
interface Proc {
  name: string;
  child: ChildProcess;
  lines: LogLine[];
  stdout: string;
  stderr: string;
  exited: Promise<number | string | null>;
}

/** Starts `npm run <script> -- …args` in its own process group, collecting its output and JSON log lines. */
function npmRun(name: string, script: string, args: string[], env: NodeJS.ProcessEnv): Proc {
  const child = spawn('npm', ['run', '--silent', script, ...(args.length ? ['--', ...args] : [])], { cwd: ROOT, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  const proc: Proc = { name, child, lines: [], stdout: '', stderr: '', exited: new Promise((resolve) => child.once('exit', (code, signal) => resolve(code ?? signal))) };
  let buf = '';
  child.stdout!.on('data', (d: Buffer) => {
    proc.stdout += d;
    buf += d.toString();
    let nl;
    while ((nl = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, nl);
      buf = buf.slice(nl + 1);
      try {
        proc.lines.push(JSON.parse(line) as LogLine);
      } catch {
        // not a log line (the dev server's banner)
      }
    }
  });
  child.stderr!.on('data', (d: Buffer) => (proc.stderr += d));
  return proc;
}

/**
 * Resolves once `ready()` holds for `proc`'s output.
 * @throws Error with the process's stderr when it exits first or after `timeoutMs`
 */
async function started(proc: Proc, ready: (p: Proc) => boolean, timeoutMs = 90_000): Promise<void> {
  let exit: number | string | null | undefined;
  void proc.exited.then((c) => (exit = c));
  const end = Date.now() + timeoutMs;
  while (!ready(proc)) {
    if (exit !== undefined) throw new Error(`${proc.name} exited (${String(exit)}) before it was ready: ${proc.stderr.slice(-2000)}`);
    if (Date.now() > end) throw new Error(`${proc.name} was not ready in ${timeoutMs} ms: ${proc.stderr.slice(-2000)}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Sends `signal` to `proc`'s whole process group (npm, its shell and node) and waits for it to exit. */
async function killGroup(proc: Proc, signal: NodeJS.Signals): Promise<void> {
  if (proc.child.exitCode !== null || proc.child.signalCode !== null) return;
  try {
    process.kill(-proc.child.pid!, signal);
  } catch {
    // the group is gone already
  }
  await proc.exited;
}

/** A loopback webhook receiver verifying each delivery with the `standardwebhooks` library (a real peer). */
interface Receiver {
  url: string;
  secret: string;
  /** Each request's `webhook-id`, event type and whether its signature verified. */
  received: { id: string; type: string; data: any; verified: boolean }[];
  close(): Promise<void>;
}

async function startReceiver(): Promise<Receiver> {
  const rec: Receiver = { url: '', secret: '', received: [], close: async () => undefined };
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      let verified = false;
      try {
        new Webhook(rec.secret).verify(body, req.headers as Record<string, string>);
        verified = true;
      } catch {
        // counted as unverified
      }
      const parsed = JSON.parse(body) as { type: string; data: unknown };
      rec.received.push({ id: String(req.headers['webhook-id']), type: parsed.type, data: parsed.data, verified });
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  rec.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`;
  rec.close = async () => {
    server.closeAllConnections();
    await new Promise<void>((r) => server.close(() => r()));
  };
  return rec;
}

/** The zone where it is about noon now (Etc/GMT±n), so the contacts' calling window is open whatever the hour. */
function noonZone(now = new Date()): string {
  const offset = 12 - now.getUTCHours();
  return offset === 0 ? 'Etc/GMT' : `Etc/GMT${offset > 0 ? '-' : '+'}${Math.abs(offset)}`;
}

describe('the production shape: dev server, two start:api and two start:worker processes on one Postgres', function () {
  this.timeout(240_000);
  const procs: Proc[] = [];
  let db: Db | undefined;
  let receiver: Receiver | undefined;
  let temporal: Client | undefined;
  let bundleDir = '';
  let workerEnv: (i: number) => NodeJS.ProcessEnv;
  let bundleSha = '';
  const apiUrls: string[] = [];

  before(async function () {
    this.timeout(180_000);
    bundleDir = fs.mkdtempSync(path.join(os.tmpdir(), 'acp-prodshape-'));
    const [appUrl, temporalUrl] = await Promise.all([createTestDatabase('prodshape'), createTestDatabase('prodshape_temporal')]);
    db = createDb(appUrl);
    // Migrated here while the bundle builds; the processes find nothing to apply.
    const [, bundle] = await Promise.all([migrate(db), buildWorkflowBundle(path.join(bundleDir, 'workflow-bundle.js'))]);
    bundleSha = bundle.sha256.slice(0, 12);
    receiver = await startReceiver();

    const temporalPort = await freePort();
    const devserver = npmRun('devserver', 'devserver', ['--port', String(temporalPort), '--db', temporalUrl, '--log-level', 'warn'], { ...process.env });
    procs.push(devserver);

    // Production mode with this run's secrets (test/hooks.ts puts them in the environment): every process
    // signs and verifies with the same ones, nothing is generated under a data directory.
    for (const s of SERVICE_SECRETS) expect(process.env[s.name], s.name).to.be.a('string');
    const base: NodeJS.ProcessEnv = { ...process.env };
    for (const k of ['PORT', 'METRICS_PORT', 'TEMPORAL_SDK_METRICS_PORT', 'PUBLIC_BASE_URL', 'SANDBOX_CALLBACK_URL', 'DATA_DIR', 'KEY_BRAND_PREFIX', 'OTEL_EXPORTER_OTLP_ENDPOINT', 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT', 'OTEL_TRACES_EXPORTER']) delete base[k];
    Object.assign(base, {
      NODE_ENV: 'production',
      DATABASE_URL: appUrl,
      TEMPORAL_ADDRESS: `127.0.0.1:${temporalPort}`,
      TEMPORAL_NAMESPACE: 'default',
      TEMPORAL_TASK_QUEUE: uniqueTaskQueue('prodshape'),
      HOST: '127.0.0.1',
      LOG_LEVEL: 'info',
      API_PROCESSES: '1',
      WORKER_PROCESSES: '1',
      WORKFLOW_BUNDLE_PATH: bundle.path,
      CARRIER_PROVIDER: 'sandbox',
      TELEPHONY_PROVIDER: 'sandbox',
      WEBHOOK_ALLOW_HTTP_HOSTS: '127.0.0.1',
      HTTP_ALLOW_PRIVATE_HOSTS: '127.0.0.1',
      SANDBOX_DIAL_LATENCY_MS: String(DIAL_LATENCY_MS),
      SANDBOX_CARRIER_DELAY_MS: '2500',
      SANDBOX_TELEPHONY_DELAY_MS: '200',
    });
    const ports = [await freePort(), await freePort()];
    apiUrls.push(...ports.map((p) => `http://127.0.0.1:${p}`));
    // Worker i's sandbox callbacks reach API i: carrier callbacks arrive at both API processes.
    workerEnv = (i) => ({ ...base, PUBLIC_BASE_URL: apiUrls[i] });

    await started(devserver, (p) => p.stdout.includes('Temporal dev server listening on'));
    temporal = new Client({ connection: await Connection.connect({ address: `127.0.0.1:${temporalPort}` }) });
    const apis = ports.map((port, i) => npmRun(`api-${i}`, 'start:api', [], { ...base, PORT: String(port), PUBLIC_BASE_URL: apiUrls[i] }));
    const workers = [0, 1].map((i) => npmRun(`worker-${i}`, 'start:worker', [], workerEnv(i)));
    procs.push(...apis, ...workers);
    await Promise.all([
      ...apis.map((a) => started(a, (p) => p.lines.some((l) => l.msg === 'API listening'))),
      ...workers.map((w) => started(w, (p) => p.lines.some((l) => l.msg === 'worker running'))),
    ]);
  });

  after(async function () {
    this.timeout(60_000);
    await temporal?.connection.close();
    await Promise.all(procs.map((p) => killGroup(p, 'SIGKILL')));
    await receiver?.close();
    await db?.destroy();
    if (bundleDir) fs.rmSync(bundleDir, { recursive: true, force: true });
  });

  it('dials every contact once, activates the registration and delivers every webhook once across a SIGKILLed worker', async () => {
    const appDb = db!;
    const rec = receiver!;
    const org = await createOrganization(appDb, 'Production Shape Co');
    const { key, info } = await createSecretKey(appDb, org.id, { brand: 'acp', scopes: NON_RESERVED_SCOPES, rateLimitPoints: 1_000_000, rateLimitWindowSeconds: 60 });
    // Every request goes to the other API process than the one before.
    let turn = 0;
    const call = (method: string, p: string, json?: unknown) => callWithKey(`${apiUrls[turn++ % 2]}/api/v1`, key, method, p, json);
    const ok = async (method: string, p: string, json: unknown, status: number) => {
      const r = await call(method, p, json);
      expect(r.status, `${method} ${p}: ${JSON.stringify(r.body)}`).to.equal(status);
      return r.body.data;
    };

    // Webhooks to the loopback receiver.
    const endpoint = await ok('POST', '/webhooks', { url: rec.url, eventTypes: EVENT_TYPES }, 201);
    rec.secret = endpoint.secret;

    // A published agent (publishing has its own tests), a caller-id number and an imported list.
    const agentId = (await createAgent(appDb, org.id, { name: 'Dialer' })).id;
    const versionId = newId('ver');
    await appDb('agent_versions').insert({ id: versionId, org_id: org.id, agent_id: agentId, number: 1, snapshot: '{}', checksum: 'x', draft_version: 1, published_by: 'test', idempotency_key: 'k', request_hash: 'h' });
    await appDb('agents').where({ org_id: org.id, id: agentId }).update({ published_version_id: versionId });
    const offered = (await ok('GET', '/numbers/search?areaCode=415&limit=5', undefined, 200)).items as { e164: string }[];
    const numberId = (await ok('POST', '/numbers/purchase', { e164: offered[0].e164 }, 200)).id as string;
    // Numbers ending 0003 are busy at the sandbox (one dial each with maxAttempts 1, no conversation).
    const zone = noonZone();
    const numbers = Array.from({ length: CONTACTS }, (_, i) => `+1${['212', '312', '415', '617'][i % 4]}${320 + Math.floor(i / 4)}0003`);
    const fd = new FormData();
    fd.append('file', new Blob([['phone,time_zone', ...numbers.map((n) => `${n},${zone}`)].join('\n')], { type: 'text/csv' }), 'contacts.csv');
    const uploaded = await fetch(`${apiUrls[turn++ % 2]}/api/v1/uploads`, { method: 'POST', headers: { authorization: `Bearer ${key}` }, body: fd });
    expect(uploaded.status).to.equal(201);
    const fileId = ((await uploaded.json()) as any).data.id as string;
    const list = await ok('POST', '/contact-lists', { name: 'Everyone' }, 201);
    await ok('POST', `/contact-lists/${list.id}/imports`, { fileId }, 202);
    const imported = await until(async () => ((l) => (l.import.status === 'ready' || l.import.status === 'failed' ? l : undefined))((await call('GET', `/contact-lists/${list.id}`)).body.data), 60_000, 'the import');
    expect(imported.import).to.include({ status: 'ready', accepted: CONTACTS });

    // The registration and the campaign run at the same time.
    await ok('PUT', '/sms', COMPLETE_BRAND, 200);
    await ok('POST', '/sms/submit', undefined, 200);
    const campaign = await ok('POST', '/campaigns', { name: 'Everyone', agentId, callerIdNumberId: numberId, contactListId: list.id, purpose: 'informational', maxConcurrentCalls: MAX_CONCURRENT_CALLS, maxAttempts: 1 }, 201);
    await ok('POST', `/campaigns/${campaign.id}/launch`, undefined, 200);

    // The kill: once dialing is under way, at a moment no webhook delivery is between its request and its
    // record (a receiver's answer the dead worker never recorded would be sent again: Standard Webhooks
    // deliveries are at least once, and receivers deduplicate by webhook-id).
    const quiet = async () => {
      const events = Number((await appDb('events').where({ org_id: org.id }).whereIn('type', EVENT_TYPES).count<{ count: string }[]>('* as count'))[0].count);
      const open = Number((await appDb('webhook_deliveries').where({ org_id: org.id }).whereIn('status', ['pending', 'retrying']).count<{ count: string }[]>('* as count'))[0].count);
      return open === 0 && new Set(rec.received.map((r) => r.id)).size === events;
    };
    // The victim is a worker holding started dials (the frontend's pending activities name the worker,
    // `pid@host`, the SDK's default identity), so the kill lands on dials in flight.
    const workerPids = new Map(procs.filter((p) => p.name.startsWith('worker-')).map((p) => [p.name, p.lines.find((l) => l.msg === 'worker running')!.pid!]));
    const heldDials = async () => {
      const { raw } = await temporal!.workflow.getHandle(workflowIds.campaign(campaign.id)).describe();
      const started = (raw.pendingActivities ?? []).filter((a) => a.activityType?.name === 'outboundDial' && a.state === STARTED);
      return [...workerPids].map(([name, pid]) => ({ name, held: started.filter((a) => a.lastWorkerIdentity?.startsWith(`${pid}@`)).length })).sort((a, b) => b.held - a.held)[0];
    };
    const atKill = await until(
      async () => {
        const c = (await call('GET', `/campaigns/${campaign.id}`)).body.data;
        if (c.counters.dials < KILL_AFTER_DIALS || !(await quiet())) return undefined;
        const victim = await heldDials();
        return victim.held > 0 ? { dials: c.counters.dials as number, ...victim } : undefined;
      },
      60_000,
      `${KILL_AFTER_DIALS} dials, one worker holding some, and no webhook delivery in flight`,
      10,
    );
    const victim = procs.find((p) => p.name === atKill.name)!;
    await killGroup(victim, 'SIGKILL');
    expect(victim.child.signalCode).to.equal('SIGKILL');
    expect(atKill.dials, 'the campaign was still dialing at the kill').to.be.lessThan(CONTACTS);
    // Started again, as a supervisor would: it resumes the sandbox carrier callbacks owed from before.
    const restarted = npmRun(`${victim.name} restarted`, 'start:worker', [], workerEnv(Number(victim.name.slice(-1))));
    procs.push(restarted);
    await started(restarted, (p) => p.lines.some((l) => l.msg === 'worker running'));

    // A dial lost with the dead worker is retried after its heartbeat timeout (20 s).
    const done = await until(async () => ((c) => (c.status === 'completed' ? c : undefined))((await call('GET', `/campaigns/${campaign.id}`)).body.data), 120_000, 'the campaign to complete', 250);
    expect(done.counters).to.include({ total: CONTACTS, dials: CONTACTS });
    const registration = await until(async () => ((r) => (r.status === 'active' || r.status === 'failed' ? r : undefined))((await call('GET', '/sms')).body.data), 60_000, 'the registration to settle', 250);
    expect(registration).to.include({ status: 'active', providerStatus: 'CAMPAIGN_PROVISIONED' });
    await until(async () => ((await quiet()) && rec.received.some((r) => r.type === 'campaign.updated' && r.data.status === 'completed') ? true : undefined), 60_000, 'the last webhook deliveries', 100);

    // Every contact dialed exactly once: the sandbox places every dial it receives.
    const dials = await sandboxDials(appDb, org.id);
    expect(dials, 'dials placed').to.have.length(CONTACTS);
    expect(new Set(dials.map((d) => d.to)).size).to.equal(CONTACTS);
    expect(dials.every((d) => d.reference.endsWith(':1'))).to.equal(true);
    const intents = await listIntents(appDb, org.id, { kind: 'dial' });
    expect(intents.filter((i) => i.status === 'done')).to.have.length(CONTACTS);

    // Every event delivered exactly once, signed; the registration's and the campaign's.
    const eventIds = (await appDb('events').where({ org_id: org.id }).whereIn('type', EVENT_TYPES).select('id')).map((e: { id: string }) => e.id).sort();
    const receivedIds = rec.received.map((r) => r.id).sort();
    expect(receivedIds, 'one request per webhook-id').to.deep.equal([...new Set(receivedIds)]);
    expect(receivedIds).to.deep.equal(eventIds);
    expect(rec.received.every((r) => r.verified), 'signatures verified').to.equal(true);
    expect(rec.received.some((r) => r.type === 'sms.registration.updated' && r.data.status === 'active')).to.equal(true);

    // Every worker process, the restarted one included, ran the bundle built once.
    const workerProcs = procs.filter((p) => p.name.startsWith('worker-'));
    expect(workerProcs).to.have.length(3);
    for (const w of workerProcs) expect(w.lines.find((l) => l.msg === 'workflow code')?.sha256, w.name).to.equal(bundleSha);

    // Both API processes served this organization's requests.
    const served = procs.filter((p) => p.name.startsWith('api-')).map((p) => p.lines.filter((l) => l.msg === 'request' && l.keyId === info.id).length);
    expect(served.every((n) => n > 0), `requests per API process: ${served.join(', ')}`).to.equal(true);
  });
});
