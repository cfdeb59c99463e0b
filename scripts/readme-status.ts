/**
 * Writes the README's status table of spec operations (between the `<!-- status:begin -->` and
 * `<!-- status:end -->` markers) from the route table and the handler registry, so the README says
 * honestly what is built. `npx tsx scripts/readme-status.ts`; test/readme.test.ts fails when it is stale.
 */
import fs from 'node:fs';
import path from 'node:path';
import { HANDLERS } from '../api/routes';
import { ROUTES } from '../api/routes/table';

const README = path.join(__dirname, '..', 'README.md');

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

/** README text with the status section replaced. @throws when the markers are missing */
export function renderReadme(text: string): string {
  const begin = '<!-- status:begin -->';
  const end = '<!-- status:end -->';
  const i = text.indexOf(begin);
  const j = text.indexOf(end);
  if (i < 0 || j < i) throw new Error('README.md has no status markers');
  return `${text.slice(0, i + begin.length)}\n${statusTable()}\n${text.slice(j)}`;
}

if (require.main === module) {
  fs.writeFileSync(README, renderReadme(fs.readFileSync(README, 'utf8')));
  console.log('README.md status table updated');
}
