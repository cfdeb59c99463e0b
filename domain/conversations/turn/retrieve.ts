/**
 * A free turn begins (no guardrail, playbook or PIN step ended it): the thanks for a matching PIN is said first,
 * the request the model answers is settled, and knowledge is retrieved for it (docs/knowledge.md "Retrieval").
 */
import type { LlmMessage } from '../llm';
import type { KnowledgeHit } from '../prompt';
import { sourceLabel } from '../prompt';
import { sayScripted } from './guardOutput';
import { round, type Turn, type TurnState } from './state';

/** Knowledge chunks retrieved per turn. */
export const KNOWLEDGE_RESULTS = 3;
/** Chunks below this normalized score are not offered to the model. */
export const MIN_KNOWLEDGE_SCORE = 0.01;

/** The state of a free turn after retrieval. */
export interface Retrieved extends TurnState {
  /**
   * What the model answers: the person's message as stored; for a skill that waited for the PIN, the message that
   * asked for it (the last user message before this turn); null with no message (the client's tool outputs).
   */
  request: string | null;
  /** The `lead` as said (with a trailing space), '' when none: the reply starts with it. */
  leadSaid: string;
  /** The knowledge offered to the model, best first (at least MIN_KNOWLEDGE_SCORE). */
  hits: KnowledgeHit[];
}

/**
 * Says the lead, then retrieves up to KNOWLEDGE_RESULTS chunks of the agent's knowledge for the request (the
 * person's two earlier messages weigh in), recorded in the receipt's `knowledge` and `retrieval` latency. An agent
 * without knowledge, or a turn without a request, retrieves nothing.
 */
export async function retrieve(turn: Turn, state: TurnState): Promise<Retrieved> {
  const { ctx, ports, userText } = turn;
  const request = state.resume?.startsWith('skill:') ? (lastUserContent(ctx.history) ?? state.stored) : userText !== null ? state.stored : null;
  const leadSaid = state.lead ? sayScripted(turn, state, `${state.lead} `) : '';
  const tr = ports.now();
  const searched = ctx.agent.knowledge.length > 0 && request !== null;
  const hits = searched ? (await ports.searchKnowledge(request, KNOWLEDGE_RESULTS, earlierUserTurns(ctx.history))).filter((h) => h.score >= MIN_KNOWLEDGE_SCORE) : [];
  if (searched) {
    const ms = round(ports.now() - tr);
    state.receipt.knowledge.push({
      query: request.slice(0, 500),
      results: hits.map((h) => ({ chunkId: h.chunkId, score: h.score, sourceId: h.source.id, source: sourceLabel(h) })),
      durationMs: ms,
    });
    state.receipt.latency.push({ stage: 'retrieval', ms });
  }
  return { ...state, request, leadSaid, hits };
}

/** The person's last messages before this turn, oldest first (what retrieval reads besides the current one). */
export function earlierUserTurns(history: readonly LlmMessage[]): string[] {
  const out: string[] = [];
  for (let i = history.length - 1; i >= 0 && out.length < 2; i--) if (history[i].role === 'user' && history[i].content) out.unshift(history[i].content!);
  return out;
}

/** The content of the last user message of `history`, if any. */
export function lastUserContent(history: readonly LlmMessage[]): string | undefined {
  for (let i = history.length - 1; i >= 0; i--) if (history[i].role === 'user' && history[i].content) return history[i].content!;
  return undefined;
}
