/**
 * The README and docs/ stay true: the quick start's two commands, a README short enough to read in five
 * minutes, the status table in docs/status.md matching the route table and the handlers (run
 * `npm run docs:status` when it fails), every environment variable the service reads documented in
 * docs/configuration.md, every relative link resolving to a file (and a heading, for a `#fragment`), and
 * every npm script the pages name existing in package.json.
 */
import fs from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { renderStatusDoc, STATUS_DOC } from '../scripts/readme-status';

const ROOT = path.join(__dirname, '..');
const README = path.join(ROOT, 'README.md');
const DOCS = path.join(ROOT, 'docs');
const read = (file: string) => fs.readFileSync(file, 'utf8');
const rel = (file: string) => path.relative(ROOT, file);

/** README.md and every page of docs/. */
function pages(): string[] {
  return [README, ...fs.readdirSync(DOCS).filter((f) => f.endsWith('.md')).sort().map((f) => path.join(DOCS, f))];
}

/** Markdown without its fenced code blocks (kept as blank lines, so line numbers hold). */
function withoutFences(text: string): string {
  let inFence = false;
  return text
    .split('\n')
    .map((line) => {
      if (/^\s*(```|~~~)/.test(line)) {
        inFence = !inFence;
        return '';
      }
      return inFence ? '' : line;
    })
    .join('\n');
}

/**
 * The anchors GitHub gives a page's ATX headings (github-slugger: lower case, punctuation other than `-` and
 * `_` dropped, spaces to `-`, a repeated slug suffixed `-1`, `-2`, …).
 */
function headingAnchors(text: string): Set<string> {
  const seen = new Map<string, number>();
  const anchors = new Set<string>();
  for (const line of withoutFences(text).split('\n')) {
    const m = /^ {0,3}#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (!m) continue;
    const plain = m[1].replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1').replace(/<[^>]+>/g, '');
    const base = plain.toLowerCase().replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '').replace(/ /g, '-');
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    anchors.add(n === 0 ? base : `${base}-${n}`);
  }
  return anchors;
}

/** The targets of a page's inline links and images, outside code. */
function linkTargets(text: string): { target: string; line: number }[] {
  const out: { target: string; line: number }[] = [];
  withoutFences(text)
    .split('\n')
    .forEach((raw, i) => {
      const line = raw.replace(/(`+)[\s\S]*?\1/g, '');
      for (const m of line.matchAll(/!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) out.push({ target: m[1], line: i + 1 });
    });
  return out;
}

describe('README and docs/', () => {
  const readme = read(README);

  it('names the two quick-start commands, with the test command exactly `npm test` (.ci/run runs it)', () => {
    expect(readme).to.include('npm install && npm start');
    const quickStart = readme.slice(readme.indexOf('## Quick start'));
    expect(quickStart, 'a Quick start section').to.match(/^## Quick start/);
    expect(quickStart).to.match(/^npm test(\s|$)/m);
    expect(read(path.join(ROOT, '.ci', 'run'))).to.match(/^npm test$/m);
  });

  it('keeps the README short enough to read in five minutes (at most 300 lines)', () => {
    expect(readme.trimEnd().split('\n').length).to.be.at.most(300);
  });

  it('links every page of docs/ from the README', () => {
    const linked = new Set(linkTargets(readme).map((l) => l.target.split('#')[0]));
    for (const page of pages().slice(1)) expect([...linked], rel(page)).to.include(rel(page));
  });

  it('has a status table in docs/status.md that says which spec operations are built (npm run docs:status)', () => {
    const text = read(STATUS_DOC);
    expect(renderStatusDoc(text)).to.equal(text);
  });

  it('documents every environment variable the service reads in docs/configuration.md', () => {
    const text = read(path.join(DOCS, 'configuration.md'));
    // The service's sources (the dev server documents its own in devserver/README.md).
    const sources = (dir: string): string[] =>
      fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? sources(path.join(dir, e.name)) : e.name.endsWith('.ts') ? [path.join(dir, e.name)] : []));
    const files = [
      ...fs.readdirSync(ROOT).filter((f) => f.endsWith('.ts')).map((f) => path.join(ROOT, f)),
      ...['api', 'activities', 'workflows', 'services', 'events', 'providers', 'db', 'domain', 'scripts'].flatMap((d) => sources(path.join(ROOT, d))),
    ];
    const vars = new Set<string>();
    for (const f of files) {
      const src = read(f);
      for (const m of src.matchAll(/(?:envNumber|requiredEnv)\('([A-Z][A-Z0-9_]+)'|process\.env\.([A-Z][A-Z0-9_]+)/g)) vars.add(m[1] ?? m[2]);
    }
    expect(vars.size).to.be.at.least(20);
    for (const v of vars) expect(text, v).to.include(`\`${v}\``);
  });

  it('resolves every relative link of the README and docs/ to a file inside the repository, and every #fragment to a heading', () => {
    const broken: string[] = [];
    let checked = 0;
    for (const page of pages()) {
      for (const { target, line } of linkTargets(read(page))) {
        if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // https:, mailto:
        checked++;
        const where = `${rel(page)}:${line} → ${target}`;
        const [file, fragment] = target.split('#') as [string, string | undefined];
        const resolved = file ? path.resolve(path.dirname(page), decodeURIComponent(file)) : page;
        if (path.relative(ROOT, resolved).startsWith('..')) {
          broken.push(`${where} (outside the repository)`);
          continue;
        }
        if (!fs.existsSync(resolved)) {
          broken.push(`${where} (no such file)`);
          continue;
        }
        if (fragment !== undefined && !(resolved.endsWith('.md') && headingAnchors(read(resolved)).has(decodeURIComponent(fragment))))
          broken.push(`${where} (no such heading)`);
      }
    }
    expect(checked, 'relative links checked').to.be.at.least(30);
    expect(broken).to.deep.equal([]);
  });

  it('names only npm scripts that package.json defines', () => {
    const scripts = (JSON.parse(read(path.join(ROOT, 'package.json'))) as { scripts: Record<string, string> }).scripts;
    const missing: string[] = [];
    let named = 0;
    for (const page of pages()) {
      for (const m of read(page).matchAll(/\bnpm run ([A-Za-z0-9:_-]*[A-Za-z0-9])|\bnpm (start|test)\b/g)) {
        named++;
        const script = m[1] ?? m[2];
        if (!(script in scripts)) missing.push(`${rel(page)}: npm run ${script}`);
      }
    }
    expect(named).to.be.at.least(10);
    expect(missing).to.deep.equal([]);
  });
});
