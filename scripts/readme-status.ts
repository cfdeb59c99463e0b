/**
 * Writes the status table of spec operations in docs/status.md (between the `<!-- status:begin -->` and
 * `<!-- status:end -->` markers) from the route table and the handler registry, so the docs say
 * honestly what is built. `npm run docs:status`; test/readme.test.ts fails when it is stale.
 */
import fs from 'node:fs';
import path from 'node:path';
import { HANDLERS } from '../api/routes';
import { ROUTES } from '../api/routes/table';

/** The page that holds the status table. */
export const STATUS_DOC = path.join(__dirname, '..', 'docs', 'status.md');

/** The markdown table of every declared operation with its status. */
export function statusTable(): string {
  const lines = ['| Tag | Method | Path | operationId | Scopes | Status |', '|---|---|---|---|---|---|'];
  for (const r of ROUTES) {
    const status = r.reserved ? 'reserved (403)' : HANDLERS[r.operationId] ? 'built' : 'not yet (501)';
    const scopes =
      r.auth === 'publishable' ? 'publishable key' : r.auth === 'none' ? 'none (signature)' : [r.scopes.join(' + '), r.scopesAnyOf?.join(' or ')].filter(Boolean).join(' + ');
    lines.push(`| ${r.tag} | ${r.method} | \`${r.path}\` | ${r.operationId} | ${scopes} | ${status} |`);
  }
  return lines.join('\n');
}

/** The text of docs/status.md with the status section replaced. @throws when the markers are missing */
export function renderStatusDoc(text: string): string {
  const begin = '<!-- status:begin -->';
  const end = '<!-- status:end -->';
  const i = text.indexOf(begin);
  const j = text.indexOf(end);
  if (i < 0 || j < i) throw new Error('docs/status.md has no status markers');
  return `${text.slice(0, i + begin.length)}\n${statusTable()}\n${text.slice(j)}`;
}

if (require.main === module) {
  fs.writeFileSync(STATUS_DOC, renderStatusDoc(fs.readFileSync(STATUS_DOC, 'utf8')));
  console.log('docs/status.md status table updated');
}
