/** A compiled agent for runtime tests: every field at its default, `over` wins (domain/agents/compile.ts `CompiledAgent`). */
import { DEFAULT_GUARDRAILS, type CompiledAgent } from '../../domain/agents/compile';

export function compiledAgent(over: Partial<CompiledAgent> = {}): CompiledAgent {
  return {
    schemaVersion: 1,
    name: 'Test',
    description: null,
    persona: null,
    instructions: null,
    greeting: null,
    language: 'en-US',
    voice: null,
    dtmf: { enabled: false, interDigitTimeoutMs: 3000, terminator: '#', maxDigits: 16 },
    variables: [],
    skills: [],
    playbooks: [],
    guardrails: { ...DEFAULT_GUARDRAILS },
    callerVerification: { enabled: false, method: null, requiredForSkills: [], maxAttempts: 3 },
    knowledge: [],
    ...over,
  };
}
