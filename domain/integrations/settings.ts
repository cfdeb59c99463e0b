/**
 * Integration settings of the deployment (docs/configuration.md, docs/api-notes.md "Integrations and records",
 * docs/going-live.md "Google Calendar", "Cal.com" and "HubSpot"). Read from the environment on each call, like
 * domain/webhooks/settings.ts.
 */
import { INTEGRATION_KINDS, type IntegrationKind } from './catalog';

/** Google's OAuth client and API base URLs (configurable so a loopback stub can stand in for Google). */
export interface GoogleSettings {
  clientId: string;
  clientSecret: string;
  /** GOOGLE_OAUTH_AUTHORIZE_URL, default `https://accounts.google.com/o/oauth2/v2/auth`. */
  authorizationEndpoint: string;
  /** GOOGLE_OAUTH_TOKEN_URL, default `https://oauth2.googleapis.com/token`. */
  tokenEndpoint: string;
  /** GOOGLE_API_URL, the Calendar API's root URL, default `https://www.googleapis.com/`. */
  apiRootUrl: string;
}

/** HubSpot's API and OAuth app (configurable so a loopback stub can stand in for HubSpot). */
export interface HubSpotSettings {
  /** HUBSPOT_API_BASE: another origin for the API (a loopback stub in tests); null: `https://api.hubapi.com`. */
  apiBase: string | null;
  /** HUBSPOT_TIMEOUT_MS: a call's timeout, ms (default 10,000, 100..120,000). */
  timeoutMs: number;
  /**
   * The OAuth app (HUBSPOT_OAUTH_CLIENT_ID, HUBSPOT_OAUTH_CLIENT_SECRET); null when not configured (connections
   * then use a private app's token). Endpoints: HUBSPOT_OAUTH_AUTHORIZE_URL, default
   * `https://app.hubspot.com/oauth/authorize`; the token endpoint `/oauth/v1/token` on the API's origin.
   */
  oauth: { clientId: string; clientSecret: string; authorizationEndpoint: string; tokenEndpoint: string } | null;
}

/** What shapes the integrations of this deployment. */
export interface IntegrationSettings {
  /** `sandbox` (default and only value): INTEGRATIONS_PROVIDER, kept for compatibility; real adapters are per kind (`live`). */
  provider: 'sandbox';
  /**
   * Kinds whose new connections use the real provider (INTEGRATIONS_LIVE, comma-separated: `google_calendar`,
   * `calcom`, `hubspot`); the others connect to the sandbox. A connection keeps the provider it was made with (its
   * `provider` column).
   */
  live: ReadonlySet<IntegrationKind>;
  /**
   * OAuth kinds whose OAuth app is not configured here (INTEGRATIONS_UNAVAILABLE, comma-separated kinds):
   * connecting one answers 400 `integration_unavailable` and the catalogue shows `available: false`.
   */
  unavailable: ReadonlySet<IntegrationKind>;
  /** Google's OAuth client (GOOGLE_OAUTH_CLIENT_ID, GOOGLE_OAUTH_CLIENT_SECRET); null when not configured. */
  google: GoogleSettings | null;
  /** CALCOM_API_URL, Cal.com API v2's origin, default `https://api.cal.com` (paths start with `/v2`). */
  calcomApiUrl: string;
  /** INTEGRATIONS_TIMEOUT_MS: cap on one provider request, ms (default 10 000, 500..60 000). */
  timeoutMs: number;
  /** HubSpot's API base, timeout and OAuth app. */
  hubspot: HubSpotSettings;
}

/** Kinds with a real adapter (INTEGRATIONS_LIVE may name only these). */
export const LIVE_KINDS: readonly IntegrationKind[] = ['google_calendar', 'calcom', 'hubspot'];

