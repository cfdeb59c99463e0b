/**
 * A Postgres with pgvector for tests and the retrieval bench, where no native pgvector can run (the embedded
 * Postgres ships none; Debian bookworm packages none; no Docker): PGlite — PostgreSQL compiled to WebAssembly —
 * with its pgvector build (`@electric-sql/pglite-pgvector`) and the contrib extensions our migrations create
 * (`cube`, `pg_trgm`), served over the Postgres wire protocol on a loopback port by `@electric-sql/pglite-socket`,
 * so the project's own `pg`/Knex pool and migrations talk to it as to any server (pglite.dev "Extensions",
 * pglite-socket README). PGlite is single-connection: the socket server serves one client at a time, so the pool
 * opened here has one connection.
 */
import { PGlite, type Extension } from '@electric-sql/pglite';
import { vector } from '@electric-sql/pglite-pgvector';
import { PGLiteSocketServer } from '@electric-sql/pglite-socket';
import { createDb, migrate, planCacheMode, type Db } from '../../db';

// PGlite's `contrib/*` export has CommonJS code but only ES-module typings, which a CommonJS file cannot import.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { cube } = require('@electric-sql/pglite/contrib/cube') as { cube: Extension };
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { pg_trgm } = require('@electric-sql/pglite/contrib/pg_trgm') as { pg_trgm: Extension };

/** A running PGlite with pgvector behind a loopback socket, migrated, and a one-connection Knex pool on it. */
export interface PgliteVectorServer {
  db: Db;
  /** postgres://…@127.0.0.1:<port>/postgres */
  databaseUrl: string;
  /** The pgvector version the server runs (e.g. 0.8.7). */
  pgvectorVersion: string;
  /** The session's plan_cache_mode (production's, db/index.ts planCacheMode). */
  planCacheMode: string;
  /** The server's `SELECT version()`. */
  serverVersion: string;
  /** Closes the pool, the socket server and PGlite. */
  close(): Promise<void>;
}

/**
 * Starts PGlite (in memory) with `vector`, `cube` and `pg_trgm`, creates the `vector` extension before migrating, as
 * deploy/postgres/init-app-db.sql does in production, and runs every migration (db/index.ts `migrate`).
 * @throws when PGlite cannot start or a migration fails
 */
export async function startPgliteVector(): Promise<PgliteVectorServer> {
  const pglite = await PGlite.create({ extensions: { vector, cube, pg_trgm } });
  await pglite.exec('CREATE EXTENSION IF NOT EXISTS vector');
  // Every socket client shares PGlite's one session, whose settings the startup packet's `options` do not reach:
  // set the plan cache mode createDb asks production sessions for (db/index.ts planCacheMode) on the session itself.
  const mode = planCacheMode();
  if (mode) await pglite.exec(`SET plan_cache_mode = ${mode}`);
  const server = new PGLiteSocketServer({ db: pglite, host: '127.0.0.1', port: 0, maxConnections: 1 });
  await server.start();
  const databaseUrl = `postgres://postgres@${server.getServerConn()}/postgres`;
  const db = createDb(databaseUrl, { poolMax: 1 });
  const close = async () => {
    await db.destroy();
    await server.stop();
    await pglite.close();
  };
  try {
    await migrate(db);
    const info = await db.raw(
      `SELECT version() AS server, (SELECT extversion FROM pg_extension WHERE extname = 'vector') AS pgvector, current_setting('plan_cache_mode') AS mode`,
    );
    return { db, databaseUrl, pgvectorVersion: info.rows[0].pgvector, planCacheMode: info.rows[0].mode, serverVersion: info.rows[0].server, close };
  } catch (err) {
    await close();
    throw err;
  }
}
