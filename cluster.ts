/**
 * Several processes of one entry point on one machine (docs/operations.md "Scaling out"): `npm run start:api` runs
 * `API_PROCESSES` API processes and `npm run start:worker` runs `WORKER_PROCESSES` worker processes with
 * `node:cluster`. The primary prepares what must happen once (secrets, the embedded Postgres when
 * DATABASE_URL is unset, migrations), then forks the children with `DATABASE_URL` set to that database;
 * API children share the listening socket (the cluster module hands connections out round-robin).
 * Everything the processes share lives in Postgres: cache coherence (the change feed), rate-limit counters
 * and idempotency keys, so processes on other machines pointed at the same database behave the same.
 */
import cluster, { type Worker } from 'node:cluster';
import os from 'node:os';
import { envNumber } from './config';

/**
 * How many processes `name` (an environment variable) asks for: a whole number ≥ 1, default `fallback`.
 * @throws when it is set to anything else (0, a fraction, a word)
 */
export function processCount(name: string, fallback: number, env: NodeJS.ProcessEnv = process.env): number {
  const n = envNumber(name, fallback, env);
  if (!Number.isInteger(n) || n < 1) throw new Error(`${name} must be a whole number of processes (1 or more), got "${env[name]}"`);
  return n;
}

/** The cores this process may use (`os.availableParallelism`, Node ≥ 18.14): the default of `API_PROCESSES`. */
export function coreCount(): number {
  return typeof os.availableParallelism === 'function' ? os.availableParallelism() : os.cpus().length;
}

/** True in a child forked by {@link runProcesses}. */
export function isClusterChild(): boolean {
  return cluster.isWorker;
}

/** The 0-based index of this child among its siblings (0 in the primary or a single process). */
export function processIndex(): number {
  return Number(process.env.ACP_PROCESS_INDEX ?? 0);
}

/**
 * Runs `count` children of the current entry point (the primary's own `process.argv`), each started with
 * `env` added to its environment and `ACP_PROCESS_INDEX` = 0…count−1. A child that dies is forked again
 * (at most once a second per index) until `stop()`. Call it in the primary only.
 * @returns `ready` resolves with what each child passed to {@link announceReady} (index order) once every
 *   child has (rejects when one exits while starting); `stop()` sends SIGTERM to every child and resolves
 *   when all have exited
 */
export function runProcesses(opts: {
  count: number;
  env: Record<string, string>;
  log: (msg: string, fields: Record<string, unknown>) => void;
}): { ready: Promise<Record<string, unknown>[]>; pids(): number[]; stop(): Promise<void> } {
  let stopping = false;
  const children = new Map<number, Worker>();
  const lastFork = new Map<number, number>();
  let waiting = opts.count;
  const infos: Record<string, unknown>[] = [];
  let resolveReady!: (infos: Record<string, unknown>[]) => void;
  let rejectReady!: (err: Error) => void;
  const ready = new Promise<Record<string, unknown>[]>((res, rej) => {
    resolveReady = res;
    rejectReady = rej;
  });
  const fork = (index: number, first: boolean) => {
    lastFork.set(index, Date.now());
    const child = cluster.fork({ ...opts.env, ACP_PROCESS_INDEX: String(index) });
    children.set(index, child);
    let started = false;
    child.on('message', (msg: unknown) => {
      const m = msg as { ready?: boolean; info?: Record<string, unknown> } | undefined;
      if (m?.ready && !started) {
        started = true;
        infos[index] = m.info ?? {};
        if (first && --waiting === 0) resolveReady(infos);
      }
    });
    child.once('exit', (code, signal) => {
      if (children.get(index) === child) children.delete(index);
      if (stopping) return;
      if (first && !started) {
        rejectReady(new Error(`process ${index} exited with ${signal ?? code} while starting`));
        return;
      }
      opts.log('process exited; starting it again', { index, pid: child.process.pid, code, signal });
      const wait = Math.max(0, 1000 - (Date.now() - (lastFork.get(index) ?? 0)));
      setTimeout(() => !stopping && fork(index, false), wait).unref();
    });
  };
  for (let i = 0; i < opts.count; i++) fork(i, true);
  return {
    ready,
    pids: () => [...children.values()].map((c) => c.process.pid!).filter(Boolean),
    stop: async () => {
      stopping = true;
      await Promise.all(
        [...children.values()].map(
          (c) =>
            new Promise<void>((resolve) => {
              if (c.isDead()) return resolve();
              c.once('exit', () => resolve());
              c.process.kill('SIGTERM');
            }),
        ),
      );
    },
  };
}

/** Tells the primary this child is serving, with `info` (e.g. its URL); a no-op outside a cluster child. */
export function announceReady(info: Record<string, unknown> = {}): void {
  if (cluster.isWorker && process.send) process.send({ ready: true, info });
}
