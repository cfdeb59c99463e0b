/**
 * Knowledge ingestion, one workflow per source: id `knowledge-source/{sourceId}` (temporal.config.ts
 * workflowIds.knowledgeSource), started by `POST /agents/{agentId}/knowledge/sources`.
 *
 * Reads like the process: mark the source processing (a text source's text is stored then) → fetch and extract
 * the text of a URL or file → chunk and index
 * it (the source becomes ready with its chunk count) — or, when a step fails for good, mark it failed
 * with the reason. Transient failures are retried by the activity retry policy; the activities throw
 * non-retryable failures for what a retry cannot fix (4xx, SSRF refusals, a host name that does not
 * resolve, unsupported content); timeouts are retried, at most RETRY.fetch's 6 attempts.
 */
import { ActivityFailure, ApplicationFailure, proxyActivities, setHandler } from '@temporalio/workflow';
import type { KnowledgeActivities, KnowledgeSourceRef } from '../activities/knowledge';
import type { KnowledgeRefreshActivities } from '../activities/knowledgeRefresh';
import { RETRY } from './retryPolicies';
import { ingestionStageQuery, type IngestionStage } from './definitions';


/** Result of the workflow. */
export interface KnowledgeIngestionResult {
  status: 'ready' | 'failed';
  chunkCount: number;
  failureCode?: string;
  failureReason?: string;
}

const { startKnowledgeIngestion } = proxyActivities<KnowledgeActivities>({
  startToCloseTimeout: '30 seconds',
  // The API commits the source right after starting the workflow: a few quick retries cover that gap.
  retry: RETRY.commitRace,
});

const { extractKnowledgeSource, indexKnowledgeSource } = proxyActivities<KnowledgeActivities>({
  // The HTTP helper caps a fetch at 60 s; PDF extraction of a 25 MB file takes a few seconds more.
  startToCloseTimeout: '3 minutes',
  retry: {
    ...RETRY.fetch,
    nonRetryableErrorTypes: ['ssrf_refused', 'dns_unresolvable', 'unsupported_content', 'file_expired', 'bad_url', 'too_large', 'empty_content'],
  },
});

// A crawling URL source (docs/knowledge.md "Refresh and crawl") is fetched page by page, as its refreshes are.
const { refreshKnowledgeSource: crawlKnowledgeSource } = proxyActivities<KnowledgeRefreshActivities>({
  startToCloseTimeout: '2 hours',
  heartbeatTimeout: '3 minutes',
  retry: RETRY.fetch,
});

const { failKnowledgeSource } = proxyActivities<KnowledgeActivities>({
  startToCloseTimeout: '30 seconds',
  retry: RETRY.standard,
});

/** Failure code and reason of an activity failure (the ApplicationFailure `type` is our code). */
function describeFailure(err: unknown): { code: string; reason: string } {
  const cause = err instanceof ActivityFailure ? err.cause : err;
  if (cause instanceof ApplicationFailure) return { code: cause.type ?? 'ingestion_failed', reason: cause.message };
  if (cause instanceof Error) return { code: 'ingestion_failed', reason: cause.message };
  return { code: 'ingestion_failed', reason: String(cause) };
}

/** Ingests one knowledge source. Never throws for a failed source: the failure is recorded on it. */
export async function knowledgeIngestionWorkflow(input: KnowledgeSourceRef): Promise<KnowledgeIngestionResult> {
  let stage: IngestionStage = 'starting';
  setHandler(ingestionStageQuery, () => stage);
  try {
    const started = await startKnowledgeIngestion(input);
    if (started.status === 'ready' || started.status === 'failed') {
      stage = started.status;
      return { status: started.status, chunkCount: 0 };
    }
    stage = 'extracting';
    if (started.crawl) {
      const crawled = await crawlKnowledgeSource({ ...input, ingestion: true });
      stage = crawled.status === 'ready' ? 'ready' : 'failed';
      if (crawled.status === 'ready') return { status: 'ready', chunkCount: crawled.chunkCount ?? 0 };
      return { status: 'failed', chunkCount: 0, failureCode: crawled.failureCode ?? undefined, failureReason: crawled.failureReason ?? undefined };
    }
    // A text source comes back extracted, and mostly indexed, from the start. Histories from before `indexed` schedule the
    // index activity, as they did: the branch follows the recorded result, so replay stays deterministic.
    if (started.indexed) {
      stage = 'ready';
      return { status: 'ready', chunkCount: started.chunkCount ?? 0 };
    }
    // A text source comes back extracted from the start. Histories from before that field schedule the extraction,
    // as they did: the branch follows the recorded result, so replay stays deterministic.
    if (!started.extracted) await extractKnowledgeSource(input);
    stage = 'indexing';
    const { chunkCount } = await indexKnowledgeSource(input);
    stage = 'ready';
    return { status: 'ready', chunkCount };
  } catch (err) {
    if (!(err instanceof ActivityFailure)) throw err;
    const { code, reason } = describeFailure(err);
    stage = 'failed';
    await failKnowledgeSource({ ...input, code, reason });
    return { status: 'failed', chunkCount: 0, failureCode: code, failureReason: reason };
  }
}
