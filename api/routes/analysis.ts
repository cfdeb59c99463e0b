/**
 * Analysis re-runs (docs/api-notes.md "Conversation analysis"; the spec's Observe group, paths "not shown"):
 * - `POST /conversations/{id}/analysis` analyses one ended conversation again, now, with the agent's current
 *   analysis plan or the `fields` given, and answers 201 with the new revision (the one the conversation shows);
 * - `GET /conversations/{id}/analysis/revisions` lists every revision, newest first;
 * - `POST /conversations/analysis-runs` re-runs the analysis over a filter (agent, channel, start time) as the
 *   workflow `analysis-run/{id}` and answers 202 with the run; `GET /conversations/analysis-runs/{id}` shows its
 *   progress; the `analysis.completed` event ends it.
 * Scopes: the analysis quotes the conversation, so reading or making one needs `calls:read` (spec "Scope rules" 1
 * and 4); making one also changes what Observe shows and spends tokens, so it needs `agents:write` too
 * (`analytics:write` is reserved). A run's progress carries no conversation content: `analytics:read`.
 */
import type { AppContext, Handler } from '../context';
import { orgOf, pageParams, paged, requireTemporal, temporalUnavailable } from '../http';
import { param } from './agents';
import { setAuditResource } from '../middleware/audit';
import { ApiError, notFound, validationError, type FieldError } from '../../domain/errors';
import { validateBody } from '../../domain/validation';
import { analysisFieldErrors } from '../../domain/conversations/analysis';
import { listRevisions } from '../../db/repositories/conversationAnalyses';
import { getConversation } from '../../db/repositories/conversations';
import { anyAgentOf, createAnalysisRun as storeRun, finishAnalysisRun, getAnalysisRun as findRun, listAnalysisRuns as findRuns, stripInternal, type AnalysisRunFilter } from '../../db/repositories/analysisRuns';
import { reanalyzeConversation as reanalyze } from '../../services/conversations/analysis';
import { startWorkflow, workflowIds } from '../../temporal.config';
import type { AnalysisField } from '../../schemas/types/agents';
import type { AnalysisRerunRequest, AnalysisRunCreate } from '../../schemas/types/analysis';

const ID = /^[A-Za-z0-9_-]{1,200}$/;

/** The extraction fields of a body, checked as an agent's are (errors name `fields[<name>]…`). */
function checkedFields(fields: AnalysisField[] | undefined): AnalysisField[] | undefined {
  if (fields === undefined) return undefined;
  const errors: FieldError[] = analysisFieldErrors(fields).map((e) => ({ ...e, field: e.field.replace(/^analysis\./, '') }));
  if (errors.length) throw validationError(errors);
  return fields;
}

function conversationId(ctx: AppContext): string {
  const id = param(ctx, 'id');
  if (!ID.test(id)) throw notFound('Conversation', 'conversation_not_found');
  return id;
}

/**
 * POST /conversations/{id}/analysis (reanalyzeConversation; calls:read and agents:write) → 201 with the new
 * revision. 404 `conversation_not_found`; 409 `conversation_not_ended` while it is active; 409
 * `conversation_not_analysed` for a simulation, a `/chat/completions` exchange or a call without a transcript.
 * A failing LLM is stored as a `failed` revision (201 all the same: the attempt is history too).
 */
export const reanalyzeConversation: Handler = async (ctx, deps) => {
  const orgId = orgOf(ctx);
  const id = conversationId(ctx);
  const body = validateBody<AnalysisRerunRequest>('AnalysisRerunRequest', ctx.request.body ?? {});
  const fields = checkedFields(body.fields);
  const out = await reanalyze({ db: deps.db, llm: deps.providers.llm }, orgId, id, { fields });
  switch (out.kind) {
    case 'not_found':
      throw notFound('Conversation', 'conversation_not_found');
    case 'not_ended':
      throw new ApiError(409, 'conversation_not_ended', 'The conversation is still active; it is analysed once it ends');
    case 'not_analysed':
    case 'already_done':
      throw new ApiError(409, 'conversation_not_analysed', 'This conversation is not analysed (a simulation, a /chat/completions exchange, or a call without a transcript)');
  }
  setAuditResource(ctx, 'analysis_revision', out.revision.id);
  return { data: out.revision, status: 201 };
};

