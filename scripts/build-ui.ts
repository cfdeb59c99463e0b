/**
 * Builds the Temporal Web UI app in `ui/` (SvelteKit static adapter over `@temporalio/ui`) into
 * `ui/build/`, only when its inputs changed: the hash of ui/'s sources, package-lock.json and
 * this script is kept in `ui/build/.input-hash` (docs/operations.md "Inspecting workflows"). Everything comes
 * from node_modules; nothing is downloaded. `npm run ui:build` runs it; `npm start` and the
 * browser test call {@link ensureUiBuilt}.
 */
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { promises as fs } from 'node:fs';
import * as path from 'node:path';

/** The app's directory and its build output. */
export const UI_DIR = path.resolve(__dirname, '..', 'ui');
export const UI_BUILD_DIR = path.join(UI_DIR, 'build');
const HASH_FILE = path.join(UI_BUILD_DIR, '.input-hash');

async function listFiles(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const e of await fs.readdir(dir, { withFileTypes: true })) {
    if (['build', '.svelte-kit', 'node_modules'].includes(e.name)) continue;
    const p = path.join(dir, e.name);
    if (e.isDirectory()) out.push(...(await listFiles(p)));
    else out.push(p);
  }
  return out;
}

/** sha256 over the UI's inputs (sources, lock file, this script). */
export async function uiInputHash(): Promise<string> {
  const h = createHash('sha256');
  const files = [...(await listFiles(UI_DIR)).sort(), path.resolve(UI_DIR, '..', 'package-lock.json'), __filename];
  for (const f of files) {
    h.update(path.relative(UI_DIR, f));
    h.update(await fs.readFile(f).catch(() => Buffer.alloc(0)));
  }
  return h.digest('hex');
}

/**
 * Builds the UI unless `ui/build` holds a build of the current inputs. Resolves with whether it
 * built and how long it took (ms). Rejects with vite's output when the build fails, or when
 * `signal` aborts it (the vite child is killed: `npm start` stopping during a background build).
 */
export async function ensureUiBuilt(log: (line: string) => void = () => undefined, signal?: AbortSignal): Promise<{ built: boolean; ms: number }> {
  const hash = await uiInputHash();
  const have = await fs.readFile(HASH_FILE, 'utf8').catch(() => '');
  if (have === hash) return { built: false, ms: 0 };
  log('building the Temporal Web UI (ui/, once per change of its inputs)…');
  const t0 = Date.now();
  const vite = path.join(path.dirname(require.resolve('vite/package.json')), 'bin', 'vite.js');
  const output: string[] = [];
  const code = await new Promise<number | null>((resolve, reject) => {
    const child = spawn(process.execPath, [vite, 'build'], { cwd: UI_DIR, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, NODE_ENV: 'production' } });
    child.stdout.on('data', (b: Buffer) => output.push(b.toString()));
    child.stderr.on('data', (b: Buffer) => output.push(b.toString()));
    child.on('error', reject);
    child.on('close', resolve);
    signal?.addEventListener('abort', () => child.kill('SIGTERM'), { once: true });
  });
  if (signal?.aborted) throw new Error('the Web UI build was stopped');
  if (code !== 0) throw new Error(`the Web UI build failed (exit ${code}):\n${output.join('').slice(-4000)}`);
  await fs.writeFile(HASH_FILE, hash);
  return { built: true, ms: Date.now() - t0 };
}

if (require.main === module) {
  ensureUiBuilt((l) => process.stdout.write(l + '\n')).then(
    async ({ built, ms }) => {
      process.stdout.write(built ? `Web UI built in ${(ms / 1000).toFixed(1)} s into ${UI_BUILD_DIR}\n` : 'Web UI build is up to date\n');
    },
    (err) => {
      process.stderr.write(`error: ${err instanceof Error ? err.message : String(err)}\n`);
      process.exit(1);
    },
  );
}
