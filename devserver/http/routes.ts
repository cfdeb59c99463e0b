/**
 * The HTTP routes of Temporal's HTTP API, read from the `google.api.http` annotations
 * (https://cloud.google.com/endpoints/docs/grpc-service-config/reference/rpc/google.api#httprule)
 * carried by the service descriptors in @temporalio/proto: every binding and additional binding
 * of every method, none listed by hand.
 */
import type { PbReflType } from './json';

/** One HTTP binding of one RPC. */
export interface HttpRoute {
  /** Upper-case HTTP method. */
  verb: string;
  /** The path template, e.g. `/api/v1/namespaces/{namespace}/workflows/{execution.workflow_id}`. */
  template: string;
  /** Template segments: a literal, or a variable naming a dotted request field path. */
  segments: Array<{ literal: string } | { field: string }>;
  /** `*` (whole body is the request), a field name, or undefined (no body; query parameters). */
  body?: string;
  /** Fully qualified service name and method name, e.g. `temporal.api.workflowservice.v1.WorkflowService`, `ListWorkflowExecutions`. */
  service: string;
  method: string;
  requestType: PbReflType;
  responseType: PbReflType;
}

interface HttpRule {
  get?: string;
  put?: string;
  post?: string;
  delete?: string;
  patch?: string;
  body?: string;
  additional_bindings?: HttpRule | HttpRule[];
}
interface PbMethodRefl {
  name: string;
  parsedOptions?: Array<Record<string, unknown>>;
  resolvedRequestType: PbReflType | null;
  resolvedResponseType: PbReflType | null;
}
interface PbServiceRefl {
  methods: Record<string, PbMethodRefl>;
  resolveAll(): PbServiceRefl;
}

// eslint-disable-next-line @typescript-eslint/no-require-imports
const root: { lookupService(name: string): PbServiceRefl } = require('@temporalio/proto/protos/json-module');

const VERBS = ['get', 'put', 'post', 'delete', 'patch'] as const;

function parseTemplate(template: string): HttpRoute['segments'] {
  return template
    .split('/')
    .filter(Boolean)
    .map((s) => {
      const m = /^\{([a-zA-Z0-9_.]+)(?:=\*{1,2})?\}$/.exec(s);
      return m ? { field: m[1] } : { literal: s };
    });
}

/** Every HTTP binding of the given services (fully qualified names), in descriptor order. */
export function httpRoutes(services: string[]): HttpRoute[] {
  const routes: HttpRoute[] = [];
  for (const service of services) {
    const svc = root.lookupService(service).resolveAll();
    for (const m of Object.values(svc.methods)) {
      const opt = m.parsedOptions?.find((o) => '(google.api.http)' in o)?.['(google.api.http)'] as HttpRule | undefined;
      if (!opt) continue;
      const extra = opt.additional_bindings;
      const rules = [opt, ...(Array.isArray(extra) ? extra : extra ? [extra] : [])];
      for (const rule of rules) {
        for (const verb of VERBS) {
          const template = rule[verb];
          if (!template) continue;
          routes.push({
            verb: verb.toUpperCase(),
            template,
            segments: parseTemplate(template),
            body: rule.body || undefined,
            service,
            method: m.name,
            requestType: m.resolvedRequestType!,
            responseType: m.resolvedResponseType!,
          });
        }
      }
    }
  }
  return routes;
}

/** A matched route with its path variables (dotted field path → decoded segment). */
export interface RouteMatch {
  route: HttpRoute;
  vars: Array<[string, string]>;
}

/**
 * Finds the route for a verb and a raw (still percent-encoded) path. Segments are split before
 * decoding, so a workflow id holding `/` travels as `%2F`. Where templates overlap, the one with
 * more literal segments wins. Returns `methodNotAllowed` when only the verb differs.
 */
export function matchRoute(routes: HttpRoute[], verb: string, rawPath: string): RouteMatch | 'methodNotAllowed' | undefined {
  const parts = rawPath.split('/').filter(Boolean);
  let best: RouteMatch | undefined;
  let bestLiterals = -1;
  let pathMatched = false;
  for (const route of routes) {
    if (route.segments.length !== parts.length) continue;
    const vars: Array<[string, string]> = [];
    let literals = 0;
    let ok = true;
    for (let i = 0; i < parts.length && ok; i++) {
      const seg = route.segments[i];
      if ('literal' in seg) {
        ok = seg.literal === parts[i];
        literals++;
      } else {
        try {
          vars.push([seg.field, decodeURIComponent(parts[i])]);
        } catch {
          ok = false;
        }
      }
    }
    if (!ok) continue;
    pathMatched = true;
    if (route.verb !== verb) continue;
    if (literals > bestLiterals) {
      best = { route, vars };
      bestLiterals = literals;
    }
  }
  return best ?? (pathMatched ? 'methodNotAllowed' : undefined);
}
