/**
 * Builds the Koa application: one middleware per wire convention (request id, access log, problem
 * details), then one router generated from the route table (auth → rate limit → scopes → body → schema
 * validation → idempotency → handler → envelope). Unknown paths answer 404, known paths with another method 405 with `Allow`.
 */
import Koa from 'koa';
import Router from '@koa/router';
import compose from 'koa-compose';
import type { AppConfig } from '../config';
import type { Db } from '../db';
import type { Logger } from 'pino';
import { settlesOwed } from '../services/billing/settle';
import { ApiError, validationError } from '../domain/errors';
import { KeyCache } from './keyCache';
import { KeyUsageTracker } from './keyUsage';
import { ChangeFeed, ReadCache } from '../db/changeFeed';
import { KnowledgeIndexes } from '../services/knowledge/lexicalIndex';
import { CONTROLS_FEED_TABLE } from '../db/repositories/conversationControls';
import { controlListener } from '../services/voice/liveCalls';
import { consolePages } from './console';
import type { RegistrationRecord } from '../db/repositories/smsRegistrations';
import type { NumberOwner } from '../db/repositories/numbers';
import { accessLog } from './middleware/accessLog';
import { auditLog } from './middleware/audit';
import { authenticateGuard, authorizeGuard, credentialCheck, type Guard } from './middleware/auth';
import { bulkAdmission } from './middleware/admission';
import { jsonBody } from './middleware/body';
import { idempotency, usesIdempotencyKeys } from './middleware/idempotency';
import { problem } from './middleware/problem';
import { keyPolicies, RateLimits, rateLimitDefaults } from './middleware/rateLimit';
import { requestId } from './middleware/requestId';
import { metricsEndpoint } from './middleware/metrics';
import { traceContext } from './middleware/tracing';
import { openApiDocument } from './openapi';
import { sitePages } from './pages/site';
import { serveWidget } from './widgetAsset';
import { voiceWebhooks } from './voice/webhooks';
import { liveWidgetSession } from './widgetSession';
import { widgetCors } from './middleware/cors';
import { jsonValueErrors } from '../domain/validation';
import { HANDLERS, ROUTE_SCHEMAS } from './routes';
import { validateRequestBody } from './middleware/validate';
import { ROUTES, toKoaPath } from './routes/table';
import type { AppContext, AppDeps, AppProviders, AppState } from './context';
import { createLlm } from '../providers/llm';
import { configuredEmbeddings } from '../services/knowledge/retrieval';
import { createSkillHttpClient } from '../providers/http/request';
import { createMailer } from '../providers/mailer';
import { oauthRoutes } from './oauth';
import { publicOrigin } from './publicOrigin';
import { setHeader } from './http';

/** The app plus what must be closed with it. */
export interface BuiltApp {
  app: Koa<AppState>;
  /** Resolves once background listeners (key revocation) are up. */
  ready: Promise<void>;
  /** Writes the keys' pending `lastUsedAt` now instead of at the next interval (tests, shutdown). */
  flushKeyUsage(): Promise<void>;
  /** What the handlers were built with (the voice relay shares them). */
  deps: AppDeps;
  close(): Promise<void>;
}

/** The longest spacing (ms) bulk pacing puts between two of an organization's bulk requests (docs/api-notes.md "Wire conventions"). */
export const MAX_BULK_SPACING_MS = 1000;

/** API base path (spec: versioned by URI path). */
export const BASE_PATH = '/api/v1';

/** What the application is built from (createApp, startApi). */
export interface AppOptions {
  db: Db;
  config: AppConfig;
  logger: Logger;
  /** The URL `db` was opened on (the rate-limit pool and the revocation listener use it). */
  databaseUrl: string;
  temporal?: AppDeps['temporal'];
  /** Base URL of the Temporal Web UI, when this process serves one (docs/operations.md "Inspecting workflows"). */
  temporalUiUrl?: string;
  /** Providers to use instead of the configured ones (tests). */
  providers?: Partial<AppProviders>;
}

/**
 * Creates the application. Listening is the caller's job (api/server.ts, tests, benchmarks).
 * @param deps database, configuration and root logger; `databaseUrl` is the URL `db` was opened on
 */
