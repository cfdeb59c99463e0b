/**
 * Post-conversation analysis (docs/api-notes.md "Conversation analysis"; id `conversation-analysis/{conversationId}`, started
 * when a conversation ends). The activity analyses the conversation once (services/conversations/
 * analysis.ts); a retried attempt takes over the row an attempt that died left `running`. Then the summary is
 * written back to a HubSpot connection's contact as a note, once.
 */
import { patched, proxyActivities } from '@temporalio/workflow';
import type { AnalysisActivities, AnalysisRef } from '../activities/analysis';
import type { IntegrationActivities } from '../activities/integrations';
import { RETRY } from './retryPolicies';

const { analyzeConversationOnce } = proxyActivities<AnalysisActivities>({
  startToCloseTimeout: '2 minutes',
  retry: RETRY.standard,
});

const { writeBackCrmNote } = proxyActivities<IntegrationActivities>({
  startToCloseTimeout: '1 minute',
  retry: RETRY.standard,
});

/**
 * Analyses one ended conversation, then writes its summary back to the CRM (a HubSpot connection on the real API:
 * docs/going-live.md "HubSpot"; a failed write-back leaves the analysis as it is).
 * @returns the analysis status (`completed`, `failed`), or null when it is not analysed
 */
export async function conversationAnalysis(ref: AnalysisRef): Promise<string | null> {
  const status = await analyzeConversationOnce(ref);
  // Histories recorded before the write-back existed replay without it (Temporal "patching").
  if (status === 'completed' && patched('crm-note-write-back')) {
    await writeBackCrmNote(ref).catch(() => undefined);
  }
  return status;
}
