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
/** The run's migrated template database (its name), made on first use. */
let template: Promise<string> | undefined;

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
  template = undefined;
}

/**
 * Creates a new database on the run's server and returns its connection URL: empty, or a copy of `templateName`.
 * @param label readable part of the database name (letters, digits, underscore)
 * @param templateName a database to copy (no session may be connected to it); default the server's empty template
 */
export async function createTestDatabase(label = 'suite', templateName?: string): Promise<string> {
  const base = await startTestPostgres();
  const name = `t_${label.replace(/[^a-z0-9_]/gi, '_').toLowerCase().slice(0, 30)}_${crypto.randomBytes(4).toString('hex')}`;
  const admin = new pg.Client(base);
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE "${name}"${templateName ? ` TEMPLATE "${templateName}"` : ''}`);
  } finally {
    await admin.end();
  }
  const url = new URL(base);
  url.pathname = `/${name}`;
  return url.toString();
}

/**
 * Creates a new database at the latest migration and returns its connection URL. The run migrates one
 * template database once and copies it for each caller (`CREATE DATABASE … TEMPLATE`, PostgreSQL
 * "Template Databases"): a copy takes about a tenth of a second where running the migrations takes most of
 * one. Nothing connects to the template after it is migrated, as a copy requires.
 * @param label readable part of the database name (letters, digits, underscore)
 */
export async function createMigratedTestDatabase(label = 'suite'): Promise<string> {
  template ??= (async () => {
    const url = await createTestDatabase('template');
    const db = createDb(url);
    try {
      await migrate(db);
    } finally {
      await db.destroy();
    }
    return decodeURIComponent(new URL(url).pathname.slice(1));
  })();
  const source = await template.catch((err) => {
    template = undefined;
    throw err;
  });
  return createTestDatabase(label, source);
}

/**
 * A fresh migrated database for the enclosing mocha suite (created in `before`, closed in `after`).
 * @returns the handle's getter, valid inside the suite's hooks and tests
 */
export function useMigratedDb(label: string): () => Db {
  let db: Db | undefined;
  before(async () => {
    db = createDb(await createMigratedTestDatabase(label));
  });
  after(async () => db?.destroy());
  return () => db!;
}
