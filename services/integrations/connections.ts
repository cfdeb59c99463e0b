/**
 * Integration connections as an application service (docs/api-notes.md "Integrations and records"), shared by the
 * API handlers, the skills and the records-sync activities:
 * - credentials and OAuth tokens are sealed at rest with AES-256-GCM under WEBHOOK_SECRET_KEY, the same
 *   sealing as webhook signing secrets (domain/webhooks/signing.ts; docs/security.md);
 * - OAuth (RFC 6749 §4.1) begins with a state bound to the organization and kind (stored hashed, single
 *   use, 10 minutes) and a PKCE S256 pair (RFC 7636) for kinds that support it; the callback exchanges
 *   the code with the verifier.
 */
import type { Db } from '../../db';
import { ApiError } from '../../domain/errors';
import { integrationKind, type IntegrationKind, type IntegrationKindDef } from '../../domain/integrations/catalog';
import { hashOAuthState, newOAuthState, newPkcePair, OAUTH_STATE_TTL_MS } from '../../domain/integrations/oauth';
import { loadIntegrationSettings } from '../../domain/integrations/settings';
import { openSecret, sealSecret } from '../../domain/webhooks/signing';
import { loadWebhookSettings } from '../../domain/webhooks/settings';
import { consumeOAuthState, getConnection, insertOAuthState, markConnectionNeedsReauth, updateConnectionCredentials, upsertConnection, type ConnectionRecord } from '../../db/repositories/integrations';
import { connectProvider, integrationsAdapter, IntegrationProviderError, type IntegrationSecrets } from '../../providers/integrations';
import { emitEvent } from '../../events/emit';

/** Seals a connection's secrets (JSON) with WEBHOOK_SECRET_KEY. @throws Error when the key is not set */
export function sealCredentials(secrets: IntegrationSecrets): string {
  return sealSecret(JSON.stringify(secrets), loadWebhookSettings().secretKey);
}

/** Opens a connection's secrets with WEBHOOK_SECRET_KEY (or the previous key during a rotation). @throws Error when neither opens them */
export function openCredentials(sealed: string): IntegrationSecrets {
  const s = loadWebhookSettings();
  return JSON.parse(openSecret(sealed, [s.secretKey, s.previousSecretKey])) as IntegrationSecrets;
}

/** The catalogue entry of a path's `{kind}`. @throws ApiError 404 `integration_kind_not_found` naming `kind` */
export function kindOr404(kind: string): IntegrationKindDef {
  const def = integrationKind(kind);
  if (!def) throw new ApiError(404, 'integration_kind_not_found', `There is no integration kind "${kind}"; see GET /integrations/catalog`, { errors: [{ field: 'kind', message: 'is not a kind of the catalogue' }] });
  return def;
}

/** Whether this deployment offers `kind` (an OAuth kind needs its OAuth app: INTEGRATIONS_UNAVAILABLE). */
export function kindAvailable(kind: IntegrationKind): boolean {
  return !loadIntegrationSettings().unavailable.has(kind);
}

/**
 * How `def` connects here: its catalogue method, except HubSpot, which connects through OAuth (authorization code
 * with PKCE against HubSpot's endpoints) when INTEGRATIONS_LIVE lists it and HubSpot's OAuth app is configured
 * (HUBSPOT_OAUTH_CLIENT_ID; docs/going-live.md "HubSpot") — a private app's token in `credentials` is still taken.
 */
export function connectMethodOf(def: IntegrationKindDef): 'oauth' | 'credentials' {
  if (def.connectMethod === 'oauth') return 'oauth';
  const settings = def.kind === 'hubspot' ? loadIntegrationSettings() : null;
  return settings?.live.has('hubspot') && settings.hubspot.oauth ? 'oauth' : 'credentials';
}

/** The organization's connection of `kind`. @throws ApiError 409 `integration_not_connected` (spec "Errors") */
export async function requireConnection(db: Db, orgId: string, kind: IntegrationKind): Promise<ConnectionRecord> {
  const c = await getConnection(db, orgId, kind);
  if (!c) throw new ApiError(409, 'integration_not_connected', `${kind} is not connected; connect it first with POST /integrations/${kind}/connect`);
  return c;
}

function providerRefusal(err: unknown, field: string): never {
  if (err instanceof IntegrationProviderError) {
    if (err.code === 'unavailable' || err.code === 'timeout' || err.code === 'bad_answer') throw new ApiError(502, 'integration_provider_error', err.message);
    throw new ApiError(422, 'integration_credentials_rejected', `The provider refused: ${err.message}`, { errors: [{ field, message: err.message }] });
  }
  throw err;
}

/**
 * Validates credentials against the provider and stores them sealed (a reconnect replaces them).
 * @throws ApiError 422 `integration_credentials_rejected` naming `credentials` when the provider refuses them
 */
export async function connectWithCredentials(db: Db, orgId: string, def: IntegrationKindDef, credentials: Record<string, string>): Promise<ConnectionRecord> {
  const provider = connectProvider(def.kind);
  let account;
  try {
    account = await integrationsAdapter(process.env, provider).validateCredentials(def.kind, credentials);
  } catch (err) {
    providerRefusal(err, 'credentials');
  }
  return upsertConnection(db, orgId, { kind: def.kind, accountLabel: account.accountLabel, scopes: account.scopes, credentialsSealed: sealCredentials(account.secrets), provider });
}

/** The redirect URI the provider sends the browser back to. */
export function oauthRedirectUri(publicBaseUrl: string, kind: IntegrationKind): string {
  return `${publicBaseUrl.replace(/\/$/, '')}/api/v1/integrations/${kind}/oauth/callback`;
}

