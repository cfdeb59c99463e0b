/**
 * The OpenAPI 3.1 document, assembled from the route table and the generated JSON Schemas
 * (DESIGN.md "schemas/"), with the webhook event catalogue as OpenAPI 3.1 `webhooks` and examples for the
 * main operations. Served at GET /api/v1/openapi.json; /docs renders it for people (api/pages/site.ts).
 */
import { ALL_SCOPES, RESERVED_SCOPES } from '../domain/scopes';
import { HANDLERS, ROUTE_SCHEMAS } from './routes';
import { ROUTES, type RouteDef } from './routes/table';
import { listSchemaNames, loadSchema } from '../domain/validation';
import { oauthPathItems } from './oauth/openapi';
import { speaksOpenAi } from './middleware/problem';
import { OPERATION_EXAMPLES, webhookItems } from './openapiExtras';

function rewriteRefs(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(rewriteRefs);
  if (node && typeof node === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(node)) {
      if (k === '$ref' && typeof v === 'string') out[k] = v.replace('#/definitions/', '#/components/schemas/');
      else if (k === '$schema' || k === '$id') continue;
      else out[k] = rewriteRefs(v);
    }
    return out;
  }
  return node;
}

/** Components from every generated schema (their `definitions` hoisted into components). */
function components(): Record<string, unknown> {
  const schemas: Record<string, unknown> = {};
  for (const name of listSchemaNames()) {
    const s = loadSchema(name);
    for (const [d, def] of Object.entries((s.definitions ?? {}) as Record<string, unknown>)) schemas[d] = rewriteRefs(def);
    delete s.definitions;
    schemas[name] = rewriteRefs(s);
  }
  return schemas;
}

/**
 * True when schema `name` is a page of a cursor-paginated list (`{items, nextCursor, hasMore}`, docs/api-notes.md: lists), whose operation then takes `?limit=` and `?cursor=`.
 */
function isPageSchema(name: string | undefined): boolean {
  if (!name) return false;
  const props = (loadSchema(name).properties ?? {}) as Record<string, unknown>;
  return 'items' in props && 'nextCursor' in props && 'hasMore' in props;
}

/** The query parameters of every cursor-paginated list (docs/api-notes.md: lists). */
const PAGE_PARAMETERS = [
  { name: 'limit', in: 'query', required: false, schema: { type: 'integer', minimum: 1, maximum: 200, default: 50 }, description: 'Page size' },
  {
    name: 'cursor',
    in: 'query',
    required: false,
    schema: { type: 'string', maxLength: 2048 },
    description: 'Opaque `nextCursor` of the previous page; a cursor this list did not issue answers 400 `invalid_cursor`',
  },
];

const problemResponse = (description: string) => ({
  description,
  content: { 'application/problem+json': { schema: { $ref: '#/components/schemas/Problem' } } },
});

function operation(declared: RouteDef): Record<string, unknown> {
  const route: RouteDef = { ...declared, ...(ROUTE_SCHEMAS[declared.operationId] ?? {}) };
  const implemented = !!HANDLERS[route.operationId];
  const params: Record<string, unknown>[] = [...route.path.matchAll(/\{([^}]+)\}/g)].map((m) => ({ name: m[1], in: 'path', required: true, schema: { type: 'string' } }));
  if (isPageSchema(route.responseSchema)) params.push(...PAGE_PARAMETERS);
  const success = String(route.successStatus ?? 200);
  const data = route.responseSchema ? { $ref: `#/components/schemas/${route.responseSchema}` } : {};
  const examples = OPERATION_EXAMPLES[route.operationId];
  const successExamples = examples?.response
    ? Object.fromEntries(Object.entries(examples.response).map(([k, ex]) => [k, { summary: ex.summary, value: { success: true, data: ex.value } }]))
    : undefined;
  const op: Record<string, unknown> = {
    operationId: route.operationId,
    tags: [route.tag],
    summary: route.summary,
    description:
      (route.reserved ? 'Reserved: answers 403 `reserved_endpoint` even for correctly scoped calls. ' : '') +
      (implemented || route.reserved ? '' : 'Not implemented yet: answers 501 `not_implemented` after authentication and scope checks. ') +
      (route.scopes.length ? `Scopes: ${route.scopes.join(', ')}.` : '') +
      (route.scopesAnyOf ? ` One of the scopes: ${route.scopesAnyOf.join(', ')}.` : ''),
    parameters: params,
    security: route.auth === 'none' ? [] : route.auth === 'publishable' ? [{ publishableKey: [] }] : route.scopesAnyOf ? route.scopesAnyOf.map((s) => ({ bearer: [...route.scopes, s] })) : [{ bearer: route.scopes }],
    responses: {
      [success]: {
        description: 'Success envelope',
        content: {
          'application/json': {
            schema: { allOf: [{ $ref: '#/components/schemas/Envelope' }, { type: 'object', properties: { data } }] },
            ...(successExamples ? { examples: successExamples } : {}),
          },
        },
      },
      '400': problemResponse('Validation failure (`validation_error`, `malformed_json`)'),
      '401': problemResponse('Missing or invalid key; carries WWW-Authenticate'),
      '403': problemResponse('Insufficient scope or reserved endpoint'),
      '429': problemResponse('Rate-limited; honor Retry-After and RateLimit headers'),
      ...(implemented ? {} : { '501': problemResponse('Not implemented yet') }),
    },
  };
  if (speaksOpenAi(`/api/v1${route.path}`)) openAiWireResponses(op);
  if (route.requestSchema) {
    op.requestBody = {
      required: true,
      content: { 'application/json': { schema: { $ref: `#/components/schemas/${route.requestSchema}` }, ...(examples?.request ? { examples: examples.request } : {}) } },
    };
    (op.responses as Record<string, unknown>)['413'] = problemResponse('Body too large');
    (op.responses as Record<string, unknown>)['415'] = problemResponse('Body is not application/json');
    if (speaksOpenAi(`/api/v1${route.path}`)) openAiWireResponses(op);
  }
  return op;
}

