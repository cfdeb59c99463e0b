/**
 * Evaluation suites, their runs and the publish gate (docs/evals.md): `/agents/{id}/eval-suites`,
 * `/eval-suites/{id}/runs`, `POST /agents/{id}/publish` with `gate`.
 */
import type { ConversationMessage } from './chat';

/**
 * One expectation of an evaluation scenario. On a scripted turn (`turns[i].expect`) it is judged on that turn only;
 * on the scenario (`expect`) on the whole conversation.
 * - `contains` / `notContains`: an agent reply contains the text (case-insensitive);
 * - `regex`: an agent reply matches the JavaScript regular expression (`flags` e.g. `i`);
 * - `skillCalled`: a call of the skill that did not fail, each of `args` matching the call's argument of that name
 *   (a JavaScript regular expression, unanchored);
 * - `playbookReached`: a turn visited the node (of the named playbook, when given);
 * - `endedBy`: the conversation ended for this reason (e.g. `end_call`, `transferred`, `escalated`; `active`: it did not end);
 * - `rubric`: the LLM provider judges the replies against the rubric, pass or fail with a reason.
 */
export type EvalExpectation =
  | { type: 'contains'; /** @minLength 1 @maxLength 500 */ text: string }
  | { type: 'notContains'; /** @minLength 1 @maxLength 500 */ text: string }
  | { type: 'regex'; /** @minLength 1 @maxLength 500 */ pattern: string; /** @pattern ^[imsu]{0,4}$ */ flags?: string }
  | {
      type: 'skillCalled';
      /** @pattern ^[a-z][a-z0-9_]{0,63}$ */ skill: string;
      /** Argument name → regular expression its value must match. @maxProperties 20 */
      args?: { [name: string]: string };
    }
  | { type: 'playbookReached'; /** @maxLength 64 */ playbook?: string; /** @minLength 1 @maxLength 64 */ node: string }
  | { type: 'endedBy'; /** @minLength 1 @maxLength 64 */ reason: string }
  | { type: 'rubric'; /** @minLength 1 @maxLength 2000 */ rubric: string };

/** One scripted caller turn and what its reply must meet. */
export interface EvalTurn {
  /** The caller's message. @minLength 1 @maxLength 10000 */
  say: string;
  /** Judged on this turn only. @maxItems 20 */
  expect?: EvalExpectation[];
}

/**
 * One scenario: scripted `turns` or a simulated `caller` (exactly one), expectations, and skill stubs — the canned
 * output each named skill answers with instead of running (an evaluation never calls a real endpoint).
 */
export interface EvalScenario {
  /** Unique in the suite. @minLength 1 @maxLength 200 */
  name: string;
  /** @minItems 1 @maxItems 50 */
  turns?: EvalTurn[];
  /** A simulated caller played by the LLM provider instead of a script. */
  caller?: {
    /** @minLength 1 @maxLength 2000 */
    persona: string;
    /** Also the caller's first message. @minLength 1 @maxLength 2000 */
    goal: string;
    /** Caller turns at most (default 6). @minimum 1 @maximum 20 */
    maxTurns?: number;
  };
  /** Judged on the whole conversation. @maxItems 50 */
  expect?: EvalExpectation[];
  /** Skill name → the output it answers with. @maxProperties 50 */
  skillStubs?: { [skill: string]: unknown };
  /** Conversation variables. @maxProperties 50 */
  variables?: { [name: string]: string };
  /** Runs of this scenario (default: the suite's `repeat`). @minimum 1 @maximum 20 */
  repeat?: number;
}

/**
 * Request body of `POST /agents/{id}/eval-suites`.
 * @additionalProperties false
 */
export interface EvalSuiteCreate {
  /** Unique per agent. @minLength 1 @maxLength 200 */
  name: string;
  /** @maxLength 2000 */
  description?: string | null;
  /** @minItems 1 @maxItems 200 */
  scenarios: EvalScenario[];
  /** Runs of each scenario (default 1). @minimum 1 @maximum 20 */
  repeat?: number;
  /** Scenario runs at once (default 4). @minimum 1 @maximum 16 */
  concurrency?: number;
}

