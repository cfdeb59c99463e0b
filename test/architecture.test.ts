/**
 * The dependency rule of README "Architecture" (DESIGN.md "Layout"), read from the TypeScript imports of
 * every source file: a layer imports only the layers the rule allows, type-only imports where the rule
 * says "types", and only the entry points import api/.
 */
import { expect } from 'chai';
import fs from 'node:fs';
import path from 'node:path';

const ROOT = path.resolve(__dirname, '..');
/** Folders whose code the rule governs (tests, benchmarks, scripts and the dev server are outside it). */
const LAYERS = ['api', 'domain', 'db', 'events', 'services', 'activities', 'workflows', 'schemas'] as const;
type Layer = (typeof LAYERS)[number] | 'entry' | 'config' | 'temporal.config' | 'devserver' | 'other';

/** What each layer may import: `value` for any import, `types` for type-only imports. */
const ALLOWED: Record<(typeof LAYERS)[number], { value: string[]; types: string[] }> = {
  domain: { value: ['domain', 'schemas'], types: [] },
  schemas: { value: ['schemas'], types: [] },
  db: { value: ['db', 'domain', 'schemas'], types: [] },
  workflows: { value: ['workflows', 'domain', 'schemas'], types: ['activities'] },
  services: { value: ['services', 'domain', 'db', 'events', 'schemas', 'config', 'temporal.config', 'api→providers'], types: ['workflows'] },
  activities: { value: ['activities', 'domain', 'db', 'events', 'services', 'schemas', 'config', 'temporal.config'], types: ['workflows'] },
  events: { value: ['events', 'domain', 'db', 'schemas', 'config', 'temporal.config'], types: ['workflows'] },
  api: { value: ['api', 'domain', 'db', 'events', 'services', 'schemas', 'config', 'temporal.config', 'api→providers', 'workflows/definitions', 'runtime'], types: ['workflows', 'activities'] },
};
/** npm packages that must stay out of the pure domain. */
const NOT_IN_DOMAIN = /^(koa|koa-body|@koa\/|knex|pg|@temporalio\/(client|worker|activity|workflow))(\/|$)/;
/** The only npm packages workflow code may load (it runs in Temporal's deterministic sandbox). */
const WORKFLOW_PACKAGES = /^@temporalio\/(workflow|common)(\/|$)/;

function sourceFiles(dir: string): string[] {
  const out: string[] = [];
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    if (e.name === 'node_modules' || e.name.startsWith('.') || e.name === 'dist') continue;
    const p = path.join(dir, e.name);
    if (e.isDirectory()) out.push(...sourceFiles(p));
    else if (e.name.endsWith('.ts') && !e.name.endsWith('.d.ts')) out.push(p);
  }
  return out;
}

function layerOf(file: string): Layer {
  const rel = path.relative(ROOT, file).split(path.sep);
  if (rel.length === 1) {
    if (rel[0] === 'config.ts') return 'config';
    if (rel[0] === 'temporal.config.ts') return 'temporal.config';
    return 'entry';
  }
  if (rel[0] === 'scripts') return 'entry'; // operator scripts run beside the service, like cli.ts
  return (LAYERS as readonly string[]).includes(rel[0]) ? (rel[0] as Layer) : rel[0] === 'devserver' ? 'devserver' : 'other';
}

/** Every import of a file: its specifier and whether it brings types only. */
function importsOf(src: string): { spec: string; typeOnly: boolean }[] {
  const out: { spec: string; typeOnly: boolean }[] = [];
  const re = /^\s*(import|export)\s+(type\s+)?([^'";]*?)\s*from\s*['"]([^'"]+)['"]/gm;
  for (let m; (m = re.exec(src)); ) {
    const named = /\{([^}]*)\}/.exec(m[3]);
    const allTypes = !!named && !m[3].replace(/\{[^}]*\}/, '').replace(/[,\s]/g, '') && named[1].split(',').map((s) => s.trim()).filter(Boolean).every((s) => s.startsWith('type '));
    out.push({ spec: m[4], typeOnly: !!m[2] || allTypes });
  }
  for (const m of src.matchAll(/^\s*import\s+['"]([^'"]+)['"]/gm)) out.push({ spec: m[1], typeOnly: false });
  for (const m of src.matchAll(/\bimport\(\s*['"]([^'"]+)['"]\s*\)/g)) out.push({ spec: m[1], typeOnly: /import type|typeof import/.test(src.slice(Math.max(0, m.index! - 20), m.index)) });
  return out;
}

