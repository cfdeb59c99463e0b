/**
 * The project's size rule (house rules: no source file over 600 lines), so a file that has grown into several
 * concerns is split before the next reader has to hold all of it. Tests (test/), generated JSON Schemas
 * (`schemas/*.schema.json`, data rather than source) and build output are outside the rule.
 */
import { expect } from 'chai';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const ROOT = path.resolve(__dirname, '..');
/** Most lines of one source file. */
const MAX_LINES = 600;
/** Source file kinds the rule covers (JSON, Markdown and SQL are data or docs). */
const SOURCE = /\.(?:ts|tsx|js|cjs|mjs|svelte)$/;
/** Folders the rule skips: tests, dependencies and what builds and runs write (.gitignore). */
const SKIPPED = new Set(['test', 'node_modules', '.git', 'dist', '.data', 'scratch', 'test-artifacts', 'build', '.svelte-kit']);

/** Every source file under `dir`, as absolute paths. */
function sourceFiles(dir: string): string[] {
  const out: string[] = [];
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    if (entry.isDirectory()) {
      if (!SKIPPED.has(entry.name)) out.push(...sourceFiles(path.join(dir, entry.name)));
    } else if (entry.isFile() && SOURCE.test(entry.name)) {
      out.push(path.join(dir, entry.name));
    }
  }
  return out;
}

/** Lines of a file as `wc -l` counts them for a file ending in a newline (a last line without one counts too). */
function lineCount(file: string): number {
  const text = fs.readFileSync(file, 'utf8');
  if (!text) return 0;
  return text.split('\n').length - (text.endsWith('\n') ? 1 : 0);
}

/** The source files under `root` over MAX_LINES, longest first, as `path: N lines` relative to `root`. */
function oversized(root: string): { files: number; over: string[] } {
  const files = sourceFiles(root);
  const over = files
    .map((file) => ({ file: path.relative(root, file), lines: lineCount(file) }))
    .filter((f) => f.lines > MAX_LINES)
    .sort((a, b) => b.lines - a.lines || a.file.localeCompare(b.file))
    .map((f) => `${f.file}: ${f.lines} lines`);
  return { files: files.length, over };
}

describe('source file size', () => {
  it(`keeps every source file outside test/ at ${MAX_LINES} lines or fewer`, () => {
    const { files, over } = oversized(ROOT);
    expect(files, 'source files found').to.be.greaterThan(300);
    expect(over, `files over ${MAX_LINES} lines`).to.deep.equal([]);
  });

  it('lists a source file one line over the limit, and not one at it, a test, or a JSON file', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'acp-filesize-'));
    try {
      const lines = (n: number) => 'x;\n'.repeat(n);
      fs.mkdirSync(path.join(dir, 'services'));
      fs.mkdirSync(path.join(dir, 'test'));
      fs.writeFileSync(path.join(dir, 'services', 'long.ts'), lines(MAX_LINES + 1));
      fs.writeFileSync(path.join(dir, 'services', 'noNewline.ts'), lines(MAX_LINES).slice(0, -1) + '\nx;');
      fs.writeFileSync(path.join(dir, 'services', 'atLimit.ts'), lines(MAX_LINES));
      fs.writeFileSync(path.join(dir, 'test', 'long.test.ts'), lines(MAX_LINES * 2));
      fs.writeFileSync(path.join(dir, 'Big.schema.json'), lines(MAX_LINES * 2));
      expect(oversized(dir)).to.deep.equal({ files: 3, over: [`services/long.ts: ${MAX_LINES + 1} lines`, `services/noNewline.ts: ${MAX_LINES + 1} lines`] });
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
