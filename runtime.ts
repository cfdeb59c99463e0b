/**
 * Process start-up shared by `npm start`, `start:api`, `start:worker` and the CLI: the logger, the
 * database (DATABASE_URL, else the embedded Postgres under DATA_DIR) and migrations.
 */
import crypto from 'node:crypto';
import os from 'node:os';
import path from 'node:path';
import pino, { type Logger } from 'pino';
import { context, trace } from '@opentelemetry/api';
import type { AppConfig } from './config';
import { createDb, ensureDatabase, migrate, poolMin, type Db } from './db';
import { attachRunningPostgres, leaveSignalsToTheService, startEmbeddedPostgres, type EmbeddedPostgresHandle } from './db/embedded';
import { EMBEDDED_POSTGRES_PASSWORD, ensureServiceSecrets, storedSecret } from './secrets';
import { runProcesses } from './cluster';

// Several processes of one entry point (docs/operations.md "Scaling out"); re-exported so api/server.ts reaches it
// through the one root module its layer may import.
export { announceReady, coreCount, isClusterChild, processCount, processIndex, runProcesses } from './cluster';

/**
 * Resolves the signing and sealing secrets before anything reads them (docs/security.md): env
 * variables win, else DATA_DIR/secrets (generated on first start), except with NODE_ENV=production.
 * @throws MissingSecretError in production when one is unset; Error in production without PUBLIC_BASE_URL
 */
