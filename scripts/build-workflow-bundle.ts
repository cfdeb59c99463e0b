/**
 * `npm run build:workflows` (part of `npm run build`): bundles the workflow code once, at build time, into
 * dist/workflow-bundle.js, which `npm run start:worker` and the Docker image load (`workflowBundle: { codePath }`),
 * so a worker's start time and memory do not depend on the bundler and every worker of a deploy runs the
 * same bytes (docs.temporal.io "Workers: bundling workflow code"; docs/operations.md "Workflow bundle").
 * The bundle includes the OpenTelemetry workflow interceptor, so one bundle serves traced and untraced workers.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
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

if (require.main === module) {
  buildWorkflowBundle(process.argv[2] ? path.resolve(process.argv[2]) : undefined).then(
    (b) => console.log(`workflow bundle ${path.relative(process.cwd(), b.path)}: ${(b.bytes / 1024).toFixed(0)} KiB, sha256 ${b.sha256.slice(0, 12)}`),
    (err) => {
      console.error(`workflow bundle failed: ${err instanceof Error ? err.message : String(err)}`);
      process.exit(1);
    },
  );
}
