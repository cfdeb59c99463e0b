/**
 * `npm start` (main.ts) and the other entry points as real child processes, for the tests that drive them
 * (test/main.test.ts, test/shutdown.test.ts): each in its own process group, as a terminal runs it.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { SERVICE_SECRETS } from '../../secrets';

const ROOT = path.resolve(__dirname, '..', '..');
/** The tsx CLI, to run a TypeScript entry point as a child process. */
export const TSX = path.join(ROOT, 'node_modules', 'tsx', 'dist', 'cli.mjs');

/** The environment of a child: this run's secrets, database and Temporal settings removed. */
export function childEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const env = { ...process.env };
  for (const k of Object.keys(env)) {
    if (SERVICE_SECRETS.some((s) => k === s.name || k.startsWith(`${s.name}_`))) delete env[k];
  }
  for (const k of ['DATABASE_URL', 'TEMPORAL_ADDRESS', 'NODE_ENV', 'PUBLIC_BASE_URL', 'HOST', 'PORT']) delete env[k];
  return { ...env, LOG_LEVEL: 'warn', TEMPORAL_DEV_PORT: '0', TEMPORAL_UI_PORT: '0', ...extra };
}

export interface Service {
  child: ChildProcess;
  stdout: string;
  baseUrl: string;
  exited: Promise<unknown>;
}

/**
 * Starts `tsx main.ts` (or, with `viaNpm`, `npm start` as a person types it) in its own process group;
 * resolves once it printed its banner. `output()` is everything it wrote so far.
 */
export async function startService(env: NodeJS.ProcessEnv, viaNpm = false): Promise<Service & { output(): { stdout: string; stderr: string } }> {
  const [cmd, args] = viaNpm ? ['npm', ['start']] : [process.execPath, [TSX, 'main.ts']];
  const child = spawn(cmd, args, { cwd: ROOT, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  const exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve(code ?? signal)));
  const output = () => ({ stdout, stderr });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`service did not start in 120 s: ${stderr}`)), 120_000);
    child.stderr!.on('data', (d) => (stderr += d));
    child.stdout!.on('data', (d) => {
      stdout += d;
      const m = /Agent Control-Plane API: (\S+)[\s\S]*\n\n/.exec(stdout);
      if (m) {
        clearTimeout(timer);
        resolve({ child, stdout, baseUrl: m[1], exited, output });
      }
    });
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`service exited (${String(code)}) before it started: ${stderr}`));
    });
  });
}

/** Runs `tsx <script> …args` to completion. */
export function runTsx(script: string, args: string[], env: NodeJS.ProcessEnv): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [TSX, script, ...args], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (d) => (stdout += d));
  child.stderr!.on('data', (d) => (stderr += d));
  return new Promise((resolve) => child.once('exit', (code) => resolve({ code, stdout, stderr })));
}

/** True when something accepts TCP connections on 127.0.0.1:`port`. */
export function listening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.connect(port, '127.0.0.1');
    s.once('connect', () => (s.destroy(), resolve(true)));
    s.once('error', () => resolve(false));
  });
}

/** The port of the embedded Postgres from its lock file (PostgreSQL's postmaster.pid, line 4). */
export function postgresPort(dataDir: string): number {
  return Number(fs.readFileSync(path.join(dataDir, 'pg', 'postmaster.pid'), 'utf8').split('\n')[3]);
}

export async function api(s: Service, method: string, p: string, key: string, json?: unknown, headers: Record<string, string> = {}): Promise<{ status: number; body: any }> {
  const res = await fetch(s.baseUrl + p, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(json ? { 'content-type': 'application/json' } : {}), ...headers },
    body: json ? JSON.stringify(json) : undefined,
  });
  return { status: res.status, body: await res.json().catch(() => null) };
}

