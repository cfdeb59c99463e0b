/**
 * What the model is sent in a turn: the stored history it sees and the version's model settings as request fields
 * (docs/api-notes.md "Agents": model settings).
 */
import type { CompiledAgent } from '../../agents/compile';
import type { LlmMessage, LlmRequest } from '../llm';
import type { TurnOptions } from './contract';

/**
 * Messages the model sees from stored history: plain assistant lines before the first user message (the
 * greeting), then everything from that user message on, so a window cut mid tool exchange stays valid.
 */
export function modelHistory(history: readonly LlmMessage[]): LlmMessage[] {
  const plain = (m: LlmMessage) => m.role === 'assistant' && !m.toolCalls?.length;
  const first = history.findIndex((m) => m.role === 'user');
  if (first < 0) return history.filter(plain);
  return [...history.slice(0, first).filter(plain), ...history.slice(first)];
}

/**
 * The version's model settings as request fields (docs/api-notes.md "Agents": model settings): `model`,
 * `temperature`, `maxTokens` and `fallbackModel` when set; unset ones are left to the adapter (LLM_MODEL, the
 * model's own defaults, no fallback). `asked` (a caller's {@link TurnOptions}`.sampling`) overrides them, except that
 * its `maxTokens` is capped by the agent's.
 */
export function modelRequestSettings(agent: CompiledAgent, asked: TurnOptions['sampling'] = {}): Omit<LlmRequest, 'messages' | 'tools' | 'hints' | 'signal'> {
  const out: Omit<LlmRequest, 'messages' | 'tools' | 'hints' | 'signal'> = {};
  if (agent.model) out.model = agent.model;
  if (agent.temperature !== undefined) out.temperature = agent.temperature;
  if (agent.maxTokens !== undefined) out.maxTokens = agent.maxTokens;
  if (agent.fallbackModel) out.fallbackModel = agent.fallbackModel;
  for (const [k, v] of Object.entries(asked)) if (v !== undefined && k !== 'maxTokens') (out as Record<string, unknown>)[k] = v;
  if (asked.maxTokens !== undefined) out.maxTokens = out.maxTokens !== undefined ? Math.min(out.maxTokens, asked.maxTokens) : asked.maxTokens;
  return out;
}