/**
 * Begins an OAuth authorization: stores the state (hashed) bound to the organization and kind, and the
 * PKCE verifier (sealed); returns the provider's authorization URL.
 * @throws ApiError 400 `integration_unavailable` (spec "Errors") when this deployment has no OAuth app for the kind
 */
export async function beginOAuth(db: Db, orgId: string, def: IntegrationKindDef, publicBaseUrl: string): Promise<{ authorizationUrl: string; expiresAt: Date }> {
  if (!kindAvailable(def.kind)) throw new ApiError(400, 'integration_unavailable', `The OAuth app of ${def.kind} is not configured for this deployment`, { errors: [{ field: 'kind', message: 'is not available here' }] });
  const { state, hash } = newOAuthState();
  const pkce = def.pkce ? newPkcePair() : null;
  const redirectUri = oauthRedirectUri(publicBaseUrl, def.kind);
  const expiresAt = new Date(Date.now() + OAUTH_STATE_TTL_MS);
  await insertOAuthState(db, orgId, { stateHash: hash, kind: def.kind, codeVerifierSealed: pkce ? sealCredentials({ verifier: pkce.verifier }) : null, redirectUri, expiresAt });
  const authorizationUrl = integrationsAdapter(process.env, connectProvider(def.kind)).authorizationUrl(def.kind, { redirectUri, state, scopes: def.oauthScopes, codeChallenge: pkce?.challenge ?? null });
  return { authorizationUrl, expiresAt };
}

/**
 * Completes an authorization from the provider's callback (RFC 6749 §4.1.2): the state must be one this
 * service issued for this kind, unused and unexpired; the code is exchanged with the PKCE verifier.
 * @throws ApiError 400 `invalid_oauth_state` naming `state`; 400 `oauth_denied` when the user refused;
 *   422 `integration_credentials_rejected` naming `code` when the provider refuses the exchange
 */
export async function completeOAuth(db: Db, def: IntegrationKindDef, q: { state?: string; code?: string; error?: string }): Promise<ConnectionRecord> {
  const invalid = () => new ApiError(400, 'invalid_oauth_state', 'The state is unknown, already used, expired or for another integration; begin again with POST /integrations/{kind}/connect', { errors: [{ field: 'state', message: 'is not a pending authorization of this kind' }] });
  if (!q.state || q.state.length > 200) throw invalid();
  const bound = await consumeOAuthState(db, hashOAuthState(q.state), def.kind);
  if (!bound) throw invalid();
  if (q.error) throw new ApiError(400, 'oauth_denied', `The provider answered ${q.error.slice(0, 100)}: the connection was not made`, { errors: [{ field: 'error', message: q.error.slice(0, 100) }] });
  if (!q.code) throw new ApiError(400, 'validation_error', 'The callback carries no code', { errors: [{ field: 'code', message: 'is required' }] });
  const verifier = bound.codeVerifierSealed ? openCredentials(bound.codeVerifierSealed).verifier : null;
  // The provider of the kind now: a deployment that turned the kind live between begin and callback fails the
  // exchange (the code is the other provider's) and the person begins again.
  const provider = connectProvider(def.kind);
  let account;
  try {
    account = await integrationsAdapter(process.env, provider).exchangeCode(def.kind, { code: q.code, redirectUri: bound.redirectUri, codeVerifier: verifier });
  } catch (err) {
    providerRefusal(err, 'code');
  }
  return upsertConnection(db, bound.orgId, { kind: def.kind, accountLabel: account.accountLabel, scopes: account.scopes, credentialsSealed: sealCredentials(account.secrets), provider });
}

/** A connection that cannot be used until someone connects it again (the provider revoked its grant). */
export class ConnectionNeedsReauthError extends Error {
  constructor(
    readonly kind: string,
    message: string,
  ) {
    super(message);
    this.name = 'ConnectionNeedsReauthError';
  }
}

/**
 * The connection's secrets, ready for a provider call: an OAuth access token about to expire is refreshed first
 * (RFC 6749 §6) and the new tokens stored sealed. A refused refresh (`invalid_grant`: revoked or expired) marks the
 * connection `needs_reauth` and emits `integration.needs_reauth` once.
 * @throws ConnectionNeedsReauthError when the connection is (or has just become) `needs_reauth`;
 *   IntegrationProviderError when the provider could not refresh (unavailable, timeout)
 */
export async function connectionSecrets(db: Db, c: ConnectionRecord, nowMs = Date.now()): Promise<IntegrationSecrets> {
  const reconnect = `connect ${c.kind} again with POST /integrations/${c.kind}/connect`;
  if (c.status === 'needs_reauth') throw new ConnectionNeedsReauthError(c.kind, `The ${c.kind} connection needs a new consent (${c.lastError ?? 'the grant was revoked'}); ${reconnect}`);
  const secrets = openCredentials(c.credentialsSealed);
  let fresh: IntegrationSecrets | null;
  try {
    fresh = await integrationsAdapter(process.env, c.provider).refreshSecrets(c.kind as IntegrationKind, secrets, nowMs);
  } catch (err) {
    if (!(err instanceof IntegrationProviderError) || err.code !== 'invalid_grant') throw err;
    await db.transaction(async (trx) => {
      if (await markConnectionNeedsReauth(trx, c.orgId, c.id, err.message)) {
        await emitEvent(trx, c.orgId, 'integration.needs_reauth', { connectionId: c.id, kind: c.kind, provider: c.provider, reason: err.message.slice(0, 500) });
      }
    });
    throw new ConnectionNeedsReauthError(c.kind, `The ${c.kind} provider refused the stored grant (${err.message}); ${reconnect}`);
  }
  if (!fresh) return secrets;
  await updateConnectionCredentials(db, c.orgId, c.id, sealCredentials(fresh));
  return fresh;
}
