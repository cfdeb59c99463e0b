/**
 * Temporal's HTTP API on the dev server: the `google.api.http` bindings of the gRPC services
 * (routes.ts) in front of the very same method implementations the gRPC server runs, with the
 * proto3 JSON mapping of json.ts. Errors are shaped as the real server's HTTP API (grpc-gateway)
 * shapes them: the HTTP status mapped from the gRPC code and a `google.rpc.Status` body
 * `{ code, message, details }` whose details are `Any` values (`@type` plus fields).
 */
import { EventEmitter } from 'node:events';
import type * as http from 'node:http';
import * as grpc from '@grpc/grpc-js';
import { status as Code } from '@grpc/grpc-js';
import { fromHttpJson, PbReflType, setFromUrl, toHttpJson } from './json';
import { HttpRoute, httpRoutes, matchRoute } from './routes';

// eslint-disable-next-line @typescript-eslint/no-require-imports
const root: { lookupType(name: string): PbReflType } = require('@temporalio/proto/protos/json-module');

/** One gRPC service as served: its fully qualified name and its grpc-js implementation object. */
export interface GatewayService {
  name: string;
  implementation: grpc.UntypedServiceImplementation;
}

/** HTTP status of each gRPC code, as grpc-gateway's `HTTPStatusFromCode`. */
const HTTP_STATUS: Record<number, number> = {
  [Code.OK]: 200,
  [Code.CANCELLED]: 499,
  [Code.UNKNOWN]: 500,
  [Code.INVALID_ARGUMENT]: 400,
  [Code.DEADLINE_EXCEEDED]: 504,
  [Code.NOT_FOUND]: 404,
  [Code.ALREADY_EXISTS]: 409,
  [Code.PERMISSION_DENIED]: 403,
  [Code.UNAUTHENTICATED]: 401,
  [Code.RESOURCE_EXHAUSTED]: 429,
  [Code.FAILED_PRECONDITION]: 400,
  [Code.ABORTED]: 409,
  [Code.OUT_OF_RANGE]: 400,
  [Code.UNIMPLEMENTED]: 501,
  [Code.INTERNAL]: 500,
  [Code.UNAVAILABLE]: 503,
  [Code.DATA_LOSS]: 500,
};

/** Largest request body accepted, in bytes (the gRPC server's receive limit). */
const MAX_BODY_BYTES = 128 * 1024 * 1024;

/** A gRPC-style failure: code, message and optional `grpc-status-details-bin` metadata. */
interface RpcError {
  code: number;
  details?: string;
  message?: string;
  metadata?: grpc.Metadata;
}

/** An HTTP JSON request handler serving the HTTP API; answers every request it is given. */
export type HttpApiHandler = (req: http.IncomingMessage, res: http.ServerResponse, opts?: { payloadShorthand?: boolean; nullPayloadAsJson?: boolean }) => Promise<void>;

