/**
 * Outbound requests made by skills (`http_request`, `book_appointment`; docs/api-notes.md "Conversations"): any
 * method with a JSON body, through the same SSRF guard as every fetch (./index.ts `guardedConnector`: the
 * name is resolved through the guard and the socket's peer address re-checked), no redirects followed, a
 * per-request time cap and a response size cap.
 */
import { Agent, request, type Dispatcher } from 'undici';
import { assertHostLiteralAllowed, parseAllowList, type AllowList } from '../../domain/net/guard';
import { isListedHost } from '../../domain/net/plainHttp';
import { ALLOW_PRIVATE_ENV, guardedConnector, HttpFetchError, readCappedBody, toFetchError } from './index';

/** One request. */
export interface SkillRequest {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  url: string;
  headers?: Record<string, string>;
  /** Sent as JSON (POST/PUT/PATCH/DELETE) or as query parameters (GET). */
  json?: Record<string, unknown>;
  /** Whole-request cap, ms (500..30,000). */
  timeoutMs: number;
}

/** The answer: status and body (parsed JSON when it is JSON, else text), at most `maxBytes`. */
export interface SkillResponse {
  status: number;
  body: unknown;
}

/** A client for skill requests; `close()` releases pooled connections. */
export interface SkillHttpClient {
  /** @throws HttpFetchError (`ssrf_refused`, `timeout`, `network`, `too_large`, `bad_url`) */
  send(req: SkillRequest): Promise<SkillResponse>;
  close(): Promise<void>;
}

/**
 * Creates a client. Only `https:` URLs are requested, as skill configurations require, and plain `http:`
 * to an address of `opts.allow` outside production (local development; domain/net/plainHttp.ts).
 * @param opts.allow non-public addresses permitted, and the only ones plain http may reach (default HTTP_ALLOW_PRIVATE_HOSTS)
 * @param opts.production refuse plain http altogether (default NODE_ENV=production)
 * @param opts.ca extra trusted CA certificates (PEM)
 * @param opts.maxBytes largest response read (default 1 MiB)
 */
export function createSkillHttpClient(opts: { allow?: AllowList; ca?: string | Buffer; maxBytes?: number; production?: boolean } = {}): SkillHttpClient {
  const allow = opts.allow ?? parseAllowList(process.env[ALLOW_PRIVATE_ENV]);
  const production = opts.production ?? process.env.NODE_ENV === 'production';
  const maxBytes = opts.maxBytes ?? 1024 * 1024;
  const agent: Dispatcher = new Agent({ connect: guardedConnector(allow, 10_000, { ca: opts.ca }), connections: 32 });

  async function send(req: SkillRequest): Promise<SkillResponse> {
    let url: URL;
    try {
      url = new URL(req.url);
    } catch {
      throw new HttpFetchError('bad_url', `"${req.url}" is not an absolute URL`, false);
    }
    // Plain http only to a listed host outside production (domain/net/plainHttp.ts): a skill stored under
    // another configuration, or an address the list no longer holds, is refused here too.
    if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new HttpFetchError('bad_url', 'Skills call https URLs only', false);
    if (url.protocol === 'http:' && (production || !isListedHost(url.hostname, allow))) {
      throw new HttpFetchError('bad_url', production ? 'Skills call https URLs only (plain http is refused with NODE_ENV=production)' : `Skills call https URLs only; plain http only to an address listed in ${ALLOW_PRIVATE_ENV}`, false);
    }
    if (url.username || url.password) throw new HttpFetchError('bad_url', 'URLs with credentials are not requested', false);
    assertHostLiteralAllowed(url.hostname, allow);
    let body: string | undefined;
    if (req.json && req.method === 'GET') for (const [k, v] of Object.entries(req.json)) url.searchParams.set(k, String(v));
    else if (req.json) body = JSON.stringify(req.json);
    let res: Dispatcher.ResponseData;
    try {
      res = await request(url, {
        dispatcher: agent,
        method: req.method,
        headers: { ...(req.headers ?? {}), 'user-agent': 'agent-control-plane/1.0 (+skill)', accept: 'application/json', ...(body ? { 'content-type': 'application/json' } : {}) },
        body,
        signal: AbortSignal.timeout(req.timeoutMs),
      });
    } catch (err) {
      throw toFetchError(err, url.toString());
    }
    const text = (await readCappedBody(res.body, maxBytes, url.toString())).toString('utf8');
    const type = String(res.headers['content-type'] ?? '');
    let parsed: unknown = text;
    if (type.includes('json')) {
      try {
        parsed = JSON.parse(text);
      } catch {
        parsed = text;
      }
    }
    return { status: res.statusCode, body: parsed };
  }
  return { send, close: () => agent.close() };
}
