/**
 * Skills handlers (spec Skills rows): the skill type catalogue and the skills of an agent's draft.
 * `config` is validated against its type's JSON Schema; every write bumps the agent's draft version
 * (and honours `If-Match` when sent). A skill used by a playbook or by caller verification cannot be
 * renamed or deleted (409 `skill_in_use`), so the draft never points at a missing skill.
 */
import type { Handler } from '../context';
import { ApiError, notFound, validationError } from '../../domain/errors';
import { mergeFieldErrors, schemaErrors } from '../../domain/validation';
import { deleteSkillRow, getSkill, insertSkill, listSkills as pageSkills, updateSkillRow } from '../../db/repositories/agentSkills';
import { playbooksUsingSkill } from '../../db/repositories/agentPlaybooks';
import type { Knex } from 'knex';
import type { DraftHead } from '../../db/repositories/agents';
import type { SkillCreate, SkillPatch } from '../../schemas/types/skills';
import { effectiveCallerVerification } from '../../domain/agents/compile';
import { agentListHandler, etag, requireAgent, runDraftEdit } from '../agents/http';
import { orgOf } from '../http';
import { SKILL_TYPES, skillConfigErrors } from '../../domain/agents/skillTypes';
import { assertSkillReferences } from '../../services/settings/references';
import { param } from './agents';


/** GET /skill-types: every type with the JSON Schema of its config. */
export const listSkillTypes: Handler = async () => ({
  data: { items: SKILL_TYPES.map((t) => ({ type: t.type, name: t.name, description: t.description, configSchema: t.configSchema, sendsData: t.sendsData })) },
});

/** GET /agents/{agentId}/skills: skills of the draft, oldest first. */
export const listSkills: Handler = agentListHandler(pageSkills);

/** POST /agents/{agentId}/skills: creates a skill (400 naming config fields, 409 duplicate_name). */
export const createSkill: Handler = async (ctx, { db }) => {
  const raw = ctx.request.body as SkillCreate | undefined;
  const shape = schemaErrors('SkillCreate', raw);
  const errors = mergeFieldErrors(shape, shape.some((e) => e.field === 'type' || e.field === '(body)') || !raw ? [] : skillConfigErrors(raw.type, raw.config));
  if (errors.length) throw validationError(errors);
  const body = raw as SkillCreate;
  const out = await runDraftEdit(ctx, db, param(ctx, 'agentId'), async (trx) => {
    await assertSkillReferences(trx, orgOf(ctx), body.type, body.config);
    return insertSkill(trx, orgOf(ctx), param(ctx, 'agentId'), body);
  });
  return { data: out.result, status: 201, headers: etag(out.version) };
};

/** Refuses renaming/deleting a skill the draft refers to. */
async function assertNotInUse(trx: Knex.Transaction, orgId: string, head: DraftHead, skillName: string): Promise<void> {
  const playbooks = await playbooksUsingSkill(trx, orgId, head.id, skillName);
  const cv = effectiveCallerVerification(head.callerVerification).requiredForSkills.includes(skillName);
  if (playbooks.length || cv) {
    const users = [...playbooks.map((p) => `playbook ${p}`), ...(cv ? ['caller verification'] : [])];
    throw new ApiError(409, 'skill_in_use', `Skill "${skillName}" is used by ${users.join(', ')}; change those first`);
  }
}

/** PATCH /agents/{agentId}/skills/{id}: name, description and/or config (validated against the type). */
export const updateSkill: Handler = async (ctx, { db }) => {
  const orgId = orgOf(ctx);
  const agentId = param(ctx, 'agentId');
  const skillId = param(ctx, 'id');
  const raw = ctx.request.body as SkillPatch | undefined;
  const shape = schemaErrors('SkillPatch', raw);
  if (shape.length) throw validationError(shape);
  const body = raw as SkillPatch;
  await requireAgent(db, orgId, agentId);
  const out = await runDraftEdit(ctx, db, agentId, async (trx, head) => {
    const current = await getSkill(trx, orgId, agentId, skillId);
    if (!current) throw notFound('Skill', 'skill_not_found');
    if (body.config !== undefined) {
      const errors = skillConfigErrors(current.type, body.config);
      if (errors.length) throw validationError(errors);
      await assertSkillReferences(trx, orgId, current.type, body.config);
    }
    if (body.name !== undefined && body.name !== current.name) await assertNotInUse(trx, orgId, head, current.name);
    return (await updateSkillRow(trx, orgId, agentId, skillId, body))!;
  });
  return { data: out.result, headers: etag(out.version) };
};

/** DELETE /agents/{agentId}/skills/{id}: removes a skill not referred to by the draft (409 skill_in_use). */
export const deleteSkill: Handler = async (ctx, { db }) => {
  const orgId = orgOf(ctx);
  const agentId = param(ctx, 'agentId');
  const skillId = param(ctx, 'id');
  await requireAgent(db, orgId, agentId);
  const out = await runDraftEdit(ctx, db, agentId, async (trx, head) => {
    const current = await getSkill(trx, orgId, agentId, skillId);
    if (!current) throw notFound('Skill', 'skill_not_found');
    await assertNotInUse(trx, orgId, head, current.name);
    await deleteSkillRow(trx, orgId, agentId, skillId);
    return { id: skillId, deleted: true };
  });
  return { data: out.result, headers: etag(out.version) };
};

/** Handlers of this area by operationId. */
export const handlers = { listSkillTypes, listSkills, createSkill, updateSkill, deleteSkill };

/** Schemas of this area's operations. */
export const routeSchemas = {
  listSkillTypes: { responseSchema: 'SkillTypeList' },
  listSkills: { responseSchema: 'SkillPage' },
  createSkill: { requestSchema: 'SkillCreate', responseSchema: 'Skill' },
  updateSkill: { requestSchema: 'SkillPatch', responseSchema: 'Skill' },
};