/** Reads HubSpot's settings. @throws Error naming HUBSPOT_API_BASE, HUBSPOT_TIMEOUT_MS or a half-configured OAuth app */
export function loadHubSpotSettings(env: NodeJS.ProcessEnv = process.env): HubSpotSettings {
  const apiBase = env.HUBSPOT_API_BASE || null;
  if (apiBase && !/^https?:\/\/[^/]+\/?$/.test(apiBase)) throw new Error('HUBSPOT_API_BASE must be an origin, e.g. http://127.0.0.1:12112');
  const timeoutMs = env.HUBSPOT_TIMEOUT_MS ? Number(env.HUBSPOT_TIMEOUT_MS) : 10_000;
  if (!Number.isInteger(timeoutMs) || timeoutMs < 100 || timeoutMs > 120_000) throw new Error('HUBSPOT_TIMEOUT_MS must be an integer from 100 to 120000');
  const origin = apiBase?.replace(/\/$/, '') ?? null;
  if (!env.HUBSPOT_OAUTH_CLIENT_ID !== !env.HUBSPOT_OAUTH_CLIENT_SECRET) throw new Error('Set both HUBSPOT_OAUTH_CLIENT_ID and HUBSPOT_OAUTH_CLIENT_SECRET, or neither (docs/going-live.md "HubSpot")');
  const oauth = env.HUBSPOT_OAUTH_CLIENT_ID
    ? {
        clientId: env.HUBSPOT_OAUTH_CLIENT_ID,
        clientSecret: env.HUBSPOT_OAUTH_CLIENT_SECRET!,
        authorizationEndpoint: env.HUBSPOT_OAUTH_AUTHORIZE_URL || 'https://app.hubspot.com/oauth/authorize',
        tokenEndpoint: `${origin ?? 'https://api.hubapi.com'}/oauth/v1/token`,
      }
    : null;
  return { apiBase: origin, timeoutMs, oauth };
}

function kindsOf(name: string, text: string | undefined, allowed: readonly string[]): Set<IntegrationKind> {
  const out = new Set<IntegrationKind>();
  for (const k of (text ?? '').split(/[\s,]+/).filter(Boolean)) {
    if (!allowed.includes(k)) throw new Error(`${name} names "${k}", which is not one of ${allowed.join(', ')}`);
    out.add(k as IntegrationKind);
  }
  return out;
}

/**
 * Reads the settings (the one start-up check of the integration settings: providers/credentials.ts).
 * @throws Error naming an unknown kind or provider, a live Google Calendar without its OAuth client, a bad timeout,
 *   or a malformed HubSpot setting
 */
export function loadIntegrationSettings(env: NodeJS.ProcessEnv = process.env): IntegrationSettings {
  const provider = env.INTEGRATIONS_PROVIDER || 'sandbox';
  if (provider !== 'sandbox') throw new Error(`INTEGRATIONS_PROVIDER must be sandbox (real adapters are chosen per kind with INTEGRATIONS_LIVE), not "${provider}"`);
  const unavailable = kindsOf('INTEGRATIONS_UNAVAILABLE', env.INTEGRATIONS_UNAVAILABLE, INTEGRATION_KINDS.map((k) => k.kind));
  const live = kindsOf('INTEGRATIONS_LIVE', env.INTEGRATIONS_LIVE, LIVE_KINDS);
  const google =
    env.GOOGLE_OAUTH_CLIENT_ID && env.GOOGLE_OAUTH_CLIENT_SECRET
      ? {
          clientId: env.GOOGLE_OAUTH_CLIENT_ID,
          clientSecret: env.GOOGLE_OAUTH_CLIENT_SECRET,
          authorizationEndpoint: env.GOOGLE_OAUTH_AUTHORIZE_URL || 'https://accounts.google.com/o/oauth2/v2/auth',
          tokenEndpoint: env.GOOGLE_OAUTH_TOKEN_URL || 'https://oauth2.googleapis.com/token',
          apiRootUrl: env.GOOGLE_API_URL || 'https://www.googleapis.com/',
        }
      : null;
  if (live.has('google_calendar') && !google) throw new Error('INTEGRATIONS_LIVE lists google_calendar: set GOOGLE_OAUTH_CLIENT_ID and GOOGLE_OAUTH_CLIENT_SECRET (docs/going-live.md "Google Calendar")');
  const timeoutMs = env.INTEGRATIONS_TIMEOUT_MS ? Number(env.INTEGRATIONS_TIMEOUT_MS) : 10_000;
  if (!Number.isInteger(timeoutMs) || timeoutMs < 500 || timeoutMs > 60_000) throw new Error(`INTEGRATIONS_TIMEOUT_MS must be an integer from 500 to 60000 (ms), not "${env.INTEGRATIONS_TIMEOUT_MS}"`);
  return { provider, live, unavailable, google, calcomApiUrl: (env.CALCOM_API_URL || 'https://api.cal.com').replace(/\/$/, ''), timeoutMs, hubspot: loadHubSpotSettings(env) };
}
