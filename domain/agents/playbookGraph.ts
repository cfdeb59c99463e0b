/**
 * Playbook graph validation (docs/api-notes.md "Agents"; spec "What the service does": playbooks are multi-turn node graphs
 * that gather several inputs in order and then drive skills). Rules, each error naming the node:
 * - node ids are unique; exactly one `start` node; `ask` nodes name `prompt` and `gathers`, `say` nodes a
 *   `prompt`, `skill` nodes a `skill`, `branch` nodes the variable they branch `on`;
 * - every edge joins two existing nodes (no dangling edges) and no edge leaves an `end` or `escalate` node (an
 *   `escalate` node ends the playbook: it hands the person to the team; its `prompt` is optional);
 * - `onError` edges leave `skill` nodes only, at most one per node (the path taken when the skill fails;
 *   without one the runtime apologises and offers a member of the team: domain/conversations/playbook.ts);
 * - every node is reachable from the start node;
 * - every `skill` node names an existing skill of the agent, and maps only inputs that skill has;
 * - every required input of a skill, and every variable a branch reads, is gathered on every path from
 *   the start to the node that uses it (agent variables count as gathered at the start).
 */
import type { FieldError } from '../errors';
import type { PlaybookGraph, PlaybookNode } from '../../schemas/types/playbooks';
import { skillInputs } from './skillTypes';

/** What a graph may refer to outside itself. */
export interface GraphContext {
  /** Skills of the agent by name. */
  skills: ReadonlyMap<string, { type: string; config: Record<string, any> }>;
  /** Variables known when the playbook starts (the agent's variables). */
  initialVariables: ReadonlySet<string>;
}

/** The graph of a new playbook: start → end. */
export function defaultGraph(): PlaybookGraph {
  return { nodes: [{ id: 'start', type: 'start' }, { id: 'end', type: 'end' }], edges: [{ from: 'start', to: 'end' }] };
}

/**
 * Every rule violation of `graph`.
 * @param prefix field prefix, e.g. `graph` (PUT) or `playbooks[intake].graph` (publish)
 * @returns field errors such as `{ field: 'graph.nodes[ask_name].gathers', message }`; empty when valid
 */
