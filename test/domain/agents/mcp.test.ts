/**
 * The rules of `mcp` skills (domain/agents/mcp.ts): namespaced tool names within the model's charset and length
 * that never collide, the allow-list and approval policies, a result turned into the skill's output, the config
 * checks the JSON Schema cannot express, and the pre-publish report's MCP section (domain/agents/mcpReport.ts).
 */
import { expect } from 'chai';
import fc from 'fast-check';
import { mcpCallRefusal, mcpConfigErrors, mcpOutput, mcpToolName, missingTools, remoteTools, type McpSkillConfig } from '../../../domain/agents/mcp';
import { mcpReport } from '../../../domain/agents/mcpReport';
import { skillConfigErrors, skillOutputSchema } from '../../../domain/agents/skillTypes';
import type { CompiledAgent } from '../../../domain/agents/compile';
import { parseAllowList } from '../../../domain/net/guard';

const TOOL_NAME = /^[a-zA-Z0-9_-]{1,64}$/;
const config: McpSkillConfig = {
  url: 'https://mcp.example.com/mcp',
  tools: [{ name: 'lookup' }, { name: 'refund', approval: 'verified_caller_only' }, { name: 'wipe', approval: 'never' }, { name: 'ghost' }],
};

describe('mcp skills (domain)', () => {
  it('names a tool <skill>-<tool> when it fits, else a shortened name with a hash, always within ^[a-zA-Z0-9_-]{1,64}$', () => {
    expect(mcpToolName('orders', 'lookup_order')).to.equal('orders-lookup_order');
    const odd = mcpToolName('orders', 'files/read.v2');
    expect(odd).to.match(TOOL_NAME).and.to.match(/^orders-files_read_v2_[0-9a-f]{8}$/);
    expect(odd).to.not.equal(mcpToolName('orders', 'files_read_v2'));
    const long = mcpToolName('a'.repeat(64), 'b'.repeat(100));
    expect(long).to.match(TOOL_NAME);
    fc.assert(
      fc.property(fc.stringMatching(/^[a-z][a-z0-9_]{0,63}$/), fc.string({ minLength: 1, maxLength: 128 }), fc.string({ minLength: 1, maxLength: 128 }), (skill, t1, t2) => {
        const a = mcpToolName(skill, t1);
        expect(a).to.match(TOOL_NAME);
        // A skill name has no `-`: no plain skill tool can be named like a server's tool.
        expect(a).to.contain('-');
        if (t1 !== t2) expect(a).to.not.equal(mcpToolName(skill, t2));
      }),
    );
  });

  it('offers only allow-listed tools, never ones known but not offered, and names the allow-listed tools the server lacks', () => {
    const listed = ['lookup', 'refund', 'wipe', 'other'].map((name) => ({ name, description: `${name} it`, inputSchema: { type: 'object', properties: { id: { type: 'string' } }, required: ['id'] } }));
    const tools = remoteTools({ name: 'crm', description: 'The CRM' }, config, listed);
    expect(tools.map((t) => [t.tool.name, t.remoteName, t.offered])).to.deep.equal([
      ['crm-lookup', 'lookup', true],
      ['crm-refund', 'refund', true],
      ['crm-wipe', 'wipe', false],
    ]);
    expect(tools[0].tool.parameters).to.deep.equal({ type: 'object', properties: { id: { type: 'string' } }, required: ['id'] });
    expect(tools[1].tool.description).to.equal('refund it (The CRM) Runs only for a verified caller.');
    expect(missingTools(config, listed)).to.deep.equal(['ghost']);
  });

  it('refuses a tool outside the allow-list, a never tool, and a verified_caller_only tool unless the caller verified', () => {
    expect(mcpCallRefusal('crm', config, 'other', true)?.code).to.equal('tool_not_allowed');
    expect(mcpCallRefusal('crm', config, 'wipe', true)?.code).to.equal('tool_refused');
    expect(mcpCallRefusal('crm', config, 'refund', false)?.code).to.equal('caller_not_verified');
    expect(mcpCallRefusal('crm', config, 'refund', true)).to.equal(null);
    expect(mcpCallRefusal('crm', config, 'lookup', false)).to.equal(null);
  });

  it('turns a result into the output: structured content, else one JSON text parsed, else the texts joined', () => {
    expect(mcpOutput({ texts: ['ignored'], structured: { a: 1 } })).to.deep.equal({ a: 1 });
    expect(mcpOutput({ texts: ['{"status":"ok"}'] })).to.deep.equal({ status: 'ok' });
    expect(mcpOutput({ texts: ['plain words'] })).to.equal('plain words');
    expect(mcpOutput({ texts: ['one', 'two'] })).to.equal('one\ntwo');
  });

  it('checks the config: https, or http only to HTTP_ALLOW_PRIVATE_HOSTS outside production; tools listed once; output schemas per tool', () => {
    const dev = { allow: parseAllowList('127.0.0.1,10.0.0.0/8'), production: false };
    expect(mcpConfigErrors({ url: 'http://127.0.0.1:3000/mcp', tools: [{ name: 'a' }] }, dev)).to.deep.equal([]);
    expect(mcpConfigErrors({ url: 'http://10.1.2.3/mcp', tools: [{ name: 'a' }] }, dev)).to.deep.equal([]);
    expect(mcpConfigErrors({ url: 'http://10.1.2.3/mcp', tools: [{ name: 'a' }] }, { ...dev, production: true }).map((e) => e.field)).to.deep.equal(['url']);
    expect(mcpConfigErrors({ url: 'http://192.168.1.1/mcp', tools: [{ name: 'a' }] }, dev).map((e) => e.field)).to.deep.equal(['url']);
    expect(mcpConfigErrors({ url: 'http://mcp.example.com/mcp', tools: [{ name: 'a' }] }, dev).map((e) => e.field)).to.deep.equal(['url']);
    expect(skillConfigErrors('mcp', { url: 'https://u:p@mcp.example.com/', tools: [{ name: 'a' }] }).map((e) => e.field)).to.deep.equal(['config.url']);
    expect(skillConfigErrors('mcp', { url: 'https://mcp.example.com/', tools: [{ name: 'a', outputSchema: { properties: 3 } }] }).map((e) => e.field)).to.deep.equal(['config.tools[0].outputSchema']);
    const withSchema = { url: 'https://mcp.example.com/', tools: [{ name: 'a', outputSchema: { type: 'object', properties: { x: {} } } }, { name: 'b' }] };
    expect(skillOutputSchema('mcp', withSchema, 'a')).to.deep.equal({ type: 'object', properties: { x: {} } });
    expect(skillOutputSchema('mcp', withSchema, 'b')).to.equal(undefined);
  });

  it('reports an unprobed server as not_checked, and an unreachable one with a warning naming its url', () => {
    const snapshot = { skills: [{ name: 'crm', type: 'mcp', description: null, config }] } as unknown as CompiledAgent;
    const unprobed = mcpReport(snapshot);
    expect(unprobed.mcpServers).to.deep.equal([{ skill: 'crm', url: config.url, status: 'not_checked', transport: null, error: null, tools: [], missingTools: [] }]);
    expect(unprobed.willSay[0]).to.equal('Skill crm: connects to the MCP server at mcp.example.com (not checked) and uses its tools lookup, ghost; refund only for a verified caller; never wipe');
    const down = mcpReport(snapshot, [{ ...unprobed.mcpServers[0], status: 'unreachable', error: 'unreachable: no route' }]);
    expect(down.warnings).to.deep.equal([{ code: 'mcp_server_unreachable', field: 'skills[crm].config.url', message: 'The MCP server of skill crm (mcp.example.com) is unreachable: unreachable: no route' }]);
  });
});
