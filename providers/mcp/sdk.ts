/**
 * The MCP client on the official TypeScript SDK (`@modelcontextprotocol/sdk`; MCP specification 2025-06-18
 * "Transports": Streamable HTTP, and "Backwards compatibility" with the 2024-11-05 HTTP+SSE transport). Each
 * operation opens a session (initialize), makes its one request and closes it; a server that refuses the
 * Streamable HTTP POST with a 4xx is tried over HTTP+SSE, and the transport that worked is remembered per URL.
 *
 * Every request goes through undici with the SSRF guard of providers/http (`guardedConnector`: the name resolved
 * through the guard, the socket's peer address re-checked), so a skill cannot reach the service's own network
 * unless `HTTP_ALLOW_PRIVATE_HOSTS` lists it; the allow-list is read at each operation.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport, StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { SSEClientTransport, SseError } from '@modelcontextprotocol/sdk/client/sse.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { Agent, fetch as undiciFetch } from 'undici';
import { assertHostLiteralAllowed, HostUnresolvableError, parseAllowList, SsrfRefusedError, type AllowList } from '../../domain/net/guard';
import { plainHttpProblem } from '../../domain/net/plainHttp';
import { ALLOW_PRIVATE_ENV, guardedConnector } from '../http/index';
import { McpError, type McpCallResult, type McpProvider, type McpServerRef, type McpToolInfo, type McpTransportKind } from './index';

/** Options of the SDK-based client. */
export interface SdkMcpOptions {
  /** Non-public addresses permitted (default: HTTP_ALLOW_PRIVATE_HOSTS, read at each operation). */
  allow?: AllowList;
  /** Client name and version sent in `initialize` (MCP "Lifecycle": clientInfo). */
  clientInfo?: { name: string; version: string };
}

/** Pages of `tools/list` read at most (a server listing more is cut there). */
const MAX_TOOL_PAGES = 10;
/** URLs whose working transport is remembered. */
const TRANSPORT_MEMORY = 500;

function inCauses<T>(err: unknown, test: (e: any) => e is T): T | undefined {
  for (let e = err as any, i = 0; e && i < 6; e = e.cause, i++) if (test(e)) return e;
  return undefined;
}

/** The SDK's, undici's and the guard's failures as an McpError with a stable code. */
function toMcpError(err: unknown, url: URL, deadline: AbortSignal): McpError {
  if (err instanceof McpError) return err;
  const ssrf = inCauses(err, (e): e is SsrfRefusedError => e instanceof SsrfRefusedError);
  if (ssrf) return new McpError('ssrf_refused', ssrf.message);
  const dns = inCauses(err, (e): e is HostUnresolvableError => e instanceof HostUnresolvableError);
  if (dns) return new McpError('unreachable', dns.message);
  const e = err as { code?: unknown; message?: string; name?: string };
  if (deadline.aborted || e?.code === -32001 || e?.name === 'TimeoutError') return new McpError('timeout', `The MCP server at ${url.host} did not answer in time`);
  if (err instanceof StreamableHTTPError || err instanceof SseError) {
    return new McpError('unreachable', `The MCP server at ${url.host} answered ${typeof err.code === 'number' ? `HTTP ${err.code}` : 'with an error'}`);
  }
  const net = inCauses(err, (x): x is { code: string } => typeof x?.code === 'string' && /^(E[A-Z]+|UND_ERR_[A-Z_]+)$/.test(x.code));
  if (net || (err instanceof TypeError && /fetch failed/i.test(e.message ?? ''))) {
    return new McpError('unreachable', `The MCP server at ${url.host} could not be reached${net ? ` (${net.code})` : ''}`);
  }
  if (typeof e?.code === 'number') return new McpError('protocol', `The MCP server at ${url.host} answered an error: ${String(e.message ?? '').slice(0, 300)}`);
  return new McpError('unreachable', `The MCP server at ${url.host} failed: ${String(e?.message ?? err).slice(0, 300)}`);
}

/** Whether a Streamable HTTP failure means "not this transport" (MCP "Backwards compatibility": a 4xx to the POST). */
function wantsSse(err: unknown): boolean {
  const code = (err as { code?: unknown })?.code;
  return err instanceof StreamableHTTPError && typeof code === 'number' && code >= 400 && code < 500 && code !== 401 && code !== 403;
}

/** The SDK client: one short session per operation. */
export class SdkMcpProvider implements McpProvider {
  private readonly transports = new Map<string, McpTransportKind>();

  constructor(private readonly opts: SdkMcpOptions = {}) {}

