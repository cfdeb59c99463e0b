/**
 * The dependency rule (docs/architecture.md "Layers"; DESIGN.md "Layout"), checked by dependency-cruiser
 * with the project's `.dependency-cruiser.cjs`: every layer imports only the layers below it, workflow
 * code only the domain and activity types, and no value-import cycle spans two top-level folders.
 */
import { expect } from 'chai';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

const ROOT = path.resolve(__dirname, '..');
const CLI = path.join(ROOT, 'node_modules', 'dependency-cruiser', 'bin', 'dependency-cruise.mjs');
const CONFIG = path.join(ROOT, '.dependency-cruiser.cjs');
/** The folders the rule governs (tests, benchmarks, the dev server and the UI are outside it). */
const LAYERS = ['api', 'activities', 'workflows', 'services', 'events', 'providers', 'db', 'domain', 'schemas'];

interface Violation {
  from: string;
  to: string;
  rule: { name: string; severity: string };
  cycle?: { name: string }[];
}

/** Runs dependency-cruiser in `cwd` over `targets`. @returns its violations and the number of modules cruised */
function cruise(cwd: string, targets: string[]): Promise<{ violations: Violation[]; modules: number }> {
  return new Promise((resolve, reject) => {
    execFile(process.execPath, [CLI, '--config', CONFIG, '--output-type', 'json', ...targets], { cwd, maxBuffer: 256 * 1024 * 1024 }, (err, stdout, stderr) => {
      // The CLI exits with the number of errors; the JSON on stdout is the answer either way.
      if (!stdout) return reject(err ?? new Error(stderr));
      const out = JSON.parse(stdout) as { summary: { violations: Violation[]; totalCruised: number } };
      resolve({ violations: out.summary.violations, modules: out.summary.totalCruised });
    });
  });
}

const shown = (vs: Violation[]) => vs.map((v) => `${v.rule.name}: ${v.from} → ${v.to}${v.cycle ? ` (cycle ${v.cycle.map((c) => c.name).join(' → ')})` : ''}`);

describe('architecture: the dependency rule (dependency-cruiser)', function () {
  this.timeout(120_000);

  it('holds for the source tree: no forbidden import, no cycle across folders', async () => {
    const roots = fs.readdirSync(ROOT).filter((f) => f.endsWith('.ts') && !f.endsWith('.d.ts'));
    const { violations, modules } = await cruise(ROOT, [...roots, ...LAYERS, 'scripts']);
    expect(modules, 'modules cruised').to.be.greaterThan(300);
    expect(shown(violations)).to.deep.equal([]);
  });

  it('catches each kind of violation in a tree that breaks the rule on purpose', async () => {
    const fixture = path.join(__dirname, 'fixtures', 'architecture');
    const { violations } = await cruise(fixture, ['domain', 'db', 'providers', 'services', 'events', 'workflows', 'activities']);
    const found = shown(violations).map((s) => s.replace(/ \(cycle.*$/, ''));
    expect(found).to.include.members([
      'layer-domain: domain/rule.ts → db/index.ts',
      'layer-providers: providers/carrier.ts → services/calls.ts',
      'layer-events: events/emit.ts → services/calls.ts',
      'layer-workflows-types: workflows/campaign.ts → activities/dial.ts',
    ]);
    expect(violations.filter((v) => v.rule.name === 'no-cycle-across-folders')).to.have.length.greaterThan(0);
    // A cycle through type-only imports counts as well (workflows/ ↔ activities/ by their types).
    expect(found.filter((s) => s.startsWith('no-cycle-across-folders: ') && s.includes('typedCycle.ts'))).to.have.length.greaterThan(0);
    expect(found).to.include('layer-activities: activities/typedCycle.ts → workflows/typedCycle.ts');
    // A type-only import of activities by a workflow is what Temporal's SDK prescribes: allowed.
    expect(found.filter((s) => s.includes('workflows/allowed.ts'))).to.deep.equal([]);
    expect(violations.every((v) => v.rule.severity === 'error')).to.equal(true);
  });
});
