/**
 * Evaluation suites as plain functions (docs/evals.md): the checks of a suite the schema cannot express, the
 * verdict on each expectation of a scenario run, the judge prompt of an LLM-judged rubric and the reading of its
 * answer, and a run's summary (pass rate, flaky scenarios). Pure functions.
 */
import type { ConversationMessage, TurnReceipt } from '../../schemas/types/chat';
import type { EvalExpectation, EvalExpectationResult, EvalScenario, EvalScenarioResult, EvalSuiteCreate, EvalRepeatResult } from '../../schemas/types/evals';
import type { FieldError } from '../errors';
import type { LlmMessage } from '../conversations/llm';

/** Caller turns of a simulated caller when `maxTurns` is not given. */
export const DEFAULT_EVAL_CALLER_TURNS = 6;
/** Scenario runs of one suite run at most (scenarios × repeats). */
export const MAX_EVAL_RUNS = 1000;

/** One caller turn as the evaluation saw it: the messages it stored and its receipt. */
export interface EvalTurnView {
  /** 1-based caller turn. */
  index: number;
  messages: readonly ConversationMessage[];
  receipt: TurnReceipt;
}

/** What a scenario run produced, for judging. */
export interface EvalConversationView {
  turns: readonly EvalTurnView[];
  /** The end reason, or `active` when the conversation had not ended. */
  endReason: string;
}

/** Caller turns a scenario runs at most. */
export function scenarioTurns(s: EvalScenario): number {
  return s.turns ? s.turns.length : (s.caller?.maxTurns ?? DEFAULT_EVAL_CALLER_TURNS);
}

/** Runs of a scenario (its own `repeat`, else the suite's). */
export function scenarioRepeats(s: EvalScenario, suiteRepeat: number): number {
  return s.repeat ?? suiteRepeat;
}

function regexError(pattern: string, flags?: string): string | null {
  try {
    new RegExp(pattern, flags);
    return null;
  } catch (err) {
    return (err as Error).message;
  }
}

function expectationErrors(list: readonly EvalExpectation[] | undefined, at: string): FieldError[] {
  const out: FieldError[] = [];
  (list ?? []).forEach((e, i) => {
    if (e.type === 'regex') {
      const err = regexError(e.pattern, e.flags);
      if (err) out.push({ field: `${at}[${i}].pattern`, message: `is not a regular expression: ${err}` });
    }
    if (e.type === 'skillCalled') {
      for (const [name, pattern] of Object.entries(e.args ?? {})) {
        const err = regexError(pattern);
        if (err) out.push({ field: `${at}[${i}].args.${name}`, message: `is not a regular expression: ${err}` });
      }
    }
  });
  return out;
}

/**
 * What the schema cannot check of a suite's scenarios: exactly one of `turns` or `caller`, unique names, regular
 * expressions that compile, whitespace-only turns, and at most {@link MAX_EVAL_RUNS} scenario runs.
 * @param suiteRepeat the suite's repeat count
 * @returns one entry per offending field (`scenarios[i].…`)
 */
export function suiteErrors(scenarios: readonly EvalScenario[], suiteRepeat: number): FieldError[] {
  const out: FieldError[] = [];
  const seen = new Set<string>();
  let runs = 0;
  scenarios.forEach((s, i) => {
    const at = `scenarios[${i}]`;
    if (!s.turns === !s.caller) out.push({ field: `${at}.${s.turns ? 'caller' : 'turns'}`, message: 'send exactly one of turns (scripted caller turns) or caller (a simulated caller)' });
    if (seen.has(s.name)) out.push({ field: `${at}.name`, message: `"${s.name}" names another scenario of the suite` });
    seen.add(s.name);
    s.turns?.forEach((t, j) => {
      if (!t.say.trim()) out.push({ field: `${at}.turns[${j}].say`, message: 'must not be blank' });
      out.push(...expectationErrors(t.expect, `${at}.turns[${j}].expect`));
    });
    out.push(...expectationErrors(s.expect, `${at}.expect`));
    runs += scenarioRepeats(s, suiteRepeat);
  });
  if (runs > MAX_EVAL_RUNS) out.push({ field: 'scenarios', message: `the suite would run ${runs} scenario runs; at most ${MAX_EVAL_RUNS} (scenarios × repeat)` });
  return out;
}

