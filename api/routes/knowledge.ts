/**
 * Knowledge handlers (spec "Other endpoints": Knowledge):
 * `GET/POST /agents/{agentId}/knowledge/sources` and `POST /agents/{agentId}/knowledge/preview`.
 * Adding a source answers 202 with the source `pending` and starts workflow `knowledge-source/{id}`;
 * the workflow moves it to `processing` and then `ready` or `failed` (with the reason).
 */
import { agentExists, createSource, draftSourceIds, FileExpiredError, getSource, listSources } from '../../db/repositories/knowledge';
import { retrieveKnowledge } from '../../services/knowledge/retrieval';
import type { KnowledgePreviewRequest, KnowledgeSource, KnowledgeSourceCreate, KnowledgeSourceUpdate } from '../../schemas/types/knowledge';
import { startWorkflow, workflowIds } from '../../temporal.config';
import { orgOf, pageParams, paged, requireTemporal, temporalUnavailable } from '../http';
import type { AppDeps, Handler } from '../context';
import { ApiError, notFound, validationError, type FieldError } from '../../domain/errors';
import { mergeFieldErrors, schemaErrors, validateBody } from '../../domain/validation';
import { getUploadHead } from '../../db/repositories/uploads';
import { knowledgeFileProblem } from '../../domain/knowledge/extract';
import { listPages, setRefreshInterval } from '../../db/repositories/knowledgeRefresh';
import { refreshCrawlErrors } from '../../domain/knowledge/crawl';
import { putKnowledgeRefreshSchedule, removeKnowledgeRefreshSchedule } from '../../services/knowledge/refreshSchedule';
import { WorkflowStarts } from '../../services/workflowStarts';

/** Bytes of an upload read to judge its type before it becomes a source. */
const SNIFF_BYTES = 64 * 1024;



/** 404 unless the agent exists in the caller's organization (another organization's agent included). */
async function requireAgent(deps: AppDeps, orgId: string, agentId: string): Promise<void> {
  if (!(await agentExists(deps.db, orgId, agentId))) throw notFound(`Agent ${agentId}`);
}

/** Checks beyond the schema: the field of the chosen kind is required, the others are refused. */
function kindErrors(body: KnowledgeSourceCreate): FieldError[] {
  const errors: FieldError[] = [];
  const need = { url: 'url', file: 'fileId', text: 'text' } as const;
  const wanted = need[body.kind];
  if (!wanted) return errors;
  for (const f of ['url', 'fileId', 'text'] as const) {
    if (f === wanted && (body[f] === undefined || body[f] === '')) errors.push({ field: f, message: `is required when kind is ${body.kind}` });
    if (f !== wanted && body[f] !== undefined) errors.push({ field: f, message: `is not allowed when kind is ${body.kind}` });
  }
  if (body.kind === 'url' && typeof body.url === 'string' && body.url) {
    let u: URL | undefined;
    try {
      u = new URL(body.url);
    } catch {
      u = undefined;
    }
    if (!u || (u.protocol !== 'http:' && u.protocol !== 'https:') || !u.hostname) {
      errors.push({ field: 'url', message: 'must be an absolute http or https URL' });
    } else if (u.username || u.password) {
      errors.push({ field: 'url', message: 'must not carry credentials' });
    }
  }
  if (body.kind === 'text' && typeof body.text === 'string' && body.text && !body.text.trim()) {
    errors.push({ field: 'text', message: 'must contain some non-blank text' });
  }
  return errors;
}

/** GET /agents/{agentId}/knowledge/sources: the agent's sources, oldest first, cursor-paginated. */
export const listKnowledgeSources: Handler = async (ctx, deps) => {
  const orgId = orgOf(ctx);
  const { agentId } = ctx.params as { agentId: string };
  const page = pageParams(ctx);
  await requireAgent(deps, orgId, agentId);
  return { data: await paged(() => listSources(deps.db, orgId, agentId, page)) };
};

/**
 * POST /agents/{agentId}/knowledge/sources → 202 with the source (status `pending`).
 * Order of answers: 400 (body) → 404 (agent) → 404 `file_expired` (upload gone) → 415 (a file knowledge
 * does not take: `unsupported_media_type`, or bytes that are not their declared type:
 * `content_type_mismatch`, naming `fileId`) → 503 (no Temporal).
 * The source row and its ingestion workflow's start commit together (services/workflowStarts.ts): the workflow
 * starts right after the commit, or, when Temporal cannot take it now, as soon as it can.
 */
