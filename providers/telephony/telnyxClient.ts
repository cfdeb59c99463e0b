/**
 * The official `telnyx` SDK client as the Telnyx adapters use it (docs/going-live.md "Telnyx"):
 * `TELNYX_API_KEY` (Bearer), `TELNYX_BASE_URL` (default `https://api.telnyx.com/v2`; tests point it at a
 * loopback stub), no SDK retries (a retried write could be a second number, text or call: 429s are waited
 * out by `withRateLimit`, anything else goes through performOnce's look-up).
 */
import type Telnyx from 'telnyx';
import { lazyModule } from '../lazyModule';
import type { Db } from '../../db';
import type { AppConfig } from '../../config';
import { requiredEnv, withRateLimit, type RateLimitProbe } from './live';

/** Provider name of the Telnyx adapters (also the `{provider}` segment of their webhook path). */
export const TELNYX_PROVIDER = 'telnyx';

/** The `telnyx` SDK, loaded when an adapter first needs it (../lazyModule.ts). */
const telnyxSdk = lazyModule(() => require('telnyx') as typeof import('telnyx'), 'telnyx');

/** Whether `err` is the Telnyx SDK's `APIError` (false while the SDK is not loaded: nothing could have thrown one). */
export function isTelnyxApiError(err: unknown): err is InstanceType<typeof import('telnyx').APIError> {
  const sdk = telnyxSdk.loaded();
  return !!sdk && err instanceof sdk.APIError;
}

/** A Telnyx SDK client from the environment. @throws Error naming TELNYX_API_KEY when unset */
export function telnyxClient(): Telnyx {
  return new (telnyxSdk().default)({
    apiKey: requiredEnv('TELNYX_API_KEY', 'the Telnyx adapters'),
    baseURL: process.env.TELNYX_BASE_URL || 'https://api.telnyx.com/v2',
    maxRetries: 0,
    timeout: 30_000,
  });
}

/** 429 and its `Retry-After` from a Telnyx SDK error. */
export const telnyxRateLimit: RateLimitProbe = (err) =>
  isTelnyxApiError(err) && err.status === 429 ? { rateLimited: true, retryAfter: err.headers?.get('retry-after') ?? null } : { rateLimited: false, retryAfter: null };

/** The first error detail Telnyx gave (`errors[0].detail` or `.title`), else the SDK's message. */
export function telnyxErrorText(err: unknown): string {
  if (isTelnyxApiError(err)) {
    const first = (err.error as { errors?: { detail?: string; title?: string; code?: string }[] } | undefined)?.errors?.[0];
    return `Telnyx ${err.status ?? ''}: ${first?.detail || first?.title || err.message}`.trim();
  }
  return err instanceof Error ? err.message : String(err);
}

/**
 * Checks the credentials once (worker start-up): a cheap authenticated read. @throws Error with one
 * line naming the variable when Telnyx refuses the key
 */
export async function checkTelnyxCredentials(client: Telnyx = telnyxClient()): Promise<void> {
  try {
    await client.balance.retrieve();
  } catch (err) {
    if (isTelnyxApiError(err) && (err.status === 401 || err.status === 403)) throw new Error(`TELNYX_API_KEY is refused by Telnyx (${err.status}); set a valid API v2 key`);
    throw new Error(`Telnyx credentials could not be checked: ${telnyxErrorText(err)}`);
  }
}

/**
 * What both Telnyx adapters (carrier and telephony) hold: the database for the provider request log, the
 * configuration, and the SDK client, whose calls go through {@link withRateLimit} with Telnyx's 429 probe.
 */
export abstract class TelnyxAdapterBase {
  readonly provider = TELNYX_PROVIDER;
  protected readonly db: Db;
  protected readonly config: AppConfig;
  protected readonly client: Telnyx;

  constructor(deps: { db: Db; config: AppConfig }, client: Telnyx = telnyxClient()) {
    this.db = deps.db;
    this.config = deps.config;
    this.client = client;
  }

  /** Runs one SDK call, waiting out a 429 for its Retry-After (never repeating a write otherwise). */
  protected call<T>(fn: () => Promise<T>): Promise<T> {
    return withRateLimit(telnyxRateLimit, fn);
  }
}
