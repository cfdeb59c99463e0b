/**
 * Webhook delivery settings, read from the environment once per call of {@link loadWebhookSettings}
 * (docs/configuration.md). Workflows never read the environment: the dispatcher passes the retry
 * schedule in the workflow input, and activities read the rest.
 */
import { parseAllowList, type AllowList } from '../net/guard';

/** Everything that shapes a delivery. */
export interface WebhookSettings {
  /**
   * Delay before each attempt, ms; its length is the number of attempts (WEBHOOK_RETRY_SCHEDULE,
   * default `0,5s,5m,30m,2h,5h,10h,10h`: immediately, then 7 retries over about 28 h).
   */
  retryScheduleMs: number[];
  /** An endpoint failing continuously this long is disabled (WEBHOOK_DISABLE_AFTER_FAILING, default `5d`). */
  disableAfterFailingMs: number;
  /** Timeout of one attempt, ms (WEBHOOK_TIMEOUT_MS, default 15000). */
  timeoutMs: number;
  /**
   * Timeout of reaching the receiver, ms: DNS lookup, TCP connect and TLS handshake (WEBHOOK_CONNECT_TIMEOUT,
   * default `5s`). A receiver that does not answer a connection fails the attempt after this, not after `timeoutMs`.
   */
  connectTimeoutMs: number;
  /** Attempts in flight at once to one endpoint, across every worker (WEBHOOK_MAX_IN_FLIGHT_PER_ENDPOINT, default 4). */
  maxInFlightPerEndpoint: number;
  /** Attempts in flight at once for one organization, across every worker (WEBHOOK_MAX_IN_FLIGHT_PER_ORG, default 8). */
  maxInFlightPerOrg: number;
  /**
   * Longest first wait of an attempt that found no free place, ms (WEBHOOK_DEFERRAL_DELAY, default `10s`): a freed
   * place wakes the longest waiter sooner; this only bounds a wake that never comes. It doubles with each
   * deferral of the same attempt, up to 60 times this, with equal jitter.
   */
  deferralDelayMs: number;
  /**
   * Host names (lowercase, optionally `host:port`) to which plain `http://` deliveries are allowed
   * (WEBHOOK_ALLOW_HTTP_HOSTS, comma-separated; for local development and tests). Everything else
   * must be https.
   */
  allowHttpHosts: string[];
  /** Non-public addresses the SSRF guard permits anyway (HTTP_ALLOW_PRIVATE_HOSTS, IPs/CIDRs). */
  allowPrivate: AllowList;
  /** How often the dispatcher sweeps the outbox when no notification arrives, ms (WEBHOOK_DISPATCH_INTERVAL_MS, default 1000). */
  dispatchIntervalMs: number;
  /**
   * 32-byte key (base64) sealing signing secrets at rest with AES-256-GCM (WEBHOOK_SECRET_KEY; docs/security.md). Null only where no entry point resolved it: sealing then refuses.
   */
  secretKey: Buffer | null;
  /** The key before a rotation (WEBHOOK_SECRET_KEY_PREVIOUS): still opens secrets, never seals. */
  previousSecretKey: Buffer | null;
  /** How far back events can be replayed to an endpoint, ms (WEBHOOK_EVENT_RETENTION, default `30d`). */
  eventRetentionMs: number;
  /** Events queued per step of a replay (WEBHOOK_REPLAY_BATCH, default 50). */
  replayBatchSize: number;
  /** Pause between two steps of a replay, ms (WEBHOOK_REPLAY_INTERVAL, default `1s`): paces the receiver. */
  replayIntervalMs: number;
}

/** A 32-byte key from base64 `value` of variable `name`, or null when unset. @throws Error when not 32 bytes */
function sealingKey(name: string, value: string | undefined): Buffer | null {
  if (!value) return null;
  const key = Buffer.from(value, 'base64');
  if (key.length !== 32) throw new Error(`${name} must be 32 bytes, base64-encoded`);
  return key;
}

