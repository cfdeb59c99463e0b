/**
 * Output guardrails (docs/api-notes.md "Conversations": guardrails): everything a turn says — the model's answer
 * while it streams, and every line the runtime says itself — goes through {@link speakable} and the output
 * guardrails, so no citation, placeholder, JSON, internal code or forbidden phrase reaches a person (they stay in
 * the receipt). Each decision is recorded in the receipt and streamed as a `guardrail` event.
 */
import type { CompiledAgent } from '../../agents/compile';
import { checkOutput, type GuardrailDecision } from '../guardrails';
import { SPEAKABLE_HOLDBACK, speakable } from '../speakable';
import type { TurnEvent } from './contract';
import type { Turn, TurnState } from './state';

/** The events sink of a turn nobody streams (domain/conversations/runtime.ts `runTurn` without `emit`). */
export const NO_LISTENER = (_e: TurnEvent): void => undefined;

/** Records a guardrail decision in the receipt and streams it (spec "Events": `guardrail`). */
export function decide(turn: Turn, state: TurnState, d: GuardrailDecision): void {
  state.receipt.guardrails.push(d);
  turn.emit({ type: 'guardrail', data: d });
}

/**
 * Says a line of the runtime's own (a refusal, a playbook step, the PIN request): streamed as deltas through the
 * output guardrails, their decisions recorded. @returns the line as said
 */
export function sayScripted(turn: Turn, state: TurnState, text: string): string {
  const out = new GuardedStream(turn.ctx.agent, turn.emit);
  out.push(text);
  const said = out.finish();
  for (const d of out.decisions) decide(turn, state, d);
  return said;
}

/**
 * Streams text through {@link speakable} and the output guardrails: what is emitted is always a prefix of the
 * final filtered text, holding back as many characters as the longest forbidden phrase (at least the longest
 * opening speakable decides on) so a phrase split across deltas is still caught.
 */
export class GuardedStream {
  private raw = '';
  private emitted = 0;
  private readonly holdback: number;
  readonly decisions: GuardrailDecision[] = [];

  constructor(
    private readonly agent: CompiledAgent,
    private readonly emit: (e: TurnEvent) => void,
    /** Structured output (JSON): not made speakable. */
    private readonly structured = false,
  ) {
    this.holdback = Math.max(12, SPEAKABLE_HOLDBACK + 2, ...agent.guardrails.forbiddenPhrases.map((p) => p.length + 1));
  }

  push(delta: string): void {
    this.raw += delta;
    // Nobody streams the deltas: the whole text is filtered once, by finish(), which says the same.
    if (this.emit === NO_LISTENER) return;
    const safe = checkOutput(this.shape(this.raw), this.agent.guardrails).text;
    const upTo = Math.max(this.emitted, safe.length - this.holdback);
    if (upTo > this.emitted) {
      this.emit({ type: 'message.delta', data: { content: safe.slice(this.emitted, upTo) } });
      this.emitted = upTo;
    }
  }

  private shape(text: string): string {
    return this.structured ? text : speakable(text);
  }

  /** Flushes the rest and returns the whole filtered text. */
  finish(): string {
    const { text, decisions } = checkOutput(this.shape(this.raw), this.agent.guardrails);
    if (text.length > this.emitted) this.emit({ type: 'message.delta', data: { content: text.slice(this.emitted) } });
    this.emitted = text.length;
    this.decisions.push(...decisions);
    return text;
  }
}

