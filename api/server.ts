/**
 * HTTP server of the API (`npm run start:api` in production; `npm start` embeds it in main.ts).
 */
import { createTelephony, type TelephonyAdapter } from '../providers/telephony';
import { transferOverCallControl } from '../services/voice/calls';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { loadConfig } from '../config';
import { checkPaymentsAndIntegrationSettings } from '../providers/credentials';
import { announceReady, coreCount, createLogger, exitOnSignal, isClusterChild, loadServiceSecrets, openDatabase, processCount, runEntryPoint, runPrimary } from '../runtime';
import { createApp, BASE_PATH, type AppOptions } from './app';
import { attachVoiceRelay, type VoiceRelay } from './voice/relay';
import { startMetricsListener, startTracing } from '../telemetry';
import { Client, Connection } from '@temporalio/client';
import { TASK_QUEUE } from '../temporal.config';
import { openPoolMinimum } from '../db';
import { prepareFirstRequests } from './prepare';

/** A listening API server. */
export interface RunningApi {
  server: http.Server;
  /** e.g. http://127.0.0.1:8080/api/v1 */
  baseUrl: string;
  /** The ConversationRelay endpoint (api/voice/relay.ts): its open sessions. */
  relay: VoiceRelay;
  /** Writes the keys' pending `lastUsedAt` now (api/keyUsage.ts). */
  flushKeyUsage(): Promise<void>;
  close(): Promise<void>;
}

/**
 * Starts the API on `config.host:config.port` (port 0 = any free port), with the libraries' lazy one-time work done
 * (api/prepare.ts) and the pool's minimum of connections opened before it listens (db/index.ts `openPoolMinimum`: the
 * service's pool keeps DB_POOL_MIN, runtime.ts).
 * @param deps.databaseUrl the URL `deps.db` was opened on (rate-limit pool and revocation listener use it)
 */
export async function startApi(deps: AppOptions): Promise<RunningApi> {
  const built = createApp(deps);
  await built.ready;
  // The libraries' lazy one-time work (schemas, ICU time zones, phone metadata, tokenizer) done before the first request.
  const prepared = await prepareFirstRequests();
  deps.logger.debug(prepared, 'first requests prepared');
  // The pool's minimum of connections open before the first request (db/index.ts `openPoolMinimum`).
  await openPoolMinimum(deps.db);
  const server = http.createServer(built.app.callback());
  server.keepAliveTimeout = 65_000;
  const { providers, temporal } = built.deps;
  // A call driven by carrier commands (Telnyx Call Control) is transferred by a command when its relay hands it off.
  let telephony: TelephonyAdapter | undefined;
  const relay = attachVoiceRelay(server, { db: deps.db, llm: providers.llm, http: providers.skillHttp, temporal }, deps.logger, {
    onHandoff: (grant, handoff) => {
      if (!grant.callId) return;
      telephony ??= createTelephony({ db: deps.db, config: deps.config });
      transferOverCallControl(deps.db, telephony, grant.orgId, grant.callId, handoff).catch((err) => deps.logger.warn({ err, callId: grant.callId }, 'voice: the call could not be transferred'));
    },
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(deps.config.port, deps.config.host, () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  return {
    server,
    baseUrl: `http://${deps.config.host}:${port}${BASE_PATH}`,
    relay,
    flushKeyUsage: () => built.flushKeyUsage(),
    close: async () => {
      await relay.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await built.close();
    },
  };
}

/**
 * `npm run start:api`: `API_PROCESSES` processes (default: the number of cores; docs/operations.md "Scaling out")
 * sharing one listening socket through node:cluster. The primary opens the database once (the embedded
 * Postgres when DATABASE_URL is unset, migrations) and hands its URL to the children; with one process
 * the primary serves itself. Each serving process is a Temporal client of `TEMPORAL_ADDRESS` (the routes
 * that start, signal or query workflows); without it those routes answer 503 `temporal_unavailable`.
 */
async function main(): Promise<void> {
  const config = loadConfig();
  loadServiceSecrets(config);
  checkPaymentsAndIntegrationSettings();
  const logger = createLogger(config.logLevel);
  const processes = isClusterChild() ? 1 : processCount('API_PROCESSES', coreCount());
  // The processes that serve requests trace them (OTEL_*; off by default); a primary of several serves none.
  const tracing = processes === 1 ? startTracing('agent-control-plane-api') : undefined;
  const database = await openDatabase(config, logger, { applicationName: 'agent-control-plane-api' });
  if (processes > 1) {
    const { infos, pids } = await runPrimary(processes, database, logger);
    await startMetricsListener({ port: config.metricsPort, host: config.host, logger, role: 'primary' });
    logger.info({ url: infos[0]?.url, processes, pids }, 'API listening');
    return;
  }
  const metrics = await startMetricsListener({ port: config.metricsPort, host: config.host, logger });
  // Connected on first use (the SDK's `Connection.lazy`): while the frontend is down, the routes that need it
  // answer 503 temporal_unavailable and every other route is served.
  const connection = config.temporalAddress ? Connection.lazy({ address: config.temporalAddress }) : undefined;
  const temporal = connection ? { client: new Client({ connection, namespace: config.temporalNamespace, interceptors: tracing?.clientInterceptors }), taskQueue: TASK_QUEUE } : undefined;
  if (!temporal) logger.warn('TEMPORAL_ADDRESS is unset: routes that start workflows answer 503 temporal_unavailable');
  const api = await startApi({ db: database.db, databaseUrl: database.url, config, logger, temporal });
  exitOnSignal(async () => {
    await api.close();
    await connection?.close();
    await metrics.close();
    await tracing?.shutdown();
    await database.close();
  });
  if (isClusterChild()) announceReady({ url: api.baseUrl, pid: process.pid });
  else logger.info({ url: api.baseUrl, processes: 1 }, 'API listening');
}

if (require.main === module) runEntryPoint('start:api', main);
