/**
 * Playbooks as a state machine over turns (spec "What the service does": playbooks are multi-turn node
 * graphs that gather several inputs in order and then drive skills; docs/api-notes.md "Conversations"): a running
 * playbook sits on one node; `ask` waits for the user's next message and stores it in the node's variable,
 * `say` speaks and moves on, `skill` runs the skill with inputs from the variables, `branch` follows the
 * edge whose `when` equals the variable's value (or the default edge), `end` finishes, `escalate` says its
 * `prompt` (default "I'll connect you with a member of our team.") and hands the person to the team. Pure functions:
 * the runtime executes the steps they return. Published graphs are valid (domain/agents/playbookGraph.ts),
 * so a missing edge simply ends the playbook.
 *
 * Honest outcomes (docs/api-notes.md "Agents": playbooks): a skill that failed, timed out or was refused follows its
 * node's `onError` edge, or — without one — says {@link SKILL_ERROR_REPLY} and ends the playbook; a `say`
 * node with a placeholder no variable fills (or fills with blank text) is not said at all (a `skip` step), so neither a false
 * confirmation nor a raw `{{placeholder}}` reaches a person.
 */
import type { PlaybookGraph, PlaybookNode } from '../../schemas/types/playbooks';
import { mentions } from './guardrails';
import { SPOKEN_ESCALATION } from './escalation';

/** Where a conversation stands in a playbook (stored on the conversation between turns). */
export interface PlaybookState {
  playbook: string;
  /** The node the conversation waits on (an `ask` node), or null when finished. */
  node: string | null;
}

/** One step for the runtime to execute, in order; `skip` is a `say` node left unsaid (placeholders `missing`). */
export type PlaybookStep =
  | { type: 'say'; node: string; text: string }
  | { type: 'skip'; node: string; missing: string[] }
  | { type: 'ask'; node: string; text: string; gathers: string }
  | { type: 'skill'; node: string; skill: string; inputs: Record<string, string> }
  | { type: 'end'; node: string }
  /** Hands the person to a member of the team (the conversation ends `escalated`); `text` is said first. */
  | { type: 'escalate'; node: string; text: string };

/** Said when a playbook's skill fails and its node has no `onError` edge: an apology and an offer of a person. */
export const SKILL_ERROR_REPLY = "I'm sorry, I couldn't complete that just now. Would you like me to connect you with a member of our team?";

/** Longest tool name upstream (OpenAI "function calling": `^[a-zA-Z0-9_-]{1,64}$`). */
const TOOL_NAME_MAX = 64;

/**
 * The tool that starts a playbook: `start_playbook_<name>`, the name lower-cased with characters outside
 * `[a-z0-9_-]` made `_`, cut to 64 characters in all.
 */
export function playbookToolName(name: string): string {
  const slug = name.toLowerCase().replace(/[^a-z0-9_-]+/g, '_');
  return `start_playbook_${slug}`.slice(0, TOOL_NAME_MAX);
}

/** A playbook's name as words (`book_appointment` → `book appointment`). */
export function playbookLabel(name: string): string {
  return name.replace(/[_-]+/g, ' ').trim();
}

/**
 * Whether a message leaves the running playbook: it begins with "never mind", "nevermind", "cancel", "stop",
 * "forget it", "quit" or "exit" as whole words, ignoring case and punctuation (docs/api-notes.md "Agents": playbooks).
 */
export function leavesPlaybook(message: string): boolean {
  return /^\W*(never\s*mind|cancel|stop|forget\s+(it|that)|quit|exit)\b/i.test(message.trim());
}

/** What the agent says when a person leaves a playbook: that the playbook's request was not completed. */
export function playbookExitReply(name: string): string {
  return `No problem, I've stopped there: your ${playbookLabel(name)} request was not completed. Is there anything else I can help with?`;
}

