/**
 * The one outbound HTTP helper (DESIGN.md "Providers": `http`): GET a caller-supplied URL with the SSRF
 * guard of ./guard.ts on every hop, redirects followed by hand (each Location re-checked), a size cap
 * enforced while streaming and time caps on connect, headers, body and the whole fetch.
 *
 * Errors are HttpFetchError with a stable `code` and a `retryable` flag, so activities can turn them
 * into retryable failures (timeouts, 5xx, 429, connection errors, a resolver that could not answer) or
 * non-retryable ones (4xx, SSRF refusals, a host name DNS says does not exist, bad URLs, oversize bodies).
 */
import { Agent, buildConnector, request, type Dispatcher } from 'undici';
import type { Socket } from 'node:net';
import { assertHostLiteralAllowed, checkAddress, guardedLookup, HostUnresolvableError, parseAllowList, SsrfRefusedError, type AllowList } from '../../domain/net/guard';

export { parseAllowList, checkAddress, SsrfRefusedError, type AllowList } from '../../domain/net/guard';

/** Environment variable listing IPs/CIDRs the guard permits despite being non-public (dev and tests). */
export const ALLOW_PRIVATE_ENV = 'HTTP_ALLOW_PRIVATE_HOSTS';

/** Stable failure codes of {@link HttpClient.get}. */
export type HttpFetchErrorCode =
  | 'bad_url'
  | 'ssrf_refused'
  | 'dns_unresolvable'
  | 'too_many_redirects'
  | 'http_status'
  | 'too_large'
  | 'timeout'
  | 'network';

/** A failed fetch; `retryable` says whether trying again later may succeed. */
export class HttpFetchError extends Error {
  constructor(
    readonly code: HttpFetchErrorCode,
    message: string,
    readonly retryable: boolean,
    readonly status?: number,
  ) {
    super(message);
    this.name = 'HttpFetchError';
  }
}

/** Limits of one client; every field has a default. */
export interface HttpClientOptions {
  /** Non-public addresses permitted anyway (default: parsed from HTTP_ALLOW_PRIVATE_HOSTS). */
  allow?: AllowList;
  /** Largest body accepted, bytes (default 25 MiB, the upload limit). */
  maxBytes?: number;
  /** Redirect hops followed (default 5). */
  maxRedirects?: number;
  /** TCP/TLS connect timeout, ms (default 10 000). */
  connectTimeoutMs?: number;
  /** Time to the response headers, ms (default 15 000). */
  headersTimeoutMs?: number;
  /** Largest idle gap while reading the body, ms (default 15 000). */
  bodyTimeoutMs?: number;
  /** Cap on the whole fetch including redirects, ms (default 60 000). */
  totalTimeoutMs?: number;
  /** User-Agent header. */
  userAgent?: string;
}

/** A fetched document. */
export interface HttpResponse {
  /** URL after redirects. */
  url: string;
  status: number;
  /** Media type without parameters, lowercased (e.g. `text/html`), or null when absent. */
  contentType: string | null;
  /** The full Content-Type header (charset included), or null. */
  contentTypeHeader: string | null;
  /** Empty for a 304 Not Modified. */
  body: Buffer;
  /** The ETag validator (RFC 9110 §8.8.3), or null. */
  etag?: string | null;
  /** The Last-Modified validator (RFC 9110 §8.8.2), or null. */
  lastModified?: string | null;
}

/** Options of {@link HttpClient.get}. */
export interface HttpGetOptions {
  /** Accept header. */
  accept?: string;
  /**
   * Validators of a copy already held (RFC 9110 §13.1): sent as If-None-Match / If-Modified-Since; a 304 answer is
   * then returned (status 304, empty body) instead of thrown.
   */
  conditional?: { etag?: string | null; lastModified?: string | null };
}

/** GET-only client with the SSRF guard; `close()` releases pooled connections. */
export interface HttpClient {
  /**
   * Fetches `url` (http/https only).
   * @param opts.accept Accept header; opts.conditional validators for a conditional GET (304 answered, not thrown)
   * @throws HttpFetchError
   */
  get(url: string, opts?: HttpGetOptions): Promise<HttpResponse>;
  close(): Promise<void>;
}

