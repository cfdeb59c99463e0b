/**
 * Re-embedding of an organization's knowledge, one workflow per organization: id `knowledge-reembed/{orgId}`
 * (temporal.config.ts workflowIds.knowledgeReembed), started when the organization's vectors are not of the
 * configured embeddings model (services/knowledge/reembed.ts; docs/knowledge.md "Changing the embeddings model").
 *
 * Reads like the process: note the target model → embed the chunks still without its vector, batch by batch →
 * switch retrieval to the new vectors at once. Until the switch, the old vectors keep serving. Progress is answered
 * by the `progress` query.
 */
import { proxyActivities, setHandler } from '@temporalio/workflow';
import type { KnowledgeReembedActivities, ReembedProgress } from '../activities/knowledgeReembed';
import { reembedProgressQuery } from './definitions';
import { RETRY } from './retryPolicies';

const { beginKnowledgeReembed, completeKnowledgeReembed } = proxyActivities<KnowledgeReembedActivities>({
  startToCloseTimeout: '1 minute',
  retry: RETRY.standard,
});

const { embedKnowledgeBatch } = proxyActivities<KnowledgeReembedActivities>({
  // One batch is a few embeddings requests of EMBEDDINGS_TIMEOUT_MS at most, and one insert.
  startToCloseTimeout: '3 minutes',
  retry: { ...RETRY.standard, nonRetryableErrorTypes: ['embeddings_model_changed', 'embeddings_refused'] },
});

/** Result of the workflow. */
export interface KnowledgeReembedResult {
  model: string | null;
  total: number;
  done: number;
}

/** Re-embeds one organization's chunks with the configured model (module docstring). */
export async function knowledgeReembedWorkflow(input: { orgId: string }): Promise<KnowledgeReembedResult> {
  let progress: ReembedProgress & { status: 'embedding' | 'complete' } = { model: null, total: 0, done: 0, status: 'embedding' };
  setHandler(reembedProgressQuery, () => progress);
  const begun = await beginKnowledgeReembed(input);
  progress = { ...begun, status: 'embedding' };
  if (!begun.model) return { model: null, total: 0, done: 0 };
  for (;;) {
    const batch = await embedKnowledgeBatch({ orgId: input.orgId, model: begun.model });
    progress = { model: begun.model, total: batch.total, done: batch.done, status: 'embedding' };
    if (!batch.remaining) break;
  }
  await completeKnowledgeReembed({ orgId: input.orgId, model: begun.model });
  progress = { ...progress, done: progress.total, status: 'complete' };
  return { model: begun.model, total: progress.total, done: progress.total };
}