export function createApp(deps: AppOptions): BuiltApp {
  const { db, config, logger, databaseUrl } = deps;
  const app = new Koa<AppState>({ proxy: false });
  app.silent = true; // errors are logged by the problem middleware, once
  const feed = new ChangeFeed();
  const keys = new KeyCache(db, feed, config.cacheTtlSeconds);
  const keyUsage = new KeyUsageTracker(db, logger, config.keyLastUsedFlushMs);
  const caches: AppDeps['caches'] = {
    smsRegistrations: new ReadCache<RegistrationRecord>(feed, 'sms_registrations', config.cacheTtlSeconds, { versionOf: (r) => r.version }),
    // Conversation turns rank their knowledge in process (docs/knowledge.md "Retrieval").
    knowledge: new KnowledgeIndexes(feed, config.cacheTtlSeconds),
    numberOwners: new ReadCache<NumberOwner>(feed, 'phone_numbers', config.cacheTtlSeconds),
  };
  const limitDefaults = rateLimitDefaults(config);
  const limits = new RateLimits(databaseUrl, limitDefaults);
  const ownHttp = !deps.providers?.skillHttp;
  const ownMailer = !deps.providers?.mailer;
  const providers: AppProviders = {
    llm: deps.providers?.llm ?? createLlm(),
    embeddings: deps.providers?.embeddings ?? configuredEmbeddings(),
    skillHttp: deps.providers?.skillHttp ?? createSkillHttpClient(),
    mailer: deps.providers?.mailer ?? createMailer(process.env, { dataDir: config.dataDir, logger }),
  };
  // A widget session token holds only while what it was derived from does (docs/security.md "Revocation").
  const sessions = (token: string) => liveWidgetSession(db, keys, token);
  const handlerDeps: AppDeps = { db, config, logger, caches, temporal: deps.temporal, providers, temporalUiUrl: deps.temporalUiUrl, credentialStillValid: credentialCheck(keys, sessions) };

  // One router per first path segment (`/sms…`, `/agents…`), picked by a Map lookup: @koa/router tries
  // every route's pattern in turn, so one router for the ~100 operations cost more CPU per request than
  // the rest of a GET (docs/benchmarks.md). `router` keeps every route, for paths no segment names.
  const router = new Router<AppState>({ prefix: BASE_PATH });
  const bySegment = new Map<string, Router<AppState>>();
  // The operations of each segment router in registration order, each with its stack composed once.
  const segmentLayers = new Map<Router<AppState>, MatchedRoute[]>();
  const routersOf = (path: string): Router<AppState>[] => {
    const segment = path.split('/')[1].toLowerCase();
    let sub = bySegment.get(segment);
    if (!sub) {
      bySegment.set(segment, (sub = new Router<AppState>({ prefix: BASE_PATH })));
      segmentLayers.set(sub, []);
    }
    return [router, sub];
  };
  for (const r of routersOf('/openapi.json')) {
    r.get('/openapi.json', (ctx) => {
      ctx.body = openApiDocument(`${publicOrigin(ctx, config.publicBaseUrl)}${BASE_PATH}`);
    });
  }
  const body = jsonBody(config.bodyLimitBytes);
  const rawAndJsonBody = jsonBody(config.bodyLimitBytes, { keepRaw: true });
  const admitBulk = bulkAdmission({
    inFlight: config.bulkRequestsInFlight,
    queued: config.bulkRequestsQueued,
    // Paced at the credential's sustained rate (docs/api-notes.md "Wire conventions"): what its window allows, spread evenly.
    ...(config.bulkRequestsPacing === 'key'
      ? {
          intervalMs: (ctx: AppContext) => {
            const { points, windowSeconds } = keyPolicies(ctx.state.auth!, limitDefaults);
            // At most 1 s: a key allowed few requests per long window may still spend them together, one a second.
            return points > 0 ? Math.min(MAX_BULK_SPACING_MS, (windowSeconds * 1000) / points) : 0;
          },
        }
      : {}),
  });
  for (const route of ROUTES) {
    const handler = HANDLERS[route.operationId];
    const withSchemas = { ...route, ...(ROUTE_SCHEMAS[route.operationId] ?? {}) };
    // The checks before the body, in order, as one middleware: each returns synchronously unless it has
    // to wait (a key or rate-limit lease not held in this process), saving an async frame apiece.
    const guards: Guard[] = [
      (ctx) => {
        ctx.state.route = route;
      },
      authenticateGuard(route, keys, keyUsage, sessions),
      limits.guard(config.widgetIpRateLimitPoints),
      authorizeGuard(route),
      ...(route.workload === 'bulk' ? [admitBulk] : []),
      storableParams,
    ];
    const stack = [
      (ctx: AppContext, next: () => Promise<unknown>) => runGuards(guards, 0, ctx, next),
      route.auth === 'none' ? rawAndJsonBody : body,
      ...(handler && withSchemas.requestSchema ? [validateRequestBody(withSchemas)] : []),
      ...(usesIdempotencyKeys(route) ? [idempotency(route, db)] : []),
      async (ctx: AppContext) => {
        if (!handler) {
          throw new ApiError(501, 'not_implemented', `${route.operationId} (${route.method} ${route.path}) is declared but not implemented yet`);
        }
        const out = await handler(ctx, handlerDeps);
        if (out.headers) for (const k in out.headers) ctx.set(k, out.headers[k]);
        ctx.status = out.status ?? route.successStatus ?? 200;
        if (out.stream) {
          ctx.type = out.stream.contentType;
          ctx.body = out.stream.body;
        } else if (out.rawJson !== undefined) {
          // The type Koa's `ctx.type` would set for this value, without its lookup and `set`.
          setHeader(ctx, 'Content-Type', 'application/json; charset=utf-8');
          ctx.body = out.rawJson;
        } else {
          ctx.body = { success: true, ...(out.message ? { message: out.message } : {}), data: out.data ?? null };
        }
      },
    ];
    const run = compose(stack as never) as RouteRun;
    for (const r of routersOf(route.path)) {
      const layer = r.register(toKoaPath(route.path), [route.method], [...stack] as never) as unknown as RouteLayer;
      if (r !== router) segmentLayers.get(r)!.push({ layer, run });
    }
  }

  app.use(requestId(logger));
  app.use(traceContext(BASE_PATH));
  app.use(accessLog(logger));
  app.use(auditLog(db)); // outside problem(), so it records the final status of every write
  app.use(problem());
  app.use(metricsEndpoint(config.metricsToken));
  app.use(widgetCors(db));
  app.use(sitePages(handlerDeps)); // `/`, the `/api/v1` index, `/docs`, the stylesheet and favicon (docs/api-notes.md "Reference, landing page and index")
  app.use(oauthRoutes(handlerDeps)); // sign-in, consent and the OAuth endpoints at the origin root (docs/team-and-oauth.md "Connect an app with OAuth")
  app.use(consolePages(handlerDeps)); // the operator console at /console (docs/operations.md "Operator console")
  app.use(voiceWebhooks(handlerDeps));
  // Paths no operation matches and the widget's assets: the routers' own 404/405
  // handling, mapped to problem details.
  const dispatch = (r: Router<AppState>) => {
    const routes = r.routes();
    const allowed = r.allowedMethods();
    return (ctx: AppContext, next: () => Promise<unknown>) => routes(ctx as never, () => allowed(ctx as never, next)) as Promise<unknown>;
  };
  const everyRoute = dispatch(router);
  const segmentRoutes = new Map([...bySegment].map(([segment, r]) => [segment, { routes: dispatch(r), layers: segmentLayers.get(r)! }]));
  const unmatched = async (ctx: AppContext, next: () => Promise<unknown>, routes: (ctx: AppContext, next: () => Promise<unknown>) => Promise<unknown>) => {
    if (ctx.path.startsWith('/widget') && (await serveWidget(ctx, keys))) return;
    await routes(ctx, next);
    if (ctx.status === 405 && ctx.body === undefined) {
      throw new ApiError(405, 'method_not_allowed', `${ctx.method} is not allowed on ${ctx.path}; allowed: ${ctx.response.get('Allow')}`);
    }
    if (ctx.status === 501 && ctx.body === undefined) {
      throw new ApiError(501, 'not_implemented', `The method ${ctx.method} is not supported`);
    }
    if (ctx.status === 404 && ctx.body === undefined) {
      throw new ApiError(404, 'route_not_found', `No route ${ctx.method} ${ctx.path}`);
    }
  };
  // A path under BASE_PATH picks its first segment's operations by a Map lookup and runs the first one
  // whose method and pattern match (the order @koa/router would pick, since a handler never calls
  // `next`), with its stack composed once: @koa/router's own dispatch also checks the host, matches
  // every route of the segment and composes the matched stacks anew on every request, which cost
  // several µs of CPU per request (docs/benchmarks.md). A request path whose operation has no path
  // parameters is remembered, so the next one skips the patterns too.
  // Method → path → operation (two lookups instead of a `METHOD path` string built per request), at most 1,000 paths.
  const known = new Map<string, Map<string, MatchedRoute>>();
  let knownPaths = 0;
  app.use((ctx: AppContext, next) => {
    // Router prefixes match case-insensitively (path-to-regexp's default), so the lookup does too.
    const path = ctx.path;
    const method = ctx.method;
    const hit = known.get(method)?.get(path);
    if (hit) {
      setParams(ctx, {});
      return hit.run(ctx, next);
    }
    const end = path.indexOf('/', BASE_PATH.length + 1);
    const segment =
      path.length > BASE_PATH.length + 1 && path[BASE_PATH.length] === '/' && path.slice(0, BASE_PATH.length).toLowerCase() === BASE_PATH
        ? segmentRoutes.get(path.slice(BASE_PATH.length + 1, end < 0 ? undefined : end).toLowerCase())
        : undefined;
    if (!segment) return unmatched(ctx, next, everyRoute);
    for (const m of segment.layers) {
      if (!m.layer.methods.includes(method) || !m.layer.regexp.test(path)) continue;
      if (m.layer.paramNames.length === 0) {
        if (knownPaths >= 1000) {
          known.clear();
          knownPaths = 0;
        }
        let paths = known.get(method);
        if (!paths) known.set(method, (paths = new Map()));
        paths.set(path, m);
        knownPaths++;
      }
      setParams(ctx, m.layer.paramNames.length ? m.layer.params(path, m.layer.captures(path)) : {});
      return m.run(ctx, next);
    }
    return unmatched(ctx, next, segment.routes);
  });

  // A control queued for a call reaches the process holding its relay socket (docs/api-notes.md "Live control").
  feed.on(CONTROLS_FEED_TABLE, controlListener(db, (err) => logger.warn({ err }, 'live control: applying a queued control failed')));
  const ready = feed.start(databaseUrl).catch((err) => logger.warn({ err }, 'change feed unavailable; read caches stay off'));
  return {
    app,
    ready,
    flushKeyUsage: () => keyUsage.flush(),
    deps: handlerDeps,
    close: async () => {
      // Charges recorded pending by answered texts are folded before the pool closes (services/billing/settle.ts).
      await settlesOwed();
      await keyUsage.close();
      await feed.close();
      await limits.close();
      if (ownHttp) await providers.skillHttp.close();
      if (ownMailer) await providers.mailer.close();
    },
  };
}

