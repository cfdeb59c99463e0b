/**
 * Replay of recorded histories (docs/operations.md "Changing a workflow with runs in flight"): every
 * history under test/fixtures/histories (recorded by `npm run histories:record` from the scenario tests)
 * replays against the current workflow code with `Worker.runReplayHistories`, as Temporal's production
 * guidance asks; a change that would break runs in flight fails here with a DeterminismViolationError.
 */
import fs from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { bundleWorkflowCode, Worker } from '@temporalio/worker';
import { DeterminismViolationError } from '@temporalio/workflow';
import { loadRecordedHistories, SERVICE_WORKFLOW_TYPES, type RecordedHistory } from '../helpers/histories';
import { serviceWorkflowBundle } from '../helpers/temporal';
import { WORKFLOW_BUNDLER_OPTIONS } from '../../worker';
import type { temporal } from '@temporalio/proto';

const quiet = { trace() {}, debug() {}, info() {}, warn() {}, error() {}, log() {} } as never;

/** Replays `histories` on `workflowBundle`; returns each failure as `file: message` (with the error's class). */
async function replayAll(workflowBundle: { code: string }, histories: { entry: RecordedHistory; history: temporal.api.history.v1.IHistory }[]) {
  const failures: { file: string; error: Error }[] = [];
  const input = histories.map((h) => ({ workflowId: h.entry.file, history: h.history }));
  for await (const result of Worker.runReplayHistories({ workflowBundle, replayName: 'replay-suite' }, input)) {
    if (result.error) failures.push({ file: result.workflowId, error: result.error });
  }
  return failures;
}

describe('replay of recorded workflow histories', () => {
  const recorded = loadRecordedHistories();

  it('holds histories of every workflow type the worker registers', () => {
    const covered = new Set(recorded.map((r) => r.entry.workflowType));
    expect(SERVICE_WORKFLOW_TYPES.filter((t) => !covered.has(t)), 'workflow types without a recorded history (npm run histories:record)').to.deep.equal([]);
  });

  it('replays every recorded history against the current workflow code without a determinism violation', async function () {
    this.timeout(300_000);
    const started = Date.now();
    const failures = await replayAll(await serviceWorkflowBundle(), recorded);
    const types = new Set(recorded.map((r) => r.entry.workflowType)).size;
    console.log(`    replayed ${recorded.length} histories of ${types} workflow types in ${Date.now() - started} ms`);
    expect(failures.map((f) => `${f.file}: ${f.error.message}`)).to.deep.equal([]);
  });

  it('fails a deliberately non-deterministic change (a copy of the workflows whose publish calls its activity after a timer)', async function () {
    this.timeout(300_000);
    const publish = recorded.filter((r) => r.entry.workflowType === 'agentPublishWorkflow' && r.entry.status === 'COMPLETED');
    expect(publish.length, 'a recorded completed publish').to.be.greaterThan(0);
    // A sibling of workflows/ so that the copy's `../domain`, `../activities` imports resolve as the original's.
    const root = path.join(__dirname, '..', '..');
    const copy = fs.mkdtempSync(path.join(root, '.workflows-nondeterministic-'));
    try {
      fs.cpSync(path.join(root, 'workflows'), copy, { recursive: true });
      const file = path.join(copy, 'agentPublish.ts');
      const source = fs.readFileSync(file, 'utf8');
      const changed = source
        .replace("import { proxyActivities } from '@temporalio/workflow';", "import { proxyActivities, sleep } from '@temporalio/workflow';")
        .replace('  return compileAndPublishAgent(input);', "  await sleep('1 second');\n  return compileAndPublishAgent(input);");
      expect(changed, 'the change applies to the copy').to.not.equal(source);
      fs.writeFileSync(file, changed);
      const bundle = await bundleWorkflowCode({ workflowsPath: path.join(copy, 'index.ts'), ...WORKFLOW_BUNDLER_OPTIONS, logger: quiet });
      const failures = await replayAll(bundle, publish);
      expect(failures).to.have.length(publish.length);
      for (const f of failures) expect(f.error).to.be.instanceOf(DeterminismViolationError);
    } finally {
      fs.rmSync(copy, { recursive: true, force: true });
    }
  });
});
