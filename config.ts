/**
 * Every environment variable the service reads, in one place (docs/configuration.md).
 * Values are read once at start; tests pass overrides through `loadConfig(overrides)`.
 */
import path from 'node:path';

/** The service's configuration; every field maps to one environment variable. */
export interface AppConfig {
  /** HTTP port of the API (PORT, default 8080). */
  port: number;
  /** Interface the API binds to (HOST, default 127.0.0.1). */
  host: string;
  /** Postgres URL (DATABASE_URL); unset means the embedded Postgres under `dataDir`. */
  databaseUrl?: string;
  /** Where embedded state lives (DATA_DIR, default ./.data). */
  dataDir: string;
  /** Temporal frontend `host:port` (TEMPORAL_ADDRESS); unset means the embedded dev server. */
  temporalAddress?: string;
  /** Port of the embedded Temporal dev server started by `npm start` (TEMPORAL_DEV_PORT, default 7233; 0 = any free port). */
  temporalDevPort: number;
  /** Port of the Temporal Web UI served beside the embedded dev server by `npm start` (TEMPORAL_UI_PORT, default 8233; 0 = any free port). */
  temporalUiPort: number;
  /** Temporal namespace (TEMPORAL_NAMESPACE, default `default`). */
  temporalNamespace: string;
  /** Brand prefix of credentials, as in `<brand>_sk_live_…` (KEY_BRAND_PREFIX, default `acp`). */
  keyBrandPrefix: string;
  /** pino level (LOG_LEVEL, default info; `silent` in tests). */
  logLevel: string;
  /** Bearer token of the API's own `GET /metrics` (METRICS_TOKEN); unset = that path answers 404 (docs/operations.md "Observability"). */
  metricsToken?: string;
  /** Port of the separate Prometheus listener of each process kind (METRICS_PORT); unset = none. */
  metricsPort?: number;
  /** Default requests allowed per key per window (RATE_LIMIT_POINTS, default 600). */
  rateLimitPoints: number;
  /** Rate-limit window in seconds (RATE_LIMIT_WINDOW_SECONDS, default 60). */
  rateLimitWindowSeconds: number;
  /**
   * Burst limit beside the window (docs/api-notes.md "Rate limits"): a key may send at most this multiple of its
   * average rate (points ÷ window) within any `rateLimitBurstSeconds` fixed window, at least 10 points
   * (RATE_LIMIT_BURST_FACTOR, default 2: 600 per 60 s → 20 per second; 0: no burst limit).
   */
  rateLimitBurstFactor: number;
  /** Length in seconds of the burst limit's window (RATE_LIMIT_BURST_SECONDS, default 1). */
  rateLimitBurstSeconds: number;
  /**
   * Requests that start bulk work (routes with `workload: 'bulk'`) one organization may have in flight in one API
   * process (BULK_REQUESTS_IN_FLIGHT, default 1) and waiting behind them (BULK_REQUESTS_QUEUED, default 64; more
   * answer 429). api/middleware/admission.ts.
   */
  bulkRequestsInFlight: number;
  bulkRequestsQueued: number;
  /**
   * Whether an organization's bulk requests are also spread out in time (BULK_REQUESTS_PACING: `key`, the default, or
   * `off`): in one API process, each starts at least its key's sustained spacing after the one before (the window's
   * seconds ÷ its points, at most 1 s: 100 ms at 600 per 60 s), waiting its turn rather than answering 429.
   */
  bulkRequestsPacing: 'key' | 'off';
  /** Widget requests per client IP per rate-limit window (WIDGET_IP_RATE_LIMIT_POINTS, default 120; docs/api-notes.md "Widget"). */
  widgetIpRateLimitPoints: number;
  /** Largest accepted JSON body in bytes (BODY_LIMIT_BYTES, default 1 MiB). */
  bodyLimitBytes: number;
  /** Seconds a resolved key or registration is cached in-process; changes are pushed to every process at once through Postgres NOTIFY, so this only bounds a missed notification (CACHE_TTL_SECONDS, default 30; 0 disables). */
  cacheTtlSeconds: number;
  /** Milliseconds between two batched writes of keys' `lastUsedAt` (api/keyUsage.ts; KEY_LAST_USED_FLUSH_MS, default 5000). */
  keyLastUsedFlushMs: number;
  /** Public base URL used in links and OpenAPI `servers` (PUBLIC_BASE_URL, default http://HOST:PORT). */
  publicBaseUrl: string;
  /** Twilio account auth token: the HMAC-SHA1 key of `X-Twilio-Signature` on voice webhooks (TWILIO_AUTH_TOKEN; unset: Twilio voice webhooks are refused). */
  twilioAuthToken?: string;
  /** Telnyx account public key, base64 Ed25519, checking `telnyx-signature-ed25519` on voice webhooks (TELNYX_PUBLIC_KEY; unset: Telnyx voice webhooks are refused). */
  telnyxPublicKey?: string;
  /** The chat model of an agent that names none (LLM_MODEL, default `gpt-4o-mini`; docs/api-notes.md "Agents": model settings). */
  llmModel: string;
  /** The models an agent may name as `model` or `fallbackModel` (LLM_MODELS, comma-separated; default: LLM_MODEL alone). */
  llmModels: string[];
  /**
   * NODE_ENV=production: every secret must come from the environment; none is generated under
   * DATA_DIR/secrets (docs/security.md).
   */
  production: boolean;
}