/** The result of advancing: the steps to run now and the state to keep (null: no playbook runs). */
export interface PlaybookAdvance {
  steps: PlaybookStep[];
  state: PlaybookState | null;
  /** Variables set by this advance (an answered `ask`). */
  gathered: Record<string, string>;
}

/** Longest chain of nodes walked in one turn (guards against a cycle of say/branch nodes). */
export const MAX_STEPS_PER_TURN = 50;

/**
 * The playbook a user message starts before any model is asked (docs/api-notes.md "Agents": playbooks): the first
 * (in the given order) whose name, with `_` read as spaces, the message mentions as whole words ("please book
 * appointment" starts `book_appointment`); else the first with a trigger phrase the message contains as whole words,
 * ignoring case and punctuation ("Can you show my code?" starts the playbook whose phrase is "show my code").
 */
export function playbookFor(message: string, playbooks: readonly { name: string; graph: PlaybookGraph; triggerPhrases?: readonly string[] }[]): string | null {
  for (const p of playbooks) if (mentions(message, p.name.replace(/_/g, ' '))) return p.name;
  for (const p of playbooks) if (p.triggerPhrases?.some((phrase) => mentions(message, phrase))) return p.name;
  return null;
}

/** `{{name}}`: a variable name as declared, case kept (a skill output `bookingId` → `{{book_appointment_bookingId}}`). */
const PLACEHOLDER = /\{\{\s*([A-Za-z][A-Za-z0-9_]*)\s*\}\}/g;

/** `{{name}}` placeholders replaced by variables (unknown ones are left as written). */
export function renderTemplate(text: string, vars: Readonly<Record<string, string>>): string {
  return text.replace(PLACEHOLDER, (m, name: string) => (Object.hasOwn(vars, name) ? vars[name] : m));
}

/** Names of the `{{name}}` placeholders of `text` that no variable fills, or one fills with blank text, in order. */
export function missingPlaceholders(text: string, vars: Readonly<Record<string, string>>): string[] {
  return [...new Set([...text.matchAll(PLACEHOLDER)].map((m) => m[1]).filter((name) => !Object.hasOwn(vars, name) || !vars[name].trim()))];
}

/**
 * Text to say: placeholders filled, unfilled ones dropped with the space before punctuation they leave
 * ("Thanks {{name}}, when?" → "Thanks, when?"), so no `{{` reaches a person.
 */
export function renderSpoken(text: string, vars: Readonly<Record<string, string>>): string {
  return text
    .replace(PLACEHOLDER, (_m, name: string) => (Object.hasOwn(vars, name) ? vars[name] : ''))
    .replace(/[ \t]+([,.!?;:])/g, '$1')
    .replace(/[,;:]+([.!?])/g, '$1')
    .replace(/[ \t]{2,}/g, ' ')
    .trim();
}

function nextNode(graph: PlaybookGraph, from: PlaybookNode, vars: Readonly<Record<string, string>>, failed = false): string | null {
  const edges = graph.edges.filter((e) => e.from === from.id);
  if (from.type === 'skill') return (failed ? edges.find((e) => e.onError) : edges.find((e) => !e.onError))?.to ?? null;
  if (from.type === 'branch') {
    const value = (vars[from.on ?? ''] ?? '').trim().toLowerCase();
    const hit = edges.find((e) => e.when !== undefined && e.when.trim().toLowerCase() === value) ?? edges.find((e) => e.when === undefined);
    return hit?.to ?? null;
  }
  return edges[0]?.to ?? null;
}

/**
 * Walks from `startAt` until the conversation must wait for the user (an `ask`), a skill must run, or the
 * playbook ends. A `skill` step stops the walk: the runtime runs it and calls {@link continueAfterSkill}.
 */
