/**
 * Evaluation suites and runs (docs/evals.md): CRUD of an agent's suites under `/agents/{id}/eval-suites`
 * (agents:read / agents:write), and `POST /eval-suites/{id}/runs`, which runs a suite against the draft or a frozen
 * version as workflow `agent-eval/{runId}` and answers 202 with the run to poll at `GET /eval-suites/{id}/runs/{runId}`.
 * `startEvalRun` is also the gate step of a gated publish (./agents.ts).
 */
import crypto from 'node:crypto';
import type { AppContext, AppDeps, Handler } from '../context';
import { ApiError, notFound, temporalUnavailable, validationError } from '../../domain/errors';
import { validateBody } from '../../domain/validation';
import { requireAgent } from '../agents/http';
import { param } from './agents';
import { orgOf, pageParams, paged, requireTemporal } from '../http';
import { messagesFor } from '../conversationView';
import { allMessages } from '../../db/repositories/conversations';
import {
  createRun,
  createSuite,
  deleteSuite,
  DuplicateSuiteNameError,
  getRun,
  getSuite,
  listRuns,
  listSuites,
  restartRun,
  runResults,
  updateSuite,
  type EvalRunRecord,
} from '../../db/repositories/evals';
import { scenarioRepeats, suiteCreateErrors, suiteErrors, summarizeRun } from '../../domain/evals/expectations';
import { suiteStubErrors, targetSkills, finishEvalRun } from '../../services/evals/run';
import { startWorkflow, workflowIds } from '../../temporal.config';
import type { EvalRun, EvalRunCreate, EvalSuite, EvalSuiteCreate, EvalSuitePatch } from '../../schemas/types/evals';

function duplicate(err: unknown): never {
  if (err instanceof DuplicateSuiteNameError) {
    throw new ApiError(409, 'duplicate_name', `The agent has an evaluation suite named "${err.suiteName}"`, { errors: [{ field: 'name', message: 'is already used' }] });
  }
  throw err;
}

async function requireSuite(deps: AppDeps, orgId: string, suiteId: string, agentId?: string): Promise<EvalSuite> {
  const suite = await getSuite(deps.db, orgId, suiteId, agentId);
  if (!suite) throw notFound('Evaluation suite', 'eval_suite_not_found');
  return suite;
}

/** POST /agents/{id}/eval-suites (createEvalSuite, agents:write) `EvalSuiteCreate` → 201 `EvalSuite`; 409 `duplicate_name`. */
export const createEvalSuite: Handler = async (ctx, { db }) => {
  const orgId = orgOf(ctx);
  const body = validateBody<EvalSuiteCreate>('EvalSuiteCreate', ctx.request.body);
  const errors = suiteCreateErrors(body);
  if (errors.length) throw validationError(errors);
  const agent = await requireAgent(db, orgId, param(ctx, 'id'));
  const suite = await createSuite(db, orgId, agent.id, body).catch(duplicate);
  return { data: suite, status: 201, headers: { Location: `${ctx.path}/${suite.id}` } };
};

/** GET /agents/{id}/eval-suites (listEvalSuites, agents:read) → a page of the agent's suites. */
export const listEvalSuites: Handler = async (ctx, { db }) => {
  const orgId = orgOf(ctx);
  const agent = await requireAgent(db, orgId, param(ctx, 'id'));
  return { data: await paged(() => listSuites(db, orgId, agent.id, pageParams(ctx))) };
};

/** GET /agents/{id}/eval-suites/{suiteId} (getEvalSuite, agents:read); 404 `eval_suite_not_found`. */
export const getEvalSuite: Handler = async (ctx, deps) => ({ data: await requireSuite(deps, orgOf(ctx), param(ctx, 'suiteId'), param(ctx, 'id')) });

