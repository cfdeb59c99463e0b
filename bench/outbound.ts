/**
 * Outbound voice benchmark (docs/benchmarks.md). Everything in one process: an embedded Postgres, the embedded
 * Temporal dev server (in memory), the real API over a socket and a worker with the real outbound
 * activities and the sandbox telephony at zero dial latency. Prints:
 *  1. import + scrub: a generated CSV of BENCH_OUTBOUND_ROWS rows (default 100,000; ~1% invalid, ~1%
 *     duplicates) uploaded with POST /uploads and imported with POST /contact-lists/{id}/imports; the
 *     time from the import request until the list is `ready` (rows/s and counts by outcome);
 *  2. launch: POST /campaigns/{id}/launch of a campaign over that list (one attempt per accepted contact,
 *     one INSERT … SELECT, and the workflow start): the answer's latency;
 *  3. dialing: throughput of `campaign/{id}` at maxConcurrentCalls BENCH_OUTBOUND_CONCURRENCY (default
 *     200), measured over BENCH_OUTBOUND_DIAL_SECONDS (default 20) from the first dial, then the
 *     campaign is cancelled. Every contact carries an explicit zone where it is about noon now, so the
 *     calling window is open whatever the wall clock says.
 * Targets on this machine (docs/benchmarks.md): import+scrub < 10 s, launch < 5 s, ≥ 200 dials/s.
 *
 * Run: `npx tsx bench/outbound.ts` (or `runOutboundBench()` from bench/index.ts with BENCH_ONLY=outbound
 * once the lead adds the section). Setup (organization, agent, number, CSV generation, upload) is not timed.
 */
import { Worker } from '@temporalio/worker';
import { createOrganization } from '../db/repositories/organizations';
import { createSecretKey } from '../db/repositories/apiKeys';
import { createAgent } from '../db/repositories/agents';
import { newId } from '../db/ids';
import { NON_RESERVED_SCOPES } from '../domain/scopes';
import { taskQueueName } from '../temporal.config';
import { benchCaller, bundleBenchWorkflows, startBenchApi, startBenchStack } from './harness';
import { createOutboundActivities } from '../activities/outbound';
import { runBench } from './entry';

const ROWS = Number(process.env.BENCH_OUTBOUND_ROWS ?? 100_000);
const CONCURRENCY = Number(process.env.BENCH_OUTBOUND_CONCURRENCY ?? 200);
const DIAL_SECONDS = Number(process.env.BENCH_OUTBOUND_DIAL_SECONDS ?? 20);
const PHASE_LIMIT_MS = 300_000;
const AREA_CODES = ['212', '312', '415', '206', '305', '214', '617', '303', '404', '702'];

/** The generated CSV: valid numbers mostly, ~1% unreadable, ~1% repeated. */
function generateCsv(rows: number, zone: string): string {
  const lines = ['phone,first_name,last_name,time_zone,account'];
  for (let i = 0; i < rows; i++) {
    let p: string;
    if (i % 100 === 17) p = 'n/a';
    else if (i % 100 === 42 && i > 0) p = lines[i].split(',')[0]; // repeat the previous row's number
    else p = `+1${AREA_CODES[i % AREA_CODES.length]}${200 + Math.floor(i / 10_000)}${String(i % 10_000).padStart(4, '0')}`;
    if (p.endsWith('0003') || p.endsWith('0004') || p.endsWith('0005') || p.endsWith('0002')) p = p.slice(0, -4) + '0009'; // answered, not a magic outcome
    lines.push(`${p},First${i},Last${i},${zone},ACC-${i}`);
  }
  return lines.join('\n') + '\n';
}

