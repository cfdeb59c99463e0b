/**
 * Secret keys through the API (spec "Authentication" 1, scope keys:write; paths decided in docs/api-notes.md
 * "Credentials and tenancy"). The secret is shown once, in the answer that creates it
 * (creation or rotation). A key never grants a scope it does not hold itself, and never a reserved
 * one. Revocation and the end of a rotation's grace period reach every API process at once (the key
 * cache is evicted by the change feed, and expiry is checked on every request).
 */
import type { Handler } from '../context';
import { ApiError, notFound, validationError } from '../../domain/errors';
import { listHandler, orgOf } from '../http';
import { setAuditResource } from '../middleware/audit';
import { createSecretKey, listActiveKeys, revokeKey, rotateSecretKey, type ApiKeyInfo } from '../../db/repositories/apiKeys';
import { DEFAULT_ROTATION_GRACE_SECONDS, scopeGrantErrors, scopesBeyond } from '../../domain/keys';
import type { ApiKey, ApiKeyCreate, ApiKeyRotate, ApiKeyRotation, ApiKeyWithSecret, KeyRevocation } from '../../schemas/types/keys';
import type { AppContext } from '../context';

/** The wire form of a secret key (never the secret). */
export function toApiKeyView(k: ApiKeyInfo): ApiKey {
  return {
    id: k.id,
    name: k.name,
    scopes: k.scopes,
    prefix: k.displayPrefix,
    createdAt: k.createdAt.toISOString(),
    lastUsedAt: k.lastUsedAt?.toISOString() ?? null,
    expiresAt: k.expiresAt?.toISOString() ?? null,
    rotatedFrom: k.rotatedFrom,
  };
}

/**
 * 403 `insufficient_scope` when the calling key would grant, or act on a credential holding, scopes it
 * does not hold itself (docs/api-notes.md: the same shape as a route's scope refusal, naming the scopes
 * in `detail` and `missingScopes`). Used for secret keys and OAuth clients alike: creating, rotating,
 * revoking or deleting a credential takes every scope it holds (OWASP ASVS V4.1.3, least privilege:
 * a delegate never reaches beyond its delegation).
 */
export function refuseEscalation(ctx: AppContext, requested: readonly string[]): void {
  const beyond = scopesBeyond(ctx.state.auth!.scopes, requested);
  if (!beyond.length) return;
  throw new ApiError(403, 'insufficient_scope', `A key cannot grant or manage scopes it does not hold itself: ${beyond.join(', ')}`, {
    extra: { requiredScopes: beyond, missingScopes: beyond },
  });
}

/** The OAuth grant a credential minted by this caller comes from (AuthContext.grantId), or null. */
export function mintedVia(ctx: AppContext): string | null {
  return ctx.state.auth?.grantId ?? null;
}

/** GET /api-keys: the organization's secret keys that still authenticate, oldest first, cursor-paginated. */
export const listApiKeys: Handler = listHandler((db, orgId, page) => listActiveKeys(db, orgId, 'secret', page), toApiKeyView);

/**
 * POST /api-keys: 201 with the new key and its secret (shown only here).
 * @throws 400 validation_error naming `scopes.N` (unknown or reserved) or `expiresAt` (not in the future);
 *   403 insufficient_scope naming the scopes the caller does not hold
 */
export const createApiKey: Handler = async (ctx, { db, config }) => {
  const body = ctx.request.body as unknown as ApiKeyCreate;
  const errors = scopeGrantErrors(body.scopes);
  const expiresAt = body.expiresAt ? new Date(body.expiresAt) : null;
  if (expiresAt && !(expiresAt.getTime() > Date.now())) errors.push({ field: 'expiresAt', message: 'must be in the future' });
  if (errors.length) throw validationError(errors);
  refuseEscalation(ctx, body.scopes);
  const { key, info } = await createSecretKey(db, orgOf(ctx), { brand: config.keyBrandPrefix, scopes: body.scopes, name: body.name, expiresAt, viaGrantId: mintedVia(ctx) });
  setAuditResource(ctx, 'api_key', info.id);
  const data: ApiKeyWithSecret = { ...toApiKeyView(info), secret: key };
  return { data, status: 201, message: 'Store the secret now: it is not shown again' };
};

/**
 * POST /api-keys/{id}/rotate: a new key with the same name, scopes and expiry (its secret shown only
 * here); the old one keeps working for `gracePeriodSeconds` (default 24 h), then answers 401.
 * @throws 404 api_key_not_found (also another organization's, a revoked or an expired key);
 *   403 insufficient_scope when the key holds scopes the caller does not
 */
export const rotateApiKey: Handler = async (ctx, { db, config }) => {
  const body = ((ctx.request.body as unknown) ?? {}) as ApiKeyRotate;
  const r = await rotateSecretKey(db, orgOf(ctx), ctx.params.id, {
    brand: config.keyBrandPrefix,
    graceSeconds: body.gracePeriodSeconds ?? DEFAULT_ROTATION_GRACE_SECONDS,
    check: (old) => refuseEscalation(ctx, old.scopes),
    viaGrantId: mintedVia(ctx),
  });
  if (!r) throw notFound(`API key ${ctx.params.id}`, 'api_key_not_found');
  setAuditResource(ctx, 'api_key', r.info.id);
  const data: ApiKeyRotation = { key: { ...toApiKeyView(r.info), secret: r.key }, previous: toApiKeyView(r.previous) };
  return { data, message: 'Store the new secret now: it is not shown again' };
};

/**
 * DELETE /api-keys/{id}: revokes a secret key at once in every API process (idempotent).
 * @throws 404 api_key_not_found (also another organization's key, or a publishable key's id);
 *   403 insufficient_scope when the key holds scopes the caller does not
 */
export const revokeApiKey: Handler = async (ctx, { db }) => {
  const k = await revokeKey(db, orgOf(ctx), ctx.params.id, 'secret', (key) => refuseEscalation(ctx, key.scopes));
  if (!k) throw notFound(`API key ${ctx.params.id}`, 'api_key_not_found');
  const data: KeyRevocation = { id: k.id, revokedAt: k.revokedAt!.toISOString() };
  return { data };
};

/** Reserved and unknown scopes of a body the schema may have refused (only when every entry is a string). */
function grantChecks(b: Record<string, any>) {
  return Array.isArray(b.scopes) && b.scopes.every((s: unknown) => typeof s === 'string') ? scopeGrantErrors(b.scopes) : [];
}

/** Handlers of this area by operationId. */
export const handlers = { listApiKeys, createApiKey, rotateApiKey, revokeApiKey };

/** Schemas of this area's operations (merged into the route table). */
export const routeSchemas = {
  listApiKeys: { responseSchema: 'ApiKeyList' },
  createApiKey: { requestSchema: 'ApiKeyCreate', responseSchema: 'ApiKeyWithSecret', bodyChecks: grantChecks },
  rotateApiKey: { requestSchema: 'ApiKeyRotate', responseSchema: 'ApiKeyRotation' },
  revokeApiKey: { responseSchema: 'KeyRevocation' },
};
