/**
 * The MCP client interface (Model Context Protocol specification 2025-06-18, "Transports" and "Server features:
 * Tools"; docs/api-notes.md "MCP skills"): list the tools of a remote MCP server and call one. The
 * implementation (./sdk.ts) speaks the official `@modelcontextprotocol/sdk` client over the Streamable HTTP
 * transport, falling back to the older HTTP+SSE transport, through the SSRF guard of providers/http (every
 * connection's address judged, `HTTP_ALLOW_PRIVATE_HOSTS` read at each connection).
 */
import { instrumentProvider } from '../../metrics';
import { SdkMcpProvider, type SdkMcpOptions } from './sdk';

/** An MCP server as a skill names it: its URL and the headers sent with every request (secrets already filled). */
export interface McpServerRef {
  /** `https://…` (or `http://…` to an allowed private host). */
  url: string;
  headers?: Record<string, string>;
  /** Cap on one whole operation (connect, initialize and the request), ms. */
  timeoutMs: number;
}

/** A tool the server lists (MCP "Tools": `tools/list`). */
export interface McpToolInfo {
  name: string;
  description: string | null;
  /** JSON Schema of the arguments (`{type: 'object', …}`). */
  inputSchema: Record<string, unknown>;
  /** JSON Schema of `structuredContent`, when the server declares one. */
  outputSchema?: Record<string, unknown>;
}

/** The transport a server answered on. */
export type McpTransportKind = 'streamable_http' | 'sse';

/** What `tools/call` answered (MCP "Tools": CallToolResult). */
export interface McpCallResult {
  /** The text parts of `content`, in order (other content types are left out). */
  texts: string[];
  /** `structuredContent`, when the server sent one. */
  structured?: unknown;
  /** The tool reported a failure (`isError`). */
  isError: boolean;
}

/** Stable failure codes of the MCP provider. */
export type McpErrorCode = 'ssrf_refused' | 'bad_url' | 'timeout' | 'unreachable' | 'protocol';

/** A failed MCP operation: the server could not be reached, refused, or answered outside the protocol. */
export class McpError extends Error {
  constructor(
    readonly code: McpErrorCode,
    message: string,
  ) {
    super(message);
    this.name = 'McpError';
  }
}

/** An MCP client. */
export interface McpProvider {
  /**
   * Every tool of the server (all pages of `tools/list`).
   * @throws McpError
   */
  listTools(server: McpServerRef): Promise<{ tools: McpToolInfo[]; transport: McpTransportKind }>;
  /**
   * Calls one tool with its arguments.
   * @throws McpError (a tool's own failure is `isError`, not a throw)
   */
  callTool(server: McpServerRef, name: string, args: Record<string, unknown>): Promise<McpCallResult>;
}

/** The SDK-based client, timed and traced as `provider.mcp.<method>` (metrics.ts `instrumentProvider`). */
export function createMcpProvider(opts: SdkMcpOptions = {}): McpProvider {
  return instrumentProvider('mcp', 'sdk', new SdkMcpProvider(opts));
}

let shared: McpProvider | undefined;

/** One client per process (what conversations and the pre-publish report use unless handed another). */
export function sharedMcpProvider(): McpProvider {
  return (shared ??= createMcpProvider());
}
