/**
 * The chat bench's API (bench/chat.ts, docs/benchmarks.md): `chatApi.ts <databaseUrl> <processes>` runs the real API
 * in this process tree as `npm run start:api` runs it (api/server.ts: with processes > 1, that many children on one
 * port through node:cluster; docs/operations.md "Scaling out"), each serving process with its own pool
 * (BENCH_CHAT_POOL, default the service's) and its own turn store (db/groupCommit.ts). Logs at BENCH_LOG_LEVEL
 * (default silent, as the chat figures of docs/benchmarks.md were measured; `info` writes production's request log
 * to /dev/null).
 *
 * Prints `PORT <n>` and then `PIDS <pid,…>` (the serving processes) once every process listens. The measured
 * window is set by SIGUSR2 to each serving process: the first signal starts it (the turn batches and, with
 * BENCH_COUNT_QUERIES, the statements are counted from then; with BENCH_PROFILE_DIR the V8 CPU profiler starts,
 * 100 µs sampling), the second ends it and writes `<BENCH_CHAT_STATS_DIR>/<pid>.json` ({@link WindowStats}) and the
 * profile (`<BENCH_PROFILE_DIR>/chat-<pid>-<time>.cpuprofile`). SIGUSR1 is left to Node's inspector. BENCH_NODE_FLAGS
 * (bench/chat.ts) passes V8 flags to every process of the tree.
 */
import fs from 'node:fs';
import path from 'node:path';
import { PerformanceObserver } from 'node:perf_hooks';
import { loadConfig } from '../config';
import { createDb } from '../db';
import { freePort } from '../db/embedded';
import { startApi } from '../api/server';
import { announceReady, createLogger, isClusterChild, logDestination, runProcesses } from '../runtime';
import { turnBatchStats } from '../services/conversations/service';
import { turnReadStats } from '../db/repositories/conversations';
import { countStatements, profileWindow } from './harness';
import { runBench } from './entry';

/** What one serving process did in the measured window: turn batches (group commits) and statements by their first words. */
export interface WindowStats {
  pid: number;
  batches: number;
  items: number;
  /** Milliseconds the batches were in flight, summed. */
  ms: number;
  /** Garbage-collection pauses of the main thread, ms summed (perf_hooks `gc` entries), and how many. */
  gcMs: number;
  gcs: number;
  /** The same pauses' ms by kind (`minor` scavenges, `major` mark-compacts, `incremental` marking steps, `weakcb`). */
  gcByKind: Record<string, number>;
  counted: [string, number][];
  /** The turn reads' batches (db/repositories/conversations.ts `getConversationWithHistory`, a group read) in the window. */
  reads: { batches: number; items: number; ms: number };
}

/** perf_hooks' `constants.NODE_PERFORMANCE_GC_*` values by name. */
const GC_KINDS: Record<number, string> = { 1: 'minor', 4: 'major', 8: 'incremental', 16: 'weakcb' };

async function serve(databaseUrl: string, port: number): Promise<number> {
  const level = process.env.BENCH_LOG_LEVEL ?? 'silent';
  const config = loadConfig({ port, host: '127.0.0.1', logLevel: level, rateLimitPoints: 10_000_000 });
  const db = createDb(databaseUrl, process.env.BENCH_CHAT_POOL ? { poolMax: Number(process.env.BENCH_CHAT_POOL) } : {});
  const api = await startApi({ db, databaseUrl, config, logger: level === 'silent' ? createLogger('silent') : createLogger(level, logDestination('/dev/null')) });
  const { counted } = countStatements();
  let start: ReturnType<typeof turnBatchStats> | undefined;
  let startReads: ReturnType<typeof turnReadStats> | undefined;
  let stopProfile: (() => Promise<void>) | undefined;
  const gc = { ms: 0, n: 0, byKind: {} as Record<string, number> };
  const gcObserver = new PerformanceObserver((list) => {
    for (const e of list.getEntries()) {
      gc.ms += e.duration;
      gc.n++;
      const kind = GC_KINDS[(e as { detail?: { kind?: number } }).detail?.kind ?? 0] ?? 'other';
      gc.byKind[kind] = (gc.byKind[kind] ?? 0) + e.duration;
    }
  });
  process.on('SIGUSR2', () => {
    if (!start) {
      counted.clear();
      start = { ...turnBatchStats(db) };
      startReads = { ...turnReadStats(db) };
      gc.ms = gc.n = 0;
      gc.byKind = {};
      gcObserver.observe({ entryTypes: ['gc'] });
      stopProfile = profileWindow(process.env.BENCH_PROFILE_DIR, 'chat');
      return;
    }
    gcObserver.disconnect();
    const end = turnBatchStats(db);
    const endReads = turnReadStats(db);
    const reads = { batches: endReads.batches - startReads!.batches, items: endReads.items - startReads!.items, ms: endReads.ms - startReads!.ms };
    const stats: WindowStats = { pid: process.pid, batches: end.batches - start.batches, items: end.items - start.items, ms: end.ms - start.ms, gcMs: gc.ms, gcs: gc.n, gcByKind: gc.byKind, counted: [...counted], reads };
    start = undefined;
    void stopProfile!().then(() => {
      const dir = process.env.BENCH_CHAT_STATS_DIR;
      // Written whole, then renamed: the bench reads a file only once it is complete.
      if (dir) fs.writeFileSync(path.join(dir, `${process.pid}.tmp`), JSON.stringify(stats)), fs.renameSync(path.join(dir, `${process.pid}.tmp`), path.join(dir, `${process.pid}.json`));
    });
  });
  return Number(new URL(api.baseUrl).port);
}

async function main(): Promise<void> {
  const [databaseUrl, processes = '1'] = process.argv.slice(2);
  process.once('SIGINT', () => process.exit(0));
  process.once('SIGTERM', () => process.exit(0));
  if (isClusterChild()) {
    announceReady({ port: await serve(databaseUrl, Number(process.env.BENCH_PORT)), pid: process.pid });
    return;
  }
  const count = Number(processes);
  if (count <= 1) {
    console.log(`PORT ${await serve(databaseUrl, 0)}\nPIDS ${process.pid}`);
    return;
  }
  const port = await freePort();
  const children = runProcesses({ count, env: { BENCH_PORT: String(port) }, log: (msg, fields) => console.error(msg, fields) });
  process.removeAllListeners('SIGTERM');
  process.once('SIGTERM', () => void children.stop().then(() => process.exit(0)));
  const infos = await children.ready;
  console.log(`PORT ${port}\nPIDS ${infos.map((i) => i.pid).join(',')}`);
}

runBench('bench chat api', main, { exitWhenDone: false });
