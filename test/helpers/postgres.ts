/**
 * One PostgreSQL server per test run, a fresh database per suite (DESIGN.md "Tests that stay fast").
 * The server is the embedded one (started by the root hook in test/hooks.ts) unless DATABASE_URL
 * names another server, in which case fresh databases are created on that server.
 */
import crypto from 'node:crypto';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { startEmbeddedPostgres, type EmbeddedPostgresHandle } from '../../db/embedded';
import { createDb, migrate, type Db } from '../../db';

let embedded: EmbeddedPostgresHandle | undefined;
let serverUrl: string | undefined;

/** Starts the run's Postgres server (idempotent). Called by the root hook. */
export async function startTestPostgres(): Promise<string> {
  if (serverUrl) return serverUrl;
  if (process.env.DATABASE_URL) {
    serverUrl = process.env.DATABASE_URL;
  } else {
    const dataDir = path.join(os.tmpdir(), `acp-test-pg-${process.pid}-${crypto.randomBytes(3).toString('hex')}`);
    embedded = await startEmbeddedPostgres({ dataDir, ephemeral: true, durable: false });
    serverUrl = embedded.url;
  }
  return serverUrl;
}

/** Stops the run's embedded server, if this run started one. */
export async function stopTestPostgres(): Promise<void> {
  if (embedded) await embedded.stop();
  embedded = undefined;
  serverUrl = undefined;
}

/**
 * Creates a new, empty database on the run's server and returns its connection URL.
 * @param label readable part of the database name (letters, digits, underscore)
 */
export async function createTestDatabase(label = 'suite'): Promise<string> {
  const base = await startTestPostgres();
  const name = `t_${label.replace(/[^a-z0-9_]/gi, '_').toLowerCase().slice(0, 30)}_${crypto.randomBytes(4).toString('hex')}`;
  const admin = new pg.Client(base);
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE "${name}"`);
  } finally {
    await admin.end();
  }
  const url = new URL(base);
  url.pathname = `/${name}`;
  return url.toString();
}

/**
 * A fresh migrated database for the enclosing mocha suite (created in `before`, closed in `after`).
 * @returns the handle's getter, valid inside the suite's hooks and tests
 */
export function useMigratedDb(label: string): () => Db {
  let db: Db | undefined;
  before(async () => {
    db = createDb(await createTestDatabase(label));
    await migrate(db);
  });
  after(async () => db?.destroy());
  return () => db!;
}
