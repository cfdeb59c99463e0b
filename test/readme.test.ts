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

  it('names the two quick-start commands and documents every environment variable the config reads', () => {
    expect(text).to.include('npm install && npm start').and.include('npm test');
    const configSrc = fs.readFileSync(path.join(__dirname, '..', 'config.ts'), 'utf8');
    const vars = new Set([...configSrc.matchAll(/int\('([A-Z][A-Z0-9_]+)'/g), ...configSrc.matchAll(/process\.env\.([A-Z][A-Z0-9_]+)/g)].map((m) => m[1]));
    expect(vars.size).to.be.at.least(13);
    for (const v of vars) expect(text, v).to.include(`\`${v}\``);
  });
});
