/**
 * The activity of `conversation-analysis/{conversationId}` (docs/api-notes.md "Conversation analysis"). Idempotent: the
 * analysis row is claimed once per conversation, and a retry takes over a row its dead attempt left `running`.
 */
import type { Db } from '../db';
import type { LlmProvider } from '../domain/conversations/llm';
import { analyzeConversation } from '../services/conversations/analysis';
import { createLlm } from '../providers/llm';

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
  };
}

/** The analysis activities' type (workflows proxy it). */
export type AnalysisActivities = ReturnType<typeof createAnalysisActivities>;
