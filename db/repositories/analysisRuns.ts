/**
 * Bulk analysis re-runs (docs/api-notes.md "Conversation analysis"): `analysis_runs` holds a run's filter, the extraction
 * fields it was given, its progress and its resume point. The conversations a run covers are the analysable ended
 * conversations matching its filter that had ended when it was created (`cutoff`); the workflow takes them in id
 * order, a batch at a time, and the cursor moves on with each batch's counts in one statement.
 */
import type { Knex } from 'knex';
import type { Db } from '../index';
import { newId } from '../ids';
import { iso } from '../timestamps';
import { keysetPage, type Page } from '../pagination';
import type { AnalysisRun } from '../../schemas/types/analysis';
import type { AnalysisField } from '../../schemas/types/agents';

/** A run's filter (all members optional; `from`/`to` bound the start time, ISO 8601). */
export interface AnalysisRunFilter {
  agentId?: string;
  channel?: string;
  from?: string;
  to?: string;
}

/** A run as stored: the API shape plus its resume point. */
export interface AnalysisRunRecord extends AnalysisRun {
  cursor: string | null;
  cutoff: string;
}

function toRun(r: any): AnalysisRunRecord {
  const total = Number(r.total);
  const done = Number(r.completed) + Number(r.failed);
  return {
    id: r.id,
    status: r.status,
    filter: r.filter ?? {},
    fields: r.fields ?? null,
    total,
    completed: Number(r.completed),
    failed: Number(r.failed),
    progress: total === 0 ? (r.status === 'completed' ? 1 : 0) : Math.min(1, Number((done / total).toFixed(4))),
    error: r.error ?? null,
    createdAt: iso(r.created_at)!,
    completedAt: iso(r.completed_at) ?? null,
    cursor: r.cursor ?? null,
    cutoff: iso(r.cutoff)!,
  };
}

/**
 * The conversations a run covers: ended, analysable (not simulations, not `/chat/completions` exchanges, with a
 * transcript: services/conversations/analysis.ts `isAnalysed`), matching the filter, ended by `cutoff`.
 */
function targets(conn: Db | Knex.Transaction, orgId: string, f: AnalysisRunFilter, cutoff: string | Knex.Raw) {
  const q = conn('conversations')
    .where({ org_id: orgId, status: 'ended', simulation: false })
    .whereIn('mode', ['published', 'draft'])
    .whereRaw(`coalesce(metadata->>'api', '') <> 'chat.completions'`)
    .where('ended_at', '<=', cutoff);
  if (f.agentId) q.where('agent_id', f.agentId);
  if (f.channel) q.where('channel', f.channel);
  if (f.from) q.where('started_at', '>=', f.from);
  if (f.to) q.where('started_at', '<', f.to);
  return q;
}

/** Creates a `queued` run covering the conversations that match `filter` now (the total is fixed here). */
export async function createAnalysisRun(db: Db, orgId: string, filter: AnalysisRunFilter, fields: readonly AnalysisField[] | null): Promise<AnalysisRunRecord> {
  return db.transaction(async (trx) => {
    const { now } = (await trx.raw('SELECT now() AS now')).rows[0] as { now: Date };
    const { n } = (await targets(trx, orgId, filter, now.toISOString()).count({ n: '*' }).first()) as { n: string };
    const [r] = await trx('analysis_runs')
      .insert({ id: newId('arn'), org_id: orgId, filter: JSON.stringify(filter), fields: fields ? JSON.stringify(fields) : null, total: Number(n), cutoff: now })
      .returning('*');
    return toRun(r);
  });
}

/** A run of the organization, or undefined. */
export async function getAnalysisRun(db: Db, orgId: string, runId: string): Promise<AnalysisRunRecord | undefined> {
  const r = await db('analysis_runs').where({ org_id: orgId, id: runId }).first();
  return r ? toRun(r) : undefined;
}

/** The organization's runs, newest first. @throws InvalidCursorError */
export async function listAnalysisRuns(db: Db, orgId: string, page: { limit: number; cursor?: string }): Promise<Page<AnalysisRun>> {
  return keysetPage(db('analysis_runs').where({ org_id: orgId }), { ...page, column: 'seq', direction: 'desc', map: (r) => stripInternal(toRun(r)) });
}

/** The API shape of a stored run. */
export function stripInternal(r: AnalysisRunRecord): AnalysisRun {
  const { cursor: _cursor, cutoff: _cutoff, ...run } = r;
  return run;
}

/** Marks a queued run `running` (idempotent). @returns the run, or undefined when it does not exist */
export async function startAnalysisRun(db: Db, orgId: string, runId: string): Promise<AnalysisRunRecord | undefined> {
  await db('analysis_runs').where({ org_id: orgId, id: runId, status: 'queued' }).update({ status: 'running', updated_at: db.fn.now() });
  return getAnalysisRun(db, orgId, runId);
}

/** The next conversation ids of a run after its cursor, in id order. @param limit 1..500 */
export async function nextRunConversations(db: Db, orgId: string, run: AnalysisRunRecord, limit: number): Promise<string[]> {
  const q = targets(db, orgId, run.filter, run.cutoff).orderBy('id').limit(limit);
  if (run.cursor) q.where('id', '>', run.cursor);
  return q.pluck('id');
}

/**
 * Moves a run's cursor past a batch and recounts its revisions (so a retried batch, whose first attempt stored
 * some of them, counts each conversation once), only from the cursor the batch started at.
 * @returns true when this call advanced it
 */
export async function advanceAnalysisRun(db: Db, orgId: string, runId: string, from: string | null, to: string): Promise<boolean> {
  const q = db('analysis_runs').where({ org_id: orgId, id: runId, status: 'running' });
  if (from === null) q.whereNull('cursor');
  else q.where('cursor', from);
  const count = (status: string) => db('conversation_analysis_revisions').where({ org_id: orgId, run_id: runId, status }).count('*');
  const n = await q.update({ cursor: to, completed: count('completed'), failed: count('failed'), updated_at: db.fn.now() });
  return n > 0;
}

/**
 * Ends a running run as `completed` or `failed` and runs `inTransaction` (the `analysis.completed` event) once.
 * @returns the ended run, or undefined when it was not running (ended before)
 */
export async function finishAnalysisRun(
  db: Db,
  orgId: string,
  runId: string,
  outcome: { status: 'completed' | 'failed'; error?: string | null },
  inTransaction: (trx: Knex.Transaction, run: AnalysisRunRecord) => Promise<unknown>,
): Promise<AnalysisRunRecord | undefined> {
  return db.transaction(async (trx) => {
    const [r] = await trx('analysis_runs')
      .where({ org_id: orgId, id: runId })
      .whereIn('status', ['queued', 'running'])
      .update({ status: outcome.status, error: outcome.error ?? null, completed_at: trx.fn.now(), updated_at: trx.fn.now() })
      .returning('*');
    if (!r) return undefined;
    const run = toRun(r);
    await inTransaction(trx, run);
    return run;
  });
}

/** Whether the agent is the organization's, deleted (archived) or not: a deleted agent's conversations stay analysable. */
export async function anyAgentOf(db: Db, orgId: string, agentId: string): Promise<boolean> {
  return !!(await db('agents').where({ org_id: orgId, id: agentId }).first('id'));
}
