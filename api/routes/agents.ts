/**
 * Agents handlers (spec Agents rows, "Agent lifecycle", "Agent versions", "Versioning", "Errors"):
 * drafts with If-Match optimistic concurrency, publish through the `agent-publish` workflow with an
 * Idempotency-Key, versions, rollback, diff against the draft and the pre-publish report.
 */
import { WorkflowFailedError } from '@temporalio/client';
import type { Handler, AppContext } from '../context';
import { ApiError, notFound, validationError, type FieldError } from '../../domain/errors';
import { mergeFieldErrors, schemaErrors, validateBody } from '../../domain/validation';
import { startWorkflow, workflowIds } from '../../temporal.config';
import { emitEvent } from '../../events/emit';
import {
  createAgent as insertAgent,
  getAgent as findAgent,
  listAgents as pageAgents,
  loadDraftBundle,
  updateAgent as patchAgent,
  type AgentRecord,
} from '../../db/repositories/agents';
import { getVersion, listVersions, publishedWithKey, rollbackTo, type PublishOutcome } from '../../db/repositories/agentVersions';
import type { AgentCreate, AgentPatch, AgentVariable } from '../../schemas/types/agents';
import type { PublishRequest, RollbackRequest } from '../../schemas/types/versions';
import { compileDraft, modelSettingProblems, publishRequestHash } from '../../domain/agents/compile';
import type { AppConfig } from '../../config';
import { diffSnapshots } from '../../domain/agents/diff';
import { analysisFieldErrors } from '../../domain/conversations/analysis';
import { etag, expectedVersion, rethrowDuplicate, versionConflict } from '../agents/http';
import { orgOf, pageParams, paged, requireTemporal } from '../http';
import { toAgentView } from '../agents/present';
import { buildPrepublishReport } from '../../domain/agents/report';
import { probeMcpServers } from '../../services/conversations/mcp';
import { probeBookingTargets } from '../../services/conversations/booking';
import { getConnection } from '../../db/repositories/integrations';
import { publishGate } from './evals';
import { recordSchemaRules } from '../../db/repositories/records';
import { agentNumberSettings } from '../../db/repositories/phoneSettings';
import { destinations } from '../../db/repositories/escalationDestinations';
import { telephonyProviderName } from '../../providers/telephony';
import { speechCarrierOf } from '../../services/voice/calls';
import { DEFAULT_LANGUAGE, findVoice, isSupportedLanguage, SPEECH_ENGINE_LANGUAGES } from '../../domain/agents/voices';
import { conversationLimits, type ConversationLimits } from '../../domain/conversations/limits';
import { resetTrafficSplit } from '../../services/agents/traffic';

/** Path parameter of the current route. */
export function param(ctx: AppContext, name: string): string {
  return String((ctx as unknown as { params: Record<string, string> }).params[name]);
}

/**
 * Errors of a create or update body beyond its schema: repeated variable names, and the analysis fields'
 * rules (domain/conversations/analysis.ts `analysisFieldErrors`; docs/api-notes.md "Conversation analysis").
 */
function bodyFieldErrors(body: AgentPatch | undefined): FieldError[] {
  const fields = body?.analysis?.fields;
  const analysis = Array.isArray(fields) && fields.every((f) => f && typeof f === 'object' && typeof f.name === 'string') ? analysisFieldErrors(fields) : [];
  return [...duplicateVariables(body?.variables), ...analysis];
}

/** The deployment's chat models as the compiler checks them (config.ts: LLM_MODEL, LLM_MODELS). */
export function deploymentModels(config: Pick<AppConfig, 'llmModel' | 'llmModels'>): { default: string; allowed: readonly string[] } {
  return { default: config.llmModel, allowed: config.llmModels };
}

