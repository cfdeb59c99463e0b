/**
 * The simulated caller of simulations and evaluations (docs/api-notes.md "Conversations": `POST /agents/{agentId}/simulate`;
 * docs/evals.md): the LLM provider plays the caller — persona and goal in the system prompt — seeing the agent's
 * replies as the other party.
 */
import type { LlmMessage, LlmProvider } from '../../domain/conversations/llm';

/** Who the simulated caller is and what it wants. */
export interface SimulatedCaller {
  persona: string;
  goal: string;
}

/**
 * The simulated caller's next message: the goal itself when the caller has not spoken yet, else the model's next
 * line (the goal again when the model answers nothing).
 * @param transcript the conversation so far (roles as stored: `user` is the caller)
 * @throws LlmProviderError from the provider
 */
export async function simulatedCallerMessage(llm: LlmProvider, caller: SimulatedCaller, transcript: readonly LlmMessage[]): Promise<string> {
  if (!transcript.some((m) => m.role === 'user')) return caller.goal;
  const swapped: LlmMessage[] = transcript
    .filter((m) => (m.role === 'user' || m.role === 'assistant') && m.content)
    .map((m) => ({ role: m.role === 'user' ? 'assistant' : 'user', content: m.content }));
  const res = await llm.complete({
    messages: [
      { role: 'system', content: `You are a caller talking to a company's agent. Who you are: ${caller.persona}\nWhat you want: ${caller.goal}\nReply with your next message only, in one or two sentences.` },
      ...swapped,
    ],
    maxTokens: 200,
  });
  return (res.content ?? '').trim() || caller.goal;
}
