/**
 * The workflow-start outbox (docs/operations.md "Workflows start after the commit"): `recordWorkflowStart` runs
 * inside the caller's transaction, so the start exists exactly when the rows the workflow reads have committed.
 * services/workflowStarts.ts starts the rows and deletes them in the transaction that locked them.
 */
import type { Knex } from 'knex';
import type { Db } from '../index';

/** What a start needs besides the task queue (temporal.config.ts `StartWorkflowOptions`). */
export interface WorkflowStartSpec {
  workflowType: string;
  workflowId: string;
  args: unknown[];
  resourceId?: string;
  options: { memo?: Record<string, unknown>; workflowIdConflictPolicy?: 'FAIL' | 'USE_EXISTING' };
}

/** One owed start. */
export interface WorkflowStartRow extends WorkflowStartSpec {
  id: number;
  orgId: string;
  /** Failed start attempts so far (the immediate one included). */
  attempts: number;
}

const COLUMNS = ['id', 'org_id', 'workflow_type', 'workflow_id', 'args', 'resource_id', 'options', 'attempts'];

function toRow(r: Record<string, any>): WorkflowStartRow {
  return {
    id: Number(r.id),
    orgId: r.org_id,
    workflowType: r.workflow_type,
    workflowId: r.workflow_id,
    args: r.args,
    resourceId: r.resource_id ?? undefined,
    options: r.options ?? {},
    attempts: r.attempts,
  };
}

/**
 * Records a start owed once `trx` commits (rolled back with it otherwise).
 * @returns the row's id
 */
export async function recordWorkflowStart(trx: Knex.Transaction, orgId: string, spec: WorkflowStartSpec): Promise<number> {
  const [row] = await trx('workflow_starts')
    .insert({
      org_id: orgId,
      workflow_type: spec.workflowType,
      workflow_id: spec.workflowId,
      args: JSON.stringify(spec.args),
      resource_id: spec.resourceId ?? null,
      options: JSON.stringify(spec.options),
    })
    .returning('id');
  return Number(row.id);
}

/**
 * Locks one owed start of `orgId` inside `trx` (SKIP LOCKED: a sweep holding it answers undefined, as does a row
 * never committed or already started). A transaction that only deletes this row may commit asynchronously
 * (PostgreSQL `synchronous_commit = off`: a lost delete only means one more, harmless, start by the sweep).
 */
export async function lockWorkflowStart(trx: Knex.Transaction, orgId: string, id: number): Promise<WorkflowStartRow | undefined> {
  // `set_config(…, true)` is SET LOCAL as a function (PostgreSQL "Configuration Settings Functions"), evaluated for
  // the locked row: one statement instead of two. With no row the transaction writes nothing, so its commit mode is moot.
  const r = await trx('workflow_starts')
    .select([...COLUMNS, trx.raw("set_config('synchronous_commit', 'off', true) as synchronous_commit")])
    .where({ org_id: orgId, id })
    .forUpdate()
    .skipLocked()
    .first();
  return r ? toRow(r) : undefined;
}

/**
 * Locks up to `limit` owed starts of every organization that are due (`next_attempt_at` passed) and at least
 * `minAgeMs` old (younger ones are the requests' own to start), oldest first, skipping rows another process holds.
 */
export async function lockDueWorkflowStarts(trx: Knex.Transaction, limit: number, minAgeMs: number): Promise<WorkflowStartRow[]> {
  const rows = await trx('workflow_starts')
    .select(COLUMNS)
    .where('next_attempt_at', '<=', trx.raw('now()'))
    .andWhere('created_at', '<=', trx.raw("now() - make_interval(secs => ?)", [minAgeMs / 1000]))
    .orderBy('id')
    .limit(limit)
    .forUpdate()
    .skipLocked();
  return rows.map(toRow);
}

/** Removes started rows, each of its organization (inside the transaction that locked them). */
export async function deleteWorkflowStarts(trx: Knex.Transaction, rows: { orgId: string; id: number }[]): Promise<void> {
  if (rows.length) await trx('workflow_starts').whereIn(['org_id', 'id'], rows.map((r) => [r.orgId, r.id])).delete();
}

/** Notes a failed start: one more attempt, its error, and the next try `delayMs` from now. */
export async function deferWorkflowStart(trx: Knex.Transaction, row: { orgId: string; id: number }, error: string, delayMs: number): Promise<void> {
  await trx('workflow_starts')
    .where({ org_id: row.orgId, id: row.id })
    .update({ attempts: trx.raw('attempts + 1'), last_error: error.slice(0, 1000), next_attempt_at: trx.raw('now() + make_interval(secs => ?)', [delayMs / 1000]) });
}

/** Owed starts of every organization (monitoring, tests). */
export async function workflowStartsDepth(db: Db): Promise<number> {
  const [{ n }] = await db('workflow_starts').count({ n: '*' });
  return Number(n);
}
