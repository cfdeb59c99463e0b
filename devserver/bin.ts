/**
 * Dev server CLI.
 *
 *   tsx devserver/bin.ts [--port 7233] [--http-port 7243] [--metrics-port 9466] [--host 127.0.0.1] [--db <postgres-url>] [--namespace <ns>]
 *                        [--log-level debug|info|warn|error] [--time-skipping] [--search-attribute KEY=Type …]
 *   tsx devserver/bin.ts <port> [--search-attribute KEY=Type …] [other args ignored]
 *
 * The second (bare port) form is how @temporalio/testing starts a test server from an
 * `existing-path` executable (see devserver/bin/temporal-test-server): in-memory, time skipping
 * on and initially locked, and the process exits when its parent process dies.
 */
import { startDevServer } from './index';
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
}

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
    else if (a === '--log-level') {
      const l = next() as Level;
      if (!LEVELS.includes(l)) throw new Error(`--log-level must be one of ${LEVELS.join(', ')}`);
      o.level = l;
    } else if (a === '--time-skipping') o.timeSkipping = true;
  }
  return o;
}

async function main(): Promise<void> {
  const o = parseArgs(process.argv.slice(2));
  const min = LEVELS.indexOf(o.level);
  const log: LogFn = (level, msg, fields) => {
    if (LEVELS.indexOf(level) < min) return;
    process.stderr.write(`${new Date().toISOString()} ${level} ${msg}${fields ? ' ' + JSON.stringify(fields) : ''}\n`);
  };
  const server = await startDevServer({
    port: o.port,
    host: o.host,
    databaseUrl: o.databaseUrl ?? (o.testServer ? undefined : process.env.TEMPORAL_DEV_DATABASE_URL),
    namespace: o.namespace,
    timeSkipping: o.timeSkipping,
    timeSkippingInitiallyLocked: o.testServer,
    log,
    httpPort: o.httpPort,
    metricsPort: o.metricsPort,
    searchAttributes: o.searchAttributes,
  });
  if (!o.testServer) process.stdout.write(`Temporal dev server listening on ${server.address}${server.httpUrl ? `, HTTP API on ${server.httpUrl}/api/v1` : ''}${server.metricsUrl ? `, metrics on ${server.metricsUrl}` : ''}\n`);
  let stopping = false;
  const stop = async (code: number) => {
    if (stopping) return;
    stopping = true;
    await server.stop().catch(() => undefined);
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
