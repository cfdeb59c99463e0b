/**
 * Dev server CLI.
 *
 *   tsx devserver/bin.ts [--port 7233] [--http-port 7243] [--metrics-port 9466] [--host 127.0.0.1] [--db <postgres-url>] [--namespace <ns>]
 *                        [--log-level debug|info|warn|error] [--time-skipping] [--search-attribute KEY=Type …]
 *                        [--db-filename <dir>] [--ui-port <port>]
 *   tsx devserver/bin.ts <port> [--search-attribute KEY=Type …] [other args ignored]
 *
 * The second (bare port) form is how @temporalio/testing starts a test server from an
 * `existing-path` executable (see devserver/bin/temporal-test-server): in-memory, time skipping
 * on and initially locked, and the process exits when its parent process dies.
 */
import fs from 'node:fs';
import path from 'node:path';
import { startEmbeddedPostgres, type EmbeddedPostgresHandle } from '../db/embedded';
import { startDevServer, type DevServer } from './index';
import { serveWebUi, webUiVersion, type WebUiServer } from './http/ui';
import { parseSearchAttributeFlag } from './searchAttributes';
import type { LogFn } from './engine';

const LEVELS = ['debug', 'info', 'warn', 'error'] as const;
type Level = (typeof LEVELS)[number];

interface CliOptions {
  port: number;
  host: string;
  databaseUrl?: string;
  namespace?: string;
  level: Level;
  timeSkipping: boolean;
  testServer: boolean;
  /** Port of the HTTP API (`--http-port`); unset = none. */
  httpPort?: number;
  /** Port of the Prometheus `/metrics` (`--metrics-port`, as `temporal server start-dev`); unset = none. */
  metricsPort?: number;
  /** Custom search attributes registered at start (`--search-attribute KEY=Type`, repeatable). */
  searchAttributes: Record<string, number>;
  /** `--db-filename`: where state persists across restarts (an embedded Postgres data directory). */
  dbFilename?: string;
  /** `--ui-port`: port of the Temporal Web UI (as `temporal server start-dev --ui-port`). */
  uiPort?: number;
  /** Where the Web UI's static build is; default {@link WEB_UI_BUILD_DIR}. */
  uiBuildDir?: string;
}

/** The static build of the Temporal Web UI (scripts/build-ui.ts writes it). */
export const WEB_UI_BUILD_DIR = path.resolve(__dirname, '..', 'ui', 'build');

/** Parses argv (without node and script). Unknown flags are ignored, as the test server must. */
export function parseArgs(argv: string[]): CliOptions {
  const o: CliOptions = { port: 7233, host: '127.0.0.1', level: 'info', timeSkipping: false, testServer: false, searchAttributes: {} };
  const testServer = !!argv[0] && /^\d+$/.test(argv[0]);
  if (testServer) Object.assign(o, { port: Number(argv[0]), timeSkipping: true, testServer: true, level: 'warn' });
  for (let i = testServer ? 1 : 0; i < argv.length; i++) {
    const a = argv[i];
    const next = () => argv[++i];
    // Both forms register search attributes, as `temporal server start-dev --search-attribute` does.
    if (a === '--search-attribute') {
      const [name, type] = parseSearchAttributeFlag(next() ?? '');
      o.searchAttributes[name] = type;
    } else if (testServer) continue; // the test-server form ignores its other arguments
    else if (a === '--port') o.port = Number(next());
    else if (a === '--host' || a === '--ip') o.host = next();
    else if (a === '--db' || a === '--database-url') o.databaseUrl = next();
    else if (a === '--namespace') o.namespace = next();
    else if (a === '--http-port') o.httpPort = Number(next());
    else if (a === '--metrics-port') o.metricsPort = Number(next());
    else if (a === '--db-filename') o.dbFilename = next();
    else if (a === '--ui-port') o.uiPort = Number(next());
    else if (a === '--log-level') {
      const l = next() as Level;
      if (!LEVELS.includes(l)) throw new Error(`--log-level must be one of ${LEVELS.join(', ')}`);
      o.level = l;
    } else if (a === '--time-skipping') o.timeSkipping = true;
  }
  return o;
}

/** A dev server started from CLI arguments, with what it started beside it. */
export interface CliServer {
  server: DevServer;
  uiUrl?: string;
  stop(): Promise<void>;
}

