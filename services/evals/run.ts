/**
 * Running evaluation suites (docs/evals.md): one scenario run is a simulated conversation (scripted turns or a
 * simulated caller) against the draft or a frozen version, on the scenario's skill stubs (never a real endpoint:
 * services/conversations/skills.ts), judged expectation by expectation — LLM-judged rubrics through the LLM
 * provider; a run's figures are summarized once every scenario run is stored, with `eval.completed`.
 * Shared by the `agent-eval/{runId}` activities, the API (skill checks) and the benchmark.
 */
import { performance } from 'node:perf_hooks';
import type { Db } from '../../db';
import { derivedId } from '../../db/ids';
import { loadDraftBundle } from '../../db/repositories/agents';
import { getVersion } from '../../db/repositories/agentVersions';
import type { ConversationRecord } from '../../db/repositories/conversations';
import { completeRun, getRepeatResult, runResults, saveRepeatResult, type EvalRunRecord } from '../../db/repositories/evals';
import { ApiError } from '../../domain/errors';
import type { LlmMessage } from '../../domain/conversations/llm';
import { missingStubErrors, type StubbableSkill } from '../../domain/conversations/skillStubs';
import {
  judgeExpectation,
  RUBRIC_VERDICT_SCHEMA,
  rubricMessages,
  rubricVerdict,
  scenarioTurns,
  summarizeRun,
  type EvalConversationView,
  type EvalTurnView,
} from '../../domain/evals/expectations';
import type { FieldError } from '../../domain/errors';
import type { ConversationMessage } from '../../schemas/types/chat';
import type { EvalExpectation, EvalExpectationResult, EvalRepeatResult, EvalRun, EvalScenario } from '../../schemas/types/evals';
import { emitEvent } from '../../events/emit';
import { finishConversation, sendMessage, startConversation, type ConversationDeps } from '../conversations/service';
import { simulatedCallerMessage } from '../conversations/simulatedCaller';

/**
 * The skills of a run's target: the draft's (as stored) or the version's (as frozen).
 * @returns undefined when the agent or the version does not exist
 */
export async function targetSkills(db: Db, orgId: string, agentId: string, target: EvalRun['target'] | { kind: 'draft' }): Promise<StubbableSkill[] | undefined> {
  if (target.kind === 'draft') return (await loadDraftBundle(db, orgId, agentId))?.skills.map((s) => ({ name: s.name, type: s.type, config: (s.config ?? {}) as Record<string, unknown> }));
  const v = await getVersion(db, orgId, agentId, target.versionId);
  return v ? ((v.snapshot as { skills?: StubbableSkill[] }).skills ?? []) : undefined;
}

/**
 * The skills a suite's scenarios would run for real: `scenarios[i].skillStubs.<name>` for each skill of the target
 * that reaches outside and has no stub in that scenario (domain/conversations/skillStubs.ts).
 */
export function suiteStubErrors(skills: readonly StubbableSkill[], scenarios: readonly EvalScenario[]): FieldError[] {
  return scenarios.flatMap((s, i) => missingStubErrors(skills, s.skillStubs, `scenarios[${i}].skillStubs`));
}

/** The conversation of one scenario run and activity attempt (deterministic, so a retried start finds it). */
export function evalConversationId(runId: string, scenario: number, repeat: number, attempt: number): string {
  return derivedId('cnv', `${runId}:${scenario}:${repeat}:${attempt}`);
}

/** A scenario run that could not run (the agent or version gone, the model refusing): not retried. */
export class EvalScenarioError extends Error {
  constructor(
    message: string,
    readonly code: string,
  ) {
    super(message);
    this.name = 'EvalScenarioError';
  }
}

async function judge(deps: ConversationDeps, e: EvalExpectation, view: EvalConversationView, turn: number | null, transcript: readonly ConversationMessage[]): Promise<EvalExpectationResult> {
  if (e.type !== 'rubric') return judgeExpectation(e, view, turn);
  const res = await deps.llm.complete({
    messages: rubricMessages(e.rubric, transcript),
    responseFormat: { type: 'json_schema', name: 'rubric_verdict', schema: RUBRIC_VERDICT_SCHEMA as unknown as Record<string, unknown>, strict: true },
    temperature: 0,
    maxTokens: 300,
  });
  return rubricVerdict(e, turn, res.content);
}

/**
 * Runs scenario `scenario` (0-based) of a run once (`repeat`, 1-based) and stores its result; a result stored
 * before is returned as it is. The conversation ends (`ended_by_api`) when the scenario is over.
 * @param attempt the activity attempt (a retry gets a fresh conversation)
 * @throws EvalScenarioError when it cannot run (stored by the caller as a failed run); LLM provider errors (retried)
 */