const REDIRECTS = new Set([301, 302, 303, 307, 308]);

/**
 * undici connector that resolves through the SSRF guard and re-checks the socket's actual peer address
 * (also used by the webhook sender and the skill client). @param timeoutMs connect timeout
 * @param tls.ca extra trusted certificate authorities (PEM), e.g. a private CA of internal endpoints
 */
export function guardedConnector(allow: AllowList, timeoutMs: number, tls: { ca?: string | Buffer } = {}): buildConnector.connector {
  const base = buildConnector({ lookup: guardedLookup(allow) as never, timeout: timeoutMs, ...(tls.ca ? { ca: tls.ca } : {}) });
  return (options, callback) => {
    base(options, (err, socket) => {
      if (err || !socket) return callback(err ?? new Error('connect failed'), null);
      const remote = (socket as Socket).remoteAddress;
      const verdict = remote ? checkAddress(remote, allow) : { allowed: false as const, reason: 'the peer address is unknown' };
      if (!verdict.allowed) {
        socket.destroy();
        return callback(new SsrfRefusedError(options.hostname, verdict.reason), null);
      }
      callback(null, socket);
    });
  };
}

/** Abandons a response body (closing the connection) without an unhandled 'error' event. */
function discard(body: Dispatcher.ResponseData['body']): void {
  body.on('error', () => undefined);
  body.destroy();
}

function findInCauses<T>(err: unknown, type: new (...args: any[]) => T): T | undefined {
  for (let e = err as { cause?: unknown } | undefined, i = 0; e && i < 5; e = e.cause as never, i++) {
    if (e instanceof type) return e;
  }
  return undefined;
}

/**
 * Reads a response body up to `maxBytes` (abandoning the connection beyond it).
 * @throws HttpFetchError `too_large`, or the transport error mapped by toFetchError
 */
export async function readCappedBody(body: Dispatcher.ResponseData['body'], maxBytes: number, url: string): Promise<Buffer> {
  const parts: Buffer[] = [];
  let total = 0;
  try {
    for await (const chunk of body) {
      total += (chunk as Buffer).length;
      if (total > maxBytes) {
        discard(body);
        throw new HttpFetchError('too_large', `${url} is larger than the ${maxBytes}-byte limit`, false);
      }
      parts.push(chunk as Buffer);
    }
  } catch (err) {
    throw toFetchError(err, url);
  }
  return Buffer.concat(parts, total);
}

/** Maps transport errors (undici, net, abort, SSRF refusals) to HttpFetchError. */
export function toFetchError(err: unknown, url: string): HttpFetchError {
  if (err instanceof HttpFetchError) return err;
  const ssrf = findInCauses(err, SsrfRefusedError);
  if (ssrf) return new HttpFetchError('ssrf_refused', ssrf.message, false);
  const unresolvable = findInCauses(err, HostUnresolvableError);
  if (unresolvable) return new HttpFetchError('dns_unresolvable', unresolvable.message, false);
  const e = err as { name?: string; code?: string; message?: string };
  const timeoutCodes = ['UND_ERR_CONNECT_TIMEOUT', 'UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT', 'ETIMEDOUT'];
  if (e?.name === 'TimeoutError' || e?.name === 'AbortError' || timeoutCodes.includes(e?.code ?? '')) {
    return new HttpFetchError('timeout', `Fetching ${url} timed out`, true);
  }
  return new HttpFetchError('network', `Fetching ${url} failed: ${e?.code ?? e?.message ?? String(err)}`, true);
}

/**
 * Creates a guarded client.
 * @throws Error when HTTP_ALLOW_PRIVATE_HOSTS is malformed (and no `allow` is given)
 */
