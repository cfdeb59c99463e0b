/**
 * Servers measured by bench/http.ts, each in its own process so the load generator does not share
 * their event loop: `bare` (a bare Koa route) and `api <databaseUrl>` (the real API).
 * Prints `PORT <n>` once listening.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import Koa from 'koa';
import { loadConfig } from '../config';
import { createDb } from '../db';
import { startApi } from '../api/server';
import { createLogger } from '../runtime';
import { runBench } from './entry';

async function main(): Promise<void> {
  const [kind, databaseUrl] = process.argv.slice(2);
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
  const config = loadConfig({ port: 0, logLevel: 'silent', rateLimitPoints: 1_000_000_000 });
  const db = createDb(databaseUrl, { poolMax: 20 });
  const api = await startApi({ db, databaseUrl, config, logger: createLogger('silent') });
  console.log(`PORT ${new URL(api.baseUrl).port}`);
}

runBench('bench server', main, { exitWhenDone: false });