export function loadServiceSecrets(config: AppConfig): void {
  ensureServiceSecrets({ dataDir: config.dataDir, production: config.production });
  // Carriers' signatures (Twilio's covers the URL it requested) are checked against PUBLIC_BASE_URL, never
  // against a request's Host header, so production names it (docs/security.md "Carrier webhooks and relay references").
  if (config.production && !process.env.PUBLIC_BASE_URL) throw new Error('PUBLIC_BASE_URL must be set when NODE_ENV=production (the public URL carriers call, e.g. https://api.example.com)');
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

/** Bytes of log lines held before one write (sonic-boom `minLength`); docs/configuration.md (`LOG_LEVEL`). */
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
 * `trace_id` and `span_id` of the span active where a line is logged (a traced request, activity or workflow
 * call), so a log line leads to its trace (docs/operations.md "Observability"). Without tracing the
 * OpenTelemetry API answers no span and a line gains nothing.
 */
function traceFields(): { trace_id?: string; span_id?: string } {
  const span = trace.getSpan(context.active());
  if (!span) return NO_TRACE;
  const { traceId, spanId, traceFlags } = span.spanContext();
  return traceFlags & 1 ? { trace_id: traceId, span_id: spanId } : NO_TRACE;
}

/** {@link traceFields} of a line outside a sampled span: nothing to add (never written to). */
const NO_TRACE: { trace_id?: string; span_id?: string } = Object.freeze({});

/**
 * pino's default merge (`Object.assign(mixin, line)`), except that a line with no trace fields is written as
 * it is: the same fields in the same order, without copying every line's fields into a new object.
 */
function mergeTraceFields(line: object, fields: object): object {
  return fields === NO_TRACE ? line : Object.assign(fields, line);
}

/**
 * Structured JSON logger (pino) that never prints credentials; a line inside a sampled span carries its
 * `trace_id` and `span_id`.
 * @param destination where lines go (default: logDestination(), stdout)
 */
export function createLogger(level: string, destination?: pino.DestinationStream): Logger {
  if (level === 'silent') destination ??= pino.destination({ dest: 1, sync: true });
  return pino(
    {
      level,
      // pid: with several processes (docs/operations.md "Scaling out") a line must say which one wrote it.
      base: { service: 'agent-control-plane', pid: process.pid },
      mixin: traceFields,
      mixinMergeStrategy: mergeTraceFields,
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
  /**
   * Call when a stop begins: the embedded server starts a CHECKPOINT while the rest of the service stops, so the
   * shutdown checkpoint of {@link close} has little left to write (PostgreSQL "CHECKPOINT"). Never throws.
   */
  beginClose(): void;
  close(): Promise<void>;
}

/**
 * Opens the app database and applies migrations. Without DATABASE_URL it starts the embedded Postgres
 * under `<dataDir>/pg` (durable; docs/operations.md "Durability") and uses its `acp` database; its password is
 * `DATA_DIR/secrets/EMBEDDED_POSTGRES_PASSWORD`, generated on first start.
 * @param opts.attach join the cluster another process (`npm start`) already runs under DATA_DIR
 *   instead of starting one (the CLI; docs/operations.md "Operator CLI"); start it when none runs
 * @param opts.applicationName the pool's sessions' `application_name` (db/index.ts `createDb`): the process's service
 *   name, as its traces carry it
 * @throws when Postgres cannot be reached or started (the message says why, on one line)
 */
export async function openDatabase(config: AppConfig, logger: Logger, opts: { attach?: boolean; applicationName?: string } = {}): Promise<DatabaseHandle> {
  let url = config.databaseUrl;
  let embedded: EmbeddedPostgresHandle | undefined;
  if (!url) {
    const dataDir = path.join(config.dataDir, 'pg');
    const password = storedSecret(config.dataDir, EMBEDDED_POSTGRES_PASSWORD, () => crypto.randomBytes(24).toString('base64url'));
    if (opts.attach) embedded = await attachRunningPostgres(dataDir, password);
    // In a process group of its own: a Ctrl-C reaches the service, which stops Postgres last (docs/operations.md "Shutdown").
    embedded ??= await startEmbeddedPostgres({ dataDir, password, ownProcessGroup: true, log: (l) => logger.debug({ pg: l.trim() }, 'postgres') });
    const u = new URL(embedded.url);
    u.pathname = '/acp';
    url = u.toString();
    logger.info({ port: embedded.port, dataDir }, embedded.attached ? 'joined the running embedded Postgres' : 'embedded Postgres started');
  }
  await ensureDatabase(url);
  // The service's pool keeps DB_POOL_MIN connections open; the API opens them before it listens (api/server.ts).
  const db = createDb(url, { poolMin: poolMin(), applicationName: opts.applicationName });
  const applied = await migrate(db);
  if (applied.length) logger.info({ migrations: applied }, 'migrations applied');
  let checkpoint: Promise<unknown> | undefined;
  return {
    db,
    url,
    embedded,
    beginClose: () => {
      if (embedded && !embedded.attached) checkpoint ??= db.raw('CHECKPOINT').catch(() => undefined);
    },
    close: async () => {
      await checkpoint;
      await db.destroy();
      if (embedded) await embedded.stop();
    },
  };
}

/** When the stop signal arrived (ms since the epoch), 0 before. */
let stoppingSince = 0;

/**
 * True once {@link exitOnSignal}'s stop began. A Ctrl-C reaches the whole process group, so a child process of the
 * service (the Web UI build) may end on the same signal: its failure is then the stop, not news.
 */
export function stopRequested(): boolean {
  return stoppingSince > 0;
}

/** Milliseconds after the first stop signal during which further ones are the same stop (see {@link exitOnSignal}). */
export const REPEATED_SIGNAL_GRACE_MS = 5_000;

/**
 * Graceful shutdown of an entry point: on the first SIGINT or SIGTERM runs `close` once, then exits
 * with status 0 (docs/operations.md "Scaling out": the primary stops its children, then the database).
 * A Ctrl-C reaches the process several times — from the terminal (the whole process group), from npm
 * forwarding it to its script, from tsx relaying it to its child — so signals during the first
 * {@link REPEATED_SIGNAL_GRACE_MS} ms of the stop are the same stop; the listeners stay installed, since
 * a signal with no listener would kill the process by the default action (status 128 + n). A signal after
 * that grace means the person wants out of a stop that hangs: exit at once with 128 + n (POSIX convention).
 */
export function exitOnSignal(close: () => Promise<void>): void {
  leaveSignalsToTheService();
  const stop = (signal: NodeJS.Signals) => {
    if (stoppingSince) {
      if (Date.now() - stoppingSince > REPEATED_SIGNAL_GRACE_MS) process.exit(128 + (os.constants.signals[signal] ?? 0));
      return;
    }
    stoppingSince = Date.now();
    void close().then(() => process.exit(0));
  };
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
}

/**
 * The primary of a multi-process entry point (`start:api`, `start:worker`; docs/operations.md "Scaling out"): forks
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
