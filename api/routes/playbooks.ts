/**
 * Playbooks handlers (spec Playbooks rows): playbooks of an agent's draft and their node graphs. A graph
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
import { getPlaybook, insertPlaybook, listPlaybooks as pagePlaybooks, replacePlaybookGraph } from '../../db/repositories/agentPlaybooks';
import type { PlaybookCreate, PlaybookGraph } from '../../schemas/types/agents';
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

/** GET /agents/{agentId}/playbooks */
export const listPlaybooks: Handler = agentListHandler(pagePlaybooks);

/** POST /agents/{agentId}/playbooks: creates a playbook (graph default start → end). */
export const createPlaybook: Handler = async (ctx, { db }) => {
  const orgId = orgOf(ctx);
  const agentId = param(ctx, 'agentId');
  const body = validateBody<PlaybookCreate>('PlaybookCreate', ctx.request.body);
  const graph = body.graph ?? defaultGraph();
  const out = await runDraftEdit(ctx, db, agentId, async (trx, head) => {
    await checkGraph(trx, orgId, head, graph);
    return insertPlaybook(trx, orgId, agentId, { name: body.name, description: body.description ?? null, graph });
  });
  return { data: out.result, status: 201, headers: etag(out.version) };
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
export const handlers = { listPlaybooks, createPlaybook, getPlaybookGraph, putPlaybookGraph };

/** Schemas of this area's operations. */
export const routeSchemas = {
  listPlaybooks: { responseSchema: 'PlaybookPage' },
  createPlaybook: { requestSchema: 'PlaybookCreate', responseSchema: 'Playbook' },
  getPlaybookGraph: { responseSchema: 'PlaybookGraph' },
  putPlaybookGraph: { requestSchema: 'PlaybookGraph', responseSchema: 'PlaybookGraph' },
};
