/**
 * Servers measured by bench/http.ts, each in its own process tree so the load generators do not share
 * their event loops: `bare` (a bare Koa route) and `api <databaseUrl> [processes]` (the real API; with
 * processes > 1, that many children on one port through node:cluster, as `npm run start:api` runs them
 * with API_PROCESSES — docs/operations.md "Scaling out"), which logs at BENCH_LOG_LEVEL (default info: the request
 * log line of every request, written to /dev/null through production's buffered destination). Prints `PORT <n>` once every process listens. With
 * BENCH_PROFILE_DIR set, SIGUSR2 starts the V8 CPU profiler (node:inspector, 100 µs sampling) and the next
 * SIGUSR2 writes `<pid>-<time>.cpuprofile` there and prints `PROFILED`, so a profile holds the measured
 * load only (not start-up or warm-up).
 */
import fs from 'node:fs';
import http from 'node:http';
import inspector from 'node:inspector';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import Koa from 'koa';
import { loadConfig } from '../config';
import { createDb } from '../db';
import { freePort } from '../db/embedded';
import { startApi } from '../api/server';
import { announceReady, createLogger, isClusterChild, logDestination, runProcesses } from '../runtime';
import { runBench } from './entry';
import { startTracing } from '../telemetry';

async function startOne(databaseUrl: string, port: number): Promise<number> {
  // The request log as in production (LOG_LEVEL info: one line per request), written to /dev/null so
  // the benchmark's pipe does not read it; BENCH_LOG_LEVEL=silent measures without it.
  const level = process.env.BENCH_LOG_LEVEL ?? 'info';
  const config = loadConfig({ port, logLevel: level, rateLimitPoints: 1_000_000_000 });
  const db = createDb(databaseUrl, { poolMax: 20 });
  const api = await startApi({ db, databaseUrl, config, logger: createLogger(level, logDestination('/dev/null')) });
  return Number(new URL(api.baseUrl).port);
}

function profileOnSignal(dir: string): void {
  const session = new inspector.Session();
  session.connect();
  let running = false;
  process.on('SIGUSR2', () => {
    if (!running) {
      running = true;
      session.post('Profiler.enable', () => session.post('Profiler.setSamplingInterval', { interval: 100 }, () => session.post('Profiler.start')));
      return;
    }
    running = false;
    session.post('Profiler.stop', (err, res) => {
      if (!err) fs.writeFileSync(path.join(dir, `${process.pid}-${Date.now()}.cpuprofile`), JSON.stringify(res.profile));
      console.log('PROFILED');
    });
  });
}

async function main(): Promise<void> {
  if (process.env.BENCH_PROFILE_DIR) profileOnSignal(process.env.BENCH_PROFILE_DIR);
  // Only the traced cases (BENCH_TRACING) pass OTEL_EXPORTER_OTLP_ENDPOINT; otherwise this loads nothing.
  if (process.argv[2] === 'api') startTracing('bench-api');
  const [kind, databaseUrl, processes = '1'] = process.argv.slice(2);
  // Exit at once on a signal: the benchmark stops each server between cases.
  process.once('SIGINT', () => process.exit(0));
  process.once('SIGTERM', () => process.exit(0));
  if (kind === 'bare') {
    // One async middleware answering a JSON envelope serialized per request (39 bytes); BENCH_BARE_BODY_BYTES pads
    // its data to about that many bytes (GET /sms answers 1,610), to tell what the response's size costs.
    const pad = Math.max(0, Number(process.env.BENCH_BARE_BODY_BYTES ?? 0) - 60);
    const data = pad ? { hello: 'world', pad: 'x'.repeat(pad) } : { hello: 'world' };
    const app = new Koa();
    app.use(async (ctx) => {
      ctx.body = { success: true, data };
    });
    const server = http.createServer(app.callback());
    server.listen(0, '127.0.0.1', () => console.log(`PORT ${(server.address() as AddressInfo).port}`));
    return;
  }
  if (isClusterChild()) {
    announceReady({ port: await startOne(databaseUrl, Number(process.env.BENCH_PORT)) });
    return;
  }
  const count = Number(processes);
  if (count <= 1) {
    console.log(`PORT ${await startOne(databaseUrl, 0)}`);
    return;
  }
  const port = await freePort();
  const children = runProcesses({ count, env: { BENCH_PORT: String(port) }, log: (msg, fields) => console.error(msg, fields) });
  process.removeAllListeners('SIGTERM');
  process.once('SIGTERM', () => void children.stop().then(() => process.exit(0)));
  await children.ready;
  console.log(`PORT ${port}`);
}

runBench('bench server', main, { exitWhenDone: false });
