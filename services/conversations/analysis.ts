/**
 * Post-conversation analysis (docs/api-notes.md "Conversation analysis"): once a conversation has ended, the LLM provider is
 * asked for a summary, an outcome, a sentiment and the agent's extraction fields (domain/conversations/analysis.ts),
 * and the checked result is stored with the conversation and sent as the `conversation.analyzed` event.
 *
 * - At most once per conversation: the `conversation_analyses` row is claimed first (its primary key is the
 *   conversation id); a second end, a second start or a duplicate workflow finds it and does nothing.
 * - Never fails the end: every error (LLM, unreadable answer, vanished version) is stored as a `failed` analysis
 *   with its reason, and `analyzeAfterEnd` swallows what is left.
 * - Where: an end by request (`POST /chat/sessions/{id}/end`) with a Temporal client starts the workflow
 *   `conversation-analysis/{conversationId}` on the worker; otherwise (no client, the start failed, an end inside a
 *   turn, a relay socket that closed, the call workflow closing a call) it runs inline in that process.
 * - Not analysed: simulations, `/chat/completions` exchanges (one stateless request each) and campaign dials that
 *   never reached the relay (mode `none`: no transcript).
 */
import { WorkflowExecutionAlreadyStartedError, type Client } from '@temporalio/client';
import type { Db } from '../../db';
import { getConversation, type ConversationRecord } from '../../db/repositories/conversations';
import { analysisTranscript, appendRevision, claimAnalysis, completeAnalysis, getAnalysis, type AnalysisOutcomeRow } from '../../db/repositories/conversationAnalyses';
import { getAgent } from '../../db/repositories/agents';
import { newId } from '../../db/ids';
import type { AnalysisField } from '../../schemas/types/agents';
import type { AnalysisRevision } from '../../schemas/types/analysis';
import { analysisMessages, parseAnalysis, type AnalysisRequest } from '../../domain/conversations/analysis';
import type { LlmProvider, LlmUsage } from '../../domain/conversations/llm';
import { recordUsage } from '../billing/usage';
import { emitEvents } from '../../events/emit';
import type { ConversationAnalysis } from '../../schemas/types/observe';
import type { ConversationAnalyzedEventData } from '../../schemas/types/events';
import { startWorkflow, workflowIds } from '../../temporal.config';
import { pinnedAgent, tokenCharge } from './service';

/** What the analysis needs; `temporal` moves it to the worker. */
export interface AnalysisDeps {
  db: Db;
  llm: LlmProvider;
  temporal?: { client: Client; taskQueue: string };
  /** Where a failure to start or run is reported (pino-like). */
  log?: { warn: (obj: object, msg: string) => void };
}

/** Longest stored error of a failed analysis, characters. */
const ERROR_MAX_CHARS = 500;

/** Whether an ended conversation is analysed at all (module docstring). */
export function isAnalysed(c: ConversationRecord): boolean {
  return c.status === 'ended' && !c.simulation && (c.mode === 'draft' || c.versionId !== null) && c.metadata?.api !== 'chat.completions';
}

/**
 * Analyses one ended conversation, once (module docstring).
 * @param opts.retake take over a `running` row left by an earlier attempt that died (the workflow's activity retry)
 * @returns the stored analysis (this run's or an earlier one's), or undefined when the conversation does not
 *   exist in the organization, has not ended, or is not analysed
 */
export async function analyzeConversation(
  deps: Pick<AnalysisDeps, 'db' | 'llm'>,
  orgId: string,
  conversationId: string,
  opts: { retake?: boolean } = {},
): Promise<ConversationAnalysis | undefined> {
  const { db } = deps;
  const c = await getConversation(db, orgId, conversationId);
  if (!c || !isAnalysed(c)) return undefined;
  if (!(await claimAnalysis(db, orgId, conversationId, opts.retake ?? false))) return getAnalysis(db, orgId, conversationId);
  let plan: AnalysisField[] = [];
  const { row, spent } = await runAnalysis(deps, c, async () => (plan = (await pinnedAgent(db, c)).analysis?.fields ?? []));
  const stored = await completeAnalysis(db, orgId, conversationId, row, (trx, a) =>
    chargeAndAnnounce(trx, c, spent, { key: `conversation:${conversationId}:analysis:tokens` }, {
      status: a.status as 'completed' | 'failed',
      summary: a.summary,
      outcome: a.outcome,
      sentiment: a.sentiment,
      fields: a.fields,
      notes: a.notes,
      error: a.error,
      analyzedAt: a.analyzedAt!,
      revision: 1,
      runId: null,
    }),
  plan);
  return stored ?? getAnalysis(db, orgId, conversationId);
}

/**
 * Asks the LLM for the analysis of an ended conversation with the extraction fields `plan` resolves to. Never
 * throws: every error (LLM, unreadable answer, vanished version) becomes a `failed` row with its reason.
 * @returns the row to store, and the model's usage when it answered (charged even when the answer is unusable)
 */
async function runAnalysis(
  deps: Pick<AnalysisDeps, 'db' | 'llm'>,
  c: ConversationRecord,
  plan: () => Promise<readonly AnalysisField[]>,
): Promise<{ row: AnalysisOutcomeRow; spent?: { usage: LlmUsage; model: string } }> {
  let spent: { usage: LlmUsage; model: string } | undefined;
  try {
    const fields = await plan();
    const req: AnalysisRequest = { transcript: await analysisTranscript(deps.db, c.orgId, c.id), fields: [...fields], endReason: c.endReason };
    const res = await deps.llm.complete({ messages: analysisMessages(req), hints: { analysis: req }, temperature: 0, responseFormat: 'json_object' });
    spent = { usage: res.usage, model: res.model };
    const parsed = parseAnalysis(res.content, fields);
    return { row: { status: 'completed', ...parsed, error: null, model: res.model }, spent };
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    return { row: { status: 'failed', summary: null, outcome: null, sentiment: null, fields: {}, notes: [], error: message.slice(0, ERROR_MAX_CHARS), model: null }, spent };
  }
}

