/**
 * `npm run histories:record`: runs the scenario tests (test/workflows, test/api, test/services) with
 * `RECORD_HISTORIES` set, so the run's workflow histories become the replay suite's fixtures under
 * test/fixtures/histories (test/helpers/histories.ts picks one per shape and workflow type). Run it after
 * a workflow change made with `patched` once the old runs are gone, or for a new workflow type
 * (docs/operations.md "Changing a workflow with runs in flight"). Extra arguments go to mocha.
 */
import { spawnSync } from 'node:child_process';
import path from 'node:path';

const root = path.join(__dirname, '..');
const specs = ['test/workflows/**/*.test.ts', 'test/api/**/*.test.ts', 'test/services/**/*.test.ts'];
const r = spawnSync(process.execPath, [path.join(root, 'node_modules', 'mocha', 'bin', 'mocha.js'), ...specs, '--exclude', 'test/workflows/replay.test.ts', ...process.argv.slice(2)], {
  cwd: root,
  stdio: 'inherit',
  env: { ...process.env, RECORD_HISTORIES: path.join(root, 'test', 'fixtures', 'histories') },
});
process.exit(r.status ?? 1);