  async listTools(server: McpServerRef): Promise<{ tools: McpToolInfo[]; transport: McpTransportKind }> {
    return this.session(server, async (client, transport, options) => {
      const tools: McpToolInfo[] = [];
      let cursor: string | undefined;
      for (let page = 0; page < MAX_TOOL_PAGES; page++) {
        const res = await client.listTools(cursor ? { cursor } : undefined, options);
        for (const t of res.tools) {
          tools.push({
            name: t.name,
            description: t.description ?? null,
            inputSchema: (t.inputSchema ?? { type: 'object' }) as Record<string, unknown>,
            ...(t.outputSchema ? { outputSchema: t.outputSchema as Record<string, unknown> } : {}),
          });
        }
        cursor = res.nextCursor;
        if (!cursor) break;
      }
      return { tools, transport };
    });
  }

  async callTool(server: McpServerRef, name: string, args: Record<string, unknown>): Promise<McpCallResult> {
    return this.session(server, async (client, _transport, options) => {
      const res = (await client.callTool({ name, arguments: args }, undefined, options)) as {
        content?: { type: string; text?: string }[];
        structuredContent?: unknown;
        isError?: boolean;
      };
      const texts = (res.content ?? []).filter((c) => c.type === 'text' && typeof c.text === 'string').map((c) => c.text!);
      return { texts, ...(res.structuredContent !== undefined ? { structured: res.structuredContent } : {}), isError: res.isError === true };
    });
  }

  /** Connects (Streamable HTTP, else HTTP+SSE), runs `fn`, closes; everything within `server.timeoutMs`. */
  private async session<T>(
    server: McpServerRef,
    fn: (client: Client, transport: McpTransportKind, options: { timeout: number; signal: AbortSignal }) => Promise<T>,
  ): Promise<T> {
    let url: URL;
    try {
      url = new URL(server.url);
    } catch {
      throw new McpError('bad_url', `"${server.url}" is not an absolute URL`);
    }
    if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new McpError('bad_url', 'MCP servers are reached over http or https only');
    if (url.username || url.password) throw new McpError('bad_url', 'URLs with credentials are not requested');
    const allow = this.opts.allow ?? parseAllowList(process.env[ALLOW_PRIVATE_ENV]);
    // Plain http only where a skill's config may name it (docs/configuration.md "Plain HTTP for local development").
    const plain = plainHttpProblem(url.href, { allow, production: process.env.NODE_ENV === 'production' });
    if (plain) throw new McpError('bad_url', `The MCP server URL ${plain}`);
    const deadline = AbortSignal.timeout(server.timeoutMs);
    try {
      assertHostLiteralAllowed(url.hostname, allow);
    } catch (err) {
      throw toMcpError(err, url, deadline);
    }
    const agent = new Agent({ connect: guardedConnector(allow, Math.min(server.timeoutMs, 10_000)), connections: 4 });
    const guardedFetch = ((input: string | URL, init?: RequestInit) =>
      undiciFetch(input, { ...(init as object), dispatcher: agent, signal: init?.signal ? AbortSignal.any([init.signal, deadline]) : deadline } as never)) as unknown as typeof fetch;
    const requestInit: RequestInit = { headers: { 'user-agent': 'agent-control-plane/1.0 (+mcp)', ...(server.headers ?? {}) } };
    const options = { timeout: server.timeoutMs, signal: deadline };
    const open = async (kind: McpTransportKind): Promise<{ client: Client; transport: Transport }> => {
      const transport: Transport =
        kind === 'sse' ? new SSEClientTransport(url, { fetch: guardedFetch, requestInit }) : new StreamableHTTPClientTransport(url, { fetch: guardedFetch, requestInit });
      const client = new Client(this.opts.clientInfo ?? { name: 'agent-control-plane', version: '1.0.0' });
      try {
        await client.connect(transport, options);
      } catch (err) {
        await client.close().catch(() => undefined);
        throw err;
      }
      return { client, transport };
    };
    let kind = this.transports.get(url.href) ?? 'streamable_http';
    let session: { client: Client; transport: Transport } | undefined;
    try {
      try {
        session = await open(kind);
      } catch (err) {
        if (kind !== 'streamable_http' || !wantsSse(err)) throw err;
        kind = 'sse';
        session = await open(kind);
      }
      this.remember(url.href, kind);
      return await fn(session.client, kind, options);
    } catch (err) {
      throw toMcpError(err, url, deadline);
    } finally {
      // A server that keeps sessions is told this one is over (MCP "Transports": session management, HTTP DELETE).
      if (session?.transport instanceof StreamableHTTPClientTransport) await session.transport.terminateSession().catch(() => undefined);
      await session?.client.close().catch(() => undefined);
      await agent.close().catch(() => undefined);
    }
  }

  private remember(url: string, kind: McpTransportKind): void {
    if (this.transports.get(url) === kind) return;
    if (this.transports.size >= TRANSPORT_MEMORY) this.transports.delete(this.transports.keys().next().value as string);
    this.transports.set(url, kind);
  }
}
