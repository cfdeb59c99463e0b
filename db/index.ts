/**
 * Knex setup and migrations (DESIGN.md "db/"). Nothing outside db/ writes SQL.
 */
import crypto from 'node:crypto';
import path from 'node:path';
import knexFactory, { type Knex } from 'knex';
import pg from 'pg';
import { observePool } from '../metrics';
import { connectPreparers } from './groupCommit';

// Postgres `bigint` (int8) arrives as a string by default; our counters fit in a JS number.
pg.types.setTypeParser(20, (v) => Number(v));

export type Db = Knex;

/** SQL with its `?` bindings in order: a part of one statement that repositories compose (e.g. a turn's). */
export interface SqlPart {
  sql: string;
  bindings: Knex.RawBinding[];
}

const statementNames = new Map<string, string>();

/** SQLSTATEs of a server that is shutting down: admin_shutdown, crash_shutdown, cannot_connect_now (PostgreSQL Appendix A, class 57). */
const SHUTDOWN_CODES = new Set(['57P01', '57P02', '57P03']);

/**
 * True for the error a connection gets when Postgres is being shut down: an open connection is ended
 * (57P01, 57P02) or a new one is refused (57P03, "the database system is shutting down"). E.g. Ctrl-C in the
 * terminal of `npm start` reaches the embedded Postgres in the same process group at the same moment as the
 * service, so the last writes of a shutdown meet a closing server (docs/operations.md "Shutdown").
 */
export function isServerShutdown(err: unknown): boolean {
  return SHUTDOWN_CODES.has((err as { code?: unknown } | null)?.code as string);
}

/**
 * Query options (Knex `.options(...)`) that run `sql` as a named prepared statement of `pg`: each pooled
 * connection parses and plans it once (PostgreSQL "PREPARE"; after five executions the server may keep a
 * generic plan) instead of on every call. For the statements of the hot paths (a chat turn), whose
 * parse and plan cost more than their execution. The name derives from the text, so one text is one
 * statement on every connection.
 * @param sql the statement exactly as passed to `raw` (its `?` placeholders become `$n` consistently)
 */
export function prepared(sql: string): { name: string } {
  let name = statementNames.get(sql);
  if (!name) {
    name = `acp_${crypto.createHash('sha1').update(sql).digest('hex').slice(0, 20)}`;
    statementNames.set(sql, name);
  }
  return { name };
}

/**
 * The `plan_cache_mode` the pool's sessions run with (docs/configuration.md: PG_PLAN_CACHE_MODE, default
 * `force_generic_plan`; empty leaves the server's setting). The hot statements are prepared ({@link prepared})
 * and their parameters never change the best plan (index lookups by organization and id, full-text search
 * over a materialized query), but Postgres's heuristic keeps re-planning some of them for every execution
 * because a custom plan's estimate looks cheaper: planning then costs as much as executing.
 */
export function planCacheMode(env: NodeJS.ProcessEnv = process.env): string | undefined {
  const mode = env.PG_PLAN_CACHE_MODE ?? 'force_generic_plan';
  if (mode === '') return undefined;
  if (!['auto', 'force_generic_plan', 'force_custom_plan'].includes(mode)) throw new Error(`PG_PLAN_CACHE_MODE must be auto, force_generic_plan or force_custom_plan (got ${mode})`);
  return mode;
}

/** Connections a pool keeps open when idle by default (docs/configuration.md DB_POOL_MIN). */
export const DEFAULT_POOL_MIN = 8;

/**
 * The connections the service's pool keeps open however idle (docs/configuration.md: DB_POOL_MIN, default
 * {@link DEFAULT_POOL_MIN}), which an API process opens before it listens ({@link openPoolMinimum}).
 * @throws Error when DB_POOL_MIN is not a whole number ≥ 0
 */
export function poolMin(env: NodeJS.ProcessEnv = process.env): number {
  const raw = env.DB_POOL_MIN ?? String(DEFAULT_POOL_MIN);
  if (!/^\d+$/.test(raw)) throw new Error(`DB_POOL_MIN must be a whole number of connections (got ${raw})`);
  return Number(raw);
}

/**
 * Opens the pool's minimum of connections ({@link poolMin}) at once, each preparing the hot statements (db/groupCommit.ts
 * `prepareOnConnect`: the SMS path's group commits, a conversation's start, a turn's store), and returns them to the
 * pool, which keeps them: an API process that starts (a deploy, a restart) meets its first burst of requests with
 * connections already authenticated, instead of opening one per statement queued behind the others
 * (docs/benchmarks.md "sms-replies": the first second of texts). Called where the API starts (api/server.ts `startApi`).
 * @returns how many were opened
 * @throws what opening a connection throws (the database is unreachable)
 */