/**
 * Errors of the model settings a create or update body sets (docs/api-notes.md "Agents": model settings): `model`
 * and `fallbackModel` outside LLM_MODELS, an unknown IANA `timeZone` (400 naming the field). Only the fields the
 * body carries are checked, so a PATCH of another field never fails on a stored value the allowlist lost since.
 */
function modelFieldErrors(body: AgentPatch | undefined, config: Pick<AppConfig, 'llmModel' | 'llmModels'>): FieldError[] {
  if (!body || typeof body !== 'object') return [];
  const str = (v: unknown) => (typeof v === 'string' ? v : undefined);
  return modelSettingProblems({ model: str(body.model), fallbackModel: str(body.fallbackModel), timeZone: str(body.timeZone) }, deploymentModels(config)).errors;
}

/** `variables[<name>]` errors for repeated variable names (docs/api-notes.md: agent fields). */
function duplicateVariables(vars: AgentVariable[] | undefined): FieldError[] {
  const seen = new Set<string>();
  const out: FieldError[] = [];
  // Any value may arrive here when the schema refused the body: the schema's errors name it.
  if (!Array.isArray(vars)) return out;
  for (const v of vars) {
    if (!v || typeof v !== 'object' || typeof v.name !== 'string') continue;
    if (seen.has(v.name)) out.push({ field: `variables[${v.name}]`, message: 'duplicate variable name' });
    seen.add(v.name);
  }
  return out;
}

/**
 * Semantic checks shared by create and update, after the schema: an unknown voice is 400; a language
 * the speech engine does not support is 422 `unsupported_language`; a voice that does not speak the
 * language is 422 `voice_language_mismatch`.
 */
function checkLanguageAndVoice(language: string, voiceId: string | null): void {
  if (!isSupportedLanguage(language)) {
    throw new ApiError(422, 'unsupported_language', `The plan's speech engine does not support "${language}"; supported: ${SPEECH_ENGINE_LANGUAGES.join(', ')}`, {
      errors: [{ field: 'language', message: 'is not supported by the speech engine' }],
    });
  }
  if (voiceId) {
    const voice = findVoice(voiceId);
    if (!voice) throw validationError([{ field: 'voiceId', message: 'is not a voice of GET /voices' }]);
    if (!voice.languages.includes(language)) {
      throw new ApiError(422, 'voice_language_mismatch', `Voice "${voiceId}" does not speak ${language}; it speaks ${voice.languages.join(', ')}`, {
        errors: [{ field: 'voiceId', message: `does not speak ${language}` }],
      });
    }
  }
}

/** GET /agents: agents of the organization, oldest first, cursor-paginated. */
export const listAgents: Handler = async (ctx, { db }) => {
  const page = await paged(() => pageAgents(db, orgOf(ctx), pageParams(ctx)));
  return { data: { ...page, items: page.items.map(toAgentView) } };
};

/** POST /agents: creates an agent at draft version 1 (409 duplicate_name, 422 unsupported_language). */
export const createAgent: Handler = async (ctx, { db, config }) => {
  const raw = ctx.request.body as unknown;
  const errors = mergeFieldErrors(schemaErrors('AgentCreate', raw), bodyFieldErrors(raw as AgentCreate | undefined), modelFieldErrors(raw as AgentCreate | undefined, config));
  if (errors.length) throw validationError(errors);
  const body = raw as AgentCreate;
  const language = body.language ?? DEFAULT_LANGUAGE;
  checkLanguageAndVoice(language, body.voiceId ?? null);
  let agent: AgentRecord;
  try {
    agent = await insertAgent(db, orgOf(ctx), { ...body, name: body.name.trim(), language });
  } catch (err) {
    rethrowDuplicate(err);
  }
  return { data: toAgentView(agent), status: 201, headers: { ...etag(agent.version), Location: `${ctx.path}/${agent.id}` } };
};

