/**
 * A real API over a real socket on a fresh database, for HTTP tests (no mocks).
 */
import { loadConfig, type AppConfig } from '../../config';
import { createDb, type Db } from '../../db';
import { createOrganization } from '../../db/repositories/organizations';
import { createSecretKey } from '../../db/repositories/apiKeys';
import { startApi, type RunningApi } from '../../api/server';
import { createLogger } from '../../runtime';
import { NON_RESERVED_SCOPES } from '../../domain/scopes';
import { createMigratedTestDatabase } from './postgres';
import { startTestWorker, testTemporal, uniqueTaskQueue } from './temporal';
import type { Logger } from 'pino';
import type { WorkerOptions } from '@temporalio/worker';
import type { AppProviders } from '../../api/context';

/** A running test API and its database. */
export interface TestApi {
  api: RunningApi;
  db: Db;
  databaseUrl: string;
  config: AppConfig;
  /** The task queue of the API's workflows and of its worker (when the API was started with one). */
  taskQueue?: string;
  /** Creates an organization and a secret key with `scopes` (default: every non-reserved scope). */
  org(name?: string, scopes?: string[], opts?: { rateLimitPoints?: number; rateLimitWindowSeconds?: number }): Promise<{ orgId: string; key: string; keyId: string }>;
  /** fetch against the API: `call('GET', '/sms', { key })`. JSON bodies are serialized unless `raw` is given. */
  call(method: string, path: string, opts?: { key?: string; json?: unknown; raw?: string | Buffer; headers?: Record<string, string> }): Promise<TestResponse>;
  close(): Promise<void>;
}

/**
 * Config overrides of a test API whose tests drive one key faster than the default burst limit (20 requests per
 * second at the defaults, docs/api-notes.md "Rate limits") while testing something else: a window so large that
 * neither policy binds. Each suite opts in explicitly; the limits themselves are tested at the defaults
 * (test/api/wire.test.ts, test/api/rate-limit.test.ts).
 */
export const QUICK_CLIENT: Partial<AppConfig> = { rateLimitPoints: 1_000_000 };

/** A response with its parsed JSON body (undefined when the body is not JSON). */
export interface TestResponse {
  status: number;
  headers: Headers;
  body: any;
  text: string;
}

/** What a test worker's activities are built from. */
export interface TestWorkerDeps {
  db: Db;
  config: AppConfig;
  logger: Logger;
  /** The API's base URL (…/api/v1), for sandbox callbacks. */
  baseUrl: string;
}

/**
 * Starts an API on a free port over a fresh database. With `opts.worker`, the API gets the run's
 * Temporal dev server and a worker of the service's workflows runs on a task queue of its own with the
 * activities the function builds (stopped by `close`). With `opts.temporal` alone, the API gets the dev server and no
 * worker: the workflows it starts wait, as behind a busy worker.
 */
export async function startTestApi(
  label: string,
  overrides: Partial<AppConfig> = {},
  opts: { worker?: (deps: TestWorkerDeps) => WorkerOptions['activities']; temporal?: boolean; providers?: Partial<AppProviders>; temporalUiUrl?: string } = {},
): Promise<TestApi> {
  const databaseUrl = await createMigratedTestDatabase(label);
  const db = createDb(databaseUrl);
  const config = loadConfig({ port: 0, host: '127.0.0.1', logLevel: process.env.TEST_LOG_LEVEL ?? 'silent', ...overrides });
  const logger = createLogger(config.logLevel);
  const taskQueue = uniqueTaskQueue(label);
  const temporal = opts.worker || opts.temporal ? { client: (await testTemporal()).client, taskQueue } : undefined;
  const api = await startApi({ db, databaseUrl, config, logger, temporal, providers: opts.providers, temporalUiUrl: opts.temporalUiUrl });
  const worker = opts.worker ? await startTestWorker(taskQueue, opts.worker({ db, config, logger, baseUrl: api.baseUrl })) : undefined;
  return {
    api,
    db,
    databaseUrl,
    config,
    taskQueue: temporal?.taskQueue,
    async org(name = 'Test Org', scopes = NON_RESERVED_SCOPES, opts = {}) {
      const org = await createOrganization(db, name);
      const { key, info } = await createSecretKey(db, org.id, { brand: config.keyBrandPrefix, scopes, ...opts });
      return { orgId: org.id, key, keyId: info.id };
    },
    async call(method, path, opts = {}) {
      const headers: Record<string, string> = { ...(opts.headers ?? {}) };
      if (opts.key) headers.authorization = `Bearer ${opts.key}`;
      let body: string | Buffer | undefined = opts.raw;
      if (opts.json !== undefined) {
        body = JSON.stringify(opts.json);
        headers['content-type'] ??= 'application/json';
      }
      const res = await fetch(`${api.baseUrl}${path}`, { method, headers, body });
      const text = await res.text();
      let parsed: unknown;
      try {
        parsed = text ? JSON.parse(text) : undefined;
      } catch {
        parsed = undefined;
      }
      return { status: res.status, headers: res.headers, body: parsed, text };
    },
    async close() {
      await worker?.stop();
      await api.close();
      await db.destroy();
    },
  };
}

/**
 * Starts a test API for the enclosing mocha `describe` (a `before` hook at this point, `close` in an
 * `after` hook) and returns a handle whose members reach that API once the hook has run. Same
 * arguments as {@link startTestApi}. Throws when a member is used before the `before` hook ran.
 */
export function useTestApi(label: string, overrides: Partial<AppConfig> = {}, opts: Parameters<typeof startTestApi>[2] = {}): TestApi {
  let t: TestApi | undefined;
  before(async () => {
    t = await startTestApi(label, overrides, opts);
  });
  after(async () => t?.close());
  const started = (): TestApi => {
    if (!t) throw new Error(`useTestApi('${label}') used before its before() hook ran`);
    return t;
  };
  return {
    get api() {
      return started().api;
    },
    get db() {
      return started().db;
    },
    get databaseUrl() {
      return started().databaseUrl;
    },
    get config() {
      return started().config;
    },
    org: (...args) => started().org(...args),
    call: (...args) => started().call(...args),
    close: () => started().close(),
  };
}

/**
 * fetch of `${baseUrl}${path}` with `authorization: Bearer {key}` and, when `json` is given, a JSON body
 * (DESIGN.md "Wire conventions"). @returns the status, the headers and the body parsed as JSON
 * (undefined when empty). Throws a SyntaxError when the body is not JSON.
 */
export async function callWithKey(
  baseUrl: string,
  key: string,
  method: string,
  path: string,
  json?: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; headers: Headers; body: any }> {
  const res = await fetch(`${baseUrl}${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(json !== undefined ? { 'content-type': 'application/json' } : {}), ...headers },
    body: json !== undefined ? JSON.stringify(json) : undefined,
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : undefined };
}