export async function openPoolMinimum(db: Db): Promise<number> {
  const pool = (db.client as { pool?: { min: number } }).pool;
  const n = pool?.min ?? 0;
  // Each of the n transactions prepares the hot statements (db/groupCommit.ts `prepareOnConnect`), each under a
  // savepoint (one that fails leaves the others), and rolls back (their empty batches write nothing; the prepared
  // statements stay with the session). None ends before all n hold a connection: one that ended early would hand its
  // connection to a transaction still waiting, and a connection the pool opened for that one would join the pool
  // unprepared.
  let held = 0;
  let releaseAll!: () => void;
  const allHeld = new Promise<void>((resolve) => (releaseAll = resolve));
  await Promise.all(
    Array.from({ length: n }, () =>
      db
        .transaction(async (trx) => {
          for (const prepare of connectPreparers()) await trx.transaction((sp) => prepare(sp)).catch(() => undefined);
          if (++held === n) releaseAll();
          await allHeld;
          throw ROLLED_BACK;
        })
        .catch((err) => {
          if (err === ROLLED_BACK) return;
          releaseAll(); // a connection that could not open: the others need not wait for it
          throw err;
        }),
    ),
  );
  return n;
}

/** What {@link openPoolMinimum}'s transactions throw to roll back. */
const ROLLED_BACK = new Error('rolled back: the hot statements are prepared');

/**
 * Connection settings for a `pg` client or pool opened beside Knex (a LISTEN session, the rate limiter's pool), named
 * as {@link createDb} names its sessions: `application_name` as libpq's `fallback_application_name` (PostgreSQL
 * "Connection Strings"), so `PGAPPNAME` or the URL's own `application_name` win (docs/operations.md "Postgres sessions").
 * @param applicationName e.g. `agent-control-plane-change-feed`
 */
export function namedSession(databaseUrl: string, applicationName: string): { connectionString: string; fallback_application_name: string } {
  return { connectionString: databaseUrl, fallback_application_name: applicationName };
}

/**
 * Opens a Knex pool on `databaseUrl`; its sessions use {@link planCacheMode} unless the URL sets `options`.
 * @param opts.applicationName the sessions' `application_name` as libpq's `fallback_application_name` (PostgreSQL
 *   "Connection Strings"): shown in `pg_stat_activity` and the server's log lines, so an operator sees which process a
 *   session serves; `PGAPPNAME` or the URL's own `application_name` win over it (docs/operations.md "Postgres sessions")
 * @param opts.poolMax largest number of connections (default 20)
 * @param opts.poolMin connections kept open when idle (default 0: every idle one closes after 30 s; the service's
 *   processes keep {@link poolMin}, runtime.ts `openDatabase`), at most `poolMax`. Knex opens them on demand;
 *   {@link openPoolMinimum} opens them at once
 * @throws when PG_PLAN_CACHE_MODE is not a valid mode
 */
export function createDb(databaseUrl: string, opts: { poolMax?: number; poolMin?: number; applicationName?: string } = {}): Db {
  const mode = planCacheMode();
  const max = opts.poolMax ?? 20;
  const ownOptions = new URL(databaseUrl).searchParams.has('options');
  const db = knexFactory({
    client: 'pg',
    connection: {
      connectionString: databaseUrl,
      ...(mode && !ownOptions ? { options: `-c plan_cache_mode=${mode}` } : {}),
      ...(opts.applicationName ? { fallback_application_name: opts.applicationName } : {}),
    },
    pool: { min: Math.min(opts.poolMin ?? 0, max), max },
    migrations: migrationConfig(),
  });
  observePool('app', db as unknown as Parameters<typeof observePool>[1]);
  return db;
}

/** Migration settings shared by the runtime and knexfile.ts; works from .ts (tsx) and compiled .js. */
export function migrationConfig(): Knex.MigratorConfig {
  const ext = path.extname(__filename);
  return {
    directory: path.join(__dirname, 'migrations'),
    loadExtensions: [ext],
    tableName: 'knex_migrations',
  };
}

/** Applies every pending migration. @returns names of the migrations applied now */
export async function migrate(db: Db): Promise<string[]> {
  const [, applied] = (await db.migrate.latest(migrationConfig())) as [number, string[]];
  return applied;
}

/**
 * Creates the database named in `databaseUrl` when it does not exist (embedded start, tests, CLI).
 * Connects to the server's `postgres` maintenance database to do so.
 */
export async function ensureDatabase(databaseUrl: string): Promise<void> {
  const url = new URL(databaseUrl);
  const name = decodeURIComponent(url.pathname.replace(/^\//, '')) || 'postgres';
  const admin = new URL(databaseUrl);
  admin.pathname = '/postgres';
  const client = new pg.Client({ connectionString: admin.toString() });
  // Errors reach the awaiting query; a listener keeps a late one (the server stopping) from killing the process.
  client.on('error', () => undefined);
  await client.connect();
  try {
    const r = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
    if (r.rowCount === 0) {
      try {
        await client.query(`CREATE DATABASE "${name.replace(/"/g, '""')}"`);
      } catch (err) {
        // Another process created it between the check and the create.
        if ((err as { code?: string }).code !== '42P04') throw err;
      }
    }
  } finally {
    await client.end();
  }
}
