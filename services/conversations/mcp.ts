/**
 * `mcp` skills at run time (docs/api-notes.md "MCP skills"; the rules are in domain/agents/mcp.ts): the tools
 * of each skill's MCP server listed through the MCP provider (providers/mcp) — cached per server URL and headers for
 * {@link MCP_TOOLS_TTL_MS}, a failure for {@link MCP_FAILURE_TTL_MS} — offered to the model, and a call of one run
 * with the skill's timeout after its approval policy allowed it. Header values referencing secrets
 * (`{{vars.<name>}}`) are filled right before each request (services/settings/references.ts), never cached in clear:
 * the cache key is a SHA-256 digest. An unreachable server costs its tools, never the turn.
 */
import crypto from 'node:crypto';
import type { Db } from '../../db';
import { MCP_DEFAULT_TIMEOUT_MS, MCP_TOOLS_TTL_MS, mcpCallRefusal, mcpOutput, missingTools, remoteTools, approvalOf, type McpSkillConfig, type RemoteTool } from '../../domain/agents/mcp';
import { SkillError, type SkillCall, type SkillOutcome } from '../../domain/conversations/runtime';
import { McpError, sharedMcpProvider, type McpProvider, type McpServerRef, type McpToolInfo, type McpTransportKind } from '../../providers/mcp';
import type { ReportMcpServer } from '../../schemas/types/prepublish';
import { withSecretValues } from '../settings/references';

/** How long a failed listing is remembered (so each turn does not wait for an unreachable server), ms. */
export const MCP_FAILURE_TTL_MS = 5_000;
/** Servers whose tool list is kept per provider. */
const CATALOG_MAX = 1000;

type Listing = { tools: McpToolInfo[]; transport: McpTransportKind };
interface Entry {
  at: number;
  value: Promise<Listing>;
  failed?: boolean;
}

/** Tool lists of MCP servers, per server URL and headers, for a short time; concurrent listings of one server share one request. */
export class McpToolCatalog {
  private readonly entries = new Map<string, Entry>();

  /** @param now clock in ms (tests move it instead of sleeping) */
  constructor(
    private readonly provider: McpProvider,
    private readonly now: () => number = Date.now,
  ) {}

  /** The server's tools (cached). @throws McpError */
  list(server: McpServerRef): Promise<Listing> {
    const key = crypto.createHash('sha256').update(JSON.stringify([server.url, Object.entries(server.headers ?? {}).sort(([a], [b]) => a.localeCompare(b))])).digest('hex');
    const hit = this.entries.get(key);
    const t = this.now();
    if (hit && t - hit.at < (hit.failed ? MCP_FAILURE_TTL_MS : MCP_TOOLS_TTL_MS)) return hit.value;
    const entry: Entry = { at: t, value: this.provider.listTools(server) };
    entry.value.catch(() => {
      entry.failed = true;
    });
    if (this.entries.size >= CATALOG_MAX) this.entries.delete(this.entries.keys().next().value as string);
    this.entries.delete(key);
    this.entries.set(key, entry);
    return entry.value;
  }
}

const catalogs = new WeakMap<McpProvider, McpToolCatalog>();

/** The catalog of `provider` (one per provider, so every conversation of the process shares its cache). */
export function catalogOf(provider: McpProvider): McpToolCatalog {
  let c = catalogs.get(provider);
  if (!c) catalogs.set(provider, (c = new McpToolCatalog(provider)));
  return c;
}

/**
 * The server a skill names, with its header secrets filled.
 * @throws SkillError `variable_unavailable` when a referenced secret is gone
 */
export async function mcpServerRef(db: Db, orgId: string, config: McpSkillConfig): Promise<McpServerRef> {
  let filled: McpSkillConfig;
  try {
    filled = await withSecretValues(db, orgId, config);
  } catch (err) {
    throw new SkillError((err as Error).message, 'variable_unavailable');
  }
  return { url: filled.url, headers: filled.headers ?? {}, timeoutMs: filled.timeoutMs ?? MCP_DEFAULT_TIMEOUT_MS };
}

/** The skills of a compiled agent that are `mcp` skills. */
const mcpSkills = <S extends { type: string }>(skills: readonly S[]): S[] => skills.filter((s) => s.type === 'mcp');

/**
 * The `TurnPorts.remoteTools` of a conversation: every `mcp` skill's allow-listed tools (domain/agents/mcp.ts
 * `remoteTools`), the servers listed at once; a server that fails is logged, leaves its tools out and is named in
 * `unavailable` (`<code>: <message>`).
 */