/**
 * Starts the dev server from parsed CLI options. `--db-filename <dir>` keeps the state in an embedded
 * Postgres cluster whose data directory is `<dir>` (created on first use, reused on the next start);
 * the real CLI's SQLite file is not read. `--ui-port` serves the Web UI from its static build.
 * @throws when `--db-filename` names a regular file (e.g. the real CLI's SQLite database), when both
 *   `--db` and `--db-filename` are given, or when `--ui-port` is given and the UI is not built
 */
export async function startFromOptions(o: CliOptions, log: LogFn): Promise<CliServer> {
  const uiBuildDir = o.uiBuildDir ?? WEB_UI_BUILD_DIR;
  if (o.uiPort !== undefined && !fs.existsSync(path.join(uiBuildDir, 'index.html'))) throw uiMissing(uiBuildDir);
  let pgHandle: EmbeddedPostgresHandle | undefined;
  let databaseUrl = o.databaseUrl ?? (o.testServer || o.dbFilename ? undefined : process.env.TEMPORAL_DEV_DATABASE_URL);
  if (o.dbFilename) {
    if (o.databaseUrl) throw new Error('--db-filename and --db exclude each other: give one place for the state');
    const dir = path.resolve(o.dbFilename);
    if (fs.existsSync(dir) && !fs.statSync(dir).isDirectory()) {
      throw new Error(`--db-filename ${o.dbFilename} is a file; this dev server keeps its state in a Postgres data directory (give a directory path, or --db <postgres-url>)`);
    }
    pgHandle = await startEmbeddedPostgres({ dataDir: dir, password: 'devserver', durable: true, log: (line) => log('debug', line.trim()) });
    databaseUrl = pgHandle.url;
  }
  let server: DevServer;
  try {
    server = await startDevServer({
      port: o.port,
      host: o.host,
      databaseUrl,
      namespace: o.namespace,
      timeSkipping: o.timeSkipping,
      timeSkippingInitiallyLocked: o.testServer,
      log,
      httpPort: o.httpPort,
      metricsPort: o.metricsPort,
      searchAttributes: o.searchAttributes,
    });
  } catch (err) {
    await pgHandle?.stop();
    throw err;
  }
  let ui: WebUiServer | undefined;
  if (o.uiPort !== undefined) {
    ui = await serveWebUi({ buildDir: uiBuildDir, httpApi: server.httpApi, host: o.host, port: o.uiPort, defaultNamespace: o.namespace ?? 'default', version: webUiVersion() });
  }
  return {
    server,
    uiUrl: ui?.url,
    async stop() {
      await ui?.close();
      await server.stop();
      await pgHandle?.stop();
    },
  };
}

function uiMissing(dir: string): Error {
  return new Error(`--ui-port: the Temporal Web UI is not built (${dir}); run \`npx tsx scripts/build-ui.ts\` or \`npm start\` once, or leave out --ui-port`);
}

async function main(): Promise<void> {
  const o = parseArgs(process.argv.slice(2));
  const min = LEVELS.indexOf(o.level);
  const log: LogFn = (level, msg, fields) => {
    if (LEVELS.indexOf(level) < min) return;
    process.stderr.write(`${new Date().toISOString()} ${level} ${msg}${fields ? ' ' + JSON.stringify(fields) : ''}\n`);
  };
  const started = await startFromOptions(o, log);
  const server = started.server;
  if (!o.testServer) process.stdout.write(`Temporal dev server listening on ${server.address}${server.httpUrl ? `, HTTP API on ${server.httpUrl}/api/v1` : ''}${server.metricsUrl ? `, metrics on ${server.metricsUrl}` : ''}${started.uiUrl ? `, Web UI on ${started.uiUrl}` : ''}\n`);
  let stopping = false;
  const stop = async (code: number) => {
    if (stopping) return;
    stopping = true;
    await started.stop().catch(() => undefined);
    process.exit(code);
  };
  process.on('SIGINT', () => void stop(0));
  process.on('SIGTERM', () => void stop(0));
  if (o.testServer) {
    // The SDK kills us on teardown; if the parent dies first we are re-parented: exit then.
    const parent = Number(process.env.DEVSERVER_PARENT_PID) || process.ppid;
    const parentGone = () => {
      if (process.ppid !== parent) return true; // re-parented: the original parent exited
      try {
        process.kill(parent, 0);
        return false;
      } catch {
        return true;
      }
    };
    setInterval(() => {
      if (parentGone()) void stop(0);
    }, 250).unref();
  }
}

if (require.main === module) {
  const fail = (err: unknown) => {
    // One line, like the service's entry points (docs/operations.md "Operator CLI"): the message, never a stack.
    process.stderr.write(`devserver: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  };
  process.on('unhandledRejection', fail);
  main().catch(fail);
}
