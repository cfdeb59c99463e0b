/**
 * Evaluation suites, runs and their per-scenario results (docs/evals.md; migration 20261127000200_eval_suites).
 * Every function takes the organization id first and scopes by it.
 */
import type { Knex } from 'knex';
import type { Db } from '../index';
import { derivedId, newId } from '../ids';
import { rowMapper } from '../rows';
import { keysetPage, type Page } from '../pagination';
import type { Conn } from './agents';
import type { EvalRepeatResult, EvalRun, EvalScenario, EvalSuite, EvalSuiteCreate, EvalSuitePatch } from '../../schemas/types/evals';

/** The suite as a run froze it when it started. */
export interface EvalRunSuite {
  name: string;
  scenarios: EvalScenario[];
  repeat: number;
  concurrency: number;
}

/** A stored run (without its per-scenario results) and the suite it runs. */
export interface EvalRunRecord extends Omit<EvalRun, 'scenarios'> {
  suite: EvalRunSuite;
  /** Gated publish: its Idempotency-Key and the hash of its body. */
  gateKey: string | null;
  requestHash: string | null;
}

/** A duplicate suite name of the agent. */
export class DuplicateSuiteNameError extends Error {
  constructor(readonly suiteName: string) {
    super(`The agent has a suite named "${suiteName}"`);
    this.name = 'DuplicateSuiteNameError';
  }
}

const toSuite = rowMapper<EvalSuite>({
  id: 'value',
  agentId: 'value',
  name: 'value',
  description: 'nullable',
  scenarios: 'value',
  repeat: 'value',
  concurrency: 'value',
  createdAt: 'iso',
  updatedAt: 'iso',
});

const toRun = rowMapper<EvalRunRecord>({
  id: 'value',
  suiteId: 'value',
  agentId: 'value',
  target: 'value',
  status: 'value',
  passRate: 'nullable',
  passed: 'nullable',
  total: 'value',
  flaky: 'list',
  gate: (r) => r.gate_key !== null && r.gate_key !== undefined,
  error: 'nullable',
  createdAt: 'iso',
  completedAt: 'iso',
  suite: 'value',
  gateKey: 'nullable',
  requestHash: 'nullable',
});

const isDuplicate = (err: unknown) => (err as { code?: string })?.code === '23505';

/** Stores a suite. @throws DuplicateSuiteNameError */
export async function createSuite(db: Db, orgId: string, agentId: string, body: EvalSuiteCreate): Promise<EvalSuite> {
  try {
    const [row] = await db('eval_suites')
      .insert({
        id: newId('evs'),
        org_id: orgId,
        agent_id: agentId,
        name: body.name,
        description: body.description ?? null,
        scenarios: JSON.stringify(body.scenarios),
        repeat: body.repeat ?? 1,
        concurrency: body.concurrency ?? 4,
      })
      .returning('*');
    return toSuite(row);
  } catch (err) {
    if (isDuplicate(err)) throw new DuplicateSuiteNameError(body.name);
    throw err;
  }
}

/** One suite of the organization (of the agent, when given), or undefined. */
export async function getSuite(conn: Conn, orgId: string, id: string, agentId?: string): Promise<EvalSuite | undefined> {
  const r = await conn('eval_suites').where({ org_id: orgId, id, ...(agentId ? { agent_id: agentId } : {}) }).first();
  return r ? toSuite(r) : undefined;
}

/** The agent's suites, by id. */
export function listSuites(db: Db, orgId: string, agentId: string, page: { limit: number; cursor?: string }): Promise<Page<EvalSuite>> {
  return keysetPage(db('eval_suites').where({ org_id: orgId, agent_id: agentId }), { ...page, column: 'seq', map: toSuite });
}

/** Replaces the given fields of a suite. @returns the suite, or undefined when absent @throws DuplicateSuiteNameError */
export async function updateSuite(db: Db, orgId: string, agentId: string, id: string, patch: EvalSuitePatch): Promise<EvalSuite | undefined> {
  const cols: Record<string, unknown> = { updated_at: db.fn.now() };
  if (patch.name !== undefined) cols.name = patch.name;
  if (patch.description !== undefined) cols.description = patch.description;
  if (patch.scenarios !== undefined) cols.scenarios = JSON.stringify(patch.scenarios);
  if (patch.repeat !== undefined) cols.repeat = patch.repeat;
  if (patch.concurrency !== undefined) cols.concurrency = patch.concurrency;
  try {
    const [row] = await db('eval_suites').where({ org_id: orgId, agent_id: agentId, id }).update(cols).returning('*');
    return row ? toSuite(row) : undefined;
  } catch (err) {
    if (isDuplicate(err)) throw new DuplicateSuiteNameError(patch.name ?? '');
    throw err;
  }
}

/** Deletes a suite (its runs stay readable by id). @returns whether it existed */
export async function deleteSuite(db: Db, orgId: string, agentId: string, id: string): Promise<boolean> {
  return (await db('eval_suites').where({ org_id: orgId, agent_id: agentId, id }).delete()) > 0;
}

/** The run id of a gated publish: one per agent and Idempotency-Key, so a retry finds the same run. */
export function gateRunId(orgId: string, agentId: string, idempotencyKey: string): string {
  return derivedId('evr', `${orgId}:${agentId}:${idempotencyKey}`);
}