export const createKnowledgeSource: Handler = async (ctx, deps) => {
  const orgId = orgOf(ctx);
  const { agentId } = ctx.params as { agentId: string };
  const raw = ctx.request.body as unknown;
  const shape = schemaErrors('KnowledgeSourceCreate', raw);
  if (shape.some((e) => e.field === '(body)' || e.field === 'kind')) throw validationError(shape);
  const body = raw as KnowledgeSourceCreate;
  const errors = mergeFieldErrors(shape, kindErrors(body), refreshCrawlErrors(body.kind, body));
  if (errors.length) throw validationError(errors);
  await requireAgent(deps, orgId, agentId);
  if (body.kind === 'file' && body.fileId) {
    const file = await getUploadHead(deps.db, orgId, body.fileId, SNIFF_BYTES);
    // A missing file answers file_expired from createSource below.
    const problem = file && (await knowledgeFileProblem(file.head, file.contentType, file.filename));
    if (problem) throw new ApiError(415, problem.code, `The file ${problem.message}`, { errors: [{ field: 'fileId', message: problem.message }] });
  }

  const starts = new WorkflowStarts(deps.db, deps.temporal, ctx.state.log);
  try {
    const source = await createSource(
      deps.db,
      orgId,
      {
        agentId,
        kind: body.kind,
        name: body.name?.trim() || null,
        url: body.url,
        fileId: body.fileId,
        text: body.text,
        refreshEveryHours: body.refresh?.everyHours ?? null,
        crawl: body.crawl ? { ...body.crawl, sameOrigin: true } : null,
        workflowIdFor: workflowIds.knowledgeSource,
      },
      async (src, trx) => {
        // Checked here, after the upload check, so an expired file answers file_expired even without Temporal.
        const t = requireTemporal(deps);
        const workflowId = workflowIds.knowledgeSource(src.id);
        // The refresh schedule first: when it cannot be made, nothing is saved (docs/knowledge.md "Refresh and crawl").
        // Its first run is `everyHours` away, so it never reads the source before this transaction commits.
        if (body.refresh) {
          try {
            await putKnowledgeRefreshSchedule(t, { orgId, sourceId: src.id }, body.refresh.everyHours);
          } catch (err) {
            ctx.state.log.error({ err, sourceId: src.id }, 'could not create the knowledge refresh schedule');
            throw temporalUnavailable('The refresh schedule could not be created; nothing was saved, try again later');
          }
        }
        // Started once the source has committed (services/workflowStarts.ts), so its first read finds it.
        await starts.record(trx, 'knowledgeIngestionWorkflow', { workflowId, args: [{ orgId, sourceId: src.id }], orgId, resourceId: src.id });
        return workflowId;
      },
    );
    await starts.afterCommit();
    return { data: source, status: 202 };
  } catch (err) {
    if (err instanceof FileExpiredError) throw new ApiError(404, 'file_expired', err.message, { errors: [{ field: 'fileId', message: 'no unexpired upload with this id' }] });
    throw err;
  }
};

/**
 * POST /agents/{agentId}/knowledge/preview {query, limit?} → the best-ranked chunks of the agent's
 * ready sources, with scores and sources (what a live call's knowledge lookup would see).
 */
export const previewKnowledge: Handler = async (ctx, deps) => {
  const orgId = orgOf(ctx);
  const { agentId } = ctx.params as { agentId: string };
  const body = validateBody<KnowledgePreviewRequest>('KnowledgePreviewRequest', ctx.request.body);
  if (!body.query.trim()) throw validationError([{ field: 'query', message: 'must contain some non-blank text' }]);
  await requireAgent(deps, orgId, agentId);
  // The same hybrid retrieval a conversation turn uses (docs/knowledge.md "Retrieval").
  // The draft's sources only: a deleted source's chunks stay for published versions (docs/api-notes.md "Deletes").
  const results = await retrieveKnowledge({ db: deps.db, embeddings: deps.providers.embeddings, log: ctx.state.log }, orgId, agentId, { text: body.query }, body.limit ?? 5, await draftSourceIds(deps.db, orgId, agentId));
  return { data: { query: body.query, results } };
};

/** The agent's source `id` (404 `knowledge_source_not_found` when missing, deleted or another agent's). */
async function requireSource(deps: AppDeps, orgId: string, agentId: string, sourceId: string): Promise<KnowledgeSource> {
  await requireAgent(deps, orgId, agentId);
  const source = await getSource(deps.db, orgId, sourceId);
  if (!source || source.agentId !== agentId) throw notFound('Knowledge source', 'knowledge_source_not_found');
  return source;
}

/** 409 `source_not_refreshable` for a file or text source (only URL sources are fetched again). */
function requireUrlSource(source: KnowledgeSource): void {
  if (source.kind !== 'url') throw new ApiError(409, 'source_not_refreshable', `Only URL sources are refreshed; this source is of kind ${source.kind}`);
}

