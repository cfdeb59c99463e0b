/**
 * Knowledge handlers (spec "Other endpoints": Knowledge):
 * `GET/POST /agents/{agentId}/knowledge/sources` and `POST /agents/{agentId}/knowledge/preview`.
 * Adding a source answers 202 with the source `pending` and starts workflow `knowledge-source/{id}`;
 * the workflow moves it to `processing` and then `ready` or `failed` (with the reason).
 */
import { WorkflowExecutionAlreadyStartedError } from '@temporalio/client';
import { agentExists, createSource, draftSourceIds, FileExpiredError, listSources, searchChunks } from '../../db/repositories/knowledge';
import type { KnowledgePreviewRequest, KnowledgeSourceCreate } from '../../schemas/types/knowledge';
import { startWorkflow, workflowIds } from '../../temporal.config';
import { orgOf, pageParams, paged, requireTemporal, temporalUnavailable } from '../http';
import type { AppDeps, Handler } from '../context';
import { ApiError, notFound, validationError, type FieldError } from '../../domain/errors';
import { mergeFieldErrors, schemaErrors, validateBody } from '../../domain/validation';
import { getUploadHead } from '../../db/repositories/uploads';
import { knowledgeFileProblem } from '../../domain/knowledge/extract';

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
 * The source row and the workflow start share one transaction, so a source exists only if its
 * ingestion workflow was started.
 */
export const createKnowledgeSource: Handler = async (ctx, deps) => {
  const orgId = orgOf(ctx);
  const { agentId } = ctx.params as { agentId: string };
  const raw = ctx.request.body as unknown;
  const shape = schemaErrors('KnowledgeSourceCreate', raw);
  if (shape.some((e) => e.field === '(body)' || e.field === 'kind')) throw validationError(shape);
  const body = raw as KnowledgeSourceCreate;
  const errors = mergeFieldErrors(shape, kindErrors(body));
  if (errors.length) throw validationError(errors);
  await requireAgent(deps, orgId, agentId);
  if (body.kind === 'file' && body.fileId) {
    const file = await getUploadHead(deps.db, orgId, body.fileId, SNIFF_BYTES);
    // A missing file answers file_expired from createSource below.
    const problem = file && (await knowledgeFileProblem(file.head, file.contentType, file.filename));
    if (problem) throw new ApiError(415, problem.code, `The file ${problem.message}`, { errors: [{ field: 'fileId', message: problem.message }] });
  }

  try {
    const source = await createSource(
      deps.db,
      orgId,
      { agentId, kind: body.kind, name: body.name?.trim() || null, url: body.url, fileId: body.fileId, text: body.text },
      async (src) => {
        // Checked here, after the upload check, so an expired file answers file_expired even without Temporal.
        const t = requireTemporal(deps);
        const workflowId = workflowIds.knowledgeSource(src.id);
        try {
          await startWorkflow(t, 'knowledgeIngestionWorkflow', { workflowId, args: [{ orgId, sourceId: src.id }], orgId, resourceId: src.id });
        } catch (err) {
          // The id is new, so "already started" means a previous attempt of this very transaction got through.
          if (!(err instanceof WorkflowExecutionAlreadyStartedError)) {
            ctx.state.log.error({ err, sourceId: src.id }, 'could not start the knowledge ingestion workflow');
            throw temporalUnavailable('The ingestion workflow could not be started; nothing was saved, try again later');
          }
        }
        return workflowId;
      },
    );
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
  const results = await searchChunks(deps.db, orgId, agentId, body.query, body.limit ?? 5, await draftSourceIds(deps.db, orgId, agentId));
  return { data: { query: body.query, results } };
};

/** Handlers of this area by operationId (api/routes/index.ts). */
export const handlers = { listKnowledgeSources, createKnowledgeSource, previewKnowledge };

/** Schemas of this area's operations (merged into the route table). */
export const routeSchemas = {
  listKnowledgeSources: { responseSchema: 'KnowledgeSourcePage' },
  createKnowledgeSource: { requestSchema: 'KnowledgeSourceCreate', responseSchema: 'KnowledgeSource' },
  previewKnowledge: { requestSchema: 'KnowledgePreviewRequest', responseSchema: 'KnowledgePreview' },
};
