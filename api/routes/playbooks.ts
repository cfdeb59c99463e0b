/**
 * Playbooks handlers (spec Playbooks rows, plus `PATCH /agents/{agentId}/playbooks/{id}` for the description and
 * when a playbook starts): playbooks of an agent's draft and their node graphs. A graph
 * is validated on every write (api/agents/playbookGraph.ts); violations answer 400 `validation_error`
 * with one error per offending node (`graph.nodes[<id>]…`) or edge. Every write bumps the draft version
 * (and honours `If-Match` when sent).
 */
import type { Knex } from 'knex';
import type { Handler } from '../context';
import { notFound, validationError } from '../../domain/errors';
import { validateBody } from '../../domain/validation';
import type { DraftHead } from '../../db/repositories/agents';
import { skillsByName } from '../../db/repositories/agentSkills';
import { getPlaybook, insertPlaybook, listPlaybooks as pagePlaybooks, replacePlaybookGraph, updatePlaybook as patchPlaybook } from '../../db/repositories/agentPlaybooks';
import type { PlaybookCreate, PlaybookGraph, PlaybookPatch } from '../../schemas/types/playbooks';
import type { FieldError } from '../../domain/errors';
import { agentListHandler, etag, requireAgent, runDraftEdit } from '../agents/http';
import { orgOf } from '../http';
import { defaultGraph, validatePlaybookGraph } from '../../domain/agents/playbookGraph';
import { param } from './agents';

/** Validates `graph` against the agent's skills and variables inside the edit transaction. @throws 400 */
async function checkGraph(trx: Knex.Transaction, orgId: string, head: DraftHead, graph: PlaybookGraph): Promise<void> {
  const skills = await skillsByName(trx, orgId, head.id);
  const errors = validatePlaybookGraph(graph, { skills, initialVariables: new Set(head.variables.map((v) => v.name)) });
  if (errors.length) throw validationError(errors, `The graph is invalid: ${errors.map((e) => e.field).join(', ')}`);
}

/**
 * Trigger phrases trimmed; a blank or repeated one (ignoring case) is refused, naming `triggerPhrases[<i>]`.
 * @throws 400 validation_error
 */
function checkTriggerPhrases(phrases: string[] | undefined): string[] | undefined {
  if (phrases === undefined) return undefined;
  const errors: FieldError[] = [];
  const seen = new Set<string>();
  const out = phrases.map((p, i) => {
    const t = p.trim().replace(/\s+/g, ' ');
    if (!/[\p{L}\p{N}]/u.test(t)) errors.push({ field: `triggerPhrases[${i}]`, message: 'must contain a word' });
    else if (seen.has(t.toLowerCase())) errors.push({ field: `triggerPhrases[${i}]`, message: `repeats "${t}"` });
    seen.add(t.toLowerCase());
    return t;
  });
  if (errors.length) throw validationError(errors);
  return out;
}

/** `whenToUse` trimmed, a blank one stored as null. */
const cleanWhenToUse = (w: string | null | undefined) => (w === undefined ? undefined : w === null || !w.trim() ? null : w.trim());

/** GET /agents/{agentId}/playbooks */
export const listPlaybooks: Handler = agentListHandler(pagePlaybooks);

/** POST /agents/{agentId}/playbooks: creates a playbook (graph default start → end). */
export const createPlaybook: Handler = async (ctx, { db }) => {
  const orgId = orgOf(ctx);
  const agentId = param(ctx, 'agentId');
  const body = validateBody<PlaybookCreate>('PlaybookCreate', ctx.request.body);
  const graph = body.graph ?? defaultGraph();
  const triggerPhrases = checkTriggerPhrases(body.triggerPhrases) ?? [];
  const out = await runDraftEdit(ctx, db, agentId, async (trx, head) => {
    await checkGraph(trx, orgId, head, graph);
    return insertPlaybook(trx, orgId, agentId, {
      name: body.name,
      description: body.description ?? null,
      whenToUse: cleanWhenToUse(body.whenToUse) ?? null,
      triggerPhrases,
      requiresVerifiedCaller: body.requiresVerifiedCaller ?? false,
      graph,
    });
  });
  return { data: out.result, status: 201, headers: etag(out.version) };
};

/**
 * PATCH /agents/{agentId}/playbooks/{id}: changes the description and when the playbook starts (`whenToUse`,
 * `triggerPhrases`, `requiresVerifiedCaller`) as an edit of the draft (bumps its version, honours `If-Match`);
 * 400 naming the field, 404 `playbook_not_found`.
 */
export const updatePlaybook: Handler = async (ctx, { db }) => {
  const orgId = orgOf(ctx);
  const agentId = param(ctx, 'agentId');
  const playbookId = param(ctx, 'id');
  const body = validateBody<PlaybookPatch>('PlaybookPatch', ctx.request.body);
  const patch: PlaybookPatch = { ...body, whenToUse: cleanWhenToUse(body.whenToUse), triggerPhrases: checkTriggerPhrases(body.triggerPhrases) };
  await requireAgent(db, orgId, agentId);
  const out = await runDraftEdit(ctx, db, agentId, async (trx) => {
    const p = await patchPlaybook(trx, orgId, agentId, playbookId, patch);
    if (!p) throw notFound('Playbook', 'playbook_not_found');
    return p;
  });
  return { data: out.result, headers: etag(out.version) };
};

/** GET /agents/{agentId}/playbooks/{id}/graph */
export const getPlaybookGraph: Handler = async (ctx, { db }) => {
  const orgId = orgOf(ctx);
  const agent = await requireAgent(db, orgId, param(ctx, 'agentId'));
  const p = await getPlaybook(db, orgId, agent.id, param(ctx, 'id'));
  if (!p) throw notFound('Playbook', 'playbook_not_found');
  return { data: p.graph, headers: etag(agent.version) };
};

/** PUT /agents/{agentId}/playbooks/{id}/graph: replaces the graph (400 naming node ids). */
export const putPlaybookGraph: Handler = async (ctx, { db }) => {
  const orgId = orgOf(ctx);
  const agentId = param(ctx, 'agentId');
  const playbookId = param(ctx, 'id');
  const graph = validateBody<PlaybookGraph>('PlaybookGraph', ctx.request.body);
  await requireAgent(db, orgId, agentId);
  const out = await runDraftEdit(ctx, db, agentId, async (trx, head) => {
    if (!(await getPlaybook(trx, orgId, agentId, playbookId))) throw notFound('Playbook', 'playbook_not_found');
    await checkGraph(trx, orgId, head, graph);
    return (await replacePlaybookGraph(trx, orgId, agentId, playbookId, graph))!;
  });
  return { data: out.result.graph, headers: etag(out.version) };
};

/** Handlers of this area by operationId. */
export const handlers = { listPlaybooks, createPlaybook, updatePlaybook, getPlaybookGraph, putPlaybookGraph };

/** Schemas of this area's operations. */
export const routeSchemas = {
  listPlaybooks: { responseSchema: 'PlaybookPage' },
  createPlaybook: { requestSchema: 'PlaybookCreate', responseSchema: 'Playbook' },
  updatePlaybook: { requestSchema: 'PlaybookPatch', responseSchema: 'Playbook' },
  getPlaybookGraph: { responseSchema: 'PlaybookGraph' },
  putPlaybookGraph: { requestSchema: 'PlaybookGraph', responseSchema: 'PlaybookGraph' },
};
