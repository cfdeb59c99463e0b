/**
 * The pre-publish report's MCP section (spec "Agent versions": the pre-publish report; docs/api-notes.md "MCP
 * skills"): per `mcp` skill its server, the tools it lists and what the allow-list makes of them, in
 * statements and warnings — an unreachable server said plainly. Pure: the servers are probed by the caller
 * (services/conversations/mcp.ts `probeMcpServers`).
 */
import type { ReportMcpServer, ReportWarning } from '../../schemas/types/prepublish';
import type { CompiledAgent } from './compile';
import { approvalOf, type McpSkillConfig } from './mcp';

/** The report's `mcpServers`, its `willSay` statements and its warnings. */
export interface McpReport {
  mcpServers: ReportMcpServer[];
  willSay: string[];
  warnings: ReportWarning[];
}

const hostOf = (url: string): string => {
  try {
    return new URL(url).host;
  } catch {
    return url;
  }
};

/**
 * Builds the section.
 * @param probed the servers as probed now, by skill name; a skill without an entry is `not_checked`
 */
export function mcpReport(snapshot: CompiledAgent, probed: readonly ReportMcpServer[] = []): McpReport {
  const byName = new Map(probed.map((p) => [p.skill, p]));
  const out: McpReport = { mcpServers: [], willSay: [], warnings: [] };
  for (const s of snapshot.skills.filter((x) => x.type === 'mcp')) {
    const config = s.config as unknown as McpSkillConfig;
    const url = String(config.url ?? '');
    const entry: ReportMcpServer = byName.get(s.name) ?? { skill: s.name, url, status: 'not_checked', transport: null, error: null, tools: [], missingTools: [] };
    out.mcpServers.push(entry);
    const field = `skills[${s.name}].config`;
    const rules = Array.isArray(config.tools) ? config.tools : [];
    const by = (a: string) => rules.filter((t) => approvalOf(t) === a).map((t) => t.name);
    if (entry.status === 'unreachable') {
      out.willSay.push(`Skill ${s.name}: the MCP server at ${hostOf(url)} is unreachable (${entry.error ?? 'no answer'}); until it answers, the agent answers without its tools`);
      out.warnings.push({ code: 'mcp_server_unreachable', field: `${field}.url`, message: `The MCP server of skill ${s.name} (${hostOf(url)}) is unreachable: ${entry.error ?? 'no answer'}` });
      continue;
    }
    const listed = entry.status === 'reachable' ? new Set(entry.tools.map((t) => t.name)) : null;
    const present = (names: string[]) => (listed ? names.filter((n) => listed.has(n)) : names);
    const auto = present(by('auto'));
    const verified = present(by('verified_caller_only'));
    const never = by('never');
    const parts = [
      auto.length ? `uses its tools ${auto.join(', ')}` : 'uses none of its tools freely',
      verified.length ? `${verified.join(', ')} only for a verified caller` : '',
      never.length ? `never ${never.join(', ')}` : '',
    ].filter(Boolean);
    const how = entry.status === 'reachable' ? ` (${entry.transport === 'sse' ? 'HTTP+SSE' : 'Streamable HTTP'}, ${entry.tools.length} tool${entry.tools.length === 1 ? '' : 's'} listed)` : ' (not checked)';
    out.willSay.push(`Skill ${s.name}: connects to the MCP server at ${hostOf(url)}${how} and ${parts.join('; ')}`);
    if (entry.missingTools.length) {
      out.warnings.push({ code: 'mcp_tool_missing', field: `${field}.tools`, message: `The MCP server of skill ${s.name} does not list ${entry.missingTools.join(', ')}: never offered until it does` });
    }
  }
  return out;
}
