/**
 * Skills of type `mcp` (docs/api-notes.md "MCP skills"; MCP specification 2025-06-18 "Server features:
 * Tools"): the tools of a remote MCP server, offered to the model as tools of their own. The rules, as plain
 * functions: which listed tools are offered (the skill's allow-list, minus `never`), under which name (namespaced
 * by the skill, within the model's tool-name charset and length), whether a call may run (the tool's approval
 * policy and the caller's verification), and what a call's result becomes (the skill output the boundary rules of
 * ./skillOutput.ts then cut).
 */
import crypto from 'node:crypto';
import type { FieldError } from '../errors';
import { plainHttpPolicy, plainHttpProblem, type PlainHttpPolicy } from '../net/plainHttp';
import { isOutputSchema, type OutputSchema } from './skillOutput';

/**
 * When a tool may run: `auto` whenever the model calls it; `verified_caller_only` only once caller verification
 * succeeded in this conversation (`caller_verified` is `true`, docs/api-notes.md "Caller verification"); `never`
 * not offered, and refused if called.
 */
export type McpApproval = 'auto' | 'verified_caller_only' | 'never';

/** One entry of the allow-list. */
export interface McpToolRule {
  name: string;
  /** Default `auto`. */
  approval?: McpApproval;
  /** Only the members it declares reach the model and the receipt (./skillOutput.ts). */
  outputSchema?: OutputSchema;
}

/** An `mcp` skill's config (validated by its JSON Schema in ./skillTypes.ts). */
export interface McpSkillConfig {
  url: string;
  /** Sent with every request; values may reference `{{vars.<name>}}`, secrets included (filled at run time). */
  headers?: Record<string, string>;
  tools: McpToolRule[];
  /** Cap on listing the tools or on one call, ms (default {@link MCP_DEFAULT_TIMEOUT_MS}). */
  timeoutMs?: number;
}

/** A tool as the server lists it (providers/mcp `McpToolInfo`). */
export interface ListedMcpTool {
  name: string;
  description: string | null;
  inputSchema: Record<string, unknown>;
}

/** A tool of a skill's server, as the runtime offers and routes it (domain/conversations/runtime.ts `TurnPorts.remoteTools`). */
export interface RemoteTool {
  /** The skill it belongs to. */
  skill: string;
  /** Its name on the server. */
  remoteName: string;
  /** What the model is offered: the namespaced name, the description and the server's JSON Schema. */
  tool: { name: string; description: string; parameters: Record<string, unknown> };
  /** False for an allow-listed `never` tool: known (a call of it is refused) but not offered. */
  offered: boolean;
}

/** Default cap on one MCP operation, ms. */
export const MCP_DEFAULT_TIMEOUT_MS = 10_000;
/** How long a server's tool list is reused, ms. */
export const MCP_TOOLS_TTL_MS = 60_000;
/** OpenAI's (and most providers') tool-name limit: `^[a-zA-Z0-9_-]{1,64}$`. */
const TOOL_NAME_MAX = 64;

/**
 * The name the model knows a tool by: `<skill>-<tool>`. Skill names never hold a `-` (`^[a-z][a-z0-9_]{0,63}$`), so
 * no other skill's tool can have it; characters outside `[A-Za-z0-9_-]` become `_`, and a name that had any, or
 * that would be longer than 64 characters, is shortened and ends with 8 hex digits of a hash of the skill and the
 * tool, so two tools never share a name.
 */
export function mcpToolName(skill: string, tool: string): string {
  const clean = tool.replace(/[^A-Za-z0-9_-]/g, '_');
  const plain = `${skill}-${clean}`;
  if (clean === tool && plain.length <= TOOL_NAME_MAX) return plain;
  const hash = crypto.createHash('sha256').update(`${skill}\0${tool}`).digest('hex').slice(0, 8);
  const head = skill.slice(0, 24);
  return `${head}-${clean.slice(0, TOOL_NAME_MAX - head.length - 10)}_${hash}`;
}

/** The allow-list entry of `tool`, or undefined when the skill does not allow it. */
export function mcpToolRule(config: McpSkillConfig, tool: string): McpToolRule | undefined {
  return (config.tools ?? []).find((t) => t.name === tool);
}

/** The approval policy of an allow-listed tool. */
export const approvalOf = (rule: McpToolRule): McpApproval => rule.approval ?? 'auto';

