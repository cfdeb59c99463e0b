/**
 * Activities of workflow `agent-eval/{runId}` (docs/evals.md): one scenario run each (a whole simulated conversation,
 * judged), and the run's completion with `eval.completed`. Each is safe to retry: a scenario run's result is stored
 * once (a retry after it returns it) and a retried attempt runs a conversation of its own.
 */
import { ApplicationFailure, Context } from '@temporalio/activity';
import type { ActivityDeps } from './index';
import { createLlm } from '../providers/llm';
import { createSkillHttpClient, type SkillHttpClient } from '../providers/http/request';
import type { LlmProvider } from '../domain/conversations/llm';
import { getRun } from '../db/repositories/evals';
import { EvalScenarioError, finishEvalRun, recordScenarioFailure, runEvalScenario } from '../services/evals/run';

/** Reference to one run. */
export interface EvalRunRef {
  orgId: string;
  runId: string;
}

/** One scenario run of a run: scenario index (0-based) and repeat (1-based). */
export interface EvalScenarioRef extends EvalRunRef {
  scenario: number;
  repeat: number;
}

/** Builds the evaluation activities; `providers` replace the configured LLM and skill HTTP client (tests). */
export function createEvalActivities(deps: ActivityDeps, providers: { llm?: LlmProvider; http?: SkillHttpClient } = {}) {
  const { db } = deps;
  let llm = providers.llm;
  let http = providers.http;
  const conv = () => ({ db, llm: (llm ??= createLlm()), http: (http ??= createSkillHttpClient()) });
  const load = async (ref: EvalRunRef) => {
    const run = await getRun(db, ref.orgId, ref.runId);
    if (!run) throw ApplicationFailure.nonRetryable(`evaluation run ${ref.runId} not found`, 'eval_run_not_found');
    return run;
  };
  const attempt = () => {
    try {
      return Context.current().info.attempt;
    } catch {
      return 1; // called outside an activity (the benchmark)
    }
  };

  return {
    /** Runs one scenario once and stores its verdicts. @returns whether it passed */
    async runEvalScenario(ref: EvalScenarioRef): Promise<{ passed: boolean }> {
      const run = await load(ref);
      try {
        const r = await runEvalScenario(conv(), ref.orgId, run, ref.scenario, ref.repeat, attempt());
        return { passed: r.passed };
      } catch (err) {
        if (err instanceof EvalScenarioError) {
          await recordScenarioFailure(db, ref.orgId, run.id, ref.scenario, ref.repeat, `${err.code}: ${err.message}`);
          return { passed: false };
        }
        const e = err as { name?: string; kind?: string; message?: string };
        if (e?.name === 'LlmProviderError' && (e.kind === 'bad_request' || e.kind === 'auth')) {
          await recordScenarioFailure(db, ref.orgId, run.id, ref.scenario, ref.repeat, `llm_${e.kind}: ${e.message ?? 'LLM error'}`);
          return { passed: false };
        }
        throw err;
      }
    },

    /** Stores a scenario run whose activity gave up as failed, with the reason. */
    async failEvalScenario(ref: EvalScenarioRef & { error: string }): Promise<void> {
      await recordScenarioFailure(db, ref.orgId, ref.runId, ref.scenario, ref.repeat, ref.error);
    },

    /** Completes the run (pass rate, flaky scenarios, `eval.completed`); with `error`, fails it. */
    async completeEvalRun(ref: EvalRunRef & { error?: string }): Promise<{ status: 'completed' | 'failed'; passRate: number | null; passed: number | null; total: number; flaky: string[] }> {
      return finishEvalRun(db, ref.orgId, await load(ref), ref.error);
    },
  };
}

/** The evaluation activities' types (for proxyActivities). */
export type EvalActivities = ReturnType<typeof createEvalActivities>;
