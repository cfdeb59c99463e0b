/**
 * Process start-up shared by `npm start`, `start:api`, `start:worker` and the CLI: the logger, the
 * database (DATABASE_URL, else the embedded Postgres under DATA_DIR) and migrations.
 */
import path from 'node:path';
import pino, { type Logger } from 'pino';
import type { AppConfig } from './config';
import { createDb, ensureDatabase, migrate, type Db } from './db';
import { startEmbeddedPostgres, type EmbeddedPostgresHandle } from './db/embedded';

/** Structured JSON logger (pino) that never prints credentials. */
export function createLogger(level: string): Logger {
  return pino({
    level,
    base: { service: 'agent-control-plane' },
    redact: { paths: ['req.headers.authorization', 'headers.authorization', 'authorization', 'key', 'secret', '*.key', '*.secret'], censor: '[redacted]' },
  });
}

/** An open database and how to close it (and the embedded server, when one was started). */
export interface DatabaseHandle {
  db: Db;
  url: string;
  embedded?: EmbeddedPostgresHandle;
  close(): Promise<void>;
}

/**
 * Opens the app database and applies migrations. Without DATABASE_URL it starts (or reuses) the
 * embedded Postgres under `<dataDir>/pg` and uses its `acp` database.
 */
export async function openDatabase(config: AppConfig, logger: Logger): Promise<DatabaseHandle> {
  let url = config.databaseUrl;
  let embedded: EmbeddedPostgresHandle | undefined;
  if (!url) {
    embedded = await startEmbeddedPostgres({ dataDir: path.join(config.dataDir, 'pg'), log: (l) => logger.debug({ pg: l.trim() }, 'postgres') });
    const u = new URL(embedded.url);
    u.pathname = '/acp';
    url = u.toString();
    logger.info({ port: embedded.port, dataDir: path.join(config.dataDir, 'pg') }, 'embedded Postgres started');
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