/** PATCH /agents/{id}/eval-suites/{suiteId} (updateEvalSuite, agents:write) `EvalSuitePatch`: the given fields replace the stored ones. */
export const updateEvalSuite: Handler = async (ctx, deps) => {
  const orgId = orgOf(ctx);
  const body = validateBody<EvalSuitePatch>('EvalSuitePatch', ctx.request.body ?? {});
  const agentId = param(ctx, 'id');
  const current = await requireSuite(deps, orgId, param(ctx, 'suiteId'), agentId);
  const errors = suiteErrors(body.scenarios ?? current.scenarios, body.repeat ?? current.repeat);
  if (errors.length) throw validationError(errors);
  const suite = await updateSuite(deps.db, orgId, agentId, current.id, body).catch(duplicate);
  if (!suite) throw notFound('Evaluation suite', 'eval_suite_not_found');
  return { data: suite };
};

/** DELETE /agents/{id}/eval-suites/{suiteId} (deleteEvalSuite, agents:write) → `{id, deleted: true}`; its runs stay readable. */
export const deleteEvalSuite: Handler = async (ctx, { db }) => {
  const suiteId = param(ctx, 'suiteId');
  if (!(await deleteSuite(db, orgOf(ctx), param(ctx, 'id'), suiteId))) throw notFound('Evaluation suite', 'eval_suite_not_found');
  return { data: { id: suiteId, deleted: true } };
};

/** A run as answered: with its per-scenario results (and transcripts, when asked), or without (lists). */
async function runView(ctx: AppContext, deps: AppDeps, orgId: string, run: EvalRunRecord, detail: { transcripts: boolean } | null): Promise<EvalRun> {
  const { suite: _suite, gateKey: _gateKey, requestHash: _hash, ...rest } = run;
  if (!detail) return { ...rest, scenarios: [] };
  const summary = summarizeRun(run.suite.scenarios.map((s) => s.name), await runResults(deps.db, orgId, run.id));
  if (detail.transcripts) {
    for (const s of summary.scenarios) {
      for (const r of s.repeats) r.transcript = r.conversationId ? messagesFor(ctx, await allMessages(deps.db, orgId, r.conversationId)) : [];
    }
  }
  return { ...rest, scenarios: summary.scenarios };
}

/**
 * Starts (or, for a gate, finds) a run of `suite` against `target` as workflow `agent-eval/{runId}`.
 * Every skill of the target that would reach a real endpoint needs a stub in every scenario.
 * @param gate a gated publish's Idempotency-Key and body hash: the run is the one of this key (a retry joins it)
 * @returns the run as stored and the workflow's handle
 * @throws ApiError 400 `validation_error` naming `scenarios[i].skillStubs.<skill>`; 404 `version_not_found`;
 *   503 `temporal_unavailable` (the run is marked failed)
 */
