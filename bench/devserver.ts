/**
 * Dev server benchmark (`npm run bench:devserver`): completed workflows/s for a workflow with one
 * activity and one signal at 1, 10 and 100 concurrent starters, p99 start-to-close latency, and
 * time per history event at ~100 and ~10,000 events. Server, worker and client run in this
 * process; a last run puts the server in a child process to split CPU per workflow between the
 * server and the SDK worker + client. `--db <url>` (or DATABASE_URL) benchmarks with Postgres
 * write-through instead of memory; `--proto-only` runs only the protocol-level (server capacity)
 * part, `--sdk-only` only the SDK part, `--split-only` only the out-of-process CPU split (the dev
 * server's own CPU per completed workflow), `--memory-only` only what the server holds per closed run, its history
 * packed (the default) and held decoded, measured in the same run.
 */
import os from 'node:os';
import path from 'node:path';
import v8 from 'node:v8';
import vm from 'node:vm';

import { Client, Connection } from '@temporalio/client';
import { bundleWorkflowCode, NativeConnection, Worker } from '@temporalio/worker';
import { startDevServer } from '../devserver';
import * as activities from '../test/devserver/workflows/activities';
import { installBenchRuntime, processCpu } from './harness';
import { runBench } from './entry';
import { startDevServerChild, stopChild } from './children';
import { grpcCompression } from '../temporal.config';

const argDb = process.argv.indexOf('--db');
const databaseUrl = argDb > 0 ? process.argv[argDb + 1] : process.env.DATABASE_URL;

/**
 * Server capacity without the SDK's per-workflow cost: a minimal protocol-level worker (raw
 * WorkflowService calls) runs the same activity + signal workflow shape.
 */
async function protocolLevel(client: Client, taskQueue: string, starters: number, total: number): Promise<string> {
  const svc = client.workflowService;
  const ns = 'default';
  let stop = false;
  const EVENT = { ACT_SCHEDULED: 10, ACT_COMPLETED: 12, SIGNALED: 26 };
  const wfPoller = async () => {
    while (!stop) {
      const t = await svc.pollWorkflowTaskQueue({ namespace: ns, taskQueue: { name: taskQueue }, identity: 'bench' }).catch(() => ({ taskToken: undefined, history: undefined }));
      if (!t.taskToken?.length) continue;
      const types = new Set((t.history?.events ?? []).map((e) => e.eventType));
      const commands: any[] = [];
      if (types.has(EVENT.ACT_COMPLETED) && types.has(EVENT.SIGNALED)) {
        commands.push({ commandType: 4, completeWorkflowExecutionCommandAttributes: {} });
      } else if (!types.has(EVENT.ACT_SCHEDULED)) {
        commands.push({
          commandType: 1,
          scheduleActivityTaskCommandAttributes: { activityId: '1', activityType: { name: 'greet' }, startToCloseTimeout: { seconds: 10 } },
        });
      }
      await svc.respondWorkflowTaskCompleted({ namespace: ns, taskToken: t.taskToken, commands, identity: 'bench' });
    }
  };
  const actPoller = async () => {
    while (!stop) {
      const t = await svc.pollActivityTaskQueue({ namespace: ns, taskQueue: { name: taskQueue }, identity: 'bench' }).catch(() => ({ taskToken: undefined }));
      if (!t.taskToken?.length) continue;
      await svc.respondActivityTaskCompleted({ namespace: ns, taskToken: t.taskToken, identity: 'bench' });
    }
  };
  const pollers = [...Array.from({ length: 8 }, wfPoller), ...Array.from({ length: 8 }, actPoller)];
  const lat: number[] = [];
  let left = total;
  let n = 0;
  const t0 = performance.now();
  const cpu0 = process.cpuUsage();
  await Promise.all(
    Array.from({ length: starters }, async () => {
      while (left-- > 0) {
        const s = performance.now();
        const h = await client.workflow.start('protocolLevel', { taskQueue, workflowId: `proto-${taskQueue}-${n++}` });
        await h.signal('finish', 'ok');
        await h.result();
        lat.push(performance.now() - s);
      }
    }),
  );
  const secs = (performance.now() - t0) / 1000;
  const cpu = process.cpuUsage(cpu0);
  stop = true;
  // Wake the idle long-polls so the loops end.
  for (let i = 0; i < 8; i++) await client.workflow.start('protocolLevel', { taskQueue, workflowId: `proto-${taskQueue}-wake-${i}` });
  lat.sort((a, b) => a - b);
  void pollers;
  return (
    `protocol-level worker, starters=${String(starters).padStart(3)}  workflows=${lat.length}  ${(lat.length / secs).toFixed(0).padStart(5)} completed/s  ` +
    `p50=${pct(lat, 50).toFixed(1)}ms  p99=${pct(lat, 99).toFixed(1)}ms  ` +
    `cpu=${((cpu.user + cpu.system) / 1000 / lat.length).toFixed(2)}ms/workflow (server + raw worker + client, one process)`
  );
}

