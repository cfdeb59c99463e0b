/**
 * What the sandbox carrier's callee says on an answered outbound call (docs/voice.md "The sandbox
 * caller"): it answers the agent's greeting, asks one question — about the agent's first knowledge source
 * when it has one, else a scripted line — and says goodbye, so the default path shows a real transcript.
 * Dial outcomes other than answered are chosen by the callee number's last four digits (the sandbox's
 * documented magic numbers: providers/telephony/sandbox.ts).
 */
import type { CompiledAgent } from '../../domain/agents/compile';

/** The callee's lines when the agent has no knowledge. */
export const SANDBOX_CALLEE_SCRIPT = ['Hello, who is this?', 'Can you tell me more about why you are calling?', 'Thanks for letting me know. Goodbye.'];

/** The callee's lines for a call answered by `agent` (its first knowledge source's title makes the question). */
export function sandboxCalleeScript(agent: Pick<CompiledAgent, 'knowledge'> | undefined): string[] {
  const source = agent?.knowledge?.find((k) => k.title?.trim());
  if (!source) return SANDBOX_CALLEE_SCRIPT;
  const topic = source.title.trim().replace(/[.?!:]+$/, '');
  return [SANDBOX_CALLEE_SCRIPT[0], `Quick question: what can you tell me about ${topic.charAt(0).toLowerCase()}${topic.slice(1)}?`, SANDBOX_CALLEE_SCRIPT[2]];
}