export async function startEvalRun(ctx: AppContext, deps: AppDeps, orgId: string, suite: EvalSuite, wanted: { kind: 'draft' } | { kind: 'version'; versionId: string }, gate?: { key: string; requestHash: string }) {
  const target: EvalRun['target'] = wanted.kind === 'draft' ? { kind: 'draft', draftVersion: (await requireAgent(deps.db, orgId, suite.agentId)).version } : wanted;
  const skills = await targetSkills(deps.db, orgId, suite.agentId, target);
  if (!skills) {
    if (target.kind === 'draft') throw notFound('Agent', 'agent_not_found');
    throw new ApiError(404, 'version_not_found', `Version ${target.versionId} is not a version of this agent`, { errors: [{ field: 'target.versionId', message: 'is not a version of this agent' }] });
  }
  const missing = suiteStubErrors(skills, suite.scenarios);
  if (missing.length) throw validationError(missing, `Evaluations never call real skills: ${missing.length} skill stub(s) missing; nothing was run`);
  const temporal = requireTemporal(deps);
  const repeats = suite.scenarios.map((s) => scenarioRepeats(s, suite.repeat));
  const { run, created } = await createRun(deps.db, orgId, { suite, target, total: repeats.reduce((a, b) => a + b, 0), gate });
  if (!created && gate && run.requestHash !== gate.requestHash) {
    throw new ApiError(422, 'idempotency_key_reused', 'This Idempotency-Key was used for a gated publish with another body; use a new key');
  }
  // A gate's run that could not start before is started again; one that ended is answered as it is (no new workflow).
  if (!created && run.status === 'failed' && run.error === 'workflow_not_started') await restartRun(deps.db, orgId, run.id);
  else if (!created && run.status !== 'running') return { run, created, handle: null };
  try {
    const handle = await startWorkflow(temporal, 'agentEval', {
      workflowId: workflowIds.agentEval(run.id),
      args: [{ orgId, runId: run.id, repeats: run.suite.scenarios.map((s) => scenarioRepeats(s, run.suite.repeat)), concurrency: run.suite.concurrency }],
      orgId,
      resourceId: run.id,
      workflowIdConflictPolicy: 'USE_EXISTING',
    });
    return { run, created, handle };
  } catch (err) {
    if (!created) {
      // The gate's run exists and its workflow is over (Temporal keeps the id closed): answered from what is stored.
      const stored = await getRun(deps.db, orgId, run.id);
      if (stored && stored.status !== 'running') return { run: stored, created, handle: null };
    }
    await finishEvalRun(deps.db, orgId, run, 'workflow_not_started');
    ctx.state.log.error({ err, orgId, runId: run.id }, 'starting agent-eval workflow failed');
    throw temporalUnavailable('The evaluation could not be started; send it again');
  }
}

/**
 * POST /eval-suites/{id}/runs (createEvalRun, agents:write) `{target: "draft" | {versionId}}` → 202 `EvalRun`
 * (status `running`, `Location` of the run). 400 naming a missing skill stub; 404 `eval_suite_not_found`,
 * `version_not_found`; 503 without Temporal.
 */
export const createEvalRun: Handler = async (ctx, deps) => {
  const orgId = orgOf(ctx);
  const body = validateBody<EvalRunCreate>('EvalRunCreate', ctx.request.body);
  const suite = await requireSuite(deps, orgId, param(ctx, 'id'));
  const { run } = await startEvalRun(ctx, deps, orgId, suite, body.target === 'draft' ? { kind: 'draft' } : { kind: 'version', versionId: body.target.versionId });
  return { data: await runView(ctx, deps, orgId, run, null), status: 202, headers: { Location: `${ctx.path}/${run.id}` } };
};

/** GET /eval-suites/{id}/runs (listEvalRuns, agents:read) → the suite's runs, newest first, without per-scenario results. */
export const listEvalRuns: Handler = async (ctx, deps) => {
  const orgId = orgOf(ctx);
  const suite = await requireSuite(deps, orgId, param(ctx, 'id'));
  const page = await paged(() => listRuns(deps.db, orgId, suite.id, pageParams(ctx)));
  return { data: { ...page, items: await Promise.all(page.items.map((r) => runView(ctx, deps, orgId, r, null))) } };
};

/**
 * GET /eval-suites/{id}/runs/{runId} (getEvalRun, agents:read) → the run with results per scenario and repeat, pass
 * rates, flakiness and transcripts (`?transcripts=false` leaves them out). 404 `eval_run_not_found`.
 */
export const getEvalRun: Handler = async (ctx, deps) => {
  const orgId = orgOf(ctx);
  const run = await getRun(deps.db, orgId, param(ctx, 'runId'), param(ctx, 'id'));
  if (!run) throw notFound('Evaluation run', 'eval_run_not_found');
  return { data: await runView(ctx, deps, orgId, run, { transcripts: ctx.query.transcripts !== 'false' }) };
};

