/**
 * `npm start`: the whole service in one process on embedded defaults (DESIGN.md "One process for a
 * newcomer"): embedded Postgres unless DATABASE_URL, migrations, the embedded Temporal dev server
 * unless TEMPORAL_ADDRESS (persisting to the same Postgres, schema `temporal_dev`), the worker and the
 * API. Prints the API URL and, on first start, a bootstrap organization with a secret key (once: the
 * key appears on one line only). Secrets come from the environment or DATA_DIR/secrets (docs/security.md); any start-up failure prints one line and exits 1.
 */
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { envNumber, loadConfig } from './config';
import { startMetricsListener, startTracing } from './telemetry';
import { createLogger, exitOnSignal, loadServiceSecrets, openDatabase, runEntryPoint, stopRequested } from './runtime';
import { startApi } from './api/server';
import { bootstrapIfEmpty } from './bootstrap';
import { serviceQueues, startWorker } from './worker';
import { TASK_QUEUE, workerQueueSelection } from './temporal.config';
import { startDevServer } from './devserver';
import { serveWebUi, webUiVersion } from './devserver/http/ui';
import { ensureUiBuilt, UI_BUILD_DIR } from './scripts/build-ui';
import { ensureWorkflowBundle } from './scripts/build-workflow-bundle';
import { startWebhookDispatcher } from './events/dispatcher';
import { startHousekeeping } from './services/housekeeping';
import { startWorkflowStartSweep } from './services/workflowStarts';
import { startWalletSettleSweep } from './services/billing/settle';
import { resumeSandboxCallbacks } from './providers/carrier/sandbox';
import { ensureBillingCalendar } from './activities/billing';

