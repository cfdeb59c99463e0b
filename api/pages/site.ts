/**
 * The pages around the API (docs/api-notes.md "Reference, landing page and index"): `GET /` (a landing page
 * linking the API reference, the Temporal UI, the OpenAPI document and health), `GET /api/v1` (a JSON index), `GET /healthz`,
 * `/docs` (the OpenAPI document rendered by Scalar's API reference, its browser bundle served from
 * node_modules: nothing is fetched from a CDN), the shared stylesheet and the favicon. One Koa middleware;
 * every other request passes through synchronously.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import type { AppContext, AppDeps } from '../context';
import { publicOrigin } from '../publicOrigin';
import { FAVICON_PATH, FAVICON_SVG, htmlDocument, PRODUCT_NAME, SITE_CSS, STYLESHEET_PATH, escapeHtml } from './theme';
import { PAGE_CSP } from '../oauth/forms';

/** Where the API reference's script is served. */
export const REFERENCE_SCRIPT_PATH = '/docs/assets/scalar-api-reference.js';

/** The OpenAPI document's path. */
const OPENAPI_PATH = '/api/v1/openapi.json';

/**
 * Scalar's configuration (https://scalar.com/products/api-references/configuration): no fonts from its CDN,
 * no telemetry, no AI agent or MCP panels (both call Scalar's servers), no developer toolbar; requests from
 * "Test request" go straight to this server, never through Scalar's proxy.
 */
const SCALAR_CONFIGURATION = {
  withDefaultFonts: false,
  telemetry: false,
  agent: { disabled: true },
  mcp: { disabled: true },
  showDeveloperTools: 'never',
  documentDownloadType: 'json',
  defaultOpenFirstTag: true,
  hideDarkModeToggle: false,
  metaData: { title: `API reference · ${PRODUCT_NAME}` },
};

/** A static asset, read once, with its gzip form. */
interface Asset {
  body: Buffer;
  gzip: Buffer;
  etag: string;
}

let referenceScript: Asset | undefined;

/** Scalar's standalone browser bundle (`@scalar/api-reference`, dist/browser/standalone.js), read and gzipped once. */
function scalarBundle(): Asset {
  if (!referenceScript) {
    // The package exports no path to its browser bundle; style.css is exported and sits beside dist/browser.
    const dist = path.dirname(require.resolve('@scalar/api-reference/style.css'));
    const version = (JSON.parse(fs.readFileSync(path.join(dist, '..', 'package.json'), 'utf8')) as { version: string }).version;
    const body = fs.readFileSync(path.join(dist, 'browser', 'standalone.js'));
    referenceScript = { body, gzip: zlib.gzipSync(body, { level: 6 }), etag: `"scalar-${version}"` };
  }
  return referenceScript;
}

/** Answers an asset: 304 for a matching `If-None-Match`, gzip when accepted, cached a day. */
function sendAsset(ctx: AppContext, type: string, asset: Asset): void {
  ctx.set('Cache-Control', 'public, max-age=86400');
  ctx.set('ETag', asset.etag);
  ctx.set('Vary', 'Accept-Encoding');
  ctx.type = type;
  if (ctx.get('if-none-match') === asset.etag) {
    ctx.status = 304;
    return;
  }
  if (ctx.acceptsEncodings('gzip', 'identity') === 'gzip') {
    ctx.set('Content-Encoding', 'gzip');
    ctx.body = asset.gzip;
  } else {
    ctx.body = asset.body;
  }
}

/**
 * The reference page: Scalar mounts on `#api-reference` and loads the document from `data-url`; its
 * configuration rides in `data-configuration` (no inline script, so the CSP allows scripts of this origin only).
 */
