/**
 * The Temporal Web UI listener of the dev server (the real `temporal server start-dev` serves the
 * UI on :8233): the static build of `ui/` (the official UI from `@temporalio/ui`, see
 * scripts/build-ui.ts; a "building…" page until a background build is done), our own answer to the
 * UI's `GET /api/v1/settings`, the raw history download, and every other
 * `/api/v1/…` request handed to the HTTP API with full payloads (the UI decodes payloads itself,
 * as from the real UI server).
 */
import { createReadStream, existsSync, promises as fs, readFileSync } from 'node:fs';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import * as path from 'node:path';
import type { HttpApiHandler } from './gateway';

/** Options of {@link serveWebUi}. */
export interface WebUiOptions {
  /** Directory of the static build (index.html, _app/…). */
  buildDir: string;
  /**
   * The build in progress, when the UI is built in the background (`npm start`): until it
   * settles every page answers a small self-refreshing "building…" page (503), after a failure
   * a page with the error; `/api/v1/…` is served throughout. Without it the build must exist.
   */
  building?: Promise<unknown>;
  /** The dev server's HTTP API. */
  httpApi: HttpApiHandler;
  host: string;
  /** TCP port; 0 = a free port. */
  port: number;
  /** Namespace the UI opens first (the service's TEMPORAL_NAMESPACE). */
  defaultNamespace: string;
  /**
   * Version the settings report; the UI reads it as the UI server's version (from 2.23.0 on it
   * encodes path parameters once), so it is the `@temporalio/ui` package's version.
   */
  version: string;
}

/** A running Web UI listener. */
export interface WebUiServer {
  /** `http://host:port`. */
  url: string;
  close(): Promise<void>;
}

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.gif': 'image/gif',
  '.ico': 'image/x-icon',
  '.woff2': 'font/woff2',
  '.woff': 'font/woff',
  '.ttf': 'font/ttf',
  '.webmanifest': 'application/manifest+json',
  '.mp4': 'video/mp4',
  '.webm': 'video/webm',
};

/**
 * The UI's settings (the shape of the real UI server's `/api/v1/settings`): no auth, no codec
 * server, write actions on (signal, update, cancel, terminate, reset: the dev server implements
 * UpdateWorkflowExecution and ResetWorkflowExecution, and the UI's Update and Reset actions read
 * `WorkflowUpdateDisabled` / `WorkflowResetDisabled`); starting workflows and batch actions off,
 * as the dev server does not implement them.
 */
export function uiSettings(defaultNamespace: string, version: string): Record<string, unknown> {
  return {
    Auth: { Enabled: false, Options: null },
    BannerText: '',
    DefaultNamespace: defaultNamespace,
    ShowTemporalSystemNamespace: false,
    FeedbackURL: '',
    NotifyOnNewVersion: false,
    Codec: { Endpoint: '', PassAccessToken: false, IncludeCredentials: false },
    Version: version,
    DisableWriteActions: false,
    WorkflowTerminateDisabled: false,
    WorkflowCancelDisabled: false,
    WorkflowSignalDisabled: false,
    WorkflowUpdateDisabled: false,
    WorkflowResetDisabled: false,
    BatchActionsDisabled: true,
    StartWorkflowDisabled: true,
    HideWorkflowQueryErrors: false,
    RefreshWorkflowCountsDisabled: false,
  };
}

async function serveFile(buildDir: string, urlPath: string, res: http.ServerResponse): Promise<void> {
  let rel: string;
  try {
    rel = decodeURIComponent(urlPath);
  } catch {
    rel = '/';
  }
  const file = path.join(buildDir, path.normalize(rel).replace(/^(\.\.[/\\])+/, ''));
  const inside = file.startsWith(buildDir + path.sep);
  const stat = inside ? await fs.stat(file).catch(() => undefined) : undefined;
  // Any path that is not a file of the build is a client-side route: the SPA fallback page.
  const target = stat?.isFile() ? file : path.join(buildDir, 'index.html');
  const immutable = stat?.isFile() && rel.startsWith('/_app/immutable/');
  res.writeHead(200, {
    'content-type': TYPES[path.extname(target)] ?? 'application/octet-stream',
    'cache-control': immutable ? 'public, max-age=31536000, immutable' : 'no-cache',
  });
  createReadStream(target).pipe(res);
}

/** The HTTP API as the UI reads it: full payloads, null payloads as JSON nulls (devserver/http/json.ts). */
const UI_API_OPTIONS = { payloadShorthand: false, nullPayloadAsJson: true };