export function createHttpClient(opts: HttpClientOptions = {}): HttpClient {
  const allow = opts.allow ?? parseAllowList(process.env[ALLOW_PRIVATE_ENV]);
  const maxBytes = opts.maxBytes ?? 25 * 1024 * 1024;
  const maxRedirects = opts.maxRedirects ?? 5;
  const totalTimeoutMs = opts.totalTimeoutMs ?? 60_000;
  const agent: Dispatcher = new Agent({
    connect: guardedConnector(allow, opts.connectTimeoutMs ?? 10_000),
    headersTimeout: opts.headersTimeoutMs ?? 15_000,
    bodyTimeout: opts.bodyTimeoutMs ?? 15_000,
    connections: 16,
  });
  const userAgent = opts.userAgent ?? 'agent-control-plane/1.0 (+knowledge ingestion)';

  async function get(url: string, getOpts: HttpGetOptions = {}): Promise<HttpResponse> {
    const conditionalHeaders: Record<string, string> = {};
    if (getOpts.conditional?.etag) conditionalHeaders['if-none-match'] = getOpts.conditional.etag;
    if (getOpts.conditional?.lastModified) conditionalHeaders['if-modified-since'] = getOpts.conditional.lastModified;
    const signal = AbortSignal.timeout(totalTimeoutMs);
    let current: URL;
    try {
      current = new URL(url);
    } catch {
      throw new HttpFetchError('bad_url', `"${url}" is not an absolute URL`, false);
    }
    for (let hop = 0; ; hop++) {
      if (current.protocol !== 'http:' && current.protocol !== 'https:') {
        throw new HttpFetchError('bad_url', `Only http and https URLs can be fetched (got ${current.protocol})`, false);
      }
      if (current.username || current.password) {
        throw new HttpFetchError('bad_url', 'URLs with credentials are not fetched', false);
      }
      try {
        assertHostLiteralAllowed(current.hostname, allow);
      } catch (err) {
        throw toFetchError(err, current.toString());
      }
      let res: Dispatcher.ResponseData;
      try {
        res = await request(current, {
          dispatcher: agent,
          method: 'GET',
          headers: { 'user-agent': userAgent, accept: getOpts.accept ?? '*/*', ...conditionalHeaders },
          signal,
        });
      } catch (err) {
        throw toFetchError(err, current.toString());
      }
      const status = res.statusCode;
      if (REDIRECTS.has(status)) {
        await res.body.dump().catch(() => undefined);
        const location = res.headers.location;
        const loc = Array.isArray(location) ? location[0] : location;
        if (!loc) throw new HttpFetchError('http_status', `${current} answered ${status} without a Location`, false, status);
        if (hop >= maxRedirects) throw new HttpFetchError('too_many_redirects', `More than ${maxRedirects} redirects from ${url}`, false, status);
        try {
          current = new URL(loc, current);
        } catch {
          throw new HttpFetchError('bad_url', `Redirect to an invalid URL "${loc}"`, false, status);
        }
        continue;
      }
      const header1 = (name: string): string | null => {
        const v = res.headers[name];
        return (Array.isArray(v) ? v[0] : v) ?? null;
      };
      if (status === 304 && getOpts.conditional) {
        await res.body.dump().catch(() => undefined);
        const type = header1('content-type');
        return { url: current.toString(), status, contentType: null, contentTypeHeader: type, body: Buffer.alloc(0), etag: header1('etag'), lastModified: header1('last-modified') };
      }
      if (status < 200 || status >= 300) {
        await res.body.dump().catch(() => undefined);
        const retryable = status >= 500 || status === 429 || status === 408;
        throw new HttpFetchError('http_status', `${current} answered HTTP ${status}`, retryable, status);
      }
      const header = res.headers['content-type'];
      const contentTypeHeader = (Array.isArray(header) ? header[0] : header) ?? null;
      const declared = Number(res.headers['content-length']);
      if (Number.isFinite(declared) && declared > maxBytes) {
        discard(res.body);
        throw new HttpFetchError('too_large', `${current} is ${declared} bytes; the limit is ${maxBytes}`, false);
      }
      const bodyBytes = await readCappedBody(res.body, maxBytes, current.toString());
      return {
        url: current.toString(),
        status,
        contentType: contentTypeHeader ? contentTypeHeader.split(';')[0].trim().toLowerCase() || null : null,
        contentTypeHeader,
        body: bodyBytes,
        etag: header1('etag'),
        lastModified: header1('last-modified'),
      };
    }
  }

  return { get, close: () => agent.close() };
}