/** Checks a whole create body (scenarios and repeat). */
export function suiteCreateErrors(body: EvalSuiteCreate): FieldError[] {
  return suiteErrors(body.scenarios, body.repeat ?? 1);
}

const excerpt = (s: string) => (s.length > 200 ? `${s.slice(0, 197)}…` : s);

function repliesOf(turns: readonly EvalTurnView[]): { turn: number; content: string }[] {
  return turns.flatMap((t) => t.messages.filter((m) => m.role === 'assistant' && m.content && !m.toolCalls).map((m) => ({ turn: t.index, content: m.content! })));
}

/**
 * Judges one expectation that needs no model (every type but `rubric`).
 * @param turn the scripted turn it belongs to (null: the whole conversation); `view.turns` then holds only that turn
 */
export function judgeExpectation(e: Exclude<EvalExpectation, { type: 'rubric' }>, view: EvalConversationView, turn: number | null): EvalExpectationResult {
  const verdict = (passed: boolean, evidence: string): EvalExpectationResult => ({ expectation: e, turn, passed, evidence });
  const replies = repliesOf(view.turns);
  const where = turn === null ? `${replies.length} replies` : `the reply of turn ${turn}`;
  switch (e.type) {
    case 'contains':
    case 'notContains': {
      const hit = replies.find((r) => r.content.toLowerCase().includes(e.text.toLowerCase()));
      if (e.type === 'contains') return hit ? verdict(true, `turn ${hit.turn} reply: "${excerpt(hit.content)}"`) : verdict(false, `none of ${where} contains "${e.text}"`);
      return hit ? verdict(false, `turn ${hit.turn} reply contains it: "${excerpt(hit.content)}"`) : verdict(true, `none of ${where} contains "${e.text}"`);
    }
    case 'regex': {
      const re = new RegExp(e.pattern, e.flags);
      const hit = replies.find((r) => re.test(r.content));
      return hit ? verdict(true, `turn ${hit.turn} reply matches: "${excerpt(hit.content)}"`) : verdict(false, `none of ${where} matches /${e.pattern}/${e.flags ?? ''}`);
    }
    case 'skillCalled': {
      const calls = view.turns.flatMap((t) => t.receipt.toolCalls.filter((c) => c.skill === e.skill).map((c) => ({ turn: t.index, call: c })));
      const mismatch = (inputs: Record<string, unknown>) =>
        Object.entries(e.args ?? {}).find(([name, pattern]) => inputs[name] === undefined || !new RegExp(pattern).test(String(inputs[name])));
      const ok = calls.find((c) => !c.call.error && !mismatch(c.call.inputs as Record<string, unknown>));
      if (ok) return verdict(true, `turn ${ok.turn} called ${e.skill} with ${JSON.stringify(ok.call.inputs)}`);
      if (!calls.length) return verdict(false, `${e.skill} was never called in ${view.turns.length} turn(s)`);
      const first = calls[0];
      if (first.call.error) return verdict(false, `turn ${first.turn} called ${e.skill} but it failed: ${first.call.error}`);
      const [name, pattern] = mismatch(first.call.inputs as Record<string, unknown>)!;
      return verdict(false, `turn ${first.turn} called ${e.skill} with ${name}=${JSON.stringify((first.call.inputs as Record<string, unknown>)[name] ?? null)}, not matching /${pattern}/`);
    }
    case 'playbookReached': {
      const hit = view.turns.find((t) => t.receipt.playbook && (!e.playbook || t.receipt.playbook.name === e.playbook) && t.receipt.playbook.nodes.includes(e.node));
      return hit ? verdict(true, `turn ${hit.index} reached ${hit.receipt.playbook!.name}.${e.node}`) : verdict(false, `no turn reached ${e.playbook ? `${e.playbook}.` : ''}${e.node}`);
    }
    case 'endedBy':
      return view.endReason === e.reason ? verdict(true, `the conversation ended: ${view.endReason}`) : verdict(false, `the conversation ${view.endReason === 'active' ? 'did not end' : `ended: ${view.endReason}`}, not ${e.reason}`);
  }
}