/** The default retry schedule: immediately, 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h. */
export const DEFAULT_RETRY_SCHEDULE = '0,5s,5m,30m,2h,5h,10h,10h';

const UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/**
 * Parses a duration such as `0`, `250ms`, `5s`, `5m`, `2h`, `5d` (a bare number is milliseconds).
 * @returns milliseconds
 * @throws Error on malformed text
 */
export function parseDuration(text: string): number {
  const m = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)?\s*$/i.exec(text);
  if (!m) throw new Error(`"${text}" is not a duration (examples: 0, 500ms, 5s, 5m, 2h, 5d)`);
  return Math.round(Number(m[1]) * UNITS[(m[2] ?? 'ms').toLowerCase()]);
}

/** Parses a comma-separated retry schedule. @throws Error when empty or malformed */
export function parseRetrySchedule(text: string): number[] {
  const out = text.split(',').map((p) => parseDuration(p));
  if (!out.length) throw new Error('WEBHOOK_RETRY_SCHEDULE must list at least one delay');
  return out;
}

/** A positive integer variable, or `fallback` when unset. @throws Error naming the variable when malformed */
function positiveInt(name: string, value: string | undefined, fallback: number): number {
  if (!value) return fallback;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) throw new Error(`${name} must be a positive integer`);
  return n;
}

/** Reads the settings from the environment; `overrides` win (tests, benchmarks). @throws Error on malformed values */
export function loadWebhookSettings(overrides: Partial<WebhookSettings> = {}, env: NodeJS.ProcessEnv = process.env): WebhookSettings {
  const key = sealingKey('WEBHOOK_SECRET_KEY', env.WEBHOOK_SECRET_KEY);
  const previousKey = sealingKey('WEBHOOK_SECRET_KEY_PREVIOUS', env.WEBHOOK_SECRET_KEY_PREVIOUS);
  return {
    retryScheduleMs: parseRetrySchedule(env.WEBHOOK_RETRY_SCHEDULE || DEFAULT_RETRY_SCHEDULE),
    disableAfterFailingMs: parseDuration(env.WEBHOOK_DISABLE_AFTER_FAILING || '5d'),
    timeoutMs: env.WEBHOOK_TIMEOUT_MS ? parseDuration(env.WEBHOOK_TIMEOUT_MS) : 15_000,
    connectTimeoutMs: parseDuration(env.WEBHOOK_CONNECT_TIMEOUT || '5s'),
    maxInFlightPerEndpoint: positiveInt('WEBHOOK_MAX_IN_FLIGHT_PER_ENDPOINT', env.WEBHOOK_MAX_IN_FLIGHT_PER_ENDPOINT, 4),
    maxInFlightPerOrg: positiveInt('WEBHOOK_MAX_IN_FLIGHT_PER_ORG', env.WEBHOOK_MAX_IN_FLIGHT_PER_ORG, 8),
    deferralDelayMs: parseDuration(env.WEBHOOK_DEFERRAL_DELAY || '10s'),
    allowHttpHosts: (env.WEBHOOK_ALLOW_HTTP_HOSTS ?? '')
      .split(/[\s,]+/)
      .map((h) => h.trim().toLowerCase())
      .filter(Boolean),
    allowPrivate: parseAllowList(env.HTTP_ALLOW_PRIVATE_HOSTS),
    dispatchIntervalMs: env.WEBHOOK_DISPATCH_INTERVAL_MS ? parseDuration(env.WEBHOOK_DISPATCH_INTERVAL_MS) : 1000,
    secretKey: key,
    previousSecretKey: previousKey,
    eventRetentionMs: parseDuration(env.WEBHOOK_EVENT_RETENTION || '30d'),
    replayBatchSize: positiveInt('WEBHOOK_REPLAY_BATCH', env.WEBHOOK_REPLAY_BATCH, 50),
    replayIntervalMs: parseDuration(env.WEBHOOK_REPLAY_INTERVAL || '1s'),
    ...overrides,
  };
}
