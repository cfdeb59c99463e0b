/**
 * Post-conversation analyses (docs/api-notes.md "Conversation analysis"): at most one row per conversation. `claimAnalysis`
 * inserts the `running` row and only its winner analyses; `completeAnalysis` stores the result (or the failure)
 * and its `conversation.analyzed` event in one transaction.
 */
import type { Knex } from 'knex';
import type { Db } from '../index';
import { iso } from '../timestamps';
import { newId } from '../ids';
import type { ConversationAnalysis } from '../../schemas/types/observe';
import type { AnalysisLine } from '../../domain/conversations/analysis';
import type { AnalysisRevision } from '../../schemas/types/analysis';
import type { AnalysisField } from '../../schemas/types/agents';
import { keysetPage, type Page } from '../pagination';
import { rowMapper } from '../rows';

/** Knex handle or transaction. */
type Conn = Db | Knex.Transaction;

const toAnalysis = rowMapper<ConversationAnalysis>({
  status: 'value',
  outcome: 'nullable',
  sentiment: 'nullable',
  summary: 'nullable',
  fields: 'object',
  notes: 'list',
  error: 'nullable',
  model: 'nullable',
  analyzedAt: (r) => iso(r.completed_at),
});

/** The analysis of a conversation of the organization, or undefined before it ran. */
export async function getAnalysis(conn: Conn, orgId: string, conversationId: string): Promise<ConversationAnalysis | undefined> {
  const r = await conn('conversation_analyses').where({ org_id: orgId, conversation_id: conversationId }).first();
  return r ? toAnalysis(r) : undefined;
}

/**
 * Inserts the `running` row.
 * @param retake also take a row that is still `running` (an attempt that died before finishing)
 * @returns true for the caller that may analyse, false when the conversation has a row already
 */
export async function claimAnalysis(db: Db, orgId: string, conversationId: string, retake = false): Promise<boolean> {
  const insert = db('conversation_analyses').insert({ org_id: orgId, conversation_id: conversationId, status: 'running' }).onConflict('conversation_id');
  const rows = retake
    ? await insert.merge({ status: 'running' }).where({ 'conversation_analyses.status': 'running', 'conversation_analyses.org_id': orgId }).returning('conversation_id')
    : await insert.ignore().returning('conversation_id');
  return rows.length > 0;
}

/** What a finished analysis stores: the result members of a revision (schemas/types/analysis.ts AnalysisRevision). */
export type AnalysisOutcomeRow = Pick<AnalysisRevision, 'status' | 'summary' | 'outcome' | 'sentiment' | 'fields' | 'notes' | 'error' | 'model'>;

/**
 * Stores the finished analysis of a `running` row, then `inTransaction` (the event) in the same transaction.
 * @returns the stored analysis, or undefined when the row was not running (finished by another run)
 */
export async function completeAnalysis(
  db: Db,
  orgId: string,
  conversationId: string,
  row: AnalysisOutcomeRow,
  inTransaction: (trx: Knex.Transaction, stored: ConversationAnalysis) => Promise<void>,
  plan: readonly AnalysisField[] = [],
): Promise<ConversationAnalysis | undefined> {
  return db.transaction(async (trx) => {
    const [r] = await trx('conversation_analyses')
      .where({ org_id: orgId, conversation_id: conversationId, status: 'running' })
      .update({ ...row, fields: JSON.stringify(row.fields), notes: JSON.stringify(row.notes), completed_at: trx.fn.now() })
      .returning('*');
    if (!r) return undefined;
    // The first analysis is revision 1 of the conversation's history (re-runs append: appendRevision).
    await insertRevision(trx, orgId, conversationId, { id: newId('anr'), trigger: 'end', plan }, row);
    const stored = toAnalysis(r);
    await inTransaction(trx, stored);
    return stored;
  });
}

/** The user and agent lines of a runtime conversation, in order (tool exchanges left out). */
export async function analysisTranscript(db: Db, orgId: string, conversationId: string): Promise<AnalysisLine[]> {
  const rows = await db('conversation_messages')
    .where({ org_id: orgId, conversation_id: conversationId })
    .whereIn('role', ['user', 'assistant'])
    .whereNotNull('content')
    .orderBy('seq')
    .select('role', 'content');
  return rows.map((m: any) => ({ speaker: m.role === 'user' ? 'user' : 'agent', text: m.content }));
}