function walk(graph: PlaybookGraph, playbook: string, startAt: string | null, vars: Record<string, string>, steps: PlaybookStep[]): PlaybookState | null {
  const nodes = new Map(graph.nodes.map((n) => [n.id, n]));
  let id = startAt;
  for (let i = 0; id !== null && i < MAX_STEPS_PER_TURN; i++) {
    const node = nodes.get(id);
    if (!node) break;
    switch (node.type) {
      case 'start':
      case 'branch':
        id = nextNode(graph, node, vars);
        continue;
      case 'say': {
        const missing = missingPlaceholders(node.prompt ?? '', vars);
        steps.push(missing.length ? { type: 'skip', node: node.id, missing } : { type: 'say', node: node.id, text: renderTemplate(node.prompt ?? '', vars) });
        id = nextNode(graph, node, vars);
        continue;
      }
      case 'ask':
        steps.push({ type: 'ask', node: node.id, text: renderSpoken(node.prompt ?? '', vars), gathers: node.gathers ?? '' });
        return { playbook, node: node.id };
      case 'skill': {
        const inputs: Record<string, string> = {};
        for (const [input, variable] of Object.entries(node.inputs ?? {})) if (Object.hasOwn(vars, variable)) inputs[input] = vars[variable];
        steps.push({ type: 'skill', node: node.id, skill: node.skill ?? '', inputs });
        return { playbook, node: node.id };
      }
      case 'end':
        steps.push({ type: 'end', node: node.id });
        return null;
      case 'escalate':
        steps.push({ type: 'escalate', node: node.id, text: renderSpoken(node.prompt ?? '', vars) || SPOKEN_ESCALATION });
        return null;
    }
  }
  steps.push({ type: 'end', node: id ?? 'end' });
  return null;
}

/**
 * Starts `playbook` from its start node.
 * @param vars the conversation's variables (read, not changed)
 */
export function startPlaybook(graph: PlaybookGraph, playbook: string, vars: Record<string, string>): PlaybookAdvance {
  const steps: PlaybookStep[] = [];
  const start = graph.nodes.find((n) => n.type === 'start');
  const state = walk(graph, playbook, start?.id ?? null, vars, steps);
  return { steps, state, gathered: {} };
}

/**
 * The user answered the `ask` node the state waits on: the answer is gathered into the node's variable
 * and the walk goes on.
 */
export function answerPlaybook(graph: PlaybookGraph, state: PlaybookState, answer: string, vars: Record<string, string>): PlaybookAdvance {
  const node = graph.nodes.find((n) => n.id === state.node);
  if (!node || node.type !== 'ask' || !node.gathers) return { steps: [], state: null, gathered: {} };
  const gathered = { [node.gathers]: answer.trim() };
  const merged = { ...vars, ...gathered };
  const steps: PlaybookStep[] = [];
  const next = walk(graph, state.playbook, nextNode(graph, node, merged), merged, steps);
  return { steps, state: next, gathered };
}

/**
 * A `skill` node's skill has run: its outputs (flattened to strings) join the variables as
 * `<skill>_<key>` and the walk goes on from the node after it. When it `failed` (an error, a timeout, a
 * refusal) the walk follows the node's `onError` edge; without one the playbook says {@link SKILL_ERROR_REPLY}
 * (step node `<id>:error`) and ends.
 */
export function continueAfterSkill(graph: PlaybookGraph, state: PlaybookState, vars: Record<string, string>, failed = false): PlaybookAdvance {
  const node = graph.nodes.find((n) => n.id === state.node);
  if (!node) return { steps: [], state: null, gathered: {} };
  const steps: PlaybookStep[] = [];
  if (failed && !graph.edges.some((e) => e.from === node.id && e.onError)) {
    steps.push({ type: 'say', node: `${node.id}:error`, text: SKILL_ERROR_REPLY }, { type: 'end', node: `${node.id}:error` });
    return { steps, state: null, gathered: {} };
  }
  const next = walk(graph, state.playbook, nextNode(graph, node, vars, failed), vars, steps);
  return { steps, state: next, gathered: {} };
}