/**
 * POST /agents/{agentId}/knowledge/sources/{id}/refresh → 202 with the source: starts workflow
 * `knowledge-refresh/{id}/now` (one at a time: a refresh already running is the answer), which checks the URL for
 * changes, re-indexes what changed and records the check (`lastCheck`). A failed URL source is retried this way.
 * 404 `knowledge_source_not_found`; 409 `source_not_refreshable` (file/text), `source_ingesting` (pending or
 * processing); 503 without Temporal.
 */
export const refreshKnowledgeSource: Handler = async (ctx, deps) => {
  const orgId = orgOf(ctx);
  const { agentId, id } = ctx.params as { agentId: string; id: string };
  const source = await requireSource(deps, orgId, agentId, id);
  requireUrlSource(source);
  if (source.status === 'pending' || source.status === 'processing') {
    throw new ApiError(409, 'source_ingesting', `The source is ${source.status}; refresh it once its ingestion is ready or failed`);
  }
  const t = requireTemporal(deps);
  try {
    await startWorkflow(t, 'knowledgeRefreshWorkflow', {
      workflowId: workflowIds.knowledgeRefreshNow(id),
      args: [{ orgId, sourceId: id }],
      orgId,
      resourceId: id,
      workflowIdConflictPolicy: 'USE_EXISTING',
    });
  } catch (err) {
    ctx.state.log.error({ err, sourceId: id }, 'could not start the knowledge refresh workflow');
    throw temporalUnavailable('The refresh could not be started; try again later');
  }
  return { data: source, status: 202 };
};

/**
 * PATCH /agents/{agentId}/knowledge/sources/{id} {refresh: {everyHours} | null} → the source: creates or updates
 * the schedule `knowledge-refresh/{id}`, or removes it for null. 400 naming `refresh.everyHours`; 404; 409
 * `source_not_refreshable`; 503 without Temporal (nothing changed).
 */
export const updateKnowledgeSource: Handler = async (ctx, deps) => {
  const orgId = orgOf(ctx);
  const { agentId, id } = ctx.params as { agentId: string; id: string };
  const body = validateBody<KnowledgeSourceUpdate>('KnowledgeSourceUpdate', ctx.request.body);
  const source = await requireSource(deps, orgId, agentId, id);
  requireUrlSource(source);
  const t = requireTemporal(deps);
  try {
    if (body.refresh) await putKnowledgeRefreshSchedule(t, { orgId, sourceId: id }, body.refresh.everyHours);
    else await removeKnowledgeRefreshSchedule(t.client, id);
  } catch (err) {
    ctx.state.log.error({ err, sourceId: id }, 'could not change the knowledge refresh schedule');
    throw temporalUnavailable('The refresh schedule could not be changed; nothing was saved, try again later');
  }
  if (!(await setRefreshInterval(deps.db, orgId, agentId, id, body.refresh?.everyHours ?? null))) throw notFound('Knowledge source', 'knowledge_source_not_found');
  return { data: (await getSource(deps.db, orgId, id))! };
};

/**
 * GET /agents/{agentId}/knowledge/sources/{id} (getKnowledgeSource, knowledge:read) → the source, as the list shows it.
 * 404 `knowledge_source_not_found` for a source of another agent or organization, or a deleted one.
 */
export const getKnowledgeSource: Handler = async (ctx, deps) => {
  const { agentId, id } = ctx.params as { agentId: string; id: string };
  return { data: await requireSource(deps, orgOf(ctx), agentId, id) };
};

/** GET /agents/{agentId}/knowledge/sources/{id}/pages: a crawling source's pages with their status, oldest first. */
export const listKnowledgeSourcePages: Handler = async (ctx, deps) => {
  const orgId = orgOf(ctx);
  const { agentId, id } = ctx.params as { agentId: string; id: string };
  const page = pageParams(ctx);
  await requireSource(deps, orgId, agentId, id);
  return { data: await paged(() => listPages(deps.db, orgId, id, page)) };
};

/** Handlers of this area by operationId (api/routes/index.ts). */
export const handlers = { listKnowledgeSources, getKnowledgeSource, createKnowledgeSource, previewKnowledge, refreshKnowledgeSource, updateKnowledgeSource, listKnowledgeSourcePages };

/** Schemas of this area's operations (merged into the route table). */
export const routeSchemas = {
  listKnowledgeSources: { responseSchema: 'KnowledgeSourcePage' },
  getKnowledgeSource: { responseSchema: 'KnowledgeSource' },
  createKnowledgeSource: { requestSchema: 'KnowledgeSourceCreate', responseSchema: 'KnowledgeSource' },
  previewKnowledge: { requestSchema: 'KnowledgePreviewRequest', responseSchema: 'KnowledgePreview' },
  refreshKnowledgeSource: { responseSchema: 'KnowledgeSource' },
  updateKnowledgeSource: { requestSchema: 'KnowledgeSourceUpdate', responseSchema: 'KnowledgeSource' },
  listKnowledgeSourcePages: { responseSchema: 'KnowledgeCrawlPageList' },
};
