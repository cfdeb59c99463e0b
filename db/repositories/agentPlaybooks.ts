/**
 * Playbooks of an agent's draft (spec Playbooks rows): a name, a description and a node graph. Writes
 * run inside `editDraft` transactions so each one bumps the agent's draft version.
 */
import type { Knex } from 'knex';
import type { Db } from '../index';
import { newId } from '../ids';
import { keysetPage, type Page } from '../pagination';
import type { Playbook, PlaybookGraph } from '../../schemas/types/agents';
import { DuplicateNameError, isUniqueViolation, type Conn } from './agents';
import { iso } from '../timestamps';


/** Maps a stored row to the API shape. */
export function toPlaybook(r: any): Playbook {
  return {
    id: r.id,
    agentId: r.agent_id,
    name: r.name,
    description: r.description ?? null,
    graph: r.graph,
    createdAt: iso(r.created_at),
    updatedAt: iso(r.updated_at),
  };
}

/** Playbooks of an agent in creation order. @throws InvalidCursorError */
export async function listPlaybooks(db: Db, orgId: string, agentId: string, page: { limit: number; cursor?: string }): Promise<Page<Playbook>> {
  return keysetPage(db('agent_playbooks').where({ org_id: orgId, agent_id: agentId }), { ...page, column: 'seq', map: toPlaybook });
}

/** One playbook of an agent, or undefined. */
export async function getPlaybook(conn: Conn, orgId: string, agentId: string, playbookId: string): Promise<Playbook | undefined> {
  const r = await conn('agent_playbooks').where({ org_id: orgId, agent_id: agentId, id: playbookId }).first();
  return r ? toPlaybook(r) : undefined;
}

/** Inserts a playbook. @throws DuplicateNameError */
export async function insertPlaybook(
  trx: Knex.Transaction,
  orgId: string,
  agentId: string,
  p: { name: string; description?: string | null; graph: PlaybookGraph },
): Promise<Playbook> {
  try {
    const [row] = await trx('agent_playbooks')
      .insert({ id: newId('pbk'), org_id: orgId, agent_id: agentId, name: p.name, description: p.description ?? null, graph: JSON.stringify(p.graph) })
      .returning('*');
    return toPlaybook(row);
  } catch (err) {
    if (isUniqueViolation(err)) throw new DuplicateNameError('playbook', p.name);
    throw err;
  }
}

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