/** GET /conversations/{id}/analysis/revisions (listAnalysisRevisions, calls:read): every revision, newest first. 404 `conversation_not_found`. */
export const listAnalysisRevisions: Handler = async (ctx, { db }) => {
  const orgId = orgOf(ctx);
  const id = conversationId(ctx);
  const page = pageParams(ctx);
  if (!(await getConversation(db, orgId, id))) throw notFound('Conversation', 'conversation_not_found');
  return { data: await paged(() => listRevisions(db, orgId, id, page)) };
};

/**
 * POST /conversations/analysis-runs (createAnalysisRun; calls:read and agents:write) → 202 with the run (`queued`)
 * and `Location`. The run covers the analysable conversations matching the filter that have ended by now. 400 naming
 * `to` when it is not after `from`; 404 `agent_not_found` naming `agentId`; 503 when the workflow cannot start (the
 * run is stored `failed`).
 */
export const createAnalysisRun: Handler = async (ctx, deps) => {
  const orgId = orgOf(ctx);
  const body = validateBody<AnalysisRunCreate>('AnalysisRunCreate', ctx.request.body ?? {});
  const fields = checkedFields(body.fields);
  if (body.from && body.to && Date.parse(body.from) >= Date.parse(body.to)) throw validationError([{ field: 'to', message: 'must be after from' }]);
  const filter: AnalysisRunFilter = {};
  if (body.agentId !== undefined) {
    // A deleted agent's conversations can still be re-analysed: ownership here is of the row, archived or not.
    if (!(await anyAgentOf(deps.db, orgId, body.agentId))) throw new ApiError(404, 'agent_not_found', `Agent ${body.agentId} was not found`, { errors: [{ field: 'agentId', message: 'is not an agent of this organization' }] });
    filter.agentId = body.agentId;
  }
  if (body.channel) filter.channel = body.channel;
  if (body.from) filter.from = new Date(body.from).toISOString();
  if (body.to) filter.to = new Date(body.to).toISOString();
  const temporal = requireTemporal(deps);
  const run = await storeRun(deps.db, orgId, filter, fields ?? null);
  try {
    await startWorkflow(temporal, 'analysisRun', { workflowId: workflowIds.analysisRun(run.id), args: [{ orgId, runId: run.id }], orgId, resourceId: run.id });
  } catch (err) {
    ctx.state.log.error({ err, orgId, runId: run.id }, 'starting analysis-run workflow failed');
    await finishAnalysisRun(deps.db, orgId, run.id, { status: 'failed', error: 'workflow_not_started' }, async () => undefined);
    throw temporalUnavailable('The analysis run could not be started; send it again');
  }
  setAuditResource(ctx, 'analysis_run', run.id);
  return { data: stripInternal(run), status: 202, headers: { Location: `${ctx.path}/${run.id}` } };
};

/** GET /conversations/analysis-runs/{id} (getAnalysisRun, analytics:read): the run and its progress. 404 `analysis_run_not_found`. */
export const getAnalysisRun: Handler = async (ctx, { db }) => {
  const id = param(ctx, 'id');
  const run = ID.test(id) ? await findRun(db, orgOf(ctx), id) : undefined;
  if (!run) throw notFound('Analysis run', 'analysis_run_not_found');
  return { data: stripInternal(run) };
};

/** GET /conversations/analysis-runs (listAnalysisRuns, analytics:read): the organization's runs, newest first. */
export const listAnalysisRuns: Handler = async (ctx, { db }) => {
  const page = pageParams(ctx);
  return { data: await paged(() => findRuns(db, orgOf(ctx), page)) };
};

/** Handlers of this area by operationId. */
export const handlers = { reanalyzeConversation, listAnalysisRevisions, createAnalysisRun, getAnalysisRun, listAnalysisRuns };

/** Schemas of this area's operations. */
export const routeSchemas = {
  reanalyzeConversation: { requestSchema: 'AnalysisRerunRequest', responseSchema: 'AnalysisRevision' },
  listAnalysisRevisions: { responseSchema: 'AnalysisRevisionPage' },
  createAnalysisRun: { requestSchema: 'AnalysisRunCreate', responseSchema: 'AnalysisRun' },
  getAnalysisRun: { responseSchema: 'AnalysisRun' },
  listAnalysisRuns: { responseSchema: 'AnalysisRunPage' },
};
