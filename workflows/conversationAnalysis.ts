/**
 * Post-conversation analysis (docs/api-notes.md "Conversation analysis"; id `conversation-analysis/{conversationId}`, started
 * when a conversation ends). One step: the activity analyses the conversation once (services/conversations/
 * analysis.ts); a retried attempt takes over the row an attempt that died left `running`.
 */
import { proxyActivities } from '@temporalio/workflow';
import type { AnalysisActivities, AnalysisRef } from '../activities/analysis';
import { RETRY } from './retryPolicies';

const { analyzeConversationOnce } = proxyActivities<AnalysisActivities>({
  startToCloseTimeout: '2 minutes',
  retry: RETRY.standard,
});

/** Analyses one ended conversation. @returns the analysis status (`completed`, `failed`), or null when it is not analysed */
export async function conversationAnalysis(ref: AnalysisRef): Promise<string | null> {
  return analyzeConversationOnce(ref);
}
