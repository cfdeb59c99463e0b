/**
 * Integration settings of the deployment (docs/configuration.md, docs/api-notes.md "Integrations and records").
 * Read from the environment on each call, like domain/webhooks/settings.ts.
 */
import { INTEGRATION_KINDS, type IntegrationKind } from './catalog';

/** What shapes the integrations of this deployment. */
export interface IntegrationSettings {
  /** `sandbox` (default; the only adapter so far): INTEGRATIONS_PROVIDER. */
  provider: 'sandbox';
  /**
   * OAuth kinds whose OAuth app is not configured here (INTEGRATIONS_UNAVAILABLE, comma-separated kinds):
   * connecting one answers 400 `integration_unavailable` and the catalogue shows `available: false`.
   */
  unavailable: ReadonlySet<IntegrationKind>;
  /**
   * Kinds a new connection makes on the provider's real API instead of the sandbox (INTEGRATIONS_LIVE,
   * comma-separated; `hubspot` so far). Each connection keeps the adapter it was made with (its config's `adapter`).
   */
  live: ReadonlySet<IntegrationKind>;
}

/** Kinds with a real adapter (INTEGRATIONS_LIVE). */
export const LIVE_INTEGRATION_KINDS: readonly IntegrationKind[] = ['hubspot'];

/** Reads the settings. @throws Error naming an unknown kind or provider */
export function loadIntegrationSettings(env: NodeJS.ProcessEnv = process.env): IntegrationSettings {
  const provider = env.INTEGRATIONS_PROVIDER || 'sandbox';
  if (provider !== 'sandbox') throw new Error(`INTEGRATIONS_PROVIDER must be sandbox (the only integration adapter so far), not "${provider}"`);
  const known = new Set<string>(INTEGRATION_KINDS.map((k) => k.kind));
  const unavailable = new Set<IntegrationKind>();
  for (const k of (env.INTEGRATIONS_UNAVAILABLE ?? '').split(/[\s,]+/).filter(Boolean)) {
    if (!known.has(k)) throw new Error(`INTEGRATIONS_UNAVAILABLE names "${k}", which is not an integration kind (${[...known].join(', ')})`);
    unavailable.add(k as IntegrationKind);
  }
  const live = new Set<IntegrationKind>();
  for (const k of (env.INTEGRATIONS_LIVE ?? '').split(/[\s,]+/).filter(Boolean)) {
    if (!LIVE_INTEGRATION_KINDS.includes(k as IntegrationKind)) throw new Error(`INTEGRATIONS_LIVE names "${k}", which has no real adapter (${LIVE_INTEGRATION_KINDS.join(', ')})`);
    live.add(k as IntegrationKind);
  }
  return { provider, unavailable, live };
}