export async function remoteToolsOf(
  deps: { db: Db; mcp?: McpProvider; log?: { warn: (obj: object, msg: string) => void } },
  orgId: string,
  skills: readonly { name: string; type: string; description: string | null; config: Record<string, unknown> }[],
): Promise<{ tools: RemoteTool[]; unavailable: { skill: string; error: string }[] }> {
  const catalog = catalogOf(deps.mcp ?? sharedMcpProvider());
  const unavailable: { skill: string; error: string }[] = [];
  const lists = await Promise.all(
    mcpSkills(skills).map(async (s) => {
      const config = s.config as unknown as McpSkillConfig;
      try {
        const { tools } = await catalog.list(await mcpServerRef(deps.db, orgId, config));
        return remoteTools(s, config, tools);
      } catch (err) {
        const e = err as { code?: string; message?: string };
        deps.log?.warn({ orgId, skill: s.name, code: e.code }, `MCP server of skill ${s.name} unavailable; its tools are not offered`);
        unavailable.push({ skill: s.name, error: `${e.code ?? 'error'}: ${e.message ?? String(err)}`.slice(0, 500) });
        return [];
      }
    }),
  );
  return { tools: lists.flat(), unavailable };
}

/**
 * Runs one call of an `mcp` skill's tool: refused by its approval policy (domain/agents/mcp.ts `mcpCallRefusal`),
 * else `tools/call` with the skill's timeout. The result is the skill's output (`structuredContent`, else its text).
 * @param config the skill's config with its secrets filled
 * @throws SkillError `tool_required` (a playbook node names an `mcp` skill: it has no single tool),
 *   `tool_not_allowed`, `tool_refused`, `caller_not_verified`, `tool_error` (the tool's `isError`), or the
 *   provider's code (`unreachable`, `timeout`, `ssrf_refused`, `protocol`, `bad_url`)
 */
export async function runMcpTool(provider: McpProvider, call: SkillCall, config: McpSkillConfig): Promise<SkillOutcome> {
  if (!call.tool) throw new SkillError(`Skill "${call.skill.name}" offers its server's tools; call one of them`, 'tool_required');
  const refusal = mcpCallRefusal(call.skill.name, config, call.tool.name, call.tool.callerVerified);
  if (refusal) throw new SkillError(refusal.message, refusal.code);
  const server: McpServerRef = { url: config.url, headers: config.headers ?? {}, timeoutMs: config.timeoutMs ?? MCP_DEFAULT_TIMEOUT_MS };
  let result;
  try {
    result = await provider.callTool(server, call.tool.name, call.tool.arguments);
  } catch (err) {
    if (err instanceof McpError) throw new SkillError(err.message, err.code);
    throw err;
  }
  if (result.isError) throw new SkillError(`Tool "${call.tool.name}" failed: ${result.texts.join(' ').slice(0, 500) || 'no detail'}`, 'tool_error');
  return { output: mcpOutput(result) };
}

/**
 * The pre-publish report's view of each `mcp` skill's server (domain/agents/report.ts): reachable with the tools it
 * lists and what the allow-list makes of them, or unreachable with why. Listed afresh, not from the cache, so the
 * report says how the server is now.
 */
export async function probeMcpServers(
  db: Db,
  orgId: string,
  skills: readonly { name: string; type: string; description: string | null; config: Record<string, unknown> }[],
  provider: McpProvider = sharedMcpProvider(),
): Promise<ReportMcpServer[]> {
  return Promise.all(
    mcpSkills(skills).map(async (s): Promise<ReportMcpServer> => {
      const config = s.config as unknown as McpSkillConfig;
      const base = { skill: s.name, url: String(config.url ?? '') };
      const allowList = (Array.isArray(config.tools) ? config.tools : []).map((t) => ({ name: t.name, approval: approvalOf(t) }));
      try {
        const { tools, transport } = await provider.listTools(await mcpServerRef(db, orgId, config));
        const offered = new Map(remoteTools(s, config, tools).map((r) => [r.remoteName, r]));
        return {
          ...base,
          status: 'reachable',
          transport,
          error: null,
          tools: tools.map((t) => {
            const r = offered.get(t.name);
            return {
              name: t.name,
              description: t.description,
              allowed: !!r,
              approval: r ? allowList.find((a) => a.name === t.name)!.approval : null,
              toolName: r?.offered ? r.tool.name : null,
            };
          }),
          missingTools: missingTools(config, tools),
        };
      } catch (err) {
        const e = err as { code?: string; message?: string };
        return { ...base, status: 'unreachable', transport: null, error: `${e.code ?? 'error'}: ${e.message ?? String(err)}`.slice(0, 500), tools: [], missingTools: [] };
      }
    }),
  );
}
