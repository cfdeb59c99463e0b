/**
 * Process start-up shared by `npm start`, `start:api`, `start:worker` and the CLI: the logger, the
 * database (DATABASE_URL, else the embedded Postgres under DATA_DIR) and migrations.
 */
import crypto from 'node:crypto';
import path from 'node:path';
import pino, { type Logger } from 'pino';
import type { AppConfig } from './config';
import { createDb, ensureDatabase, migrate, type Db } from './db';
import { attachRunningPostgres, startEmbeddedPostgres, type EmbeddedPostgresHandle } from './db/embedded';
import { EMBEDDED_POSTGRES_PASSWORD, ensureServiceSecrets, storedSecret } from './secrets';
import { runProcesses } from './cluster';

// Several processes of one entry point (README "Scaling out"); re-exported so api/server.ts reaches it
// through the one root module its layer may import.
export { announceReady, coreCount, isClusterChild, processCount, processIndex, runProcesses } from './cluster';

/**
 * Resolves the signing and sealing secrets before anything reads them (README "Security"): env
 * variables win, else DATA_DIR/secrets (generated on first start), except with NODE_ENV=production.
 * @throws MissingSecretError in production when one is unset
 */
export function loadServiceSecrets(config: AppConfig): void {
  ensureServiceSecrets({ dataDir: config.dataDir, production: config.production });
}

/** One line describing a failure: the message (or, for an AggregateError, its first inner one) without a stack. */
export function failureLine(err: unknown): string {
  const e = err as { message?: string; code?: string; errors?: unknown[] } | undefined;
  let message = e?.message || (e?.errors?.length ? failureLine(e.errors[0]) : '') || e?.code || String(err);
  if (e?.code && !message.includes(e.code)) message += ` (${e.code})`;
  return message.replace(/\s*\n\s*/g, ' ').trim();
}

/**
 * Runs an entry point (`npm start`, `start:api`, `start:worker`, the CLI, benchmarks): any failure, an
 * unhandled rejection or an uncaught exception included, prints `<name>: <one line>` on stderr and
 * exits with status 1. `main` resolving does not exit (servers keep running).
 */
export function runEntryPoint(name: string, main: () => Promise<unknown>): void {
  const fail = (err: unknown) => {
    process.stderr.write(`${name}: ${failureLine(err)}\n`);
    process.exit(1);
  };
  process.on('unhandledRejection', fail);
  process.on('uncaughtException', fail);
  main().catch(fail);
}

/** Bytes of log lines held before one write (sonic-boom `minLength`); README "Configuration" (`LOG_LEVEL`). */
const LOG_BUFFER_BYTES = 4096;
/** Longest a held log line waits before it is written, in ms (sonic-boom `periodicFlush`). */
const LOG_FLUSH_MS = 200;
/** Destinations whose held lines are written when the process exits. */
const heldLogs = new Set<{ flushSync(): void }>();

/**
 * Where log lines go: pino's destination (sonic-boom) holding up to 4 KiB of lines and writing them in one
 * synchronous call, and at least every 200 ms. A write per line cost a system call per request (the
 * request log); the asynchronous mode measured worse still (each write is a hand-off to libuv's thread
 * pool). Held lines are written on `process.exit` and on a crash that exits; a SIGKILL loses at most the
 * last 200 ms.
 * @param dest file descriptor or path (default 1: stdout)
 */
export function logDestination(dest: number | string = 1): pino.DestinationStream {
  const stream = pino.destination({ dest, sync: true, minLength: LOG_BUFFER_BYTES, periodicFlush: LOG_FLUSH_MS });
  if (heldLogs.size === 0) {
    process.once('exit', () => {
      for (const s of heldLogs) {
        try {
          s.flushSync();
        } catch {
          // closed already: nothing left to write
        }
      }
    });
  }
  heldLogs.add(stream);
  return stream;
}