/** Who asked for a revision: the end of the conversation, a re-run of one conversation, or a bulk run. */
export type RevisionTrigger = 'end' | 'rerun' | 'run';

const toRevision = rowMapper<AnalysisRevision>({
  id: 'value',
  conversationId: 'value',
  revision: 'value',
  trigger: 'value',
  runId: 'nullable',
  status: 'value',
  summary: 'nullable',
  outcome: 'nullable',
  sentiment: 'nullable',
  fields: 'object',
  notes: 'list',
  plan: 'list',
  error: 'nullable',
  model: 'nullable',
  createdAt: 'iso',
});

/**
 * Inserts the next revision of a conversation's analysis, numbered under a per-conversation lock.
 * @returns the row, or undefined when the bulk run `rev.runId` stored one for this conversation already
 */
async function insertRevision(
  trx: Knex.Transaction,
  orgId: string,
  conversationId: string,
  rev: { id: string; trigger: RevisionTrigger; runId?: string | null; plan: readonly AnalysisField[] },
  row: AnalysisOutcomeRow,
): Promise<any | undefined> {
  await trx.raw('SELECT pg_advisory_xact_lock(hashtext(?))', [`analysis-revision:${conversationId}`]);
  if (rev.runId && (await trx('conversation_analysis_revisions').where({ org_id: orgId, run_id: rev.runId, conversation_id: conversationId }).first('id'))) return undefined;
  const { max } = (await trx('conversation_analysis_revisions').where({ org_id: orgId, conversation_id: conversationId }).max({ max: 'revision' }).first()) as { max: number | null };
  const [r] = await trx('conversation_analysis_revisions')
    .insert({
      id: rev.id,
      org_id: orgId,
      conversation_id: conversationId,
      revision: (max ?? 0) + 1,
      trigger: rev.trigger,
      run_id: rev.runId ?? null,
      status: row.status,
      summary: row.summary,
      outcome: row.outcome,
      sentiment: row.sentiment,
      fields: JSON.stringify(row.fields),
      notes: JSON.stringify(row.notes),
      plan: JSON.stringify(rev.plan),
      error: row.error,
      model: row.model,
    })
    .returning('*');
  return r;
}

/**
 * Appends a revision of a conversation's analysis and makes it the latest (the `conversation_analyses` row Observe
 * shows), numbering it after the last one under a per-conversation lock; then `inTransaction` (event, usage).
 * @param rev.id the revision's id (`anr_…`), chosen by the caller so its usage entry can name it beforehand
 * @returns the stored revision, or undefined when the bulk run `rev.runId` already stored one for this conversation
 */
export async function appendRevision(
  db: Db,
  orgId: string,
  conversationId: string,
  rev: { id: string; trigger: RevisionTrigger; runId?: string | null; plan: readonly AnalysisField[] },
  row: AnalysisOutcomeRow,
  inTransaction: (trx: Knex.Transaction, stored: AnalysisRevision) => Promise<void>,
): Promise<AnalysisRevision | undefined> {
  return db.transaction(async (trx) => {
    const r = await insertRevision(trx, orgId, conversationId, rev, row);
    if (!r) return undefined;
    const latest = { ...row, fields: JSON.stringify(row.fields), notes: JSON.stringify(row.notes), completed_at: r.created_at };
    await trx('conversation_analyses')
      .insert({ org_id: orgId, conversation_id: conversationId, ...latest })
      .onConflict('conversation_id')
      .merge(latest);
    const stored = toRevision(r);
    await inTransaction(trx, stored);
    return stored;
  });
}

/** The revisions of a conversation's analysis, newest first. @throws InvalidCursorError */
export async function listRevisions(db: Db, orgId: string, conversationId: string, page: { limit: number; cursor?: string }): Promise<Page<AnalysisRevision>> {
  return keysetPage(db('conversation_analysis_revisions').where({ org_id: orgId, conversation_id: conversationId }), {
    ...page,
    column: 'revision',
    key: 'int',
    direction: 'desc',
    map: toRevision,
  });
}
