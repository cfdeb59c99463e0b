/**
 * Playbooks of an agent's draft (spec Playbooks rows): a name, a description and a node graph. Writes
 * run inside `editDraft` transactions so each one bumps the agent's draft version.
 */
import type { Knex } from 'knex';
import type { Playbook, PlaybookGraph } from '../../schemas/types/agents';
import type { Conn } from './agents';
import { draftPartRepository } from './draftParts';
import { fromColumns, fromTimestampColumns } from '../rows';


/** Maps a stored row to the API shape. */
export function toPlaybook(r: any): Playbook {
  return {
    ...fromColumns(r, ['id', 'agentId', 'name']),
    description: r.description ?? null,
    graph: r.graph,
    ...fromTimestampColumns(r, ['createdAt', 'updatedAt']),
  };
}

/**
 * Playbooks of an agent: `listPlaybooks` pages them in creation order (@throws InvalidCursorError), `getPlaybook`
 * reads one (undefined when missing), `insertPlaybook` adds one (@throws DuplicateNameError when the agent
 * already has a playbook of that name). db/repositories/draftParts.ts.
 */
export const { list: listPlaybooks, get: getPlaybook, insert: insertPlaybook } = draftPartRepository(
  'agent_playbooks',
  'playbook',
  'pbk',
  toPlaybook,
  (p: { name: string; description?: string | null; graph: PlaybookGraph }) => ({ name: p.name, description: p.description ?? null, graph: JSON.stringify(p.graph) }),
);

/** Replaces a playbook's graph. @returns the playbook, or undefined when missing */
export async function replacePlaybookGraph(trx: Knex.Transaction, orgId: string, agentId: string, playbookId: string, graph: PlaybookGraph): Promise<Playbook | undefined> {
  const [row] = await trx('agent_playbooks')
    .where({ org_id: orgId, agent_id: agentId, id: playbookId })
    .update({ graph: JSON.stringify(graph), updated_at: trx.fn.now() })
    .returning('*');
  return row ? toPlaybook(row) : undefined;
}

/** Names of the agent's playbooks with a skill node naming `skillName` (a skill in use). */
export async function playbooksUsingSkill(conn: Conn, orgId: string, agentId: string, skillName: string): Promise<string[]> {
  const rows = await conn('agent_playbooks')
    .where({ org_id: orgId, agent_id: agentId })
    .whereRaw(`graph->'nodes' @> ?::jsonb`, [JSON.stringify([{ type: 'skill', skill: skillName }])])
    .select('name');
  return rows.map((r: any) => r.name);
}