/**
 * Stores a new run (`running`) with the suite frozen; with `gate`, under the gate's id, or finds the run stored
 * under it before.
 * @returns the run and whether this call created it
 */
export async function createRun(
  db: Db,
  orgId: string,
  run: { suite: EvalSuite; target: EvalRun['target']; total: number; gate?: { key: string; requestHash: string } },
): Promise<{ run: EvalRunRecord; created: boolean }> {
  const id = run.gate ? gateRunId(orgId, run.suite.agentId, run.gate.key) : newId('evr');
  const frozen: EvalRunSuite = { name: run.suite.name, scenarios: run.suite.scenarios, repeat: run.suite.repeat, concurrency: run.suite.concurrency };
  const rows = await db('eval_runs')
    .insert({
      id,
      org_id: orgId,
      agent_id: run.suite.agentId,
      suite_id: run.suite.id,
      target: JSON.stringify(run.target),
      suite: JSON.stringify(frozen),
      total: run.total,
      gate_key: run.gate?.key ?? null,
      request_hash: run.gate?.requestHash ?? null,
    })
    .onConflict('id')
    .ignore()
    .returning('*');
  if (rows.length) return { run: toRun(rows[0]), created: true };
  return { run: (await getRun(db, orgId, id))!, created: false };
}

/** One run of the organization (of the suite, when given), or undefined. */
export async function getRun(conn: Conn, orgId: string, id: string, suiteId?: string): Promise<EvalRunRecord | undefined> {
  const r = await conn('eval_runs').where({ org_id: orgId, id, ...(suiteId ? { suite_id: suiteId } : {}) }).first();
  return r ? toRun(r) : undefined;
}

/** The suite's runs, newest first. */
export function listRuns(db: Db, orgId: string, suiteId: string, page: { limit: number; cursor?: string }): Promise<Page<EvalRunRecord>> {
  return keysetPage(db('eval_runs').where({ org_id: orgId, suite_id: suiteId }), {
    ...page,
    column: 'seq',
    direction: 'desc',
    map: toRun,
  });
}

/** A gated publish's run is started again after a failure (its workflow could not start): back to `running`, results dropped. */
export async function restartRun(db: Db, orgId: string, id: string): Promise<void> {
  await db.transaction(async (trx) => {
    await trx('eval_run_results').where({ org_id: orgId, run_id: id }).delete();
    await trx('eval_runs').where({ org_id: orgId, id }).update({ status: 'running', error: null, pass_rate: null, passed: null, flaky: null, completed_at: null });
  });
}

/** The stored result of one scenario run, or undefined. */
export async function getRepeatResult(db: Db, orgId: string, runId: string, scenario: number, repeat: number): Promise<EvalRepeatResult | undefined> {
  const r = await db('eval_run_results').where({ org_id: orgId, run_id: runId, scenario, repeat }).first();
  return r ? toRepeat(r) : undefined;
}

function toRepeat(r: any): EvalRepeatResult {
  return { repeat: r.repeat, passed: r.passed, conversationId: r.conversation_id ?? null, results: r.results, error: r.error ?? null, wallMs: r.wall_ms };
}

/** Stores the result of one scenario run (a result stored before wins). */
export async function saveRepeatResult(db: Db, orgId: string, runId: string, scenario: number, result: EvalRepeatResult): Promise<void> {
  await db('eval_run_results')
    .insert({
      org_id: orgId,
      run_id: runId,
      scenario,
      repeat: result.repeat,
      passed: result.passed,
      conversation_id: result.conversationId,
      results: JSON.stringify(result.results),
      error: result.error,
      wall_ms: Math.round(result.wallMs),
    })
    .onConflict(['run_id', 'scenario', 'repeat'])
    .ignore();
}

/** Every stored scenario run of a run, by scenario index. */
export async function runResults(db: Db, orgId: string, runId: string): Promise<EvalRepeatResult[][]> {
  const rows = await db('eval_run_results').where({ org_id: orgId, run_id: runId }).orderBy(['scenario', 'repeat']);
  const out: EvalRepeatResult[][] = [];
  for (const r of rows) (out[r.scenario] ??= []).push(toRepeat(r));
  return out;
}

/**
 * Completes a running run with its figures, then runs `inTx` in the same transaction (the `eval.completed` event).
 * @returns the run, or undefined when it was no longer running (completed before: nothing emitted)
 */
export async function completeRun(
  db: Db,
  orgId: string,
  id: string,
  figures: { status: 'completed' | 'failed'; passRate: number | null; passed: number | null; flaky: string[]; error: string | null },
  inTx: (trx: Knex.Transaction, run: EvalRunRecord) => Promise<unknown>,
): Promise<EvalRunRecord | undefined> {
  return db.transaction(async (trx) => {
    const [row] = await trx('eval_runs')
      .where({ org_id: orgId, id, status: 'running' })
      .update({
        status: figures.status,
        pass_rate: figures.passRate,
        passed: figures.passed,
        flaky: JSON.stringify(figures.flaky),
        error: figures.error?.slice(0, 2000) ?? null,
        completed_at: trx.fn.now(),
      })
      .returning('*');
    if (!row) return undefined;
    const run = toRun(row);
    await inTx(trx, run);
    return run;
  });
}