/**
 * Request body of `PATCH /agents/{id}/eval-suites/{suiteId}`: the fields given replace the stored ones.
 * @additionalProperties false
 */
export interface EvalSuitePatch {
  /** @minLength 1 @maxLength 200 */
  name?: string;
  /** @maxLength 2000 */
  description?: string | null;
  /** @minItems 1 @maxItems 200 */
  scenarios?: EvalScenario[];
  /** @minimum 1 @maximum 20 */
  repeat?: number;
  /** @minimum 1 @maximum 16 */
  concurrency?: number;
}

/** An evaluation suite (`evs_…`). */
export interface EvalSuite {
  id: string;
  agentId: string;
  name: string;
  description: string | null;
  scenarios: EvalScenario[];
  repeat: number;
  concurrency: number;
  /** @format date-time */
  createdAt: string;
  /** @format date-time */
  updatedAt: string;
}

/** A page of suites. */
export interface EvalSuitePage {
  items: EvalSuite[];
  nextCursor: string | null;
  hasMore: boolean;
}

/**
 * Request body of `POST /eval-suites/{id}/runs`: the draft (compiled when each scenario starts) or a frozen version.
 * @additionalProperties false
 */
export interface EvalRunCreate {
  target: 'draft' | { /** `ver_…` of the suite's agent. @minLength 1 @maxLength 64 */ versionId: string };
}

/** The verdict on one expectation. */
export interface EvalExpectationResult {
  expectation: EvalExpectation;
  /** The scripted turn (1-based) it was judged on; null: the whole conversation. */
  turn: number | null;
  passed: boolean;
  /** What decided it (the matching reply or call, why none did, or the judge's reason). */
  evidence: string;
}

/** One run of one scenario. */
export interface EvalRepeatResult {
  /** 1-based. */
  repeat: number;
  passed: boolean;
  /** The evaluation's conversation (`cnv_…`, marked `simulation`). */
  conversationId: string | null;
  results: EvalExpectationResult[];
  /** Why the run could not complete (then `passed` is false). */
  error: string | null;
  /** Wall time of the run, ms. */
  wallMs: number;
  /** The conversation's messages (`GET /eval-suites/{id}/runs/{runId}` only). */
  transcript?: ConversationMessage[];
}

/** A scenario's results over its repeats. */
export interface EvalScenarioResult {
  name: string;
  runs: number;
  passed: number;
  /** passed / runs, 0..1. */
  passRate: number;
  /** Passed in some repeats and failed in others. */
  flaky: boolean;
  repeats: EvalRepeatResult[];
}

/** A run of a suite (`evr_…`), workflow `agent-eval/{runId}`. */
export interface EvalRun {
  id: string;
  suiteId: string;
  agentId: string;
  /** The draft (its version number when the run started) or a frozen version. */
  target: { kind: 'draft'; draftVersion: number } | { kind: 'version'; versionId: string };
  status: 'running' | 'completed' | 'failed';
  /** Scenario runs passed / all, 0..1 (null while running). */
  passRate: number | null;
  passed: number | null;
  /** Scenario runs in all (scenarios × repeats). */
  total: number;
  /** Names of the flaky scenarios. */
  flaky: string[];
  /** Run by a gated publish (`POST /agents/{id}/publish` with `gate`). */
  gate: boolean;
  error: string | null;
  /** Per scenario (on `GET …/runs/{runId}`; empty in lists). */
  scenarios: EvalScenarioResult[];
  /** @format date-time */
  createdAt: string;
  /** @format date-time */
  completedAt: string | null;
}

/** A page of runs, newest first. */
export interface EvalRunPage {
  items: EvalRun[];
  nextCursor: string | null;
  hasMore: boolean;
}

/** `eval.completed`: a run of an evaluation suite finished (or failed). */
export interface EvalCompletedEventData {
  runId: string;
  suiteId: string;
  agentId: string;
  /** `draft` or the version's id. */
  target: string;
  status: 'completed' | 'failed';
  passRate: number | null;
  passed: number | null;
  total: number;
  flaky: string[];
  /** Run by a gated publish. */
  gate: boolean;
  /** @format date-time */
  completedAt: string;
}