/**
 * Worker tuning for throughput on two cores. SDK 1.24 ignores `maxConcurrentWorkflowTaskPolls`
 * and `maxConcurrentActivityTaskPolls` (its option defaults only read the `*PollerBehavior`
 * fields and otherwise poll 10 at a time), so the poll counts are set through the poller
 * behaviours. With the default non-sticky ratio (0.2) only 2 of 10 polls take first workflow tasks
 * from the normal queue and ~70 of them wait there at 100 starters; a ratio of 0.5 and a second
 * workflow thread keep both cores busy.
 */
const BENCH_WORKER_OPTIONS = {
  maxConcurrentWorkflowTaskExecutions: 100,
  maxConcurrentActivityTaskExecutions: 200,
  maxCachedWorkflows: 2000,
  workflowTaskPollerBehavior: { type: 'simple-maximum', maximum: 20 },
  activityTaskPollerBehavior: { type: 'simple-maximum', maximum: 20 },
  nonStickyToStickyPollRatio: 0.5,
  workflowThreadPoolSize: 2,
} as const;

/**
 * Where the CPU goes: the dev server runs in a child process, so its CPU per workflow is measured
 * apart from the SDK worker's and client's (this process). Both figures are per completed workflow
 * of the activity + signal shape at 100 starters.
 */
async function cpuAttribution(workflowBundle: { code: string }, starters: number, total: number): Promise<string> {
  const { child, address } = await startDevServerChild();
  try {
    const connection = await Connection.connect({ address });
    // As the service's worker connects (worker.ts): TEMPORAL_GRPC_COMPRESSION=gzip measures the SDK's default.
    const native = await NativeConnection.connect({ address, grpcCompression: grpcCompression(address) });
    const client = new Client({ connection });
    const taskQueue = `bench-split-${Date.now()}`;
    const worker = await Worker.create({ connection: native, taskQueue, workflowBundle, activities, ...BENCH_WORKER_OPTIONS });
    let line = '';
    await worker.runUntil(async () => {
      let seq = 0;
      const one = () => runActivityAndSignal(client, taskQueue, `split-${seq++}`);
      await Promise.all(Array.from({ length: 100 }, one)); // warm-up
      let left = total;
      const t0 = performance.now();
      const own0 = process.cpuUsage();
      const srv0 = processCpu(child.pid!)?.ms;
      await Promise.all(Array.from({ length: starters }, async () => {
        while (left-- > 0) await one();
      }));
      const secs = (performance.now() - t0) / 1000;
      const own = process.cpuUsage(own0);
      const srv1 = processCpu(child.pid!)?.ms;
      const ownMs = (own.user + own.system) / 1000 / total;
      const srvMs = srv0 === undefined || srv1 === undefined ? NaN : (srv1 - srv0) / total;
      line =
        `CPU per workflow, server out of process (starters=${starters}, ${(total / secs).toFixed(0)} completed/s): ` +
        `SDK worker + client ${ownMs.toFixed(2)} ms, dev server ${srvMs.toFixed(2)} ms; ` +
        `the SDK side alone caps ${os.cpus().length} cores at ${((os.cpus().length * 1000) / ownMs).toFixed(0)} workflows/s`;
    });
    await connection.close();
    await native.close();
    return line;
  } finally {
    await stopChild(child);
  }
}

/** Starts one run of the measured shape (an activity and a signal), signals it and waits for its result. */
async function runActivityAndSignal(client: Client, taskQueue: string, workflowId: string): Promise<void> {
  const h = await client.workflow.start('activityAndSignal', { taskQueue, workflowId, args: ['bench'] });
  await h.signal('finish', 'ok');
  await h.result();
}

function pct(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? 0;
}

/**
 * Bytes a dev server holds per closed run (V8 heap, and the external and array-buffer memory besides it) after `runs`
 * protocol-level workflows (activity + signal, 20 starters), on a fresh in-memory server whose closed runs' histories
 * are packed `packDelayMs` after the close (devserver/engine/packedHistory.ts); measured after full garbage
 * collections, so only what the server keeps is counted.
 */
async function memoryPerRun(packDelayMs: number, runs: number): Promise<string> {
  v8.setFlagsFromString('--expose-gc');
  const gc = vm.runInNewContext('gc') as () => void;
  const server = await startDevServer({ historyPackDelayMs: packDelayMs });
  const connection = await Connection.connect({ address: server.address });
  const client = new Client({ connection });
  gc();
  const m0 = process.memoryUsage();
  await protocolLevel(client, `memory-${packDelayMs}`, 20, runs);
  await new Promise((r) => setTimeout(r, Math.min(packDelayMs, 1_000) + 500));
  gc();
  gc();
  const m1 = process.memoryUsage();
  await connection.close();
  await server.stop();
  const kb = (bytes: number) => (bytes / runs / 1024).toFixed(1);
  const off = m1.external + m1.arrayBuffers - m0.external - m0.arrayBuffers;
  return `memory per closed run, history ${packDelayMs < 1_000 ? 'packed' : 'held decoded'} (${runs} runs): heap ${kb(m1.heapUsed - m0.heapUsed)} KB, external and array buffers ${kb(off)} KB`;
}

