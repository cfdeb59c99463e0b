/**
 * The SDK-based MCP client (providers/mcp) against loopback servers built with the same SDK: tools listed and
 * called over Streamable HTTP, the fallback to HTTP+SSE, headers sent, plain http and the SSRF guard with
 * and without HTTP_ALLOW_PRIVATE_HOSTS, an unreachable server and a slow one failing with stable codes; and the tool-list
 * cache of services/conversations/mcp.ts reused for a minute, measured on a clock the test moves.
 */
import { expect } from 'chai';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createMcpProvider, McpError } from '../../providers/mcp';
import { parseAllowList } from '../../domain/net/guard';
import { McpToolCatalog } from '../../services/conversations/mcp';
import { startSseOnlyMcpServer, startStreamableMcpServer, type TestMcpServer } from '../helpers/mcp';
import { failure } from '../helpers/llm';

describe('MCP client (providers/mcp)', () => {
  let streamable: TestMcpServer;
  let sse: TestMcpServer;
  const loopback = createMcpProvider({ allow: parseAllowList('127.0.0.1') });

  before(async () => {
    streamable = await startStreamableMcpServer();
    sse = await startSseOnlyMcpServer();
  });
  after(async () => {
    await streamable?.close();
    await sse?.close();
  });

  it('lists the tools of a Streamable HTTP server with their JSON Schemas and calls one with its arguments and headers', async () => {
    const server = { url: streamable.url, headers: { authorization: 'Bearer t0ken' }, timeoutMs: 5000 };
    const { tools, transport } = await loopback.listTools(server);
    expect(transport).to.equal('streamable_http');
    expect(tools.map((t) => t.name)).to.include.members(['lookup_order', 'refund_order', 'delete_account']);
    const lookup = tools.find((t) => t.name === 'lookup_order')!;
    expect(lookup.description).to.equal('Looks up an order by its id.');
    expect(lookup.inputSchema).to.deep.include({ type: 'object' });
    expect((lookup.inputSchema.properties as Record<string, { type: string }>).orderId.type).to.equal('string');
    const result = await loopback.callTool(server, 'lookup_order', { orderId: 'A-17', includeItems: true });
    expect(result.isError).to.equal(false);
    expect(JSON.parse(result.texts[0])).to.include({ orderId: 'A-17', status: 'shipped', items: 2 });
    expect(streamable.calls.at(-1)).to.deep.equal({ tool: 'lookup_order', args: { orderId: 'A-17', includeItems: true }, authorization: 'Bearer t0ken' });
  });

  it('falls back to HTTP+SSE when the server answers the Streamable HTTP POST with 405, and remembers it', async () => {
    const server = { url: sse.url, headers: { authorization: 'Bearer legacy' }, timeoutMs: 5000 };
    const { tools, transport } = await loopback.listTools(server);
    expect(transport).to.equal('sse');
    expect(tools.map((t) => t.name)).to.include('lookup_order');
    const before = sse.methods.length;
    const result = await loopback.callTool(server, 'refund_order', { orderId: 'B-2' });
    expect(result.texts).to.deep.equal(['refunded']);
    expect(sse.calls.at(-1)).to.deep.equal({ tool: 'refund_order', args: { orderId: 'B-2' }, authorization: 'Bearer legacy' });
    expect(sse.methods.slice(before)).to.deep.equal(['initialize', 'notifications/initialized', 'tools/call']);
  });

  it('reports a tool failure as isError, not as a throw', async () => {
    const result = await loopback.callTool({ url: streamable.url, timeoutMs: 5000 }, 'broken', {});
    expect(result).to.deep.include({ isError: true, texts: ['the database is down'] });
  });

  it('refuses a loopback server unless HTTP_ALLOW_PRIVATE_HOSTS lists it, read at each operation', async () => {
    const saved = process.env.HTTP_ALLOW_PRIVATE_HOSTS;
    const fromEnv = createMcpProvider();
    try {
      delete process.env.HTTP_ALLOW_PRIVATE_HOSTS;
      // Plain http is not even tried to an address the list does not hold; https is, and the SSRF guard refuses it.
      const plain = (await failure(fromEnv.listTools({ url: streamable.url, timeoutMs: 5000 }))) as McpError;
      expect(plain).to.be.instanceOf(McpError);
      expect(plain.code).to.equal('bad_url');
      expect(plain.message).to.contain('HTTP_ALLOW_PRIVATE_HOSTS');
      const guarded = (await failure(fromEnv.listTools({ url: streamable.url.replace('http:', 'https:'), timeoutMs: 5000 }))) as McpError;
      expect(guarded.code).to.equal('ssrf_refused');
      expect(guarded.message).to.contain('loopback');
      process.env.HTTP_ALLOW_PRIVATE_HOSTS = '127.0.0.1';
      expect((await fromEnv.listTools({ url: streamable.url, timeoutMs: 5000 })).tools.length).to.be.greaterThan(0);
    } finally {
      if (saved === undefined) delete process.env.HTTP_ALLOW_PRIVATE_HOSTS;
      else process.env.HTTP_ALLOW_PRIVATE_HOSTS = saved;
    }
  });

  it('fails with unreachable for a closed port and timeout for a server that never answers', async () => {
    const closed = http.createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((r) => closed.close(() => r()));
    const down = (await failure(loopback.listTools({ url: `http://127.0.0.1:${port}/mcp`, timeoutMs: 5000 }))) as McpError;
    expect(down.code).to.equal('unreachable');
    expect(down.message).to.contain(`127.0.0.1:${port}`);

    const silent = http.createServer(() => undefined);
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
    try {
      const started = Date.now();
      const slow = (await failure(loopback.listTools({ url: `http://127.0.0.1:${(silent.address() as AddressInfo).port}/mcp`, timeoutMs: 500 }))) as McpError;
      expect(slow.code).to.equal('timeout');
      expect(Date.now() - started).to.be.lessThan(4000);
    } finally {
      silent.closeAllConnections();
      await new Promise<void>((r) => silent.close(() => r()));
    }
  });

  it('reuses a listing per server URL and headers for 60 s, on a clock the test moves', async () => {
    let now = 1_000_000;
    const catalog = new McpToolCatalog(loopback, () => now);
    const server = { url: streamable.url, headers: { authorization: 'Bearer a' }, timeoutMs: 5000 };
    const lists = () => streamable.methods.filter((m) => m === 'tools/list').length;
    const before = lists();
    await Promise.all([catalog.list(server), catalog.list(server)]);
    expect(lists() - before, 'concurrent listings share one request').to.equal(1);
    now += 59_000;
    await catalog.list(server);
    expect(lists() - before).to.equal(1);
    await catalog.list({ ...server, headers: { authorization: 'Bearer b' } });
    expect(lists() - before, 'other headers are another entry').to.equal(2);
    now += 2_000;
    await catalog.list(server);
    expect(lists() - before, 'listed again after 60 s').to.equal(3);
  });
});
