/**
 * The tools a free turn offers the model (docs/api-notes.md "Conversations": skills, playbooks, escalation; "Responses
 * API": function tools): the agent's skills, its MCP servers' offered tools, its playbooks' `start_playbook_<name>`
 * tools, `escalate` when the organization has an escalation destination, then the client's function tools. On a
 * clash of names the agent's own wins (its skills and playbooks, then `escalate`, then a server's tool).
 */
import type { RemoteTool } from '../../agents/mcp';
import { ESCALATE_TOOL, escalateTool } from '../escalation';
import type { LlmTool } from '../llm';
import { playbookTools, skillTools } from '../prompt';
import type { Retrieved } from './retrieve';
import type { Turn } from './state';

/** The state of a free turn with its tools. */
export interface Equipped extends Retrieved {
  /** Everything offered, in the order above. */
  tools: LlmTool[];
  /** The MCP servers' tools the agent keeps (also the `offered: false` ones, whose calls are refused). */
  remote: RemoteTool[];
  /** Whether `escalate` is offered (the organization has somewhere to hand the person to). */
  escalateOffered: boolean;
  /** The client's tools offered: their calls end the turn unrun (`TurnResult.clientCalls`). */
  clientTools: LlmTool[];
}

/**
 * Awaits the MCP servers' tools (their failed servers go to the receipt's `unavailableSkills`) and the escalation
 * route the turn opened with, and assembles the tools.
 */
export async function offerTools(turn: Turn, state: Retrieved): Promise<Equipped> {
  const { agent } = turn.ctx;
  const ownTools = [...skillTools(agent), ...playbookTools(agent)];
  const { tools: listedTools, unavailable } = await turn.listed;
  if (unavailable.length) state.receipt.unavailableSkills = unavailable;
  // A server's tool whose namespaced name another tool of the agent has is left out (the agent's own wins).
  const remote = listedTools.filter((r) => !ownTools.some((t) => t.name === r.tool.name));
  const tools = [...skillTools(agent), ...remote.filter((r) => r.offered).map((r) => r.tool), ...playbookTools(agent)];
  // With somewhere to hand the person to, the model may escalate (a skill or playbook tool of that name keeps it).
  const escalateOffered = !!(await turn.route)?.destination && !tools.some((t) => t.name === ESCALATE_TOOL);
  if (escalateOffered) tools.push(escalateTool(turn.ctx.channel));
  // The client's function tools, unless the agent has a tool of that name (the agent's own stay server-side).
  const clientTools = (turn.opts.clientTools ?? []).filter((t) => !tools.some((x) => x.name === t.name));
  tools.push(...clientTools);
  return { ...state, tools, remote, escalateOffered, clientTools };
}