/** GET /agents/{id}: the draft, with `ETag: "<version>"`. */
export const getAgent: Handler = async (ctx, { db }) => {
  const agent = await findAgent(db, orgOf(ctx), param(ctx, 'id'));
  if (!agent) throw notFound('Agent', 'agent_not_found');
  return { data: toAgentView(agent), headers: etag(agent.version) };
};

/**
 * PATCH /agents/{id}: merge-patch of the draft. `If-Match` is required (428); a stale version is 409
 * `version_conflict` with `current` (the agent) and `version`; the update itself is conditional in SQL.
 */
export const updateAgent: Handler = async (ctx, { db, config }) => {
  const orgId = orgOf(ctx);
  const id = param(ctx, 'id');
  const expected = expectedVersion(ctx, true);
  const raw = ctx.request.body as unknown;
  const errors = mergeFieldErrors(schemaErrors('AgentPatch', raw), bodyFieldErrors(raw as AgentPatch | undefined), modelFieldErrors(raw as AgentPatch | undefined, config));
  if (errors.length) throw validationError(errors);
  const body = raw as AgentPatch;
  const current = await findAgent(db, orgId, id);
  if (!current) throw notFound('Agent', 'agent_not_found');
  if (expected !== null && current.version !== expected) throw versionConflict(current, expected);
  if (body.language !== undefined || body.voiceId !== undefined) {
    checkLanguageAndVoice(body.language ?? current.language, body.voiceId !== undefined ? body.voiceId : current.voiceId);
  }
  const fields = { ...body, ...(body.name !== undefined ? { name: body.name.trim() } : {}) };
  let outcome;
  try {
    outcome = await patchAgent(db, orgId, id, expected, fields);
  } catch (err) {
    rethrowDuplicate(err);
  }
  if (outcome.kind === 'not_found') throw notFound('Agent', 'agent_not_found');
  if (outcome.kind === 'version_conflict') throw versionConflict(outcome.agent, expected);
  return { data: toAgentView(outcome.agent), headers: etag(outcome.agent.version) };
};


/** Maps a publish outcome to the response (or a problem). */
function publishResponse(outcome: PublishOutcome): { data: unknown; status: number; headers: Record<string, string> } {
  switch (outcome.kind) {
    case 'published':
      return { data: outcome.version, status: 201, headers: outcome.replayed ? { 'Idempotent-Replayed': 'true' } : {} };
    case 'invalid':
      throw validationError(outcome.errors, `The draft cannot be published: ${outcome.errors.length} problem(s); nothing was published`);
    case 'not_found':
      throw notFound('Agent', 'agent_not_found');
    case 'idempotency_key_reused':
      throw new ApiError(422, 'idempotency_key_reused', 'This Idempotency-Key was used for a publish with another body; use a new key');
    case 'publish_conflict':
      throw new ApiError(409, 'publish_conflict', 'Another publish of this agent took the version number; retry with a new Idempotency-Key');
  }
}

/**
 * POST /agents/{id}/publish: requires `Idempotency-Key` (api/middleware/idempotency.ts: 400
 * `idempotency_key_required`, replays, 422 `idempotency_key_reused`), body `{note?}`. Starts (or joins)
 * workflow `agent-publish/{agentId}/{key}` and answers 201 with the version once it has compiled.
 * The compile activity also records the key with the version, so a workflow retried after a crash
 * finds the version it published instead of publishing twice.
 * 503 `temporal_unavailable` when the API runs without Temporal. With `gate: {suiteId, minPassRate}` the draft runs
 * the evaluation suite first (./evals.ts `publishGate`): 409 `evaluation_failed` below the pass rate, nothing published.
 */
