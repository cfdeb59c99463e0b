/**
 * What the model is told (README "Conversations"): the system prompt built from the pinned version's
 * persona, instructions, variables, guardrails and retrieved knowledge, and the agent's skills offered as
 * tools (OpenAI "function calling": one JSON Schema object of string inputs per skill). Pure functions.
 */
import type { CompiledAgent } from '../agents/compile';
import { skillInputs, skillType } from '../agents/skillTypes';
import type { LlmTool } from './llm';
import { renderTemplate } from './playbook';

/** One retrieved knowledge chunk as the runtime uses it. */
export interface KnowledgeHit {
  chunkId: string;
  content: string;
  /** ts_rank normalized to 0..1 (db/repositories/knowledge.ts `searchChunks`). */
  score: number;
  source: { id: string; title: string | null; name: string | null; url: string | null };
}

/** A readable name for a chunk's source: its title, file name or URL. */
export function sourceLabel(hit: KnowledgeHit): string {
  return hit.source.title ?? hit.source.name ?? hit.source.url ?? hit.source.id;
}

/** The variables of a conversation: declared defaults, overridden by what the session supplied. */
export function conversationVariables(agent: CompiledAgent, supplied: Readonly<Record<string, string>> = {}): Record<string, string> {
  const vars: Record<string, string> = {};
  for (const v of agent.variables) if (v.defaultValue !== undefined && v.defaultValue !== null) vars[v.name] = v.defaultValue;
  for (const [k, v] of Object.entries(supplied)) vars[k] = v;
  return vars;
}

/**
 * The system prompt: who the agent is, what it must do, what it knows about this conversation, what it
 * must not do, and the knowledge retrieved for this turn with its sources.
 */
export function systemPrompt(agent: CompiledAgent, vars: Readonly<Record<string, string>>, knowledge: readonly KnowledgeHit[]): string {
  const parts: string[] = [`You are ${agent.name}, a conversational agent.`];
  if (agent.persona) parts.push(`Persona:\n${renderTemplate(agent.persona, vars)}`);
  if (agent.instructions) parts.push(`Instructions:\n${renderTemplate(agent.instructions, vars)}`);
  parts.push(`Reply in the language ${agent.language}.`);
  const known = Object.entries(vars);
  if (known.length) parts.push(`Known about this conversation:\n${known.map(([k, v]) => `- ${k}: ${v}`).join('\n')}`);
  const g = agent.guardrails;
  const rules: string[] = [];
  if (g.blockedTopics.length) rules.push(`Decline to discuss: ${g.blockedTopics.join(', ')}.`);
  if (g.forbiddenPhrases.length) rules.push(`Never say: ${g.forbiddenPhrases.map((p) => JSON.stringify(p)).join(', ')}.`);
  if (rules.length) parts.push(`Rules:\n${rules.join('\n')}`);
  if (knowledge.length) {
    parts.push(
      `Answer from this knowledge when it helps, and name the source you used:\n${knowledge
        .map((k, i) => `[${i + 1}] (source: ${sourceLabel(k)})\n${k.content}`)
        .join('\n\n')}`,
    );
  }
  return parts.join('\n\n');
}

/** The agent's skills as tools: one string property per skill input, required ones listed. */
export function skillTools(agent: CompiledAgent): LlmTool[] {
  return agent.skills
    .filter((s) => skillType(s.type))
    .map((s) => {
      const inputs = skillInputs(s.type, s.config as Record<string, any>);
      return {
        name: s.name,
        description: s.description ?? skillType(s.type)!.description,
        parameters: {
          type: 'object',
          properties: Object.fromEntries(inputs.map((i) => [i.name, { type: 'string' }])),
          required: inputs.filter((i) => i.required).map((i) => i.name),
        },
      };
    });
}