/**
 * The gate step of `POST /agents/{id}/publish` with `gate: {suiteId, minPassRate}` (docs/evals.md "Publish gate"):
 * runs the suite on the draft as the run of this Idempotency-Key (`agent-eval/{runId}`, the id derived from the agent
 * and the key) and waits for it. A retry with the same key joins or re-reads that run, so it replays the refusal
 * (with `Idempotent-Replayed: true`) or goes on to the publish, which the key makes happen once.
 * @param body the request body as sent (its hash binds the key to it)
 * @throws ApiError 409 `draft_changed` when the draft was edited after the run started (it passed, but on an older
 *   draft); 409 `evaluation_failed` (extension members `runId`, `status`, `passRate`, `minPassRate`, `passed`,
 *   `total`, `flaky`) when the run failed or its pass rate is below `minPassRate`; 404 `eval_suite_not_found` naming
 *   `gate.suiteId`; 422 `idempotency_key_reused`; what startEvalRun throws
 */
export async function publishGate(ctx: AppContext, deps: AppDeps, orgId: string, agentId: string, key: string, gate: { suiteId: string; minPassRate: number }, body: unknown): Promise<{ runId: string; passRate: number }> {
  const suite = await getSuite(deps.db, orgId, gate.suiteId, agentId);
  if (!suite) {
    throw new ApiError(404, 'eval_suite_not_found', 'The gate names no evaluation suite of this agent; nothing was published', { errors: [{ field: 'gate.suiteId', message: 'is not an evaluation suite of this agent' }] });
  }
  const requestHash = crypto.createHash('sha256').update(JSON.stringify(body ?? null)).digest('hex');
  const { run, created, handle } = await startEvalRun(ctx, deps, orgId, suite, { kind: 'draft' }, { key, requestHash });
  const figures = handle ? await handle.result() : run;
  if (figures.status === 'completed' && figures.passRate !== null && figures.passRate >= gate.minPassRate) {
    // The draft that passed must be the one published: an edit since the run started was never evaluated.
    const now = await requireAgent(deps.db, orgId, agentId);
    if (run.target.kind === 'draft' && now.version !== run.target.draftVersion) {
      throw new ApiError(409, 'draft_changed', `The draft changed (version ${run.target.draftVersion} → ${now.version}) while evaluation run ${run.id} ran; nothing was published: publish again with a new Idempotency-Key`, {
        extra: { runId: run.id, evaluatedDraftVersion: run.target.draftVersion, draftVersion: now.version },
      });
    }
    return { runId: run.id, passRate: figures.passRate };
  }
  const rate = figures.passRate === null ? 'it did not complete' : `its pass rate ${figures.passRate.toFixed(3)} is below ${gate.minPassRate}`;
  throw new ApiError(409, 'evaluation_failed', `The draft did not pass evaluation suite "${suite.name}": ${rate}; nothing was published (see run ${run.id})`, {
    headers: created ? {} : { 'Idempotent-Replayed': 'true' },
    extra: { runId: run.id, suiteId: suite.id, status: figures.status, passRate: figures.passRate, minPassRate: gate.minPassRate, passed: figures.passed, total: figures.total, flaky: figures.flaky },
  });
}

/** Handlers of this area by operationId. */
export const handlers = { createEvalSuite, listEvalSuites, getEvalSuite, updateEvalSuite, deleteEvalSuite, createEvalRun, listEvalRuns, getEvalRun };

/** Schemas of this area's operations. */
export const routeSchemas = {
  createEvalSuite: { requestSchema: 'EvalSuiteCreate', responseSchema: 'EvalSuite' },
  listEvalSuites: { responseSchema: 'EvalSuitePage' },
  getEvalSuite: { responseSchema: 'EvalSuite' },
  updateEvalSuite: { requestSchema: 'EvalSuitePatch', responseSchema: 'EvalSuite' },
  createEvalRun: { requestSchema: 'EvalRunCreate', responseSchema: 'EvalRun' },
  listEvalRuns: { responseSchema: 'EvalRunPage' },
  getEvalRun: { responseSchema: 'EvalRun' },
};
