/**
 * A real API over a real socket on a fresh database, for HTTP tests (no mocks).
 */
import { loadConfig, type AppConfig } from '../../config';
import { createDb, migrate, type Db } from '../../db';
import { createOrganization } from '../../db/repositories/organizations';
import { createSecretKey } from '../../db/repositories/apiKeys';
import { startApi, type RunningApi } from '../../api/server';
import { createLogger } from '../../runtime';
import { NON_RESERVED_SCOPES } from '../../domain/scopes';
import { createTestDatabase } from './postgres';

/** A running test API and its database. */
export interface TestApi {
  api: RunningApi;
  db: Db;
  databaseUrl: string;
  config: AppConfig;
  /** Creates an organization and a secret key with `scopes` (default: every non-reserved scope). */
  org(name?: string, scopes?: string[], opts?: { rateLimitPoints?: number; rateLimitWindowSeconds?: number }): Promise<{ orgId: string; key: string; keyId: string }>;
  /** fetch against the API: `call('GET', '/sms', { key })`. JSON bodies are serialized unless `raw` is given. */
  call(method: string, path: string, opts?: { key?: string; json?: unknown; raw?: string | Buffer; headers?: Record<string, string> }): Promise<TestResponse>;
  close(): Promise<void>;
}

/** A response with its parsed JSON body (undefined when the body is not JSON). */
export interface TestResponse {
  status: number;
  headers: Headers;
  body: any;
  text: string;
}

/** Starts an API on a free port over a fresh database. */
export async function startTestApi(label: string, overrides: Partial<AppConfig> = {}): Promise<TestApi> {
  const databaseUrl = await createTestDatabase(label);
  const db = createDb(databaseUrl);
  await migrate(db);
  const config = loadConfig({ port: 0, host: '127.0.0.1', logLevel: process.env.TEST_LOG_LEVEL ?? 'silent', ...overrides });
  const api = await startApi({ db, databaseUrl, config, logger: createLogger(config.logLevel) });
  return {
    api,
    db,
    databaseUrl,
    config,
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
      await api.close();
      await db.destroy();
    },
  };
}