/** The JSON Schema the judge of a rubric answers with (OpenAI "Structured Outputs"). */
export const RUBRIC_VERDICT_SCHEMA = {
  type: 'object',
  properties: { passed: { type: 'boolean' }, reason: { type: 'string' } },
  required: ['passed', 'reason'],
  additionalProperties: false,
} as const;

/**
 * The judge's request of an LLM-judged rubric: the rubric and the transcript (caller and agent lines only).
 * @param transcript the turns judged (one turn's, or the whole conversation's, greeting included)
 */
export function rubricMessages(rubric: string, transcript: readonly ConversationMessage[]): LlmMessage[] {
  const lines = transcript
    .filter((m) => (m.role === 'user' || m.role === 'assistant') && m.content && !m.toolCalls)
    .map((m) => `${m.role === 'user' ? 'Caller' : 'Agent'}: ${m.content}`)
    .join('\n');
  return [
    {
      role: 'system',
      content:
        'You grade a conversation between a caller and a company\'s agent against a rubric. Answer with one JSON object ' +
        '{"passed": true|false, "reason": "<one sentence>"}: passed is true only when the agent\'s replies meet the rubric.',
    },
    { role: 'user', content: `Rubric: ${rubric}\n\nConversation:\n${lines}` },
  ];
}

/**
 * Reads the judge's answer: `{passed: boolean, reason: string}` (fenced code allowed). An answer that is not one is
 * a failed verdict saying so, never a pass.
 */
export function rubricVerdict(e: Extract<EvalExpectation, { type: 'rubric' }>, turn: number | null, answer: string | null): EvalExpectationResult {
  const text = (answer ?? '').trim().replace(/^```(?:json)?\s*|\s*```$/g, '');
  try {
    const v = JSON.parse(text) as { passed?: unknown; reason?: unknown };
    if (typeof v?.passed === 'boolean') return { expectation: e, turn, passed: v.passed, evidence: typeof v.reason === 'string' && v.reason ? excerpt(v.reason) : v.passed ? 'the judge passed it' : 'the judge failed it' };
  } catch {
    // not JSON: below
  }
  return { expectation: e, turn, passed: false, evidence: `the judge's answer was not a verdict {passed, reason}: "${excerpt(text)}"` };
}

/**
 * A run's figures from its scenario runs: per scenario the pass rate and whether it is flaky (passed in some
 * repeats and failed in others), and overall the pass rate (passed runs / all runs).
 * @param names the scenarios' names, in suite order; `repeats[i]` the runs of scenario i
 */
export function summarizeRun(names: readonly string[], repeats: readonly (readonly EvalRepeatResult[])[]): { scenarios: EvalScenarioResult[]; passed: number; total: number; passRate: number; flaky: string[] } {
  const scenarios = names.map((name, i): EvalScenarioResult => {
    const runs = [...(repeats[i] ?? [])].sort((a, b) => a.repeat - b.repeat);
    const passed = runs.filter((r) => r.passed).length;
    return { name, runs: runs.length, passed, passRate: runs.length ? passed / runs.length : 0, flaky: passed > 0 && passed < runs.length, repeats: runs };
  });
  const passed = scenarios.reduce((n, s) => n + s.passed, 0);
  const total = scenarios.reduce((n, s) => n + s.runs, 0);
  return { scenarios, passed, total, passRate: total ? passed / total : 0, flaky: scenarios.filter((s) => s.flaky).map((s) => s.name) };
}