export const publishAgent: Handler = async (ctx, deps) => {
  const { db } = deps;
  const orgId = orgOf(ctx);
  const agentId = param(ctx, 'id');
  const key = ctx.state.idempotency!.key;
  const body = validateBody<PublishRequest>('PublishRequest', ctx.request.body ?? {});
  const agent = await findAgent(db, orgId, agentId);
  if (!agent) throw notFound('Agent', 'agent_not_found');
  const input = { orgId, agentId, idempotencyKey: key, requestHash: publishRequestHash(body), note: body.note ?? null, publishedBy: ctx.state.auth!.keyId };
  // The version records the key it was published with: a publish that completed but whose answer was
  // lost (the response was never stored) is answered from it, without a workflow.
  const prior = await publishedWithKey(db, orgId, agentId, key);
  if (prior) {
    if (prior.requestHash !== input.requestHash) return publishResponse({ kind: 'idempotency_key_reused' });
    return publishResponse({ kind: 'published', version: (await getVersion(db, orgId, agentId, prior.versionId))!.version, replayed: true });
  }
  const temporal = requireTemporal(deps);
  // The gate (docs/evals.md "Publish gate"): the draft runs the suite first; below the pass rate, 409 and no publish.
  if (body.gate) await publishGate(ctx, deps, orgId, agentId, key, body.gate, ctx.request.body);
  let outcome: PublishOutcome;
  try {
    const handle = await startWorkflow(temporal, 'agentPublishWorkflow', {
      workflowId: workflowIds.agentPublish(agentId, key),
      args: [input],
      orgId,
      resourceId: agentId,
      workflowIdConflictPolicy: 'USE_EXISTING',
    });
    outcome = await handle.result();
  } catch (err) {
    if (err instanceof WorkflowFailedError) {
      throw new ApiError(503, 'publish_failed', 'The publish could not complete; retry with the same Idempotency-Key');
    }
    throw err;
  }
  return publishResponse(outcome);
};

/**
 * POST /agents/{id}/rollback `{versionId}`: the published version becomes an earlier frozen version at
 * once, without recompiling. 404 `version_not_found` for a version of another agent; 409
 * `no_published_version` before the first publish; 422 `rollback_target_not_earlier` when the target
 * is not older than the published version. Answers the agent.
 */
export const rollbackAgent: Handler = async (ctx, { db }) => {
  const orgId = orgOf(ctx);
  const agentId = param(ctx, 'id');
  const body = validateBody<RollbackRequest>('RollbackRequest', ctx.request.body);
  const outcome = await rollbackTo(db, orgId, agentId, body.versionId, async (trx, target, previousVersionId) => {
    await emitEvent(trx, orgId, 'agent.rolled_back', {
      agentId,
      versionId: target.id,
      version: target.number,
      previousVersionId,
      rolledBackAt: new Date().toISOString(),
    });
    // A rollback resets the traffic split to 100 % on the version now live (docs/api-notes.md "Traffic splits").
    await resetTrafficSplit(trx, orgId, agentId, target.id, 'rolled_back');
  });
  switch (outcome.kind) {
    case 'not_found':
      throw notFound('Agent', 'agent_not_found');
    case 'version_not_found':
      throw new ApiError(404, 'version_not_found', `Version ${body.versionId} is not a version of this agent`, { errors: [{ field: 'versionId', message: 'is not a version of this agent' }] });
    case 'no_published_version':
      throw new ApiError(409, 'no_published_version', 'The agent has never been published; there is nothing to roll back');
    case 'not_earlier':
      throw new ApiError(422, 'rollback_target_not_earlier', `Version ${outcome.targetNumber} is not earlier than the published version ${outcome.publishedNumber}`, {
        errors: [{ field: 'versionId', message: 'must be an earlier version than the published one' }],
      });
  }
  const agent = (await findAgent(db, orgId, agentId))!;
  return { data: toAgentView(agent), headers: etag(agent.version), message: `Version ${outcome.version.number} is live` };
};

/** GET /agents/{id}/versions: frozen versions, newest first, cursor-paginated. */
export const listAgentVersions: Handler = async (ctx, { db }) => {
  const page = await paged(() => listVersions(db, orgOf(ctx), param(ctx, 'id'), pageParams(ctx)));
  if (!page) throw notFound('Agent', 'agent_not_found');
  return { data: page };
};

