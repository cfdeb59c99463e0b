/**
 * Skills of type `mcp` end to end (docs/api-notes.md "MCP skills"): created over the API with headers
 * referencing a secret variable, a chat turn on the OpenAI-compatible adapter (loopback stub) where the model
 * calls the MCP server's tool — the server, built with the same SDK and reached on loopback because
 * HTTP_ALLOW_PRIVATE_HOSTS lists 127.0.0.1, receives the call with its arguments and the secret header — the
 * receipt entry, the allow-list and the approval policies (`never` not offered and refused, `verified_caller_only`
 * refused before caller verification and run after it), the fallback to an SSE-only server, the pre-publish report
 * listing each server and its tools, and an unreachable server ending in a clear report status and a turn
 * answered without its tools.
 */
import { expect } from 'chai';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { publishDraft } from './agents-fixtures';
import { QUICK_CLIENT, startTestApi, type TestApi } from '../helpers/api';
import { answerWith, startOpenAiStub, type OpenAiStub, type StubHandler } from '../helpers/llm';
import { startSseOnlyMcpServer, startStreamableMcpServer, type TestMcpServer } from '../helpers/mcp';
import { OpenAiLlm } from '../../providers/llm/openai';
import { until } from '../helpers/wait';

describe('MCP skills (mcp)', () => {
  let t: TestApi;
  let stub: OpenAiStub;
  let orders: TestMcpServer;
  let legacy: TestMcpServer;
  let org: { orgId: string; key: string; keyId: string };
  let agentId: string;
  let handler: StubHandler = answerWith({ content: 'ok' });
  const savedAllow = process.env.HTTP_ALLOW_PRIVATE_HOSTS;
  const known = '+14155550142';

  /** The model calls `name` with `args` first, then answers with the tool's message content it was given. */
  const callThenAnswer = (name: string, args: Record<string, unknown>): StubHandler =>
    answerWith((body: { messages: { role: string; content: string | null }[] }) => {
      const tool = body.messages.find((m) => m.role === 'tool');
      return tool ? { content: `Done: ${tool.content}` } : { toolCalls: [{ id: 'call_mcp_1', name, arguments: JSON.stringify(args) }] };
    });
  const toolNames = (req: { body: any }) => (req.body.tools ?? []).map((x: { function: { name: string } }) => x.function.name);
  const turnRequests = () => stub.requests.filter((r) => r.body?.tools || r.body?.messages?.some((m: { role: string }) => m.role === 'tool'));

  before(async () => {
    process.env.HTTP_ALLOW_PRIVATE_HOSTS = '127.0.0.1';
    orders = await startStreamableMcpServer();
    legacy = await startSseOnlyMcpServer();
    stub = await startOpenAiStub((req, res) => handler(req, res));
    t = await startTestApi('mcpskills', QUICK_CLIENT, { providers: { llm: new OpenAiLlm({ baseUrl: stub.baseUrl, apiKey: 'sk-test', model: 'gpt-test', timeoutMs: 5000, maxRetries: 0 }) } });
    org = await t.org('Mcp');
    expect((await t.call('POST', '/variables', { key: org.key, json: { name: 'orders_token', secret: true, value: 's3cret-token' } })).status).to.equal(201);
    expect((await t.call('POST', '/records', { key: org.key, json: { name: 'Ada Lovelace', phone: known } })).status).to.equal(201);
    const a = await t.call('POST', '/agents', { key: org.key, json: { name: 'Orders desk', voiceId: 'voice_ava', instructions: 'Help with orders.' } });
    expect(a.status, a.text).to.equal(201);
    agentId = a.body.data.id;
    const cv = await t.call('PUT', `/agents/${agentId}/caller-verification`, { key: org.key, json: { enabled: true, method: 'caller_id', requiredForSkills: [], maxAttempts: 3 } });
    expect(cv.status, cv.text).to.equal(200);
    const skill = await t.call('POST', `/agents/${agentId}/skills`, {
      key: org.key,
      json: {
        name: 'orders',
        type: 'mcp',
        description: 'The order system',
        config: {
          url: orders.url,
          headers: { Authorization: 'Bearer {{vars.orders_token}}' },
          timeoutMs: 5000,
          tools: [
            { name: 'lookup_order', outputSchema: { type: 'object', properties: { orderId: { type: 'string' }, status: { type: 'string' }, items: { type: 'integer' } } } },
            { name: 'refund_order', approval: 'verified_caller_only' },
            { name: 'delete_account', approval: 'never' },
            { name: 'broken' },
            { name: 'ghost_tool' },
          ],
        },
      },
    });
    expect(skill.status, skill.text).to.equal(201);
    expect(skill.body.data.config.headers.Authorization).to.equal('Bearer {{vars.orders_token}}');
    const sse = await t.call('POST', `/agents/${agentId}/skills`, { key: org.key, json: { name: 'legacy', type: 'mcp', config: { url: legacy.url, tools: [{ name: 'lookup_order' }] } } });
    expect(sse.status, sse.text).to.equal(201);
    const out = await publishDraft(t.db, org, agentId, 'mcp-v1');
    expect(out.kind).to.equal('published');
  });
  after(async () => {
    if (savedAllow === undefined) delete process.env.HTTP_ALLOW_PRIVATE_HOSTS;
    else process.env.HTTP_ALLOW_PRIVATE_HOSTS = savedAllow;
    await t?.close();
    await stub?.close();
    await orders?.close();
    await legacy?.close();
  });

  const session = async (variables: Record<string, string> = {}) => {
    const res = await t.call('POST', '/chat/sessions', { key: org.key, json: { agentId, variables } });
    expect(res.status, res.text).to.equal(201);
    return res.body.data.session.id as string;
  };
  const say = async (id: string, content: string) => {
    const res = await t.call('POST', `/chat/sessions/${id}/messages`, { key: org.key, json: { content } });
    expect(res.status, res.text).to.equal(200);
    return res.body.data;
  };

  it('lists the skill type with its config schema, and answers 400 naming the field for a bad config', async () => {
    const types = await t.call('GET', '/skill-types', { key: org.key });
    const mcp = types.body.data.items.find((x: { type: string }) => x.type === 'mcp');
    expect(mcp).to.include({ sendsData: true });
    expect(mcp.configSchema.properties.tools.items.properties.approval.enum).to.deep.equal(['auto', 'verified_caller_only', 'never']);
    const bad = async (config: Record<string, unknown>) => {
      const res = await t.call('POST', `/agents/${agentId}/skills`, { key: org.key, json: { name: 'bad_mcp', type: 'mcp', config } });
      expect(res.status, res.text).to.equal(400);
      expect(res.body.code).to.equal('validation_error');
      return res.body.errors.map((e: { field: string }) => e.field);
    };
    expect(await bad({ url: 'http://mcp.example.com/mcp', tools: [{ name: 'x' }] })).to.deep.equal(['config.url']);
    expect(await bad({ url: 'https://mcp.example.com/mcp', tools: [] })).to.deep.equal(['config.tools']);
    expect(await bad({ url: 'https://mcp.example.com/mcp', tools: [{ name: 'x' }, { name: 'x' }] })).to.deep.equal(['config.tools[1].name']);
    expect(await bad({ url: 'https://mcp.example.com/mcp', tools: [{ name: 'x', approval: 'sometimes' }] })).to.deep.equal(['config.tools.0.approval']);
    const unknownVar = await t.call('POST', `/agents/${agentId}/skills`, { key: org.key, json: { name: 'bad_mcp', type: 'mcp', config: { url: 'https://mcp.example.com/mcp', headers: { Authorization: 'Bearer {{vars.nope}}' }, tools: [{ name: 'x' }] } } });
    expect(unknownVar.status, unknownVar.text).to.equal(400);
    expect(unknownVar.body.errors[0].field).to.equal('config.headers.Authorization');
  });

  it('lists the tools as the conversation starts, offers the allow-listed ones with their JSON Schemas, and a model call reaches the server with its arguments and the secret header', async () => {
    handler = callThenAnswer('orders-lookup_order', { orderId: 'A-17', includeItems: true });
    const lists = () => orders.methods.filter((m) => m === 'tools/list').length;
    expect(lists()).to.equal(0);
    const id = await session();
    await until(async () => lists() === 1, 10_000, 'the tools listed at the start');
    stub.requests.length = 0;
    const before = orders.calls.length;
    const data = await say(id, 'Where is my order A-17?');
    expect(lists(), 'the turn reuses the listing (60 s cache)').to.equal(1);
    expect(data.receipt).to.not.have.property('unavailableSkills');

    const first = turnRequests()[0];
    const offered = toolNames(first);
    expect(offered).to.include.members(['orders-lookup_order', 'orders-refund_order', 'orders-broken', 'legacy-lookup_order']);
    expect(offered).to.not.include.members(['orders-delete_account', 'orders-unlisted_tool', 'orders-ghost_tool', 'orders']);
    const lookup = first.body.tools.find((x: { function: { name: string } }) => x.function.name === 'orders-lookup_order').function;
    expect(lookup.description).to.contain('Looks up an order by its id.');
    expect(lookup.parameters.type).to.equal('object');
    expect(lookup.parameters.properties.orderId).to.include({ type: 'string', description: 'The order id, e.g. A-17' });
    expect(lookup.parameters.required).to.deep.equal(['orderId']);

    expect(orders.calls.slice(before)).to.deep.equal([{ tool: 'lookup_order', args: { orderId: 'A-17', includeItems: true }, authorization: 'Bearer s3cret-token' }]);
    const entry = data.receipt.toolCalls[0];
    expect(entry).to.include({ id: 'call_mcp_1', skill: 'orders', type: 'mcp', tool: 'lookup_order', source: 'model' });
    expect(entry.error).to.equal(undefined);
    // The allow-list's output schema is the boundary: the server's internal note never reaches the model or the receipt.
    expect(entry.output).to.deep.equal({ orderId: 'A-17', status: 'shipped', items: 2 });
    expect(entry.durationMs).to.be.a('number');
    expect(data.receipt.latency.some((l: { stage: string; detail?: string }) => l.stage === 'tool' && l.detail === 'orders')).to.equal(true);
    const toolMessage = turnRequests()[1].body.messages.find((m: { role: string }) => m.role === 'tool');
    expect(JSON.parse(toolMessage.content)).to.deep.equal({ ok: true, output: { orderId: 'A-17', status: 'shipped', items: 2 } });
    expect(data.reply.content).to.match(/^Done/);
  });

  it('refuses a never tool the model calls anyway, and a tool failure is a receipt error, without failing the turn', async () => {
    handler = callThenAnswer('orders-delete_account', { accountId: 'acc_1' });
    const before = orders.calls.length;
    const refused = await say(await session(), 'Delete my account');
    expect(refused.receipt.toolCalls[0]).to.include({ skill: 'orders', type: 'mcp', tool: 'delete_account' });
    expect(refused.receipt.toolCalls[0].error).to.contain('approval: never');
    handler = callThenAnswer('orders-broken', {});
    const failed = await say(await session(), 'Try the broken thing');
    expect(failed.receipt.toolCalls[0].error).to.contain('the database is down');
    expect(orders.calls.slice(before).map((c) => c.tool)).to.deep.equal(['broken']);
  });

  it('refuses a verified_caller_only tool before caller verification, and runs it for a verified caller', async () => {
    handler = callThenAnswer('orders-refund_order', { orderId: 'A-17' });
    const before = orders.calls.length;
    const stranger = await say(await session({ email: 'someone@example.com', caller_verified: 'true' }), 'Refund A-17');
    expect(stranger.receipt.toolCalls[0]).to.include({ skill: 'orders', tool: 'refund_order' });
    expect(stranger.receipt.toolCalls[0].error).to.contain('runs only for a verified caller');
    expect(orders.calls.length).to.equal(before);
    const verified = await say(await session({ phone: known }), 'Refund A-17');
    expect(verified.receipt.toolCalls[0]).to.include({ skill: 'orders', tool: 'refund_order', output: 'refunded' });
    expect(orders.calls.slice(before)).to.deep.equal([{ tool: 'refund_order', args: { orderId: 'A-17' }, authorization: 'Bearer s3cret-token' }]);
  });

  it('calls a tool of an SSE-only server through the fallback', async () => {
    handler = callThenAnswer('legacy-lookup_order', { orderId: 'L-1' });
    const data = await say(await session(), 'Old system order L-1');
    expect(data.receipt.toolCalls[0]).to.include({ skill: 'legacy', type: 'mcp', tool: 'lookup_order' });
    expect(data.receipt.toolCalls[0].output).to.include({ orderId: 'L-1', status: 'shipped', internalNote: 'fragile, VIP' });
    expect(legacy.calls.at(-1)).to.deep.include({ tool: 'lookup_order', args: { orderId: 'L-1' } });
  });

  it('lists each server and its tools in the pre-publish report', async () => {
    const res = await t.call('GET', `/agents/${agentId}/prepublish-report`, { key: org.key });
    expect(res.status, res.text).to.equal(200);
    const report = res.body.data;
    const byName = Object.fromEntries(report.mcpServers.map((s: { skill: string }) => [s.skill, s]));
    expect(byName.orders).to.include({ url: orders.url, status: 'reachable', transport: 'streamable_http', error: null });
    expect(byName.orders.missingTools).to.deep.equal(['ghost_tool']);
    const tools = Object.fromEntries(byName.orders.tools.map((x: { name: string }) => [x.name, x]));
    expect(tools.lookup_order).to.deep.equal({ name: 'lookup_order', description: 'Looks up an order by its id.', allowed: true, approval: 'auto', toolName: 'orders-lookup_order' });
    expect(tools.refund_order).to.include({ allowed: true, approval: 'verified_caller_only', toolName: 'orders-refund_order' });
    expect(tools.delete_account).to.include({ allowed: true, approval: 'never', toolName: null });
    expect(tools.unlisted_tool).to.include({ allowed: false, approval: null, toolName: null });
    expect(byName.legacy).to.include({ status: 'reachable', transport: 'sse' });
    expect(report.willSay.join('\n')).to.contain('Skill orders: connects to the MCP server at 127.0.0.1').and.to.contain('refund_order only for a verified caller').and.to.contain('never delete_account');
    expect(report.warnings.map((w: { code: string }) => w.code)).to.include('mcp_tool_missing');
    expect(report.dataLeavingSystem.find((d: { skill: string }) => d.skill === 'orders')).to.include({ type: 'mcp', destination: new URL(orders.url).host });
    const sees = report.modelVisibility.find((v: { skill: string }) => v.skill === 'orders');
    expect(sees.modelSees).to.have.members(['lookup_order: orderId', 'lookup_order: status', 'lookup_order: items', 'refund_order: (entire output)', 'broken: (entire output)', 'ghost_tool: (entire output)']);
    expect(sees.outputSchema).to.equal(false);
  });

  it('an unreachable server: a clear report status, and a turn answered without its tools, never a 500', async () => {
    const closed = http.createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((r) => closed.close(() => r()));
    const a = await t.call('POST', '/agents', { key: org.key, json: { name: 'Offline desk', voiceId: 'voice_ava' } });
    const offlineId = a.body.data.id as string;
    const s = await t.call('POST', `/agents/${offlineId}/skills`, { key: org.key, json: { name: 'down', type: 'mcp', config: { url: `http://127.0.0.1:${port}/mcp`, tools: [{ name: 'lookup_order' }] } } });
    expect(s.status, s.text).to.equal(201);

    const report = (await t.call('GET', `/agents/${offlineId}/prepublish-report`, { key: org.key })).body.data;
    expect(report.mcpServers).to.have.length(1);
    expect(report.mcpServers[0]).to.include({ skill: 'down', status: 'unreachable', transport: null });
    expect(report.mcpServers[0].error).to.match(/^unreachable: .*could not be reached/);
    expect(report.warnings.find((w: { code: string }) => w.code === 'mcp_server_unreachable')).to.include({ field: 'skills[down].config.url' });
    expect(report.willSay.join('\n')).to.contain(`the MCP server at 127.0.0.1:${port} is unreachable`);

    handler = answerWith({ content: 'I can still help without the order system.' });
    stub.requests.length = 0;
    const started = await t.call('POST', '/chat/sessions', { key: org.key, json: { agentId: offlineId, draftMode: true } });
    expect(started.status, started.text).to.equal(201);
    const res = await t.call('POST', `/chat/sessions/${started.body.data.session.id}/messages`, { key: org.key, json: { content: 'Where is A-17?' } });
    expect(res.status, res.text).to.equal(200);
    expect(res.body.data.reply.content).to.equal('I can still help without the order system.');
    expect(stub.requests[0].body.tools ?? []).to.deep.equal([]);
    expect(res.body.data.receipt.unavailableSkills).to.have.length(1);
    expect(res.body.data.receipt.unavailableSkills[0].skill).to.equal('down');
    expect(res.body.data.receipt.unavailableSkills[0].error).to.match(/^unreachable: The MCP server at 127\.0\.0\.1:\d+ could not be reached/);
  });
});
