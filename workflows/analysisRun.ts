/**
 * A bulk analysis re-run (docs/api-notes.md "Conversation analysis"; id `analysis-run/{runId}`, started by
 * `POST /conversations/analysis-runs`): mark the run running → analyse its conversations a batch at a time (each a
 * new revision; the run's progress moves with each batch) → finish it with the `analysis.completed` event. A batch
 * that keeps failing ends the run `failed` (the revisions stored so far stay).
 */
import { ApplicationFailure, proxyActivities } from '@temporalio/workflow';
import type { AnalysisActivities, AnalysisRunRef } from '../activities/analysis';
import { RETRY } from './retryPolicies';

const { startAnalysisRun, analyzeRunBatch, finishAnalysisRun } = proxyActivities<AnalysisActivities>({
  startToCloseTimeout: '5 minutes',
  retry: RETRY.standard,
});

/** Most batches one run takes (a bound on the workflow's history; 10 conversations each). */
const MAX_BATCHES = 5000;

/** Runs one bulk re-run to its end. @returns the run's final status (`completed`, `failed`), or null when it does not exist */
export async function analysisRun(ref: AnalysisRunRef): Promise<string | null> {
  const started = await startAnalysisRun(ref);
  if (!started) return null;
  try {
    for (let i = 0; i < MAX_BATCHES; i++) {
      const batch = await analyzeRunBatch(ref);
      if (batch.done) return finishAnalysisRun({ ...ref, status: 'completed' });
    }
    return finishAnalysisRun({ ...ref, status: 'failed', error: `more than ${MAX_BATCHES} batches` });
  } catch (err) {
    const message = err instanceof ApplicationFailure || err instanceof Error ? err.message : String(err);
    return finishAnalysisRun({ ...ref, status: 'failed', error: message.slice(0, 500) });
  }
}
