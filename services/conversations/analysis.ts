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
import { analysisTranscript, claimAnalysis, completeAnalysis, getAnalysis, type AnalysisOutcomeRow } from '../../db/repositories/conversationAnalyses';
import { analysisMessages, parseAnalysis, type AnalysisRequest } from '../../domain/conversations/analysis';
import type { LlmProvider, LlmUsage } from '../../domain/conversations/llm';
import { recordUsage } from '../billing/usage';
import { emitEvents } from '../../events/emit';
import type { ConversationAnalysis } from '../../schemas/types/observe';
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
  let row: AnalysisOutcomeRow;
  // What the model answered with, when it answered: its tokens are charged even when its answer is unusable.
  let spent: { usage: LlmUsage; model: string } | undefined;
  try {
    const agent = await pinnedAgent(db, c);
    const fields = agent.analysis?.fields ?? [];
    const req: AnalysisRequest = { transcript: await analysisTranscript(db, orgId, conversationId), fields, endReason: c.endReason };
    const res = await deps.llm.complete({ messages: analysisMessages(req), hints: { analysis: req }, temperature: 0, responseFormat: 'json_object' });
    spent = { usage: res.usage, model: res.model };
    const parsed = parseAnalysis(res.content, fields);
    row = { status: 'completed', ...parsed, error: null, model: res.model };
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    row = { status: 'failed', summary: null, outcome: null, sentiment: null, fields: {}, notes: [], error: message.slice(0, ERROR_MAX_CHARS), model: null };
  }
  const stored = await completeAnalysis(db, orgId, conversationId, row, async (trx, a) => {
    // The analysis's LLM tokens as usage (docs/api-notes.md "Billing"), once per conversation, with the analysis.
    const tokens = spent && tokenCharge(spent.usage, spent.model, `conversation:${conversationId}:analysis:tokens`, { conversationId, agentId: c.agentId, purpose: 'analysis' });
    if (tokens) await recordUsage(trx, orgId, tokens);
    await emitEvents(trx, orgId, [
      {
        type: 'conversation.analyzed',
        data: {
          conversationId,
          agentId: c.agentId,
          channel: c.channel,
          status: a.status as 'completed' | 'failed',
          summary: a.summary,
          outcome: a.outcome,
          sentiment: a.sentiment,
          fields: a.fields,
          notes: a.notes,
          error: a.error,
          analyzedAt: a.analyzedAt!,
        },
      },
    ]);
  });
  return stored ?? getAnalysis(db, orgId, conversationId);
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
