/** Knowledge ingestion run inline in a test, step by step as its workflow runs it. */
import { ApplicationFailure } from '@temporalio/common';
import type { KnowledgeActivities, KnowledgeSourceRef } from '../../activities/knowledge';

/** What {@link ingestInline} ended with: `ready`, or `failed` with the activity's failure (recorded on the source). */
export interface InlineIngestion {
  status: 'ready' | 'failed';
  error?: ApplicationFailure;
}

/**
 * Runs a source's ingestion without Temporal, following workflows/knowledgeIngestion.ts branch for branch: the start; a
 * source that had already finished ends there; a crawling URL source goes to `crawl`; a text source comes back
 * extracted and, unless its embeddings were slow, indexed; every other source is extracted, then indexed. A failure an
 * activity throws as an ApplicationFailure is recorded on the source with `failKnowledgeSource`, as the workflow does.
 * @param crawl the crawl step (activities/knowledgeRefresh.ts `refreshKnowledgeSource` with `ingestion: true`); a
 *   crawling source without it throws; the crawl records its own failure
 * @throws what an activity throws that is not an ApplicationFailure (a bug, not an outcome)
 */
export async function ingestInline(acts: KnowledgeActivities, ref: KnowledgeSourceRef, crawl?: (ref: KnowledgeSourceRef) => Promise<{ status: string | null }>): Promise<InlineIngestion> {
  try {
    const started = await acts.startKnowledgeIngestion(ref);
    if (started.status === 'ready' || started.status === 'failed') return { status: started.status };
    if (started.crawl) {
      if (!crawl) throw new Error(`knowledge source ${ref.sourceId} crawls: pass its crawl step`);
      return { status: (await crawl(ref)).status === 'ready' ? 'ready' : 'failed' };
    }
    if (started.indexed) return { status: 'ready' };
    if (!started.extracted) await acts.extractKnowledgeSource(ref);
    await acts.indexKnowledgeSource(ref);
    return { status: 'ready' };
  } catch (err) {
    if (!(err instanceof ApplicationFailure)) throw err;
    await acts.failKnowledgeSource({ ...ref, code: err.type ?? 'ingestion_failed', reason: err.message });
    return { status: 'failed', error: err };
  }
}
