/**
 * Evaluation run (docs/evals.md; id `agent-eval/{runId}`, started by `POST /eval-suites/{id}/runs` and by a gated
 * `POST /agents/{id}/publish`): every scenario × repeat runs as one activity, at most `concurrency` at once; a
 * scenario run whose activity gives up is stored as failed with its reason, so the others still count; then the run
 * is completed with its pass rate and flaky scenarios (`eval.completed`).
 */
import { ActivityFailure, ApplicationFailure, proxyActivities } from '@temporalio/workflow';
import type { EvalActivities, EvalRunRef } from '../activities/evals';
import { RETRY } from './retryPolicies';

// A scenario run's failures are mostly final (the model refusing, the agent gone): a few quick attempts, then stored as failed.
const acts = proxyActivities<EvalActivities>({ startToCloseTimeout: '5 minutes', retry: RETRY.compile });

/** Input of the evaluation workflow. */
export interface AgentEvalInput extends EvalRunRef {
  /** Runs of each scenario, in suite order. */
  repeats: number[];
  /** Scenario runs at once. */
  concurrency: number;
}

/** What a run came to (as stored). */
export interface AgentEvalResult {
  status: 'completed' | 'failed';
  passRate: number | null;
  passed: number | null;
  total: number;
  flaky: string[];
}

const reason = (err: unknown) => {
  const cause = err instanceof ActivityFailure && err.cause instanceof ApplicationFailure ? err.cause : undefined;
  return cause ? `${cause.type ?? 'failed'}: ${cause.message}` : String((err as Error)?.message ?? err);
};

/** Runs a suite to its figures. */
export async function agentEval(input: AgentEvalInput): Promise<AgentEvalResult> {
  const ref = { orgId: input.orgId, runId: input.runId };
  const queue = input.repeats.flatMap((n, scenario) => Array.from({ length: n }, (_, i) => ({ scenario, repeat: i + 1 })));
  const lane = async () => {
    for (let next = queue.shift(); next; next = queue.shift()) {
      const unit = { ...ref, ...next };
      try {
        await acts.runEvalScenario(unit);
      } catch (err) {
        await acts.failEvalScenario({ ...unit, error: reason(err) });
      }
    }
  };
  try {
    await Promise.all(Array.from({ length: Math.max(1, Math.min(input.concurrency, queue.length)) }, lane));
    return await acts.completeEvalRun(ref);
  } catch (err) {
    return await acts.completeEvalRun({ ...ref, error: reason(err) });
  }
}
