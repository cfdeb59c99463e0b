/**
 * What the model is told (docs/api-notes.md "Conversations"): the system prompt built from the pinned version's
 * persona, instructions, variables, guardrails and retrieved knowledge, the agent's skills offered as
 * tools (OpenAI "function calling": one JSON Schema object of string inputs per skill) and each playbook
 * offered as a tool without arguments that starts it (`start_playbook_<name>`). Pure functions.
 */
import type { CompiledAgent } from '../agents/compile';
import { skillInputs, skillType } from '../agents/skillTypes';
import type { LlmTool, SandboxHints } from './llm';
import { playbookLabel, playbookToolName, renderTemplate } from './playbook';
import type { ConversationChannel } from '../../schemas/types/chat';
import { topicRules } from './guardrails';

/** One retrieved knowledge chunk as the runtime uses it. */
export interface KnowledgeHit {
  chunkId: string;
  content: string;
  /** 0..1: `ts_rank` normalized, or the reciprocal-rank-fusion score of hybrid retrieval (services/knowledge/retrieval.ts). */
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

/** Time zone of the date and time the prompt carries when the agent names none: the organization's, UTC while organizations have none. */
export const DEFAULT_TIME_ZONE = 'UTC';

/** When and where a turn happens: what the prompt tells the model besides the agent's configuration. */
export interface PromptSituation {
  /** The turn's wall clock, ms since the epoch. */
  nowMs: number;
  channel: ConversationChannel;
}

/** How each channel is described to the model (docs/api-notes.md "Conversations"). */
const CHANNEL_LINES: Record<ConversationChannel, string> = {
  voice: 'This conversation is a phone call: your replies are spoken aloud, so keep them short, without lists or links.',
  sms: 'This conversation is by text message (SMS): keep replies short, in plain text.',
  chat: 'This conversation is a chat.',
  web: "This conversation is the chat on the organization's website.",
};

/** One formatter per time zone (built once: Intl formatters are costly to create). */
const momentFormats = new Map<string, Intl.DateTimeFormat>();

/**
 * The instant `nowMs` as the model is told it, in `timeZone` (IANA; an unknown zone is read as UTC):
 * `Tuesday, November 25, 2025, 14:05 in America/Chicago (UTC-06:00; ISO 8601 2025-11-25T14:05-06:00)`.
 */
export function describeMoment(nowMs: number, timeZone: string): string {
  // The text names the minute: turns of the same minute and zone share it (formatToParts is the costly part).
  const minute = Math.floor(nowMs / 60_000);
  const last = lastMoments.get(timeZone);
  if (last?.minute === minute) return last.text;
  const text = formatMoment(nowMs, timeZone);
  if (lastMoments.size >= 1000) lastMoments.clear();
  lastMoments.set(timeZone, { minute, text });
  return text;
}

/** The last minute described per time zone, and its text. */
const lastMoments = new Map<string, { minute: number; text: string }>();

/** {@link describeMoment} without its per-minute memo. */
function formatMoment(nowMs: number, timeZone: string): string {
  let fmt = momentFormats.get(timeZone);
  if (!fmt) {
    try {
      fmt = new Intl.DateTimeFormat('en-US', {
        timeZone,
        weekday: 'long', year: 'numeric', month: 'long', day: 'numeric', hour: '2-digit', minute: '2-digit', hourCycle: 'h23', timeZoneName: 'longOffset',
      });
    } catch {
      return timeZone === DEFAULT_TIME_ZONE ? new Date(nowMs).toISOString() : formatMoment(nowMs, DEFAULT_TIME_ZONE);
    }
    momentFormats.set(timeZone, fmt);
  }
  const parts = fmt.formatToParts(new Date(nowMs));
  const get = (type: Intl.DateTimeFormatPartTypes) => parts.find((p) => p.type === type)?.value ?? '';
  // `longOffset` is `GMT-06:00`, or `GMT` alone at a zero offset.
  const offset = get('timeZoneName').replace(/^GMT/, '') || '+00:00';
  const m = /^([+-])(\d{2}):(\d{2})$/.exec(offset);
  const offsetMs = m ? (m[1] === '-' ? -1 : 1) * (Number(m[2]) * 60 + Number(m[3])) * 60_000 : 0;
  const iso = `${new Date(nowMs + offsetMs).toISOString().slice(0, 16)}${offsetMs === 0 ? 'Z' : offset}`;
  return `${get('weekday')}, ${get('month')} ${get('day')}, ${get('year')}, ${get('hour')}:${get('minute')} in ${timeZone} (UTC${offset}; ISO 8601 ${iso})`;
}

/**
 * The system prompt: who the agent is, what it must do, when and where the conversation happens (the current date
 * and time in the agent's time zone, the channel), what it knows about this conversation, what it must not do, and
 * the knowledge retrieved for this turn with its sources.
 * @param situation the turn's clock and channel; absent: the prompt says neither
 */
export function systemPrompt(agent: CompiledAgent, vars: Readonly<Record<string, string>>, knowledge: readonly KnowledgeHit[], situation?: PromptSituation): string {
  const parts: string[] = [`You are ${agent.name}, a conversational agent.`];
  if (agent.persona) parts.push(`Persona:\n${renderTemplate(agent.persona, vars)}`);
  if (agent.instructions) parts.push(`Instructions:\n${renderTemplate(agent.instructions, vars)}`);
  parts.push(`Reply in the language ${agent.language}.`);
  if (situation) {
    parts.push(`It is now ${describeMoment(situation.nowMs, agent.timeZone ?? DEFAULT_TIME_ZONE)}.\n${CHANNEL_LINES[situation.channel] ?? `Channel: ${situation.channel}.`}`);
  }
  const known = Object.entries(vars);
  if (known.length) parts.push(`Known about this conversation:\n${known.map(([k, v]) => `- ${k}: ${v}`).join('\n')}`);
  const g = agent.guardrails;
  const rules: string[] = [];
  if (g.blockedTopics.length) rules.push(`Decline to discuss: ${topicRules(g).map((t) => (t.description ? `${t.topic} (${t.description})` : t.topic)).join(', ')}.`);
  if (g.forbiddenPhrases.length) rules.push(`Never say: ${g.forbiddenPhrases.map((p) => JSON.stringify(p)).join(', ')}.`);
  if (rules.length) parts.push(`Rules:\n${rules.join('\n')}`);
  if (knowledge.length) {
    parts.push(
      `Answer from this knowledge when it helps (the sources are recorded for you; do not cite them):\n${knowledge
        .map((k, i) => `[${i + 1}] From "${sourceLabel(k)}":\n${k.content}`)
        .join('\n\n')}`,
    );
  }
  if (agent.playbooks.length) {
    parts.push('When the person wants what one of the start_playbook tools is for, call that tool: it asks the person what it needs, step by step.');
  }
  parts.push(
    'Speak to the person in plain sentences. Never show them tool or skill names, error messages or codes, JSON, or placeholders; if something failed, say so simply and offer a member of the team.',
  );
  return parts.join('\n\n');
}

/** Longest tool description sent (characters). */
const TOOL_DESCRIPTION_MAX = 1024;

/**
 * The agent's playbooks as tools (docs/api-notes.md "Agents": playbooks): `start_playbook_<name>` without arguments, its
 * description saying what it is for, `whenToUse` and the trigger phrases. A name a skill already uses as a
 * tool is left out (the skill keeps it).
 */
export function playbookTools(agent: CompiledAgent): LlmTool[] {
  const taken = new Set(agent.skills.map((s) => s.name));
  const tools: LlmTool[] = [];
  for (const p of agent.playbooks) {
    const name = playbookToolName(p.name);
    if (taken.has(name)) continue;
    taken.add(name);
    const parts = [`Starts the "${playbookLabel(p.name)}" conversation, which asks the person what it needs and then acts on it.`];
    if (p.description) parts.push(p.description);
    if (p.whenToUse) parts.push(`Use when: ${p.whenToUse}`);
    if (p.triggerPhrases?.length) parts.push(`For example when the person says: ${p.triggerPhrases.map((x) => JSON.stringify(x)).join(', ')}.`);
    tools.push({ name, description: parts.join(' ').slice(0, TOOL_DESCRIPTION_MAX), parameters: { type: 'object', properties: {}, required: [] } });
  }
  return tools;
}

/** What the sandbox LLM needs to start playbooks as a model would (`SandboxHints.playbooks`). */
export function playbookHints(agent: CompiledAgent, tools: readonly LlmTool[]): NonNullable<SandboxHints['playbooks']> {
  const offered = new Set(tools.map((t) => t.name));
  for (const s of agent.skills) offered.delete(s.name);
  return agent.playbooks
    .filter((p) => offered.has(playbookToolName(p.name)))
    .map((p) => ({ tool: playbookToolName(p.name), name: p.name, triggerPhrases: p.triggerPhrases ?? [], whenToUse: p.whenToUse ?? null }));
}

/** The agent's skills as tools: one string property per skill input, required ones listed. */
export function skillTools(agent: CompiledAgent): LlmTool[] {
  return agent.skills
    // An `mcp` skill's tools are its server's (TurnPorts.remoteTools), not one tool of its own.
    .filter((s) => skillType(s.type) && !skillType(s.type)!.remoteTools)
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
