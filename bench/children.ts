/**
 * The benchmarks' child processes (docs/benchmarks.md): the Temporal dev server and `npm run start:worker` in processes
 * of their own, as the production shape runs them (docker-compose.yml), so each one's CPU is measured apart; and load
 * generators that report READY, start on GO and print one `RESULT <json>` line (bench/loadgen.ts, bench/smsSender.ts).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import readline from 'node:readline';

/** How long a child may take to be ready, ms (a cold tsx start on a busy machine). */
const READY_MS = 120_000;

/**
 * Node flags of the dev server and worker children: with `BENCH_CHILD_PROFILE_DIR`, each writes a V8 CPU profile of
 * its whole life there when it exits (Node `--cpu-prof`, which NODE_OPTIONS does not accept).
 */
const childProfileArgs = (): string[] => (process.env.BENCH_CHILD_PROFILE_DIR ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_CHILD_PROFILE_DIR}`] : []);

/** Stops a child process with SIGTERM and waits for its exit (at once when it has exited). */
export async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGTERM');
  await exited;
}

/**
 * Waits for a line of `child`'s stdout that `ready` accepts.
 * @returns what `ready` returned for it
 * @throws Error when the child exits first or nothing is ready within {@link READY_MS}
 */
function readyLine<T>(child: ChildProcess, what: string, ready: (line: string) => T | undefined, onLine?: (line: string) => void): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${what} was not ready within ${READY_MS / 1000} s`)), READY_MS);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`${what} exited (${code}) before it was ready`));
    });
    readline.createInterface({ input: child.stdout! }).on('line', (line) => {
      onLine?.(line);
      const got = ready(line);
      if (got !== undefined) {
        clearTimeout(timer);
        resolve(got);
      }
    });
  });
}

/**
 * Starts the Temporal dev server (`devserver/bin.ts`, in memory, on a free port) in a child process.
 * @param nodeArgs Node flags before the script (e.g. `--cpu-prof`)
 * @returns the child and its `host:port` once it listens
 */
export async function startDevServerChild(nodeArgs: string[] = []): Promise<{ child: ChildProcess; address: string }> {
  const child = spawn(process.execPath, [...nodeArgs, ...childProfileArgs(), '--import', 'tsx', path.join(__dirname, '..', 'devserver', 'bin.ts'), '--port', '0', '--log-level', 'warn'], { stdio: ['ignore', 'pipe', 'inherit'] });
  try {
    const address = await readyLine(child, 'the dev server process', (line) => /listening on (\S+?)(,|$)/.exec(line)?.[1]);
    return { child, address };
  } catch (err) {
    child.kill('SIGTERM');
    throw err;
  }
}

/**
 * Starts `worker.ts` (`npm run start:worker`) in a child process with `env` over this process's environment (no metrics
 * ports, which this process may hold). Lines at warn level or above go to this process's stderr.
 * @returns the child once it logs `worker running`
 */
export async function startWorkerChild(env: NodeJS.ProcessEnv): Promise<ChildProcess> {
  const childEnv: NodeJS.ProcessEnv = { ...process.env, LOG_LEVEL: 'info', ...env };
  delete childEnv.METRICS_PORT;
  delete childEnv.TEMPORAL_SDK_METRICS_PORT;
  const child = spawn(process.execPath, [...childProfileArgs(), '--import', 'tsx', path.join(__dirname, '..', 'worker.ts')], { env: childEnv, stdio: ['ignore', 'pipe', 'inherit'] });
  try {
    await readyLine(
      child,
      'the worker process',
      (line) => (line.includes('"worker running"') ? true : undefined),
      (line) => /"level":(40|50|60)/.test(line) && process.stderr.write(`[worker] ${line}\n`),
    );
    return child;
  } catch (err) {
    child.kill('SIGTERM');
    throw err;
  }
}

/**
 * Starts a load generator script of this folder with `job` (JSON, its first argument): it prints READY when set up,
 * starts on `GO` on its stdin and prints `RESULT <json>` when done.
 * @returns the child and `go()`, which starts the load and resolves with its result
 * @throws Error when the script exits with a failure before READY
 */
export function startLoadChild<J, R>(script: string, job: J): Promise<{ child: ChildProcess; go(): Promise<R> }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', path.join(__dirname, script), JSON.stringify(job)], { stdio: ['pipe', 'pipe', 'inherit'] });
    let out = '';
    let result: (r: R) => void;
    const done = new Promise<R>((r) => (result = r));
    child.stdout!.on('data', (buf: Buffer) => {
      out += buf.toString();
      if (out.includes('READY\n')) resolve({ child, go: () => (child.stdin!.write('GO\n'), done) });
      const m = /RESULT (.*)\n/.exec(out);
      if (m) result(JSON.parse(m[1]) as R);
    });
    child.once('exit', (code) => code !== 0 && reject(new Error(`${script} exited with ${code}`)));
  });
}

/**
 * `startBenchStack`'s `devServer` option for a dev server in a child process ({@link startDevServerChild}).
 * @returns the option, and `child()`: the dev server's process once the stack started it
 */
export function devServerInChild(): { devServer: () => Promise<{ address: string; stop(): Promise<void> }>; child(): ChildProcess | undefined } {
  let child: ChildProcess | undefined;
  return {
    devServer: async () => {
      const dev = await startDevServerChild();
      child = dev.child;
      return { address: dev.address, stop: () => stopChild(dev.child) };
    },
    child: () => child,
  };
}
