/**
 * Post-conversation analyses (docs/api-notes.md "Conversation analysis"): at most one row per conversation. `claimAnalysis`
 * inserts the `running` row and only its winner analyses; `completeAnalysis` stores the result (or the failure)
 * and its `conversation.analyzed` event in one transaction.
 */
import type { Knex } from 'knex';
import type { Db } from '../index';
import { iso } from '../timestamps';
import type { ConversationAnalysis } from '../../schemas/types/observe';
import type { AnalysisLine } from '../../domain/conversations/analysis';

/** Knex handle or transaction. */
type Conn = Db | Knex.Transaction;

function toAnalysis(r: any): ConversationAnalysis {
  return {
    status: r.status,
    outcome: r.outcome ?? null,
    sentiment: r.sentiment ?? null,
    summary: r.summary ?? null,
    fields: r.fields ?? {},
    notes: r.notes ?? [],
    error: r.error ?? null,
    model: r.model ?? null,
    analyzedAt: iso(r.completed_at) ?? null,
  };
}

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

/** What a finished analysis stores. */
export interface AnalysisOutcomeRow {
  status: 'completed' | 'failed';
  summary: string | null;
  outcome: string | null;
  sentiment: string | null;
  fields: Record<string, string | number | boolean>;
  notes: string[];
  error: string | null;
  model: string | null;
}

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
): Promise<ConversationAnalysis | undefined> {
  return db.transaction(async (trx) => {
    const [r] = await trx('conversation_analyses')
      .where({ org_id: orgId, conversation_id: conversationId, status: 'running' })
      .update({ ...row, fields: JSON.stringify(row.fields), notes: JSON.stringify(row.notes), completed_at: trx.fn.now() })
      .returning('*');
    if (!r) return undefined;
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
