/**
 * Skills of an agent's draft (spec Skills rows). Writes run inside `editDraft` transactions
 * (db/repositories/agents.ts) so each one bumps the agent's draft version.
 */
import type { Knex } from 'knex';
import type { Skill } from '../../schemas/types/skills';
import { DuplicateNameError, isUniqueViolation, type Conn } from './agents';
import { draftPartRepository } from './draftParts';
import { fromColumns, fromTimestampColumns } from '../rows';


/** Maps a stored row to the API shape. */
export function toSkill(r: any): Skill {
  return {
    ...fromColumns(r, ['id', 'agentId', 'name', 'type']),
    description: r.description ?? null,
    config: r.config,
    ...fromTimestampColumns(r, ['createdAt', 'updatedAt']),
  };
}

/** What a new skill is given (spec Skills rows: `SkillCreate`). */
export interface NewSkill {
  name: string;
  type: string;
  description?: string | null;
  config: Record<string, unknown>;
}

/**
 * Skills of an agent: `listSkills` pages them in creation order (@throws InvalidCursorError), `getSkill` reads one
 * (undefined when missing), `insertSkill` adds one (@throws DuplicateNameError when the agent already has a
 * skill of that name). db/repositories/draftParts.ts.
 */
export const { list: listSkills, get: getSkill, insert: insertSkill } = draftPartRepository(
  'agent_skills',
  'skill',
  'skl',
  toSkill,
  (s: NewSkill) => ({ name: s.name, type: s.type, description: s.description ?? null, config: JSON.stringify(s.config) }),
);

/** Updates a skill (fields given only). @returns the skill, or undefined when missing. @throws DuplicateNameError */
export async function updateSkillRow(
  trx: Knex.Transaction,
  orgId: string,
  agentId: string,
  skillId: string,
  s: { name?: string; description?: string | null; config?: Record<string, unknown> },
): Promise<Skill | undefined> {
  const patch: Record<string, unknown> = { updated_at: trx.fn.now() };
  if (s.name !== undefined) patch.name = s.name;
  if (s.description !== undefined) patch.description = s.description;
  if (s.config !== undefined) patch.config = JSON.stringify(s.config);
  try {
    const [row] = await trx('agent_skills').where({ org_id: orgId, agent_id: agentId, id: skillId }).update(patch).returning('*');
    return row ? toSkill(row) : undefined;
  } catch (err) {
    if (isUniqueViolation(err)) throw new DuplicateNameError('skill', s.name ?? '');
    throw err;
  }
}

/** Deletes a skill. @returns whether a row was deleted */
export async function deleteSkillRow(trx: Knex.Transaction, orgId: string, agentId: string, skillId: string): Promise<boolean> {
  return (await trx('agent_skills').where({ org_id: orgId, agent_id: agentId, id: skillId }).delete()) > 0;
}

/** Every skill of an agent (name, type, config), for graph validation inside a transaction. */
export async function skillsByName(conn: Conn, orgId: string, agentId: string): Promise<Map<string, { id: string; type: string; config: Record<string, any> }>> {
  const rows = await conn('agent_skills').where({ org_id: orgId, agent_id: agentId }).select('id', 'name', 'type', 'config');
  return new Map(rows.map((r: any) => [r.name, { id: r.id, type: r.type, config: r.config }]));
}