/**
 * An OpenAI-compatible operation answers OpenAI's wire format (docs/api-notes.md "OpenAI compatibility"): its success
 * is not the envelope, its failures are `OpenAiError` rather than problems.
 */
function openAiWireResponses(op: Record<string, unknown>): void {
  const responses = op.responses as Record<string, { description: string; content?: unknown }>;
  for (const [status, r] of Object.entries(responses)) {
    if (Number(status) >= 400) responses[status] = { description: r.description, content: { 'application/json': { schema: { $ref: '#/components/schemas/OpenAiError' } } } };
    else responses[status] = { description: 'OpenAI wire format (no envelope)', content: { 'application/json': { schema: {} }, 'text/event-stream': { schema: { type: 'string' } } } };
  }
}

let cached: Record<string, unknown> | undefined;

/**
 * Builds (once) the OpenAPI 3.1 document: every operation of the route table under `serverUrl`, and the
 * OAuth endpoints at the origin root, each path item naming the origin as its server (api/oauth/openapi.ts).
 * @param serverUrl absolute base URL including /api/v1
 */
export function openApiDocument(serverUrl: string): Record<string, unknown> {
  if (!cached) {
    const paths: Record<string, Record<string, unknown>> = {};
    for (const route of ROUTES) {
      paths[route.path] ??= {};
      paths[route.path][route.method.toLowerCase()] = operation(route);
    }
    cached = {
      openapi: '3.1.0',
      info: {
        title: 'Agent Control-Plane API',
        version: '1.0.0',
        description: 'REST control plane for conversational voice and chat agents. Success responses use the envelope {success, message?, errors?, data}; failures are RFC 9457 problem+json.',
      },
      servers: [{ url: serverUrl }],
      tags: [
        ...[...new Set([...ROUTES.map((r) => r.tag), 'OAuth2'])].map((name) => ({ name })),
        { name: 'Webhook events', description: 'What the service POSTs to your webhook endpoints: one entry per event type, with its payload schema.' },
      ],
      paths,
      webhooks: webhookItems(),
      components: {
        schemas: components(),
        securitySchemes: {
          bearer: {
            type: 'http',
            scheme: 'bearer',
            description: `Secret key <brand>_sk_live_… or OAuth token <brand>_oat_…. Scopes: ${ALL_SCOPES.filter((s) => !RESERVED_SCOPES.has(s)).join(', ')}; reserved: ${[...RESERVED_SCOPES].join(', ')}.`,
          },
          publishableKey: { type: 'http', scheme: 'bearer', description: 'Publishable key <brand>_pk_… (chat widget)' },
        },
      },
    };
  }
  const origin = serverUrl.replace(/\/api\/v1\/?$/, '');
  return { ...cached, servers: [{ url: serverUrl }], paths: { ...(cached.paths as Record<string, unknown>), ...oauthPathItems(origin) } };
}
