/**
 * The activity of `conversation-analysis/{conversationId}` (docs/api-notes.md "Conversation analysis"). Idempotent: the
 * analysis row is claimed once per conversation, and a retry takes over a row its dead attempt left `running`.
 * And those of `analysis-run/{runId}` (a bulk re-run): start, one batch of conversations at a time, finish.
 */
import type { Db } from '../db';
import type { LlmProvider } from '../domain/conversations/llm';
import { analyzeConversation, reanalyzeConversation } from '../services/conversations/analysis';
import { advanceAnalysisRun, finishAnalysisRun, getAnalysisRun, nextRunConversations, startAnalysisRun } from '../db/repositories/analysisRuns';
import { emitEvent } from '../events/emit';
import { createLlm } from '../providers/llm';

/** Conversations one batch of a bulk run analyses (one activity attempt; about one LLM call each). */
export const RUN_BATCH = 10;

/** The bulk run (`analysis-run/{runId}`). */
export interface AnalysisRunRef {
  orgId: string;
  runId: string;
}

/** The conversation to analyse. */
export interface AnalysisRef {
  orgId: string;
  conversationId: string;
}

/** The analysis activities; the LLM is the configured one (LLM_PROVIDER) unless given. */
export function createAnalysisActivities(deps: { db: Db }, providers: { llm?: LlmProvider } = {}) {
  let llm = providers.llm;
  return {
    /** Analyses the conversation once. @returns `completed` or `failed`, or null when it is not analysed */
    async analyzeConversationOnce(ref: AnalysisRef): Promise<string | null> {
      const a = await analyzeConversation({ db: deps.db, llm: (llm ??= createLlm()) }, ref.orgId, ref.conversationId, { retake: true });
      return a?.status ?? null;
    },

    /** Marks a bulk run `running`. @returns its total, or null when the run does not exist */
    async startAnalysisRun(ref: AnalysisRunRef): Promise<{ total: number } | null> {
      const run = await startAnalysisRun(deps.db, ref.orgId, ref.runId);
      return run ? { total: run.total } : null;
    },

    /**
     * Re-analyses the run's next conversations (at most `RUN_BATCH`), each as a new revision, and moves its cursor
     * past them. Idempotent: a conversation the run analysed already is skipped, and the counts are recounted.
     * @returns whether the run has no conversation left, and its progress
     */
    async analyzeRunBatch(ref: AnalysisRunRef): Promise<{ done: boolean; completed: number; failed: number; total: number }> {
      const run = await getAnalysisRun(deps.db, ref.orgId, ref.runId);
      if (!run || run.status !== 'running') return { done: true, completed: run?.completed ?? 0, failed: run?.failed ?? 0, total: run?.total ?? 0 };
      const ids = await nextRunConversations(deps.db, ref.orgId, run, RUN_BATCH);
      if (!ids.length) return { done: true, completed: run.completed, failed: run.failed, total: run.total };
      for (const id of ids) {
        await reanalyzeConversation({ db: deps.db, llm: (llm ??= createLlm()) }, ref.orgId, id, { fields: run.fields ?? undefined, runId: run.id });
      }
      await advanceAnalysisRun(deps.db, ref.orgId, run.id, run.cursor, ids[ids.length - 1]);
      const now = (await getAnalysisRun(deps.db, ref.orgId, ref.runId))!;
      return { done: ids.length < RUN_BATCH, completed: now.completed, failed: now.failed, total: now.total };
    },

    /** Ends the run and emits `analysis.completed` once. @returns the final status */
    async finishAnalysisRun(ref: AnalysisRunRef & { status: 'completed' | 'failed'; error?: string | null }): Promise<string> {
      const ended = await finishAnalysisRun(deps.db, ref.orgId, ref.runId, { status: ref.status, error: ref.error }, (trx, run) =>
        emitEvent(trx, ref.orgId, 'analysis.completed', {
          runId: run.id,
          status: run.status as 'completed' | 'failed',
          total: run.total,
          completed: run.completed,
          failed: run.failed,
          filter: run.filter,
          completedAt: run.completedAt!,
        }),
      );
      return ended?.status ?? (await getAnalysisRun(deps.db, ref.orgId, ref.runId))?.status ?? 'failed';
    },
  };
}

/** The analysis activities' type (workflows proxy it). */
export type AnalysisActivities = ReturnType<typeof createAnalysisActivities>;