async function main(): Promise<void> {
  if (process.argv.includes('--memory-only') || !process.argv.some((a) => a.endsWith('-only'))) {
    // First, in a process that has run nothing else: packed (at once) and held decoded (never packed during the run).
    for (const delay of [0, 2_000_000_000]) process.stdout.write((await memoryPerRun(delay, 3000)) + '\n');
    if (process.argv.includes('--memory-only')) return;
  }
  installBenchRuntime();
  const server = await startDevServer({ databaseUrl });
  const connection = await Connection.connect({ address: server.address });
  const native = await NativeConnection.connect({ address: server.address });
  const client = new Client({ connection });
  const workflowBundle = await bundleWorkflowCode({
    workflowsPath: path.join(__dirname, '../test/devserver/workflows/index.ts'),
    logger: { trace() {}, debug() {}, info() {}, warn() {}, error() {}, log() {} } as never,
  });
  const taskQueue = `bench-${Date.now()}`;
  let seq = 0;
  const report: string[] = [];
  if (process.argv.includes('--split-only')) {
    // Only the out-of-process split: the dev server's own CPU per completed workflow.
    const line = await cpuAttribution(workflowBundle, 100, 2000);
    process.stdout.write(line + '\n');
    await connection.close();
    await native.close();
    await server.stop();
    return;
  }
  for (const [starters, total] of process.argv.includes('--sdk-only')
    ? []
    : ([
        [1, 300],
        [10, 2000],
        [100, 4000],
      ] as const)) {
    report.push(await protocolLevel(client, `${taskQueue}-proto-${starters}`, starters, total));
    process.stdout.write(report[report.length - 1] + '\n');
  }
  if (process.argv.includes('--proto-only')) {
    await connection.close();
    await native.close();
    await server.stop();
    return;
  }
  const worker = await Worker.create({ connection: native, taskQueue, workflowBundle, activities, ...BENCH_WORKER_OPTIONS });
  await worker.runUntil(async () => {
    const one = async (): Promise<number> => {
      const t0 = performance.now();
      await runActivityAndSignal(client, taskQueue, `bench-${seq++}`);
      return performance.now() - t0;
    };
    // warm-up
    await Promise.all(Array.from({ length: 20 }, one));
    for (const [starters, total] of [
      [1, 200],
      [10, 1000],
      [100, 2000],
    ] as const) {
      const lat: number[] = [];
      let left = total;
      const t0 = performance.now();
      const cpu0 = process.cpuUsage();
      await Promise.all(
        Array.from({ length: starters }, async () => {
          while (left-- > 0) lat.push(await one());
        }),
      );
      const secs = (performance.now() - t0) / 1000;
      const cpu = process.cpuUsage(cpu0);
      const cpuMs = (cpu.user + cpu.system) / 1000;
      lat.sort((a, b) => a - b);
      report.push(
        `SDK worker,            starters=${String(starters).padStart(3)}  workflows=${lat.length}  ${(lat.length / secs).toFixed(0).padStart(5)} completed/s  ` +
          `p50=${pct(lat, 50).toFixed(1)}ms  p99=${pct(lat, 99).toFixed(1)}ms  ` +
          `cpu=${(cpuMs / lat.length).toFixed(2)}ms/workflow (${((cpuMs / 1000 / secs) * 100).toFixed(0)}% of one core)`,
      );
      process.stdout.write(report[report.length - 1] + '\n');
    }
    for (const signals of [90, 9000]) {
      const workflowId = `bench-events-${signals}`;
      const t0 = performance.now();
      const h = await client.workflow.start('manyEvents', { taskQueue, workflowId, args: [signals] });
      for (let i = 0; i < signals; i++) await h.signal('add', 1);
      await h.result();
      const ms = performance.now() - t0;
      const d = await h.describe();
      const events = d.historyLength;
      report.push(`history events=${events}  ${((ms * 1000) / events).toFixed(1)} µs/event  (total ${ms.toFixed(0)} ms)`);
      process.stdout.write(report[report.length - 1] + '\n');
    }
  });
  if (process.platform === 'linux') {
    report.push(await cpuAttribution(workflowBundle, 100, 2000));
    process.stdout.write(report[report.length - 1] + '\n');
  }
  await connection.close();
  await native.close();
  await server.stop();
  process.stdout.write(`\ndev server benchmark (${databaseUrl ? 'Postgres write-through' : 'in-memory'}):\n${report.join('\n')}\n`);
}

runBench('npm run bench:devserver', main);