/** A route's stack composed once (koa-compose). */
type RouteRun = (ctx: AppContext, next: () => Promise<unknown>) => Promise<unknown>;

/** What of @koa/router's Layer the dispatch reads: its methods (HEAD joins GET), pattern and parameters. */
interface RouteLayer {
  methods: string[];
  regexp: RegExp;
  paramNames: unknown[];
  captures(path: string): string[];
  params(path: string, captures: string[]): Record<string, string>;
}

/** One operation of a segment: its registered layer and its composed stack. */
interface MatchedRoute {
  layer: RouteLayer;
  run: RouteRun;
}

/** The matched path parameters, where @koa/router puts them (`ctx.params`, `ctx.request.params`). */
function setParams(ctx: AppContext, params: Record<string, string>): void {
  (ctx as unknown as { params: Record<string, string> }).params = params;
  (ctx.request as unknown as { params: Record<string, string> }).params = params;
}

/**
 * Runs `guards[i…]` in order, then `next`; waits only for a guard that returned a promise.
 * @throws (rejects with) the first guard's ApiError
 */
function runGuards(guards: Guard[], i: number, ctx: AppContext, next: () => Promise<unknown>): Promise<unknown> {
  try {
    for (; i < guards.length; i++) {
      const pending = guards[i](ctx);
      if (pending) {
        const from = i + 1;
        return pending.then(() => runGuards(guards, from, ctx, next));
      }
    }
  } catch (err) {
    return Promise.reject(err);
  }
  return next();
}

/**
 * 400 `validation_error` naming each path or query parameter Postgres cannot store (a decoded `%00`,
 * say): no id or filter value can contain one, and the queries below would otherwise fail with a 500.
 * Bodies get the same check in api/middleware/body.ts.
 */
function storableParams(ctx: AppContext): void {
  const params = (ctx as unknown as { params?: Record<string, string> }).params;
  const query = ctx.querystring ? ctx.query : undefined;
  if (!query && (!params || isEmpty(params))) return;
  const errors = jsonValueErrors({ ...params, ...query });
  if (errors.length) throw validationError(errors);
}

function isEmpty(o: object): boolean {
  for (const _ in o) return false;
  return true;
}