export async function runEvalScenario(deps: ConversationDeps, orgId: string, run: EvalRunRecord, scenario: number, repeat: number, attempt = 1): Promise<EvalRepeatResult> {
  const stored = await getRepeatResult(deps.db, orgId, run.id, scenario, repeat);
  if (stored) return stored;
  const s = run.suite.scenarios[scenario];
  if (!s) throw new EvalScenarioError(`the suite has no scenario ${scenario}`, 'scenario_not_found');
  const began = performance.now();
  const id = evalConversationId(run.id, scenario, repeat, attempt);
  let c: ConversationRecord & { recent?: ConversationMessage[] };
  let transcript: ConversationMessage[] = [];
  try {
    const started = await startConversation(deps.db, orgId, {
      id,
      agentId: run.agentId,
      channel: 'chat',
      draftMode: run.target.kind === 'draft',
      versionId: run.target.kind === 'version' ? run.target.versionId : undefined,
      variables: s.variables,
      metadata: { evalRunId: run.id, scenario: s.name, repeat },
      keyId: null,
      simulation: true,
      skillStubs: s.skillStubs ?? {},
    });
    c = started.conversation;
    transcript = started.greeting ? [started.greeting] : [];
  } catch (err) {
    if (err instanceof ApiError && err.status < 500) throw new EvalScenarioError(err.message, err.code);
    throw err;
  }
  const turns: EvalTurnView[] = [];
  const total = scenarioTurns(s);
  for (let i = 1; i <= total && c.status === 'active'; i++) {
    const text = s.turns
      ? s.turns[i - 1].say
      : await simulatedCallerMessage(deps.llm, s.caller!, transcript.map((m) => ({ role: m.role, content: m.content }) as LlmMessage));
    try {
      const out = await sendMessage(deps, c, text);
      turns.push({ index: i, messages: out.messages, receipt: out.receipt });
      transcript = [...transcript, ...out.messages];
      c = { ...out.conversation, recent: out.recent };
    } catch (err) {
      if (err instanceof ApiError && err.status < 500 && err.code !== 'conversation_busy') throw new EvalScenarioError(err.message, err.code);
      throw err;
    }
  }
  const endReason = c.status === 'active' ? 'active' : (c.endReason ?? 'ended');
  const results: EvalExpectationResult[] = [];
  for (const t of turns) {
    const expect = s.turns?.[t.index - 1]?.expect ?? [];
    for (const e of expect) results.push(await judge(deps, e, { turns: [t], endReason }, t.index, t.messages));
  }
  for (const e of s.expect ?? []) results.push(await judge(deps, e, { turns, endReason }, null, transcript));
  if (c.status === 'active') await finishConversation(deps.db, c, 'ended_by_api');
  const result: EvalRepeatResult = { repeat, passed: results.every((r) => r.passed), conversationId: id, results, error: null, wallMs: performance.now() - began };
  await saveRepeatResult(deps.db, orgId, run.id, scenario, result);
  return (await getRepeatResult(deps.db, orgId, run.id, scenario, repeat)) ?? result;
}

/** Stores a scenario run that could not run as failed, with the reason. */
export async function recordScenarioFailure(db: Db, orgId: string, runId: string, scenario: number, repeat: number, error: string): Promise<void> {
  await saveRepeatResult(db, orgId, runId, scenario, { repeat, passed: false, conversationId: null, results: [], error: error.slice(0, 2000), wallMs: 0 });
}

/**
 * Completes a run from its stored scenario runs (pass rate, flaky scenarios) and emits `eval.completed` in the same
 * transaction; with `error`, fails it instead. A run no longer running is left as it is.
 * @returns the figures of the run (as stored)
 */
export async function finishEvalRun(db: Db, orgId: string, run: EvalRunRecord, error?: string): Promise<{ status: 'completed' | 'failed'; passRate: number | null; passed: number | null; total: number; flaky: string[] }> {
  const summary = summarizeRun(run.suite.scenarios.map((s) => s.name), await runResults(db, orgId, run.id));
  const figures = error
    ? { status: 'failed' as const, passRate: null, passed: null, flaky: [], error }
    : { status: 'completed' as const, passRate: summary.passRate, passed: summary.passed, flaky: summary.flaky, error: null };
  const done = await completeRun(db, orgId, run.id, figures, (trx, r) =>
    emitEvent(trx, orgId, 'eval.completed', {
      runId: r.id,
      suiteId: r.suiteId,
      agentId: r.agentId,
      target: r.target.kind === 'draft' ? 'draft' : r.target.versionId,
      status: figures.status,
      passRate: figures.passRate,
      passed: figures.passed,
      total: r.total,
      flaky: figures.flaky,
      gate: r.gate,
      completedAt: r.completedAt ?? new Date().toISOString(),
    }),
  );
  const r = done ?? run;
  return { status: done ? figures.status : (r.status as 'completed' | 'failed'), passRate: r.passRate, passed: r.passed, total: r.total, flaky: r.flaky };
}
