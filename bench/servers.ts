/**
 * Servers measured by bench/http.ts, each in its own process tree so the load generators do not share
 * their event loops: `bare` (a bare Koa route) and `api <databaseUrl> [processes]` (the real API; with
 * processes > 1, that many children on one port through node:cluster, as `npm run start:api` runs them
 * with API_PROCESSES — README "Scaling out"). Prints `PORT <n>` once every process listens.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import Koa from 'koa';
import { loadConfig } from '../config';
import { createDb } from '../db';
import { freePort } from '../db/embedded';
import { startApi } from '../api/server';
import { announceReady, createLogger, isClusterChild, runProcesses } from '../runtime';
import { runBench } from './entry';

async function startOne(databaseUrl: string, port: number): Promise<number> {
  const config = loadConfig({ port, logLevel: 'silent', rateLimitPoints: 1_000_000_000 });
  const db = createDb(databaseUrl, { poolMax: 20 });
  const api = await startApi({ db, databaseUrl, config, logger: createLogger('silent') });
  return Number(new URL(api.baseUrl).port);
}

async function main(): Promise<void> {
  const [kind, databaseUrl, processes = '1'] = process.argv.slice(2);
  // Exit normally on a signal so `node --cpu-prof` can write its profile.
  process.once('SIGINT', () => process.exit(0));
  process.once('SIGTERM', () => process.exit(0));
  if (kind === 'bare') {
    const app = new Koa();
    app.use(async (ctx) => {
      ctx.body = { success: true, data: { hello: 'world' } };
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
