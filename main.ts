/**
 * `npm start`: the whole service in one process on embedded defaults (DESIGN.md "One process for a
 * newcomer"): embedded Postgres unless DATABASE_URL, migrations, and the API. Prints the API URL and,
 * on first start, a bootstrap organization with a secret key.
 */
import { loadConfig } from './config';
import { createLogger, openDatabase } from './runtime';
import { startApi } from './api/server';
import { bootstrapIfEmpty } from './bootstrap';

async function main(): Promise<void> {
  const config = loadConfig();
  const logger = createLogger(config.logLevel);
  const database = await openDatabase(config, logger);
  const boot = await bootstrapIfEmpty(database.db, config.keyBrandPrefix);
  const api = await startApi({ db: database.db, databaseUrl: database.url, config, logger });

  const lines = [
    '',
    `Agent Control-Plane API: ${api.baseUrl}`,
    `API docs:                http://${config.host}:${new URL(api.baseUrl).port}/docs  (OpenAPI: ${api.baseUrl}/openapi.json)`,
  ];
  if (boot) {
    lines.push(
      `Bootstrap organization:  ${boot.orgId}`,
      `Secret key (shown once): ${boot.key}`,
      `Try: curl -H "Authorization: Bearer ${boot.key}" ${api.baseUrl}/sms`,
    );
  } else {
    lines.push('Organizations exist already; mint a key with: npm run cli -- keys create --org <id> --scopes all');
  }
  process.stdout.write(lines.join('\n') + '\n\n');

  let stopping = false;
  const stop = async () => {
    if (stopping) return;
    stopping = true;
    logger.info('shutting down');
    await api.close().catch(() => undefined);
    await database.close().catch(() => undefined);
    process.exit(0);
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
