/**
 * Loopback MCP servers built with the official SDK (`McpServer`), for tests of `mcp` skills: one speaking the
 * Streamable HTTP transport (stateless: a server and transport per request, MCP specification 2025-06-18
 * "Transports"), one speaking only the older HTTP+SSE transport (2024-11-05: `GET /sse` opens the stream, messages
 * are POSTed to `/messages?sessionId=…`, and a POST to `/sse` answers 405). Each records the JSON-RPC methods it
 * received with their headers, and every tool call with its arguments.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { SSEServerTransport } from '@modelcontextprotocol/sdk/server/sse.js';
import { z } from 'zod';

/** A tool call the server received. */
export interface ReceivedCall {
  tool: string;
  args: Record<string, unknown>;
  /** The Authorization header of the request that carried it (Streamable HTTP) or of the stream (SSE). */
  authorization: string | undefined;
}

/** A running test server. */
export interface TestMcpServer {
  /** The URL a skill names: `http://127.0.0.1:<port>/mcp` (Streamable HTTP) or `…/sse` (SSE only). */
  url: string;
  /** JSON-RPC methods received, in order (`initialize`, `tools/list`, `tools/call`, …). */
  methods: string[];
  calls: ReceivedCall[];
  close(): Promise<void>;
}

/** The tools both servers offer: `lookup_order`, `refund_order`, `delete_account`, `unlisted_tool`, and a failing `broken`. */
function buildServer(calls: ReceivedCall[], authorization: () => string | undefined): McpServer {
  const server = new McpServer({ name: 'test-orders', version: '1.0.0' });
  const record = (tool: string, args: Record<string, unknown>) => calls.push({ tool, args, authorization: authorization() });
  server.registerTool(
    'lookup_order',
    { description: 'Looks up an order by its id.', inputSchema: { orderId: z.string().describe('The order id, e.g. A-17'), includeItems: z.boolean().optional() } },
    async (args) => {
      record('lookup_order', args);
      return { content: [{ type: 'text', text: JSON.stringify({ orderId: args.orderId, status: 'shipped', items: args.includeItems ? 2 : undefined, internalNote: 'fragile, VIP' }) }] };
    },
  );
  server.registerTool('refund_order', { description: 'Refunds an order.', inputSchema: { orderId: z.string() } }, async (args) => {
    record('refund_order', args);
    return { content: [{ type: 'text', text: 'refunded' }] };
  });
  server.registerTool('delete_account', { description: 'Deletes the account.', inputSchema: { accountId: z.string() } }, async (args) => {
    record('delete_account', args);
    return { content: [{ type: 'text', text: 'deleted' }] };
  });
  server.registerTool('unlisted_tool', { description: 'Not in any allow-list.', inputSchema: {} }, async (args) => {
    record('unlisted_tool', args);
    return { content: [{ type: 'text', text: 'ran' }] };
  });
  server.registerTool('broken', { description: 'Always fails.', inputSchema: {} }, async (args) => {
    record('broken', args);
    return { content: [{ type: 'text', text: 'the database is down' }], isError: true };
  });
  return server;
}

async function readBody(req: http.IncomingMessage): Promise<unknown> {
  const parts: Buffer[] = [];
  for await (const c of req) parts.push(c as Buffer);
  const text = Buffer.concat(parts).toString('utf8');
  try {
    return text ? JSON.parse(text) : undefined;
  } catch {
    return undefined;
  }
}

const methodsOf = (body: unknown): string[] => (Array.isArray(body) ? body : [body]).map((m) => (m as { method?: string })?.method).filter((m): m is string => !!m);

async function listen(server: http.Server, path: string, methods: string[], calls: ReceivedCall[], extra: () => Promise<void> = async () => undefined): Promise<TestMcpServer> {
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}${path}`,
    methods,
    calls,
    close: async () => {
      await extra();
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}

/** Starts a Streamable HTTP MCP server on 127.0.0.1 (stateless), at `/mcp`. */
export async function startStreamableMcpServer(): Promise<TestMcpServer> {
  const methods: string[] = [];
  const calls: ReceivedCall[] = [];
  const server = http.createServer(async (req, res) => {
    if (!req.url?.startsWith('/mcp')) {
      res.writeHead(404).end();
      return;
    }
    const body = req.method === 'POST' ? await readBody(req) : undefined;
    methods.push(...methodsOf(body));
    if (req.method !== 'POST') {
      // Stateless: no standalone stream, no session to delete (MCP "Transports": 405 when not offered).
      res.writeHead(405, { allow: 'POST' }).end();
      return;
    }
    const auth = req.headers.authorization;
    const mcp = buildServer(calls, () => auth);
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
    res.on('close', () => {
      void transport.close();
      void mcp.close();
    });
    await mcp.connect(transport);
    await transport.handleRequest(req, res, body);
  });
  return listen(server, '/mcp', methods, calls);
}

/** Starts an MCP server speaking only HTTP+SSE on 127.0.0.1, its stream at `/sse`. */
export async function startSseOnlyMcpServer(): Promise<TestMcpServer> {
  const methods: string[] = [];
  const calls: ReceivedCall[] = [];
  const sessions = new Map<string, { transport: SSEServerTransport; server: McpServer }>();
  const server = http.createServer(async (req, res) => {
    const url = new URL(req.url ?? '/', 'http://localhost');
    if (url.pathname === '/sse' && req.method === 'GET') {
      const auth = req.headers.authorization;
      const transport = new SSEServerTransport('/messages', res);
      const mcp = buildServer(calls, () => auth);
      sessions.set(transport.sessionId, { transport, server: mcp });
      res.on('close', () => sessions.delete(transport.sessionId));
      await mcp.connect(transport);
      return;
    }
    if (url.pathname === '/messages' && req.method === 'POST') {
      const session = sessions.get(url.searchParams.get('sessionId') ?? '');
      const body = await readBody(req);
      methods.push(...methodsOf(body));
      if (!session) {
        res.writeHead(404).end('no session');
        return;
      }
      await session.transport.handlePostMessage(req, res, body);
      return;
    }
    // The Streamable HTTP POST a newer client tries first (MCP "Backwards compatibility").
    res.writeHead(req.url?.startsWith('/sse') ? 405 : 404).end();
  });
  return listen(server, '/sse', methods, calls, async () => {
    for (const s of sessions.values()) await s.server.close().catch(() => undefined);
  });
}