function send(res: http.ServerResponse, status: number, body: unknown, pretty: boolean): void {
  const text = JSON.stringify(body, null, pretty ? 2 : undefined);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

/** A `google.rpc.Status` JSON body of an error; details decoded from `grpc-status-details-bin`. */
function errorBody(err: RpcError, shorthand: boolean): Record<string, unknown> {
  const message = err.details ?? err.message ?? '';
  const details: unknown[] = [];
  const bin = err.metadata?.get('grpc-status-details-bin')[0];
  if (bin instanceof Buffer) {
    const statusType = root.lookupType('google.rpc.Status');
    const st = statusType.toObject(statusType.decode(bin), { bytes: Buffer }) as { details?: Array<{ typeUrl?: string; type_url?: string; value?: Buffer }> };
    for (const any of st.details ?? []) {
      const url = any.typeUrl ?? any.type_url ?? '';
      try {
        const t = root.lookupType(url.slice(url.lastIndexOf('/') + 1));
        details.push({ '@type': url, ...toHttpJson(t, t.decode(any.value ?? Buffer.alloc(0)), { payloadShorthand: shorthand }) });
      } catch {
        details.push({ '@type': url, value: (any.value ?? Buffer.alloc(0)).toString('base64') });
      }
    }
  }
  return { code: err.code, message, details };
}

async function readBody(req: http.IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const c of req) {
    size += (c as Buffer).length;
    if (size > MAX_BODY_BYTES) throw Object.assign(new Error('request body too large'), { code: Code.RESOURCE_EXHAUSTED });
    chunks.push(c as Buffer);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** Builds the request JSON from the body (per the binding's `body`), the path variables and the query. */
async function requestJson(req: http.IncomingMessage, route: HttpRoute, vars: Array<[string, string]>, query: URLSearchParams): Promise<Record<string, unknown>> {
  let json: Record<string, unknown> = {};
  if (route.body) {
    const text = await readBody(req);
    let parsed: unknown = {};
    if (text.trim()) {
      try {
        parsed = JSON.parse(text);
      } catch {
        throw new TypeError('request body is not valid JSON');
      }
    }
    if (route.body === '*') {
      if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) throw new TypeError('request body must be a JSON object');
      json = parsed as Record<string, unknown>;
    } else json = { [route.body]: parsed };
  }
  if (!route.body || route.body !== '*') {
    for (const [k, v] of query) if (k !== 'pretty' && k !== 'noPayloadShorthand') setFromUrl(route.requestType, json, k, v);
  }
  for (const [field, value] of vars) setFromUrl(route.requestType, json, field, value);
  return json;
}

/** Runs one method implementation the way grpc-js would, with a call object cancelled when the HTTP client goes away. */
function invoke(impl: grpc.UntypedServiceImplementation, method: string, request: unknown, req: http.IncomingMessage, res: http.ServerResponse): Promise<unknown> {
  const call = Object.assign(new EventEmitter(), { request, metadata: new grpc.Metadata(), cancelled: false, getPeer: () => req.socket.remoteAddress ?? '' });
  res.once('close', () => {
    if (res.writableFinished) return;
    call.cancelled = true;
    call.emit('cancelled');
  });
  return new Promise((resolve, reject) => {
    const fn = impl[method] as unknown as (c: unknown, cb: (err: RpcError | null, res?: unknown) => void) => void;
    fn(call, (err, res) => (err ? reject(err) : resolve(res)));
  });
}

/**
 * The HTTP API over the given services. `payloadShorthand` (default true, as the real server)
 * is turned off per request by the `noPayloadShorthand` query parameter or by the caller's option
 * (the Web UI decodes full payloads itself; `nullPayloadAsJson` gives it data-less null payloads
 * as `json/plain` nulls, see JsonMappingOptions); `?pretty` indents the JSON.
 */
export function httpApiHandler(services: GatewayService[]): HttpApiHandler {
  const routes = httpRoutes(services.map((s) => s.name));
  const impls = new Map(services.map((s) => [s.name, s.implementation]));
  return async (req, res, opts = {}) => {
    const url = new URL(req.url ?? '/', 'http://localhost');
    const pretty = url.searchParams.has('pretty');
    const shorthand = (opts.payloadShorthand ?? true) && !url.searchParams.has('noPayloadShorthand');
    const rawPath = (req.url ?? '/').split('?')[0];
    const match = matchRoute(routes, req.method ?? 'GET', rawPath);
    if (match === undefined) return send(res, 404, { code: Code.NOT_FOUND, message: 'Not Found', details: [] }, pretty);
    if (match === 'methodNotAllowed') return send(res, 405, { code: Code.UNIMPLEMENTED, message: 'Method Not Allowed', details: [] }, pretty);
    const { route, vars } = match;
    let request: Record<string, unknown>;
    try {
      request = fromHttpJson(route.requestType, await requestJson(req, route, vars, url.searchParams));
    } catch (err) {
      const e = err as RpcError & Error;
      const code = typeof e.code === 'number' ? e.code : Code.INVALID_ARGUMENT;
      return send(res, HTTP_STATUS[code] ?? 500, { code, message: e.message, details: [] }, pretty);
    }
    try {
      const out = await invoke(impls.get(route.service)!, route.method, request, req, res);
      send(res, 200, toHttpJson(route.responseType, out ?? {}, { payloadShorthand: shorthand, nullPayloadAsJson: opts.nullPayloadAsJson }), pretty);
    } catch (err) {
      const e = err as RpcError;
      const code = typeof e.code === 'number' ? e.code : Code.UNKNOWN;
      if (!res.headersSent) send(res, HTTP_STATUS[code] ?? 500, errorBody({ ...e, code }, shorthand), pretty);
    }
  };
}
