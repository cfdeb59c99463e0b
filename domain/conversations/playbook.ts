/**
 * Playbooks as a state machine over turns (spec "What the service does": playbooks are multi-turn node
 * graphs that gather several inputs in order and then drive skills; README "Conversations"): a running
 * playbook sits on one node; `ask` waits for the user's next message and stores it in the node's variable,
 * `say` speaks and moves on, `skill` runs the skill with inputs from the variables, `branch` follows the
 * edge whose `when` equals the variable's value (or the default edge), `end` finishes. Pure functions:
 * the runtime executes the steps they return. Published graphs are valid (domain/agents/playbookGraph.ts),
 * so a missing edge simply ends the playbook.
 */
import type { PlaybookGraph, PlaybookNode } from '../../schemas/types/agents';
import { mentions } from './guardrails';

/** Where a conversation stands in a playbook (stored on the conversation between turns). */
export interface PlaybookState {
  playbook: string;
  /** The node the conversation waits on (an `ask` node), or null when finished. */
  node: string | null;
}

/** One step for the runtime to execute, in order. */
export type PlaybookStep =
  | { type: 'say'; node: string; text: string }
  | { type: 'ask'; node: string; text: string; gathers: string }
  | { type: 'skill'; node: string; skill: string; inputs: Record<string, string> }
  | { type: 'end'; node: string };

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
 * The playbook a user message starts: the first (by name) whose name, with `_` read as spaces, the
 * message mentions as whole words — e.g. "I'd like to book an appointment" starts `book_appointment`.
 */
export function playbookFor(message: string, playbooks: readonly { name: string; graph: PlaybookGraph }[]): string | null {
  for (const p of playbooks) if (mentions(message, p.name.replace(/_/g, ' '))) return p.name;
  return null;
}

/** `{{name}}` placeholders replaced by variables (unknown ones are left as written). */
export function renderTemplate(text: string, vars: Readonly<Record<string, string>>): string {
  return text.replace(/\{\{\s*([a-z][a-z0-9_]*)\s*\}\}/g, (m, name: string) => (Object.hasOwn(vars, name) ? vars[name] : m));
}

function nextNode(graph: PlaybookGraph, from: PlaybookNode, vars: Readonly<Record<string, string>>): string | null {
  const edges = graph.edges.filter((e) => e.from === from.id);
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
      case 'say':
        steps.push({ type: 'say', node: node.id, text: renderTemplate(node.prompt ?? '', vars) });
        id = nextNode(graph, node, vars);
        continue;
      case 'ask':
        steps.push({ type: 'ask', node: node.id, text: renderTemplate(node.prompt ?? '', vars), gathers: node.gathers ?? '' });
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
 * `<skill>_<key>` and the walk goes on from the node after it.
 */
export function continueAfterSkill(graph: PlaybookGraph, state: PlaybookState, vars: Record<string, string>): PlaybookAdvance {
  const node = graph.nodes.find((n) => n.id === state.node);
  if (!node) return { steps: [], state: null, gathered: {} };
  const steps: PlaybookStep[] = [];
  const next = walk(graph, state.playbook, nextNode(graph, node, vars), vars, steps);
  return { steps, state: next, gathered: {} };
}
