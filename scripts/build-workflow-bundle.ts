/**
 * `npm run build:workflows` (part of `npm run build`): bundles the workflow code once, at build time, into
 * dist/workflow-bundle.js, which `npm run start:worker` and the Docker image load (`workflowBundle: { codePath }`),
 * so a worker's start time and memory do not depend on the bundler and every worker of a deploy runs the
 * same bytes (docs.temporal.io "Workers: bundling workflow code"; docs/operations.md "Workflow bundle").
 * The bundle includes the OpenTelemetry workflow interceptor, so one bundle serves traced and untraced workers.
 * `npm start` keeps its own bundle under dist/cache/, rebuilt only when the sources change ({@link ensureWorkflowBundle}).
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { bundleWorkflowCode } from '@temporalio/worker';
import { DEFAULT_WORKFLOW_BUNDLE_PATH, WORKFLOW_BUNDLER_OPTIONS, WORKFLOW_INTERCEPTOR_MODULES } from '../worker';

/**
 * Bundles workflows/index.ts into `outFile`.
 * @returns the bundle's path, size in bytes and SHA-256 (hex; the worker logs its first 12 characters)
 */
export async function buildWorkflowBundle(outFile = DEFAULT_WORKFLOW_BUNDLE_PATH): Promise<{ path: string; bytes: number; sha256: string }> {
  const { code } = await bundleWorkflowCode({
    workflowsPath: path.join(__dirname, '..', 'workflows', 'index.ts'),
    workflowInterceptorModules: WORKFLOW_INTERCEPTOR_MODULES,
    ...WORKFLOW_BUNDLER_OPTIONS,
    logger: { trace() {}, debug() {}, info() {}, warn() {}, error() {}, log() {} } as never,
  });
  fs.mkdirSync(path.dirname(outFile), { recursive: true });
  fs.writeFileSync(outFile, code);
  return { path: outFile, bytes: Buffer.byteLength(code), sha256: crypto.createHash('sha256').update(code).digest('hex') };
}

const ROOT = path.join(__dirname, '..');
/** Folders whose TypeScript never reaches the workflow bundle (tests, benches, the UI apps, build output, state). */
const NOT_INPUTS = new Set(['node_modules', 'test', 'bench', 'ui', 'widget', 'console', 'dist', 'scratch', 'test-artifacts', '.data', '.git']);

async function sourceFiles(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const e of await fsp.readdir(dir, { withFileTypes: true })) {
    if (e.name.startsWith('.') || (dir === ROOT && NOT_INPUTS.has(e.name))) continue;
    const p = path.join(dir, e.name);
    if (e.isDirectory()) out.push(...(await sourceFiles(p)));
    else if (/\.(ts|js|json)$/.test(e.name)) out.push(p);
  }
  return out;
}

/**
 * sha256 over what a workflow bundle is built from, conservatively: every source of the service (`.ts`, `.js`,
 * `.json`: the workflows and whatever they import, the bundler's options in worker.ts, this script) and
 * package-lock.json (the SDK's workflow runtime and the interceptors). Any edit outside tests and benches builds anew.
 */
export async function workflowInputHash(): Promise<string> {
  const h = crypto.createHash('sha256');
  for (const f of [...(await sourceFiles(ROOT)).sort(), path.join(ROOT, 'package-lock.json')]) {
    h.update(path.relative(ROOT, f));
    h.update(await fsp.readFile(f).catch(() => Buffer.alloc(0)));
  }
  return h.digest('hex');
}

/** Where `npm start` keeps its workflow bundle between starts (the input hash beside it, `.input-hash`). */
export const START_WORKFLOW_BUNDLE_PATH = path.join(ROOT, 'dist', 'cache', 'workflow-bundle.js');

/**
 * The workflow bundle of the current sources for `npm start`: the one kept at `outFile` when it was built from the
 * same inputs ({@link workflowInputHash}), else built now (about 2 s on 2 cores) and kept for the next start. An
 * edited workflow therefore takes effect at the next start, as with bundling at every start. Written to a temporary
 * file and renamed, so two starts at once never read half a bundle.
 * @returns the bundle's path, whether it was built now, and how long finding or building it took (ms)
 * @throws when bundling fails or the folder cannot be written (the caller may bundle in memory instead)
 */
export async function ensureWorkflowBundle(outFile = START_WORKFLOW_BUNDLE_PATH): Promise<{ path: string; built: boolean; ms: number }> {
  const t0 = performance.now();
  const hashFile = `${outFile}.input-hash`;
  const hash = await workflowInputHash();
  const have = await fsp.readFile(hashFile, 'utf8').catch(() => '');
  if (have === hash && fs.existsSync(outFile)) return { path: outFile, built: false, ms: performance.now() - t0 };
  await removeAbandonedTemporaries(outFile);
  const tmp = `${outFile}.${process.pid}.tmp`;
  await buildWorkflowBundle(tmp);
  await fsp.rename(tmp, outFile);
  await fsp.writeFile(`${hashFile}.${process.pid}.tmp`, hash);
  await fsp.rename(`${hashFile}.${process.pid}.tmp`, hashFile);
  return { path: outFile, built: true, ms: performance.now() - t0 };
}

/**
 * Removes the temporary files of `outFile` (and its hash) that a start killed mid-build left behind: those named with
 * the pid of a process that no longer runs (`kill(pid, 0)` fails with ESRCH, kill(2)).
 */
async function removeAbandonedTemporaries(outFile: string): Promise<void> {
  const dir = path.dirname(outFile);
  const base = path.basename(outFile);
  const names = await fsp.readdir(dir).catch(() => [] as string[]);
  for (const name of names) {
    const m = name.startsWith(`${base}.`) ? /\.(\d+)\.tmp$/.exec(name) : null;
    if (!m) continue;
    try {
      process.kill(Number(m[1]), 0);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ESRCH') await fsp.rm(path.join(dir, name), { force: true });
    }
  }
}

if (require.main === module) {
  buildWorkflowBundle(process.argv[2] ? path.resolve(process.argv[2]) : undefined).then(
    (b) => console.log(`workflow bundle ${path.relative(process.cwd(), b.path)}: ${(b.bytes / 1024).toFixed(0)} KiB, sha256 ${b.sha256.slice(0, 12)}`),
    (err) => {
      console.error(`workflow bundle failed: ${err instanceof Error ? err.message : String(err)}`);
      process.exit(1);
    },
  );
}
