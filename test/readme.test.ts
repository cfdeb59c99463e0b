/** The README's status table matches the route table and the handlers (run scripts/readme-status.ts when this fails). */
import fs from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { renderReadme } from '../scripts/readme-status';

describe('README', () => {
  const text = fs.readFileSync(path.join(__dirname, '..', 'README.md'), 'utf8');

  it('has a status table that says which spec operations are built (npx tsx scripts/readme-status.ts)', () => {
    expect(renderReadme(text)).to.equal(text);
  });

  it('names the two quick-start commands and documents every environment variable the service reads', () => {
    expect(text).to.include('npm install && npm start').and.include('npm test');
    // The service's sources (the dev server documents its own in devserver/README.md).
    const root = path.join(__dirname, '..');
    const sources = (dir: string): string[] =>
      fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? sources(path.join(dir, e.name)) : e.name.endsWith('.ts') ? [path.join(dir, e.name)] : []));
    const files = [
      ...fs.readdirSync(root).filter((f) => f.endsWith('.ts')).map((f) => path.join(root, f)),
      ...['api', 'activities', 'db', 'workflows'].flatMap((d) => sources(path.join(root, d))),
    ];
    const vars = new Set<string>();
    for (const f of files) {
      const src = fs.readFileSync(f, 'utf8');
      for (const m of src.matchAll(/envNumber\('([A-Z][A-Z0-9_]+)'|process\.env\.([A-Z][A-Z0-9_]+)/g)) vars.add(m[1] ?? m[2]);
    }
    expect(vars.size).to.be.at.least(20);
    for (const v of vars) expect(text, v).to.include(`\`${v}\``);
  });
});