function docsHtml(): string {
  const config = escapeHtml(JSON.stringify(SCALAR_CONFIGURATION));
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>API reference · ${escapeHtml(PRODUCT_NAME)}</title><link rel="icon" href="${FAVICON_PATH}" type="image/svg+xml"></head>
<body><noscript><p>The API reference needs JavaScript. The OpenAPI 3.1 document is at <a href="${OPENAPI_PATH}">${OPENAPI_PATH}</a>.</p></noscript>
<script id="api-reference" type="application/json" data-url="${OPENAPI_PATH}" data-configuration="${config}"></script>
<script src="${REFERENCE_SCRIPT_PATH}"></script></body></html>`;
}

/**
 * CSP of the reference page: scripts, data and images of this origin only (Scalar injects its styles, hence
 * 'unsafe-inline' for styles; data: for its inline icons). "Test request" calls this origin.
 */
const DOCS_CSP = "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; font-src 'self' data:; connect-src 'self'; worker-src 'self' blob:; frame-ancestors 'none'; base-uri 'none'; form-action 'none'";

/** The landing page's links: the reference, the Temporal UI (when this process serves one), the document, health. */
function landingHtml(deps: AppDeps): string {
  const links = [
    ['/docs', 'API reference', 'Every operation by tag, with request and response schemas, examples, authentication, search and the webhook events.'],
    ...(deps.temporalUiUrl ? [[deps.temporalUiUrl, 'Temporal UI', 'The durable workflows behind publishing, SMS, calls, campaigns and webhook deliveries.']] : []),
    [OPENAPI_PATH, 'OpenAPI document', 'The machine-readable OpenAPI 3.1 description, for client generators and tools.'],
    ['/api/v1', 'API index', 'The API version and its links, as JSON.'],
    ['/healthz', 'Health', 'Whether this API process and its database answer (JSON; 503 when the database does not).'],
    ['/console', 'Console', "For members: the organization's conversations, calls, campaigns, texts and webhooks, live conversations and analytics."],
    ['/login', 'Sign in', 'For members approving an app that asks to act for their organization (OAuth).'],
  ];
  return htmlDocument(
    PRODUCT_NAME,
    `<p>REST control plane for conversational voice and chat agents. Authenticate API calls with <code>Authorization: Bearer &lt;key&gt;</code>.</p>
<ul class="links">${links.map(([href, name, what]) => `<li><a href="${escapeHtml(href)}">${escapeHtml(name)}</a><br><span class="muted">${escapeHtml(what)}</span></li>`).join('')}</ul>`,
  );
}

/** Builds the middleware. */
export function sitePages(deps: AppDeps): (ctx: AppContext, next: () => Promise<unknown>) => unknown {
  const css: Asset = { body: Buffer.from(SITE_CSS), gzip: zlib.gzipSync(SITE_CSS), etag: `"site-${hash(SITE_CSS)}"` };
  const icon: Asset = { body: Buffer.from(FAVICON_SVG), gzip: zlib.gzipSync(FAVICON_SVG), etag: `"icon-${hash(FAVICON_SVG)}"` };
  const html = (ctx: AppContext, body: string, csp: string) => {
    ctx.type = 'text/html; charset=utf-8';
    ctx.set('Content-Security-Policy', csp);
    ctx.set('X-Frame-Options', 'DENY');
    ctx.body = body;
  };
  const routes: Record<string, (ctx: AppContext) => void> = {
    '/': (ctx) => html(ctx, landingHtml(deps), PAGE_CSP),
    '/api/v1': (ctx) => {
      const origin = publicOrigin(ctx, deps.config.publicBaseUrl);
      ctx.body = {
        success: true,
        data: {
          name: 'Agent Control-Plane API',
          version: 'v1',
          links: {
            self: `${origin}/api/v1`,
            openapi: `${origin}${OPENAPI_PATH}`,
            docs: `${origin}/docs`,
            health: `${origin}/healthz`,
            oauthMetadata: `${origin}/.well-known/oauth-authorization-server`,
            ...(deps.temporalUiUrl ? { temporalUi: deps.temporalUiUrl } : {}),
          },
        },
      };
    },
    '/docs': (ctx) => html(ctx, docsHtml(), DOCS_CSP),
    [REFERENCE_SCRIPT_PATH]: (ctx) => sendAsset(ctx, 'text/javascript; charset=utf-8', scalarBundle()),
    [STYLESHEET_PATH]: (ctx) => sendAsset(ctx, 'text/css; charset=utf-8', css),
    [FAVICON_PATH]: (ctx) => sendAsset(ctx, 'image/svg+xml', icon),
    '/favicon.ico': (ctx) => sendAsset(ctx, 'image/svg+xml', icon),
  };
  routes['/api/v1/'] = routes['/api/v1'];
  const healthz = async (ctx: AppContext) => {
    ctx.set('Cache-Control', 'no-store');
    try {
      await deps.db.raw('select 1');
      ctx.body = { status: 'ok', database: 'ok' };
    } catch {
      ctx.status = 503;
      ctx.body = { status: 'unavailable', database: 'unreachable' };
    }
  };
  routes['/docs/'] = routes['/docs'];
  // A Map: an object indexed by each request's fresh path string looks the string up in V8's string table
  // (a hash of the whole path) on every API request that passes through.
  const byPath = new Map(Object.entries(routes));
  return (ctx, next) => {
    if (ctx.method !== 'GET' && ctx.method !== 'HEAD') return next();
    if (ctx.path === '/healthz') return healthz(ctx);
    const route = byPath.get(ctx.path);
    if (!route) return next();
    route(ctx);
  };
}

function hash(s: string): string {
  return crypto.createHash('sha256').update(s).digest('base64url').slice(0, 16);
}