export function validatePlaybookGraph(graph: PlaybookGraph, ctx: GraphContext, prefix = 'graph'): FieldError[] {
  const errors: FieldError[] = [];
  const nodeField = (id: string, sub?: string) => `${prefix}.nodes[${id}]${sub ? `.${sub}` : ''}`;
  const nodes = new Map<string, PlaybookNode>();
  for (const n of graph.nodes) {
    if (nodes.has(n.id)) errors.push({ field: nodeField(n.id), message: `duplicate node id "${n.id}"` });
    else nodes.set(n.id, n);
  }

  const starts = [...nodes.values()].filter((n) => n.type === 'start');
  if (starts.length === 0) errors.push({ field: `${prefix}.nodes`, message: 'needs exactly one start node; there is none' });
  for (const extra of starts.slice(1)) errors.push({ field: nodeField(extra.id), message: `is a second start node (the start is "${starts[0].id}")` });

  for (const n of nodes.values()) {
    const need = (key: keyof PlaybookNode) => {
      if (n[key] === undefined || n[key] === '') errors.push({ field: nodeField(n.id, key), message: `is required on ${n.type} nodes` });
    };
    if (n.type === 'ask') (need('prompt'), need('gathers'));
    if (n.type === 'say') need('prompt');
    if (n.type === 'skill') need('skill');
    if (n.type === 'branch') need('on');
  }

  // Edges: dangling ones are reported and left out of the traversal.
  const out = new Map<string, string[]>();
  const preds = new Map<string, string[]>();
  for (const id of nodes.keys()) (out.set(id, []), preds.set(id, []));
  graph.edges.forEach((e, i) => {
    const label = `${prefix}.edges[${i}]`;
    const missing = [e.from, e.to].filter((id) => !nodes.has(id));
    if (missing.length) {
      errors.push({ field: label, message: `dangling edge ${e.from} → ${e.to}: no node ${missing.map((m) => `"${m}"`).join(' and ')}` });
      return;
    }
    const fromType = nodes.get(e.from)!.type;
    if (fromType === 'end' || fromType === 'escalate') {
      errors.push({ field: nodeField(e.from), message: `is an ${fromType} node but has an outgoing edge to "${e.to}"` });
      return;
    }
    // A misplaced onError is reported but the edge still joins its nodes (reachability is not blamed on it).
    if (e.onError && nodes.get(e.from)!.type !== 'skill') {
      errors.push({ field: `${label}.onError`, message: `only an edge leaving a skill node can be its error path ("${e.from}" is a ${nodes.get(e.from)!.type} node)` });
    } else if (e.onError && graph.edges.findIndex((o) => o.from === e.from && o.onError) !== i) {
      errors.push({ field: `${label}.onError`, message: `skill node "${e.from}" already has an onError edge` });
    }
    if (nodes.get(e.to)!.type === 'start') {
      errors.push({ field: nodeField(e.to), message: `is the start node but has an incoming edge from "${e.from}"` });
      return;
    }
    out.get(e.from)!.push(e.to);
    preds.get(e.to)!.push(e.from);
  });

  // Reachability from the start.
  const start = starts[0];
  const reachable = new Set<string>();
  if (start) {
    const stack = [start.id];
    while (stack.length) {
      const id = stack.pop()!;
      if (reachable.has(id)) continue;
      reachable.add(id);
      for (const next of out.get(id) ?? []) stack.push(next);
    }
    for (const id of nodes.keys()) {
      if (!reachable.has(id)) errors.push({ field: nodeField(id), message: `is not reachable from the start node "${start.id}"` });
    }
  }

  // Skill references.
  for (const n of nodes.values()) {
    if (n.type !== 'skill' || !n.skill) continue;
    const skill = ctx.skills.get(n.skill);
    if (!skill) {
      errors.push({ field: nodeField(n.id, 'skill'), message: `names no skill of this agent: "${n.skill}"` });
      continue;
    }
    const known = new Set(skillInputs(skill.type, skill.config).map((i) => i.name));
    for (const input of Object.keys(n.inputs ?? {})) {
      if (!known.has(input)) errors.push({ field: nodeField(n.id, `inputs.${input}`), message: `skill "${n.skill}" has no input "${input}"` });
    }
  }

  // Variables gathered on every path (forward must-analysis over reachable nodes, to a fixpoint).
  if (start) {
    const order = [...reachable];
    const universe = new Set<string>([...ctx.initialVariables]);
    for (const n of nodes.values()) if (n.type === 'ask' && n.gathers) universe.add(n.gathers);
    const outSet = new Map<string, Set<string>>();
    const inSet = new Map<string, Set<string>>();
    for (const id of order) outSet.set(id, new Set(universe));
    let changed = true;
    while (changed) {
      changed = false;
      for (const id of order) {
        const n = nodes.get(id)!;
        let inVars: Set<string>;
        if (id === start.id) inVars = new Set(ctx.initialVariables);
        else {
          const ps = (preds.get(id) ?? []).filter((p) => reachable.has(p));
          inVars = new Set(universe);
          for (const p of ps) for (const x of [...inVars]) if (!outSet.get(p)!.has(x)) inVars.delete(x);
        }
        inSet.set(id, inVars);
        const o = new Set(inVars);
        if (n.type === 'ask' && n.gathers) o.add(n.gathers);
        const prev = outSet.get(id)!;
        if (prev.size !== o.size || [...o].some((x) => !prev.has(x))) {
          outSet.set(id, o);
          changed = true;
        }
      }
    }
    for (const id of order) {
      const n = nodes.get(id)!;
      const have = inSet.get(id)!;
      if (n.type === 'branch' && n.on && !have.has(n.on)) {
        errors.push({ field: nodeField(id, 'on'), message: `variable "${n.on}" is not gathered on every path before this node` });
      }
      if (n.type === 'skill' && n.skill) {
        const skill = ctx.skills.get(n.skill);
        if (!skill) continue;
        for (const input of skillInputs(skill.type, skill.config)) {
          if (!input.required) continue;
          const variable = n.inputs?.[input.name] ?? input.name;
          if (!have.has(variable)) {
            errors.push({
              field: nodeField(id, `inputs.${input.name}`),
              message: `required input "${input.name}" (variable "${variable}") is not gathered on every path before this node`,
            });
          }
        }
      }
    }
  }
  return errors;
}

/** Variables gathered by `ask` nodes of a graph, in node order (for the pre-publish report). */
export function gatheredVariables(graph: PlaybookGraph): string[] {
  return [...new Set(graph.nodes.filter((n) => n.type === 'ask' && n.gathers).map((n) => n.gathers!))];
}