/** The version of the installed `@temporalio/ui` package (what the UI build was made from). */
export function webUiVersion(): string {
  // The package's `exports` do not list package.json: look it up along the module paths.
  for (const dir of require.resolve.paths('@temporalio/ui') ?? []) {
    const file = path.join(dir, '@temporalio', 'ui', 'package.json');
    if (existsSync(file)) return (JSON.parse(readFileSync(file, 'utf8')) as { version: string }).version;
  }
  return '2.38.0';
}

/**
 * The raw history download of a run (the UI's "View Raw History" link, `…/{runId}/history.json`,
 * and the real UI server's `/api/v1/namespaces/{ns}/workflows/{id}/run/{runId}/history.json`)
 * as the HTTP API's GetWorkflowExecutionHistory path for the whole history; undefined for any
 * other path. Segments stay percent-encoded (a workflow id holding `/` travels as `%2F`).
 */
export function rawHistoryPath(urlPath: string): string | undefined {
  const m =
    /^\/namespaces\/([^/]+)\/workflows\/([^/]+)\/([^/]+)\/history\.json$/.exec(urlPath) ??
    /^\/api\/v1\/namespaces\/([^/]+)\/workflows\/([^/]+)\/run\/([^/]+)\/history\.json$/.exec(urlPath);
  if (!m) return undefined;
  return `/api/v1/namespaces/${m[1]}/workflows/${m[2]}/history?execution.runId=${m[3]}&maximumPageSize=100000&pretty=true`;
}

/** The page shown while the UI is being built (or after its build failed): refreshes itself every 3 s. */
export function buildingPage(failure?: string): string {
  const esc = (t: string) => t.replace(/[&<>"]/g, (c) => `&#${c.charCodeAt(0)};`);
  const body = failure
    ? `<h1>The Temporal Web UI could not be built</h1><pre>${esc(failure)}</pre><p>Run <code>npm run ui:build</code> to see the whole output.</p>`
    : '<h1>Building the Temporal Web UI…</h1><p>This page reloads by itself once the build (about a minute on a fresh clone) is done. The API and the dev server are already serving.</p>';
  return `<!doctype html><html lang="en"><head><meta charset="utf-8">${failure ? '' : '<meta http-equiv="refresh" content="3">'}<title>Temporal Web UI (building…)</title><style>body{font-family:system-ui,sans-serif;margin:3rem;max-width:50rem}pre{white-space:pre-wrap}</style></head><body data-testid="ui-building">${body}</body></html>`;
}

/**
 * Serves the Web UI. Rejects when the port cannot be bound or (without `building`) the build
 * directory has no index.html.
 */
export async function serveWebUi(opts: WebUiOptions): Promise<WebUiServer> {
  const buildDir = path.resolve(opts.buildDir);
  let state: { ready: true } | { ready: false; failure?: string } = { ready: true };
  if (opts.building) {
    state = { ready: false };
    opts.building.then(
      async () => {
        state = (await fs.access(path.join(buildDir, 'index.html')).then(() => true, () => false))
          ? { ready: true }
          : { ready: false, failure: `no index.html in ${buildDir}` };
      },
      (err: unknown) => {
        state = { ready: false, failure: err instanceof Error ? err.message : String(err) };
      },
    );
  } else {
    await fs.access(path.join(buildDir, 'index.html'));
  }
  const settings = JSON.stringify(uiSettings(opts.defaultNamespace, opts.version));
  const server = http.createServer((req, res) => {
    const urlPath = (req.url ?? '/').split('?')[0];
    if (urlPath === '/api/v1/settings') {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(settings);
      return;
    }
    const raw = rawHistoryPath(urlPath);
    if (raw) {
      // "View Raw History": the run's whole history, GetWorkflowExecutionHistory in the HTTP API's JSON.
      req.url = raw;
      void opts.httpApi(req, res, UI_API_OPTIONS);
      return;
    }
    if (urlPath.startsWith('/api/')) {
      void opts.httpApi(req, res, UI_API_OPTIONS);
      return;
    }
    if (!state.ready) {
      res.writeHead(state.failure ? 500 : 503, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store', ...(state.failure ? {} : { 'retry-after': '3' }) });
      res.end(buildingPage(state.failure));
      return;
    }
    serveFile(buildDir, urlPath, res).catch(() => {
      if (!res.headersSent) res.writeHead(500);
      res.end();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port, opts.host, () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://${opts.host}:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
