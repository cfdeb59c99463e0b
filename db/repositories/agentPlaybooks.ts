/**
 * Playbooks of an agent's draft (spec Playbooks rows): a name, a description, when it starts (`whenToUse`,
 * `triggerPhrases`), whether it needs a verified caller, and a node graph. Writes run inside `editDraft`
 * transactions so each one bumps the agent's draft version.
 */
import type { Knex } from 'knex';
import type { Playbook, PlaybookGraph, PlaybookPatch } from '../../schemas/types/playbooks';
import type { Conn } from './agents';
import { draftPartRepository } from './draftParts';
import { fromColumns, fromTimestampColumns } from '../rows';


/** Maps a stored row to the API shape. */
export function toPlaybook(r: any): Playbook {
  return {
    ...fromColumns(r, ['id', 'agentId', 'name']),
    description: r.description ?? null,
    whenToUse: r.when_to_use ?? null,
    triggerPhrases: r.trigger_phrases ?? [],
    requiresVerifiedCaller: r.requires_verified_caller ?? false,
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
  (p: { name: string; description?: string | null; whenToUse?: string | null; triggerPhrases?: string[]; requiresVerifiedCaller?: boolean; graph: PlaybookGraph }) => ({
    name: p.name,
    description: p.description ?? null,
    when_to_use: p.whenToUse ?? null,
    trigger_phrases: JSON.stringify(p.triggerPhrases ?? []),
    requires_verified_caller: p.requiresVerifiedCaller ?? false,
    graph: JSON.stringify(p.graph),
  }),
);

/** Changes a playbook's description and start settings (members absent from `patch` are kept). @returns the playbook, or undefined when missing */
export async function updatePlaybook(trx: Knex.Transaction, orgId: string, agentId: string, playbookId: string, patch: PlaybookPatch): Promise<Playbook | undefined> {
  const set: Record<string, unknown> = { updated_at: trx.fn.now() };
  if (patch.description !== undefined) set.description = patch.description;
  if (patch.whenToUse !== undefined) set.when_to_use = patch.whenToUse;
  if (patch.triggerPhrases !== undefined) set.trigger_phrases = JSON.stringify(patch.triggerPhrases);
  if (patch.requiresVerifiedCaller !== undefined) set.requires_verified_caller = patch.requiresVerifiedCaller;
  const [row] = await trx('agent_playbooks').where({ org_id: orgId, agent_id: agentId, id: playbookId }).update(set).returning('*');
  return row ? toPlaybook(row) : undefined;
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

/**
 * Deletes a playbook from the draft (inside the `editDraft` transaction that bumps the draft version); frozen
 * versions keep their own copy of it in their snapshots (docs/api-notes.md "Deletes").
 * @returns the deleted playbook, or undefined when the agent has no playbook with this id
 */
export async function deletePlaybookRow(trx: Knex.Transaction, orgId: string, agentId: string, playbookId: string): Promise<Playbook | undefined> {
  const [row] = await trx('agent_playbooks').where({ org_id: orgId, agent_id: agentId, id: playbookId }).delete().returning('*');
  return row ? toPlaybook(row) : undefined;
}