/**
 * Structured JSON logger (pino) that never prints credentials.
 * @param destination where lines go (default: logDestination(), stdout)
 */
export function createLogger(level: string, destination?: pino.DestinationStream): Logger {
  if (level === 'silent') destination ??= pino.destination({ dest: 1, sync: true });
  return pino(
    {
      level,
      // pid: with several processes (README "Scaling out") a line must say which one wrote it.
      base: { service: 'agent-control-plane', pid: process.pid },
      redact: { paths: ['req.headers.authorization', 'headers.authorization', 'authorization', 'key', 'secret', '*.key', '*.secret'], censor: '[redacted]' },
    },
    destination ?? logDestination(),
  );
}

/** An open database and how to close it (and the embedded server, when one was started). */
export interface DatabaseHandle {
  db: Db;
  url: string;
  embedded?: EmbeddedPostgresHandle;
  close(): Promise<void>;
}

/**
 * Opens the app database and applies migrations. Without DATABASE_URL it starts the embedded Postgres
 * under `<dataDir>/pg` (durable; README "Durability") and uses its `acp` database; its password is
 * `DATA_DIR/secrets/EMBEDDED_POSTGRES_PASSWORD`, generated on first start.
 * @param opts.attach join the cluster another process (`npm start`) already runs under DATA_DIR
 *   instead of starting one (the CLI; README "Operator CLI"); start it when none runs
 * @throws when Postgres cannot be reached or started (the message says why, on one line)
 */
export async function openDatabase(config: AppConfig, logger: Logger, opts: { attach?: boolean } = {}): Promise<DatabaseHandle> {
  let url = config.databaseUrl;
  let embedded: EmbeddedPostgresHandle | undefined;
  if (!url) {
    const dataDir = path.join(config.dataDir, 'pg');
    const password = storedSecret(config.dataDir, EMBEDDED_POSTGRES_PASSWORD, () => crypto.randomBytes(24).toString('base64url'));
    if (opts.attach) embedded = await attachRunningPostgres(dataDir, password);
    embedded ??= await startEmbeddedPostgres({ dataDir, password, log: (l) => logger.debug({ pg: l.trim() }, 'postgres') });
    const u = new URL(embedded.url);
    u.pathname = '/acp';
    url = u.toString();
    logger.info({ port: embedded.port, dataDir }, embedded.attached ? 'joined the running embedded Postgres' : 'embedded Postgres started');
  }
  await ensureDatabase(url);
  const db = createDb(url);
  const applied = await migrate(db);
  if (applied.length) logger.info({ migrations: applied }, 'migrations applied');
  return {
    db,
    url,
    embedded,
    close: async () => {
      await db.destroy();
      if (embedded) await embedded.stop();
    },
  };
}

/**
 * Graceful shutdown of an entry point: on the first SIGINT or SIGTERM runs `close` once, then exits
 * with status 0 (README "Scaling out": the primary stops its children, then the database).
 */
export function exitOnSignal(close: () => Promise<void>): void {
  let stopping = false;
  const stop = async () => {
    if (stopping) return;
    stopping = true;
    await close();
    process.exit(0);
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}

/**
 * The primary of a multi-process entry point (`start:api`, `start:worker`; README "Scaling out"): forks
 * `count` children that open `database.url` (passed as DATABASE_URL), stops them and then the database
 * on SIGINT/SIGTERM, and resolves once every child has announced itself ready.
 * @returns what each child passed to `announceReady` (index order) and the children's pids
 * @throws when a child exits while starting
 */
export async function runPrimary(count: number, database: DatabaseHandle, logger: Logger): Promise<{ infos: Record<string, unknown>[]; pids: number[] }> {
  const children = runProcesses({ count, env: { DATABASE_URL: database.url }, log: (msg, fields) => logger.warn(fields, msg) });
  exitOnSignal(async () => {
    await children.stop();
    await database.close();
  });
  const infos = await children.ready;
  return { infos, pids: children.pids() };
}