/**
 * A non-negative number from environment variable `name` (of `env`, default `process.env`), or `fallback` when
 * unset or empty.
 * @throws when it is set to anything else (a typo must not silently become the default)
 */
export function envNumber(name: string, fallback: number, env: NodeJS.ProcessEnv = process.env): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isFinite(n) || n < 0) throw new Error(`${name} must be a non-negative number, got "${raw}"`);
  return n;
}

/**
 * One of `choices` from environment variable `name` (trimmed, case-insensitive), or `fallback` when unset or empty.
 * @throws when it is set to anything else, naming the variable and the choices
 */
export function envChoice<T extends string>(name: string, choices: readonly T[], fallback: T, env: NodeJS.ProcessEnv = process.env): T {
  const raw = (env[name] ?? '').trim().toLowerCase();
  if (!raw) return fallback;
  if (!(choices as readonly string[]).includes(raw)) throw new Error(`${name} must be one of ${choices.join(', ')}, got "${env[name]}"`);
  return raw as T;
}

/** Default of LLM_MODEL: the model of a request that names none. */
export const DEFAULT_LLM_MODEL = 'gpt-4o-mini';

/**
 * The deployment's chat models (docs/configuration.md): `model` from LLM_MODEL (default `gpt-4o-mini`) and the
 * allowlist `models` an agent may choose from, LLM_MODELS split on commas (blanks dropped, each trimmed, repeats
 * removed); unset or empty: LLM_MODEL alone. LLM_MODEL is always allowed, listed or not.
 */
export function llmModelSettings(env: NodeJS.ProcessEnv = process.env): { model: string; models: string[] } {
  const model = (env.LLM_MODEL ?? '').trim() || DEFAULT_LLM_MODEL;
  const listed = (env.LLM_MODELS ?? '')
    .split(',')
    .map((m) => m.trim())
    .filter(Boolean);
  return { model, models: [...new Set([model, ...listed])] };
}

/** Reads the environment; `overrides` win (used by tests and benchmarks). @throws on malformed numbers */
export function loadConfig(overrides: Partial<AppConfig> = {}): AppConfig {
  const port = overrides.port ?? envNumber('PORT', 8080);
  const host = overrides.host ?? process.env.HOST ?? '127.0.0.1';
  const cfg: AppConfig = {
    port,
    host,
    databaseUrl: process.env.DATABASE_URL || undefined,
    dataDir: path.resolve(process.env.DATA_DIR || '.data'),
    temporalAddress: process.env.TEMPORAL_ADDRESS || undefined,
    temporalDevPort: envNumber('TEMPORAL_DEV_PORT', 7233),
    temporalUiPort: envNumber('TEMPORAL_UI_PORT', 8233),
    temporalNamespace: process.env.TEMPORAL_NAMESPACE || 'default',
    keyBrandPrefix: process.env.KEY_BRAND_PREFIX || 'acp',
    logLevel: process.env.LOG_LEVEL || 'info',
    metricsToken: process.env.METRICS_TOKEN || undefined,
    metricsPort: process.env.METRICS_PORT ? envNumber('METRICS_PORT', 0) : undefined,
    rateLimitPoints: envNumber('RATE_LIMIT_POINTS', 600),
    rateLimitWindowSeconds: envNumber('RATE_LIMIT_WINDOW_SECONDS', 60),
    rateLimitBurstFactor: envNumber('RATE_LIMIT_BURST_FACTOR', 2),
    rateLimitBurstSeconds: envNumber('RATE_LIMIT_BURST_SECONDS', 1),
    widgetIpRateLimitPoints: envNumber('WIDGET_IP_RATE_LIMIT_POINTS', 120),
    bulkRequestsInFlight: envNumber('BULK_REQUESTS_IN_FLIGHT', 1),
    bulkRequestsQueued: envNumber('BULK_REQUESTS_QUEUED', 64),
    bulkRequestsPacing: envChoice('BULK_REQUESTS_PACING', ['key', 'off'] as const, 'key'),
    bodyLimitBytes: envNumber('BODY_LIMIT_BYTES', 1024 * 1024),
    cacheTtlSeconds: envNumber('CACHE_TTL_SECONDS', 30),
    keyLastUsedFlushMs: envNumber('KEY_LAST_USED_FLUSH_MS', 5000),
    publicBaseUrl: process.env.PUBLIC_BASE_URL || `http://${host}:${port}`,
    twilioAuthToken: process.env.TWILIO_AUTH_TOKEN || undefined,
    telnyxPublicKey: process.env.TELNYX_PUBLIC_KEY || undefined,
    llmModel: llmModelSettings(process.env).model,
    llmModels: llmModelSettings(process.env).models,
    production: process.env.NODE_ENV === 'production',
    ...overrides,
  };
  if (!/^[a-z][a-z0-9]{1,15}$/.test(cfg.keyBrandPrefix)) {
    throw new Error('KEY_BRAND_PREFIX must be 2-16 lowercase letters or digits, starting with a letter');
  }
  if (!(cfg.keyLastUsedFlushMs >= 10)) {
    // 0 would make the flush timer spin (api/keyUsage.ts).
    throw new Error('KEY_LAST_USED_FLUSH_MS must be at least 10');
  }
  return cfg;
}