async function main(): Promise<void> {
  const config = loadConfig();
  loadServiceSecrets(config);
  // Before the database and the servers open, so their modules are instrumented (OTEL_*; off by default).
  const tracing = startTracing('agent-control-plane');
  const logger = createLogger(config.logLevel);
  // The workflow bundle of the current sources, kept between starts (docs/operations.md "Workflow bundle"): found or
  // built while Postgres and the dev server start. Without it the worker bundles in memory, as before.
  const bundling = ensureWorkflowBundle().then(
    (b) => (logger.info({ workflowBundle: path.relative(process.cwd(), b.path), built: b.built, ms: Math.round(b.ms) }, 'workflow code'), b.path),
    (err: unknown) => (logger.warn({ err: err instanceof Error ? err.message.split('\n')[0] : String(err) }, 'workflow bundle not kept: bundling in memory'), undefined),
  );
  const database = await openDatabase(config, logger, { applicationName: 'agent-control-plane' });
  const closers: (() => Promise<unknown>)[] = [() => database.close()];
  if (tracing) closers.unshift(() => tracing.shutdown());
  const close = async () => {
    database.beginClose();
    for (const fn of closers.reverse()) await fn().catch((err) => logger.warn({ err }, 'shutdown step failed'));
  };
  try {
    let address: string;
    let uiUrl: string | undefined;
    if (config.temporalAddress) {
      address = config.temporalAddress;
    } else {
      const dev = await startDevServer({
        port: config.temporalDevPort,
        databaseUrl: database.url,
        namespace: config.temporalNamespace,
        // Like `temporal server start-dev --metrics-port` (docs/operations.md "Observability").
        ...(process.env.TEMPORAL_DEV_METRICS_PORT ? { metricsPort: envNumber('TEMPORAL_DEV_METRICS_PORT', 0) } : {}),
        log: (level, msg, fields) => {
          if (level === 'warn' || level === 'error') logger[level]({ devserver: true, ...fields }, msg);
        },
      });
      closers.push(() => dev.stop());
      address = dev.address;
      logger.info({ address, metrics: dev.metricsUrl }, 'embedded Temporal dev server started');
      // The Web UI beside the dev server, as `temporal server start-dev` (docs/operations.md "Inspecting workflows").
      // The build (up to a minute on a fresh clone) runs in the background: the UI address answers a
      // self-refreshing "building…" page meanwhile, and the API does not wait for it. Without the UI
      // the service still runs: a failed build or a taken port is one warning.
      const stopBuild = new AbortController();
      closers.push(async () => stopBuild.abort());
      const building = ensureUiBuilt((line) => logger.info(line), stopBuild.signal).then((built) => {
        if (built.built) logger.info({ ms: built.ms }, 'Temporal Web UI built');
      });
      building.catch((err: unknown) => stopBuild.signal.aborted || stopRequested() || logger.warn({ err: err instanceof Error ? err.message.split('\n')[0] : String(err) }, 'Temporal Web UI not built'));
      try {
        const ui = await serveWebUi({
          buildDir: UI_BUILD_DIR,
          building,
          httpApi: dev.httpApi,
          host: config.host,
          port: config.temporalUiPort,
          defaultNamespace: config.temporalNamespace,
          version: webUiVersion(),
        });
        closers.push(() => ui.close());
        uiUrl = ui.url;
      } catch (err) {
        logger.warn({ err: err instanceof Error ? err.message.split('\n')[0] : String(err) }, 'Temporal Web UI not served');
      }
    }
    const metrics = await startMetricsListener({ port: config.metricsPort, host: config.host, logger });
    closers.push(() => metrics.close());
    const codePath = await bundling;
    const worker = await startWorker({ address, namespace: config.temporalNamespace, db: database.db, config, logger, ...(codePath ? { workflowBundle: { codePath } } : {}) });
    closers.push(() => worker.stop());
    const connection = await Connection.connect({ address });
    closers.push(() => connection.close());
    const client = new Client({ connection, namespace: config.temporalNamespace, interceptors: tracing?.clientInterceptors });
    // Beside the webhooks queue's worker, as in start:worker (a WORKER_QUEUES without it leaves the outbox to another process).
    if (workerQueueSelection().includes('webhooks')) {
      const dispatcher = await startWebhookDispatcher({ db: database.db, logger, client, taskQueue: TASK_QUEUE, databaseUrl: database.url });
      closers.push(() => dispatcher.stop());
    }
    // Workflow starts a crash or an unreachable Temporal left owed (services/workflowStarts.ts; docs/operations.md).
    const startSweep = startWorkflowStartSweep({ db: database.db, logger, temporal: { client, taskQueue: TASK_QUEUE } });
    closers.push(() => startSweep.stop());
    // Usage charges recorded pending that no settle folded (services/billing/settle.ts; docs/api-notes.md "Billing").
    const settleSweep = startWalletSettleSweep({ db: database.db, logger });
    closers.push(() => settleSweep.stop());
    // Idle conversations' analyses run as workflows on the worker (docs/api-notes.md "Conversations": idle timeouts).
    const housekeeping = startHousekeeping({ db: database.db, logger, temporal: { client, taskQueue: TASK_QUEUE } });
    closers.push(() => housekeeping.stop());
    await resumeSandboxCallbacks({ db: database.db, config });
    // The billing calendar (schedule `billing-month`) exists once per cluster (docs/api-notes.md "Billing").
    await ensureBillingCalendar({ client, taskQueue: TASK_QUEUE });

    const boot = await bootstrapIfEmpty(database.db, config.keyBrandPrefix);
    const api = await startApi({ db: database.db, databaseUrl: database.url, config, logger, temporal: { client, taskQueue: TASK_QUEUE }, temporalUiUrl: uiUrl });
    closers.push(() => api.close());

    const origin = new URL(api.baseUrl).origin;
    const lines = [
      '',
      `Agent Control-Plane API: ${api.baseUrl}`,
      `API docs:                ${origin}/docs  (OpenAPI: ${api.baseUrl}/openapi.json)`,
      `Temporal:                ${address}${config.temporalAddress ? '' : ' (embedded dev server)'}, task queues ${serviceQueues(TASK_QUEUE).map((q) => q.taskQueue).join(', ')}`,
    ];
    if (metrics.url) lines.push(`Metrics:                 ${metrics.url}`);
    if (uiUrl) lines.push(`Temporal Web UI:         ${uiUrl}/namespaces/${encodeURIComponent(config.temporalNamespace)}/workflows`);
    if (boot) {
      lines.push(
        `Bootstrap organization:  ${boot.orgId}`,
        `Secret key (shown once): ${boot.key}`,
        `Owner sign-in (shown once): ${boot.owner.email} / ${boot.owner.password}  at ${origin}/login`,
        // The key is not repeated here: it would be printed (and land in terminal logs) twice.
        `Try: curl -H "Authorization: Bearer <the secret key above>" ${api.baseUrl}/sms`,
      );
    } else {
      lines.push('Organizations exist already; mint a key with: npm run cli -- keys create --org <id> --scopes all');
    }
    process.stdout.write(lines.join('\n') + '\n\n');
  } catch (err) {
    await close();
    throw err;
  }

  exitOnSignal(async () => {
    logger.info('shutting down');
    await close();
  });
}

runEntryPoint('npm start', main);