/**
 * In the transaction that stores an analysis or a revision of it: charges the model's tokens as usage
 * (docs/api-notes.md "Billing"; once per `charge.key`, the revision number in the entry's metadata when given) and
 * emits `conversation.analyzed` (schemas/types/events.ts ConversationAnalyzedEventData) with what was stored.
 */
async function chargeAndAnnounce(
  trx: Parameters<typeof emitEvents>[0],
  c: ConversationRecord,
  spent: { usage: LlmUsage; model: string } | undefined,
  charge: { key: string; revision?: number },
  analysis: Omit<ConversationAnalyzedEventData, 'conversationId' | 'agentId' | 'channel'>,
): Promise<void> {
  const meta = { conversationId: c.id, agentId: c.agentId, purpose: 'analysis', ...(charge.revision !== undefined ? { revision: charge.revision } : {}) };
  const tokens = spent && tokenCharge(spent.usage, spent.model, charge.key, meta);
  if (tokens) await recordUsage(trx, c.orgId, tokens);
  await emitEvents(trx, c.orgId, [{ type: 'conversation.analyzed', data: { conversationId: c.id, agentId: c.agentId, channel: c.channel, ...analysis } }]);
}

/** What a re-run of one conversation's analysis found. */
export type ReanalysisOutcome =
  | { kind: 'not_found' }
  | { kind: 'not_ended' }
  | { kind: 'not_analysed' }
  /** A bulk run that had analysed this conversation already (a retried batch). */
  | { kind: 'already_done' }
  | { kind: 'analysed'; revision: AnalysisRevision };

/**
 * Analyses an ended conversation again and stores the result as a new revision, which becomes the analysis the
 * conversation shows (docs/api-notes.md "Conversation analysis"); the earlier revisions are kept. The extraction fields are
 * `opts.fields` when given, else the agent's current plan (its draft's `analysis.fields`), else — for a deleted
 * agent — the plan of the version the conversation ran on. Its tokens are usage, charged once per revision; the
 * `conversation.analyzed` event carries the revision number. A failed LLM call is stored as a `failed` revision.
 * @param opts.runId the bulk run asking (one revision per run and conversation)
 */
export async function reanalyzeConversation(
  deps: Pick<AnalysisDeps, 'db' | 'llm'>,
  orgId: string,
  conversationId: string,
  opts: { fields?: readonly AnalysisField[]; runId?: string } = {},
): Promise<ReanalysisOutcome> {
  const { db } = deps;
  const c = await getConversation(db, orgId, conversationId);
  if (!c) return { kind: 'not_found' };
  if (c.status !== 'ended') return { kind: 'not_ended' };
  if (!isAnalysed(c)) return { kind: 'not_analysed' };
  let plan: readonly AnalysisField[] = [];
  const { row, spent } = await runAnalysis(deps, c, async () => {
    plan = opts.fields ?? (await getAgent(db, orgId, c.agentId))?.analysis?.fields ?? (await pinnedAgent(db, c)).analysis?.fields ?? [];
    return plan;
  });
  const id = newId('anr');
  const trigger = opts.runId ? 'run' : 'rerun';
  const revision = await appendRevision(db, orgId, conversationId, { id, trigger, runId: opts.runId ?? null, plan }, row, (trx, r) =>
    chargeAndAnnounce(trx, c, spent, { key: `conversation:${conversationId}:analysis:${id}:tokens`, revision: r.revision }, {
      status: r.status,
      summary: r.summary,
      outcome: r.outcome,
      sentiment: r.sentiment as 'positive' | 'neutral' | 'negative' | null,
      fields: r.fields,
      notes: r.notes,
      error: r.error,
      analyzedAt: r.createdAt,
      revision: r.revision,
      runId: r.runId,
    }),
  );
  return revision ? { kind: 'analysed', revision } : { kind: 'already_done' };
}

/**
 * Called after a conversation's end was stored: starts `conversation-analysis/{id}` when a Temporal client is
 * given (a started or finished one with this id is left alone), otherwise — or when the start fails — analyses
 * inline. Never throws.
 */
export async function analyzeAfterEnd(deps: AnalysisDeps, c: ConversationRecord): Promise<void> {
  if (!isAnalysed(c)) return;
  try {
    if (deps.temporal) {
      try {
        await startWorkflow(deps.temporal, 'conversationAnalysis', {
          workflowId: workflowIds.conversationAnalysis(c.id),
          args: [{ orgId: c.orgId, conversationId: c.id }],
          orgId: c.orgId,
          resourceId: c.id,
        });
        return;
      } catch (err) {
        if (err instanceof WorkflowExecutionAlreadyStartedError) return;
        deps.log?.warn({ err, conversationId: c.id }, 'conversation analysis: workflow not started; analysing inline');
      }
    }
    await analyzeConversation(deps, c.orgId, c.id);
  } catch (err) {
    deps.log?.warn({ err, conversationId: c.id }, 'conversation analysis failed');
  }
}