/** GET /agents/{id}/versions/{versionId}/diff: the version (before) against the compiled draft (after). */
export const diffAgentVersion: Handler = async (ctx, { db }) => {
  const orgId = orgOf(ctx);
  const agentId = param(ctx, 'id');
  const bundle = await loadDraftBundle(db, orgId, agentId);
  if (!bundle) throw notFound('Agent', 'agent_not_found');
  const found = await getVersion(db, orgId, agentId, param(ctx, 'versionId'));
  if (!found) throw notFound('Version', 'version_not_found');
  const { snapshot } = compileDraft(bundle);
  return {
    data: {
      versionId: found.version.id,
      versionNumber: found.version.number,
      draftVersion: bundle.agent.version,
      // A version published before the idle timeouts existed runs on their defaults: compared as such, it shows no change.
      items: diffSnapshots({ ...(found.snapshot as object), ...conversationLimits(found.snapshot as Partial<ConversationLimits>) }, snapshot),
    },
  };
};

/** GET /agents/{id}/prepublish-report: what publishing the current draft would put live. */
export const getPrepublishReport: Handler = async (ctx, { db, config, providers }) => {
  const loaded = await loadDraftBundle(db, orgOf(ctx), param(ctx, 'id'));
  if (!loaded) throw notFound('Agent', 'agent_not_found');
  // The allowlist makes a model LLM_MODELS lost since it was saved a blocking error, as the publish will.
  const bundle = { ...loaded, models: deploymentModels(config) };
  const orgId = orgOf(ctx);
  // What the model may see depends on the organization's record schema (docs/security.md "Sensitive record fields");
  // what callers get depends on the agent's numbers, their phone settings and the escalation destinations.
  const reach = {
    numbers: await agentNumberSettings(db, orgId, bundle.agent.id),
    destinations: await destinations.all(db, orgId),
    carrier: speechCarrierOf(telephonyProviderName()),
  };
  // Each `mcp` skill's server is asked for its tools now, its config resolved as a publish would (an unreachable one is a status, not a failure).
  const skills = compileDraft(bundle).snapshot.skills;
  const mcpServers = await probeMcpServers(db, orgId, skills);
  // Each booking skill's endpoint is asked a GET (never a booking), or its calendar connection read.
  const bookingProbes = await probeBookingTargets(providers.skillHttp, skills, (kind) => getConnection(db, orgId, kind));
  return { data: buildPrepublishReport(bundle, await recordSchemaRules(db, orgId), reach, mcpServers, bookingProbes), headers: etag(bundle.agent.version) };
};

/** Handlers of this area by operationId (api/routes/index.ts). */
export const handlers = {
  listAgents,
  createAgent,
  getAgent,
  updateAgent,
  publishAgent,
  rollbackAgent,
  listAgentVersions,
  diffAgentVersion,
  getPrepublishReport,
};

/** Schemas of this area's operations (merged into the route table). */
export const routeSchemas = {
  listAgents: { responseSchema: 'AgentPage' },
  createAgent: { requestSchema: 'AgentCreate', responseSchema: 'Agent', bodyChecks: (b: Record<string, any>) => bodyFieldErrors(b) },
  getAgent: { responseSchema: 'Agent' },
  updateAgent: { requestSchema: 'AgentPatch', responseSchema: 'Agent', bodyChecks: (b: Record<string, any>) => bodyFieldErrors(b) },
  publishAgent: { requestSchema: 'PublishRequest', responseSchema: 'AgentVersion' },
  rollbackAgent: { requestSchema: 'RollbackRequest', responseSchema: 'Agent' },
  listAgentVersions: { responseSchema: 'AgentVersionPage' },
  diffAgentVersion: { responseSchema: 'AgentVersionDiff' },
  getPrepublishReport: { responseSchema: 'PrepublishReport' },
};
