/**
 * Refresh of one URL knowledge source (docs/knowledge.md "Refresh and crawl"): started every `refresh.everyHours`
 * hours by the schedule `knowledge-refresh/{sourceId}` (its runs are `knowledge-refresh/{sourceId}-<time>`) and on
 * demand by `POST /agents/{agentId}/knowledge/sources/{id}/refresh` (`knowledge-refresh/{sourceId}/now`).
 *
 * Reads like the process: check the source for changes (conditional GET, or a crawl of its pages) → re-index what
 * changed, swapping each document's chunks at once → record the check on the source. An expected failure (an
 * unreachable site, an oversize or unsupported page) is recorded by the check itself; one the activity could not
 * get past in its attempts is recorded here. Either way the chunks already indexed keep serving.
 */
import { ActivityFailure, ApplicationFailure, proxyActivities } from '@temporalio/workflow';
import type { KnowledgeRefreshActivities, KnowledgeRefreshResult } from '../activities/knowledgeRefresh';
import type { KnowledgeSourceRef } from '../activities/knowledge';
import { RETRY } from './retryPolicies';

const { refreshKnowledgeSource } = proxyActivities<KnowledgeRefreshActivities>({
  // A crawl of up to 500 pages, each fetch capped at 60 s by the HTTP helper; it heartbeats after every page.
  startToCloseTimeout: '2 hours',
  heartbeatTimeout: '3 minutes',
  retry: { ...RETRY.fetch, nonRetryableErrorTypes: ['embeddings_refused'] },
});

const { failKnowledgeRefresh } = proxyActivities<KnowledgeRefreshActivities>({
  startToCloseTimeout: '30 seconds',
  retry: RETRY.standard,
});

/** Checks one source for changes and re-indexes what changed. Never throws for a failed check: it is recorded. */
export async function knowledgeRefreshWorkflow(input: KnowledgeSourceRef): Promise<KnowledgeRefreshResult> {
  try {
    return await refreshKnowledgeSource(input);
  } catch (err) {
    if (!(err instanceof ActivityFailure)) throw err;
    const cause = err.cause;
    const code = cause instanceof ApplicationFailure ? (cause.type ?? 'refresh_failed') : 'refresh_failed';
    const reason = cause instanceof Error ? cause.message : String(cause);
    await failKnowledgeRefresh({ ...input, code, reason });
    return { outcome: 'failed', status: null, statusCode: null, failureCode: code, failureReason: reason };
  }
}
