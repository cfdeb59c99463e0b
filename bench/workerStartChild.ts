/**
 * Child process of the `worker-start` bench section: creates one worker against `BENCH_TEMPORAL_ADDRESS`,
 * bundling workflows/index.ts at start or loading `BENCH_WORKFLOW_BUNDLE` (a prebuilt bundle), and prints
 * one JSON line: ms from before `Worker.create` until it resolved, and the process's RSS and heap then (MB).
 */
import path from 'node:path';
import { NativeConnection, Worker } from '@temporalio/worker';
import { installTemporalRuntime, WORKFLOW_BUNDLER_OPTIONS } from '../worker';

async function main(): Promise<void> {
  installTemporalRuntime();
  const connection = await NativeConnection.connect({ address: process.env.BENCH_TEMPORAL_ADDRESS! });
  const prebuilt = process.env.BENCH_WORKFLOW_BUNDLE;
  const started = performance.now();
  const worker = await Worker.create({
    connection,
    taskQueue: `worker-start-${process.pid}`,
    ...(prebuilt ? { workflowBundle: { codePath: prebuilt } } : { workflowsPath: path.join(__dirname, '..', 'workflows', 'index.ts'), bundlerOptions: WORKFLOW_BUNDLER_OPTIONS }),
  });
  const ms = performance.now() - started;
  const mem = process.memoryUsage();
  process.stdout.write(JSON.stringify({ ms, rssMb: mem.rss / 1048576, heapMb: mem.heapUsed / 1048576 }) + '\n');
  void worker; // created, never run: the figure is what a start costs before polling
  process.exit(0);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
