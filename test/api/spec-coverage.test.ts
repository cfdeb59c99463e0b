/**
 * The route table agrees with the spec's endpoint tables (../shared/spec/control-plane-spec.md):
 * every operation the spec lists is declared once with the spec's method, path and scopes.
 * Skipped, with a message, where the spec file is absent (a stand-alone clone).
 */
import fs from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { ROUTES } from '../../api/routes/table';
import { HANDLERS } from '../../api/routes';

const SPEC = path.resolve(__dirname, '..', '..', '..', 'shared', 'spec', 'control-plane-spec.md');

interface SpecOp {
  method: string;
  path: string;
  /** exact: all required; oneOf: reads take the first, writes either; publishable: publishable-key auth */
  scopes: { kind: 'exact' | 'oneOf' | 'publishable'; list: string[] };
  row: string;
  operationId?: string;
}

/** Parses the "Other endpoints" table and the fully specified operation sections. */
function parseSpec(text: string): SpecOp[] {
  const ops: SpecOp[] = [];
  const section = text.slice(text.indexOf('### Other endpoints'), text.indexOf('## Authentication'));
  for (const line of section.split('\n')) {
    const cells = line.split('|').map((c) => c.trim());
    if (cells.length < 5 || !/^(GET|POST|PUT|PATCH|DELETE)\b/.test(cells[2])) continue;
    const pieces = cells[2].replace(/\([^)]*\)/g, '').split(';').map((p) => p.trim()).filter(Boolean);
    const scopeCell = cells[3].replace(/\(.*?\)/g, '').trim();
    const scopePieces = scopeCell.split(';').map((s) => s.trim());
    pieces.forEach((piece, i) => {
      const m = /^((?:GET|POST|PUT|PATCH|DELETE)(?:\s*,\s*(?:GET|POST|PUT|PATCH|DELETE))*)\s+(\/\S*)/.exec(piece);
      if (!m) throw new Error(`cannot parse "${piece}"`);
      const methods = m[1].split(',').map((s) => s.trim());
      const cell = scopePieces.length === pieces.length ? scopePieces[i] : scopeCell;
      let scopes: SpecOp['scopes'];
      if (/pubkeys scopes/.test(cell)) scopes = { kind: 'publishable', list: [] };
      else if (cell.includes(' plus ')) scopes = { kind: 'exact', list: cell.split(' plus ').map((s) => s.trim()) };
      else if (cell.includes('/')) scopes = { kind: 'oneOf', list: cell.split('/').map((s) => s.trim()) };
      else scopes = { kind: 'exact', list: [cell] };
      for (const method of methods) ops.push({ method, path: m[2], scopes, row: cells[1] });
    });
  }
  for (const m of text.matchAll(/Operation id: `(\w+)`\. Method and path: `(\w+) ([^`]+)`\. Scope: `([^`]+)`/g)) {
    ops.push({ operationId: m[1], method: m[2], path: m[3], scopes: { kind: 'exact', list: [m[4]] }, row: 'section' });
  }
  return ops;
}

(fs.existsSync(SPEC) ? describe : describe.skip)('route table ↔ spec endpoint tables', () => {
  const text = fs.existsSync(SPEC) ? fs.readFileSync(SPEC, 'utf8') : '';
  const ops = fs.existsSync(SPEC) ? parseSpec(text) : [];

  it('finds the spec operations it checks (the parser itself works)', () => {
    expect(ops.length).to.be.at.least(60);
    expect(ops.some((o) => o.method === 'PUT' && o.path === '/sms' && o.operationId === 'saveSMSRegistration')).to.equal(true);
  });

  it('declares every spec operation with its method and path', () => {
    const missing = ops.filter((o) => !ROUTES.some((r) => r.method === o.method && r.path === o.path));
    expect(missing.map((o) => `${o.method} ${o.path}`)).to.deep.equal([]);
  });

  /** Operations a scope rule widens: the spec scope stays sufficient, another also reaches a reduced answer. */
  const WIDENED: Record<string, string> = {
    'GET /conversations/{id}/transcript': 'spec "Scope rules" 4: with only analytics:read, transcripts are empty',
  };

  it('gives every spec operation the spec scopes', () => {
    const wrong: string[] = [];
    for (const o of ops) {
      const r = ROUTES.find((x) => x.method === o.method && x.path === o.path)!;
      if (!r) continue;
      if (o.scopes.kind === 'publishable') {
        if (r.auth !== 'publishable') wrong.push(`${o.method} ${o.path}: expected publishable-key auth`);
      } else if (o.scopes.kind === 'exact' && WIDENED[`${o.method} ${o.path}`]) {
        if (r.scopes.length || !o.scopes.list.every((sc) => r.scopesAnyOf?.includes(sc as never))) wrong.push(`${o.method} ${o.path}: widened, but ${o.scopes.list} is not among its scopes`);
      } else if (o.scopes.kind === 'exact') {
        if ([...r.scopes].sort().join() !== [...o.scopes.list].sort().join()) wrong.push(`${o.method} ${o.path}: ${r.scopes} ≠ ${o.scopes.list}`);
      } else {
        const ok = r.scopes.length === 1 && o.scopes.list.includes(r.scopes[0]) && (o.method !== 'GET' || r.scopes[0] === o.scopes.list[0]);
        if (!ok) wrong.push(`${o.method} ${o.path}: ${r.scopes} not one of ${o.scopes.list}`);
      }
    }
    expect(wrong).to.deep.equal([]);
  });

  it('uses the operation ids the spec names, including the review and submit follow-ups', () => {
    for (const o of ops.filter((x) => x.operationId)) {
      expect(ROUTES.find((r) => r.method === o.method && r.path === o.path)?.operationId).to.equal(o.operationId);
    }
    for (const id of text.match(/operation `(\w+)`/g) ?? []) {
      const name = id.replace(/operation `|`/g, '');
      expect(ROUTES.map((r) => r.operationId), name).to.include(name);
    }
  });

  it('gives every operation of the route table a handler, so none answers 501 (reserved ones answer 403)', () => {
    const missing = ROUTES.filter((r) => !r.reserved && !HANDLERS[r.operationId]).map((r) => `${r.method} ${r.path}`);
    expect(missing).to.deep.equal([]);
  });

  it('declares each method and path once, and each operationId once', () => {
    const keys = ROUTES.map((r) => `${r.method} ${r.path}`);
    expect(new Set(keys).size).to.equal(keys.length);
    const ids = ROUTES.map((r) => r.operationId);
    expect(new Set(ids).size).to.equal(ids.length);
  });
});

if (!fs.existsSync(SPEC)) {
  describe('route table ↔ spec endpoint tables', () => {
    it('is skipped: ../shared/spec/control-plane-spec.md is absent (stand-alone clone)');
  });
}