/** The layer name an import target counts as, with the two narrow exceptions the rule names. */
function targetOf(fromFile: string, spec: string): string {
  const target = path.resolve(path.dirname(fromFile), spec);
  const rel = path.relative(ROOT, target).split(path.sep);
  if (rel[0] === 'activities' && rel[1] === 'providers') return 'api→providers';
  if (rel[0] === 'workflows' && rel[1] === 'definitions') return 'workflows/definitions';
  return layerOf(target + '.ts') === 'other' && rel.length > 1 ? rel[0] : layerOf(target + '.ts') === 'entry' ? rel[0] : layerOf(target + '.ts');
}

describe('architecture: the dependency rule (README "Architecture")', () => {
  const files = sourceFiles(ROOT).filter((f) => !path.relative(ROOT, f).startsWith('test') && !path.relative(ROOT, f).startsWith('bench'));

  it('reads the source tree', () => {
    expect(files.length).to.be.greaterThan(100);
    for (const layer of LAYERS) expect(files.some((f) => layerOf(f) === layer), layer).to.equal(true);
  });

  it('each layer imports only what the rule allows', () => {
    const violations: string[] = [];
    for (const file of files) {
      const layer = layerOf(file);
      if (!(layer in ALLOWED)) continue;
      const rule = ALLOWED[layer as keyof typeof ALLOWED];
      for (const { spec, typeOnly } of importsOf(fs.readFileSync(file, 'utf8'))) {
        const where = `${path.relative(ROOT, file)} → ${spec}`;
        if (!spec.startsWith('.')) {
          if (spec.startsWith('node:')) continue;
          if (layer === 'domain' && !typeOnly && NOT_IN_DOMAIN.test(spec)) violations.push(`${where} (the domain is pure: no HTTP framework, SQL or Temporal client)`);
          if (layer === 'workflows' && !typeOnly && !WORKFLOW_PACKAGES.test(spec)) violations.push(`${where} (workflow code loads only @temporalio/workflow and @temporalio/common)`);
          continue;
        }
        const target = targetOf(file, spec);
        const targetLayer = target.split('/')[0];
        if (target === layer || targetLayer === layer) continue;
        if (layer === 'api' && target === 'api→providers') continue;
        if (target === 'api→providers' && (rule.value.includes('activities') || (typeOnly && rule.types.includes('activities')))) continue;
        if (target === 'workflows/definitions' && (rule.value.includes('workflows/definitions') || rule.value.includes('workflows') || typeOnly)) continue;
        if (rule.value.includes(target) || (typeOnly && rule.types.includes(targetLayer))) continue;
        violations.push(`${where} (${layer} may not import ${target}${typeOnly ? ' types' : ''})`);
      }
    }
    expect(violations).to.deep.equal([]);
  });

  it('nothing but the entry points imports api/', () => {
    const violations: string[] = [];
    for (const file of files) {
      const layer = layerOf(file);
      if (layer === 'api' || layer === 'entry') continue;
      for (const { spec } of importsOf(fs.readFileSync(file, 'utf8'))) {
        if (spec.startsWith('.') && targetOf(file, spec) === 'api') violations.push(`${path.relative(ROOT, file)} → ${spec}`);
      }
    }
    expect(violations).to.deep.equal([]);
  });

  it('would catch a violation: the reader sees a value import of the database from the domain', () => {
    const fake = path.join(ROOT, 'domain', 'x.ts');
    expect(targetOf(fake, '../db/index')).to.equal('db');
    expect(importsOf("import { a } from '../db';\nimport type { B } from '../api/x';\nimport { type C } from './c';")).to.deep.equal([
      { spec: '../db', typeOnly: false },
      { spec: '../api/x', typeOnly: true },
      { spec: './c', typeOnly: true },
    ]);
  });
});
