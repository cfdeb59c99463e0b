/**
 * The workflow bundle `npm start` keeps between starts (scripts/build-workflow-bundle.ts `ensureWorkflowBundle`,
 * docs/operations.md "Workflow bundle"): built when missing, kept when its inputs are unchanged, and a temporary file
 * a start killed mid-build left behind is removed by the next build, while one of a build still running is left alone.
 */
import { expect } from 'chai';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawn } from 'node:child_process';
import { ensureWorkflowBundle } from '../../scripts/build-workflow-bundle';

describe('the workflow bundle kept for npm start', function () {
  this.timeout(120_000);

  it('builds it once, keeps it for unchanged sources, and removes the temporaries of a build that was killed', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'acp-bundle-'));
    const outFile = path.join(dir, 'workflow-bundle.js');
    // A pid that ran and ended: a start killed mid-build.
    const ended = spawn(process.execPath, ['-e', '0']);
    await new Promise((resolve) => ended.on('exit', resolve));
    const abandoned = `${outFile}.${ended.pid}.tmp`;
    const live = `${outFile}.${process.ppid}.tmp`; // a build of a process still running
    for (const f of [abandoned, `${outFile}.input-hash.${ended.pid}.tmp`, live]) fs.writeFileSync(f, 'partial');
    try {
      const first = await ensureWorkflowBundle(outFile);
      expect(first.built).to.equal(true);
      expect(fs.statSync(outFile).size).to.be.above(10_000);
      expect(fs.existsSync(abandoned), 'the killed build\'s bundle').to.equal(false);
      expect(fs.existsSync(`${outFile}.input-hash.${ended.pid}.tmp`), 'the killed build\'s hash').to.equal(false);
      expect(fs.existsSync(live), 'a running process\'s build').to.equal(true);
      const second = await ensureWorkflowBundle(outFile);
      expect(second.built).to.equal(false);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