/**
 * Why a call of `tool` may not run, or null when it may: not in the allow-list (`tool_not_allowed`), approval
 * `never` (`tool_refused`), approval `verified_caller_only` unless caller verification succeeded in this
 * conversation (`caller_not_verified`; never when the agent does not verify callers).
 * @param callerVerified the agent verifies callers and this conversation's caller is verified
 */
export function mcpCallRefusal(skill: string, config: McpSkillConfig, tool: string, callerVerified: boolean): { code: string; message: string } | null {
  const rule = mcpToolRule(config, tool);
  if (!rule) return { code: 'tool_not_allowed', message: `Tool "${tool}" is not in the allow-list of skill "${skill}"` };
  const approval = approvalOf(rule);
  if (approval === 'never') return { code: 'tool_refused', message: `Tool "${tool}" of skill "${skill}" is never run (approval: never)` };
  if (approval === 'verified_caller_only' && !callerVerified) {
    return { code: 'caller_not_verified', message: `Tool "${tool}" of skill "${skill}" runs only for a verified caller; the caller is not verified` };
  }
  return null;
}

/** A server's input schema as tool parameters: always an object schema (the model's function-calling format). */
function parametersOf(schema: Record<string, unknown>): Record<string, unknown> {
  const s = schema && typeof schema === 'object' && !Array.isArray(schema) ? schema : {};
  return { ...s, type: 'object', properties: s.properties && typeof s.properties === 'object' ? s.properties : {} };
}

/**
 * The tools a skill's server lists that its allow-list names, in the server's order: offered unless `never`.
 * Listed tools the allow-list does not name are left out entirely.
 */
export function remoteTools(skill: { name: string; description: string | null }, config: McpSkillConfig, listed: readonly ListedMcpTool[]): RemoteTool[] {
  const out: RemoteTool[] = [];
  for (const t of listed) {
    const rule = mcpToolRule(config, t.name);
    if (!rule) continue;
    const approval = approvalOf(rule);
    const description = [t.description?.trim() || `Tool ${t.name}`, skill.description ? `(${skill.description})` : '', approval === 'verified_caller_only' ? 'Runs only for a verified caller.' : '']
      .filter(Boolean)
      .join(' ')
      .slice(0, 1024);
    out.push({ skill: skill.name, remoteName: t.name, tool: { name: mcpToolName(skill.name, t.name), description, parameters: parametersOf(t.inputSchema) }, offered: approval !== 'never' });
  }
  return out;
}

/** Allow-listed tool names the server did not list (for the pre-publish report's warnings). */
export function missingTools(config: McpSkillConfig, listed: readonly ListedMcpTool[]): string[] {
  const names = new Set(listed.map((t) => t.name));
  return (config.tools ?? []).map((t) => t.name).filter((n) => !names.has(n));
}

/**
 * A `tools/call` result as the skill's output: `structuredContent` when the server sent one, else its text parts —
 * one part parsed as JSON when it is JSON, several joined by a line break.
 */
export function mcpOutput(result: { texts: readonly string[]; structured?: unknown }): unknown {
  if (result.structured !== undefined) return result.structured;
  const text = result.texts.join('\n');
  if (result.texts.length === 1) {
    try {
      return JSON.parse(text);
    } catch {
      return text;
    }
  }
  return text;
}

/**
 * Checks of an `mcp` config its JSON Schema cannot express (fields relative to the config): the URL https, or plain
 * http only to an address of HTTP_ALLOW_PRIVATE_HOSTS outside production (../net/plainHttp.ts, as HTTP skills), without
 * credentials; tool names listed once; output schemas that are schemas.
 * @param policy plain-http policy (default: the environment's)
 */
export function mcpConfigErrors(config: Record<string, any>, policy: PlainHttpPolicy = plainHttpPolicy()): FieldError[] {
  const errors: FieldError[] = [];
  const problem = plainHttpProblem(String(config.url), policy);
  if (problem) errors.push({ field: 'url', message: problem });
  else if (/^https?:\/\/[^/]*@/i.test(String(config.url))) errors.push({ field: 'url', message: 'must not carry credentials (use headers)' });
  const seen = new Set<string>();
  (Array.isArray(config.tools) ? config.tools : []).forEach((t: McpToolRule, i: number) => {
    if (seen.has(t.name)) errors.push({ field: `tools[${i}].name`, message: `"${t.name}" is listed twice` });
    seen.add(t.name);
    if (t.outputSchema !== undefined && !isOutputSchema(t.outputSchema)) {
      errors.push({ field: `tools[${i}].outputSchema`, message: 'must be a JSON Schema object (properties, items and additionalProperties schemas themselves)' });
    }
  });
  return errors;
}
