/**
 * `worker-start` section: a worker's start with the workflow bundle built once at build time (`npm run
 * build:workflows`, what `start:worker` loads) against bundling workflows/index.ts at start (what `npm start`
 * does). Each start is a fresh process (bench/workerStartChild.ts) against an in-memory dev server; prints the
 * median time to a created worker, the RSS and heap after it, and the ratio (docs/benchmarks.md).
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startDevServer } from '../devserver';
import { buildWorkflowBundle } from '../scripts/build-workflow-bundle';

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

/** Runs the section; `BENCH_WORKER_STARTS` starts of each kind (default 3). */
export async function runWorkerStartBench(): Promise<void> {
  const runs = Number(process.env.BENCH_WORKER_STARTS || 3);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'acp-bundle-'));
  const server = await startDevServer({ log: () => undefined });
  try {
    const built = await buildWorkflowBundle(path.join(dir, 'workflow-bundle.js'));
    console.log(`prebuilt bundle: ${(built.bytes / 1024).toFixed(0)} KiB, sha256 ${built.sha256.slice(0, 12)}`);
    // Asynchronously: the dev server answering the child runs in this process's event loop.
    const start = async (bundle?: string) => {
      const { stdout } = await promisify(execFile)(process.execPath, ['--import', 'tsx', path.join(__dirname, 'workerStartChild.ts')], {
        env: { ...process.env, BENCH_TEMPORAL_ADDRESS: server.address, ...(bundle ? { BENCH_WORKFLOW_BUNDLE: bundle } : {}) },
        encoding: 'utf8',
      });
      return JSON.parse(stdout.trim().split('\n').pop()!) as { ms: number; rssMb: number; heapMb: number };
    };
    const results: Record<string, { ms: number; rssMb: number; heapMb: number }[]> = { 'bundled at start': [], prebuilt: [] };
    for (let i = 0; i < runs; i++) {
      results['bundled at start'].push(await start());
      results.prebuilt.push(await start(built.path));
    }
    for (const [kind, rs] of Object.entries(results)) {
      console.log(`${kind.padEnd(17)} worker created in ${median(rs.map((r) => r.ms)).toFixed(0)} ms (median of ${runs}), RSS ${median(rs.map((r) => r.rssMb)).toFixed(0)} MB, heap ${median(rs.map((r) => r.heapMb)).toFixed(0)} MB`);
    }
    const ratio = median(results['bundled at start'].map((r) => r.ms)) / median(results.prebuilt.map((r) => r.ms));
    console.log(`prebuilt start is ${ratio.toFixed(1)}x faster (target >= 3x)`);
  } finally {
    await server.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}