/** Runs the outbound section and prints its figures. */
export async function runOutboundBench(): Promise<void> {
  const stack = await startBenchStack('outbound');
  const { db, client, native } = stack;
  const workers: Worker[] = [];
  const running: Array<Promise<void>> = [];
  let closeApi: (() => Promise<void>) | undefined;
  try {
    const { api, config, logger, taskQueue } = await startBenchApi(stack, 'outbound');
    closeApi = () => api.close();
    // The import runs on the bulk queue, the dialer and its dials on the main queue (temporal.config.ts WORKFLOW_ROUTES).
    const workflowBundle = await bundleBenchWorkflows();
    const activities = createOutboundActivities({ db, config, logger }, { telephonyOptions: { dialLatencyMs: 0 } });
    for (const queue of ['main', 'bulk'] as const) {
      const w = await Worker.create({ connection: native, taskQueue: taskQueueName(taskQueue, queue), workflowBundle, activities, maxConcurrentActivityTaskExecutions: Math.max(CONCURRENCY * 2, 100) });
      workers.push(w);
      running.push(w.run());
    }

    const org = await createOrganization(db, 'Bench Outbound');
    const { key } = await createSecretKey(db, org.id, { brand: config.keyBrandPrefix, scopes: NON_RESERVED_SCOPES });
    const call = benchCaller(api.baseUrl, key);
    const agentId = (await createAgent(db, org.id, { name: 'Bench agent' })).id;
    const versionId = newId('ver');
    await db('agent_versions').insert({ id: versionId, org_id: org.id, agent_id: agentId, number: 1, snapshot: '{}', checksum: 'x', draft_version: 1, published_by: 'bench', idempotency_key: 'k', request_hash: 'h' });
    await db('agents').where({ id: agentId }).update({ published_version_id: versionId });
    const offered = (await call('GET', '/numbers/search?areaCode=415')).body.data.items;
    const numberId = (await call('POST', '/numbers/purchase', { e164: offered[0].e164 })).body.data.id;

    const offset = 12 - new Date().getUTCHours();
    const noonZone = offset === 0 ? 'Etc/GMT' : `Etc/GMT${offset > 0 ? '-' : '+'}${Math.abs(offset)}`;
    const csv = generateCsv(ROWS, noonZone);
    const fd = new FormData();
    fd.append('file', new Blob([csv], { type: 'text/csv' }), 'bench.csv');
    const up = await fetch(`${api.baseUrl}/uploads`, { method: 'POST', headers: { authorization: `Bearer ${key}` }, body: fd });
    const fileId = ((await up.json()) as any).data.id;
    const list = (await call('POST', '/contact-lists', { name: 'Bench list' })).body.data;

    // 1. import + scrub
    const t0 = performance.now();
    const imp = await call('POST', `/contact-lists/${list.id}/imports`, { fileId });
    if (imp.status !== 202) throw new Error(`import refused: ${JSON.stringify(imp.body)}`);
    const acceptedAt = performance.now() - t0;
    let done: any;
    for (;;) {
      done = (await call('GET', `/contact-lists/${list.id}`)).body.data;
      if (done.import.status === 'ready' || done.import.status === 'failed') break;
      if (performance.now() - t0 > PHASE_LIMIT_MS) throw new Error(`import stuck at ${JSON.stringify(done.import)}`);
      await new Promise((r) => setTimeout(r, 50));
    }
    const importMs = performance.now() - t0;
    console.log(`import+scrub: ${ROWS} rows (${(csv.length / 1e6).toFixed(1)} MB) in ${(importMs / 1000).toFixed(2)} s = ${Math.round(ROWS / (importMs / 1000))} rows/s (request answered 202 in ${acceptedAt.toFixed(0)} ms, incl. the up-front CSV check); status ${done.import.status}; counts ${JSON.stringify(done.import.counts)}`);

    // 2. launch
    const camp = (await call('POST', '/campaigns', { name: 'Bench', agentId, callerIdNumberId: numberId, contactListId: list.id, purpose: 'informational', maxConcurrentCalls: CONCURRENCY, maxAttempts: 1 })).body.data;
    const t1 = performance.now();
    const launch = await call('POST', `/campaigns/${camp.id}/launch`);
    const launchMs = performance.now() - t1;
    console.log(`launch: ${launch.body.data?.counters?.total ?? '?'} attempts written and campaign/${camp.id} started in ${(launchMs / 1000).toFixed(2)} s (status ${launch.status})`);

    // 3. dialing
    const dials = async () => Number((await db('sandbox_dials').where({ org_id: org.id }).count<{ count: string }[]>('* as count'))[0].count);
    const firstAt = performance.now();
    while ((await dials()) === 0) {
      if (performance.now() - firstAt > 60_000) throw new Error('no dial within a minute');
      await new Promise((r) => setTimeout(r, 20));
    }
    const start = performance.now();
    const startCount = await dials();
    await new Promise((r) => setTimeout(r, DIAL_SECONDS * 1000));
    const endCount = await dials();
    const elapsed = (performance.now() - start) / 1000;
    console.log(`dialing: ${endCount - startCount} dials in ${elapsed.toFixed(1)} s = ${Math.round((endCount - startCount) / elapsed)} dials/s at maxConcurrentCalls ${CONCURRENCY}, zero sandbox latency (first dial ${((start - t1) / 1000).toFixed(2)} s after the launch request)`);
    const cancelled = await call('POST', `/campaigns/${camp.id}/cancel`);
    console.log(`cancel: counters ${JSON.stringify(cancelled.body.data?.counters)}`);
    await client.workflow.getHandle(`campaign/${camp.id}`).result().catch(() => undefined);
  } finally {
    for (const w of workers) w.shutdown();
    await Promise.allSettled(running);
    await closeApi?.();
    await stack.close();
  }
}

if (require.main === module) runBench('bench outbound', runOutboundBench);
