/**
 * Publishable keys (spec "Authentication" 3, scopes pubkeys:read and pubkeys:write; paths decided in
 * docs/api-notes.md "Credentials and tenancy"): `<brand>_pk_live_…`, pinned to one agent of the
 * organization and carrying the browser origins it serves. Shown once, stored as a hash. Such a key
 * authenticates only routes whose auth kind is `publishable` (the widget's); every other route answers
 * 403 `publishable_key_not_allowed` (api/middleware/auth.ts).
 */
import type { Handler } from '../context';
import { ApiError, notFound, validationError } from '../../domain/errors';
import { listHandler, orgOf } from '../http';
import { setAuditResource } from '../middleware/audit';
import { createPublishableKey as insertPublishableKey, listActiveKeys, revokeKey, type ApiKeyInfo } from '../../db/repositories/apiKeys';
import { getAgent } from '../../db/repositories/agents';
import { parseAllowedOrigins } from '../../domain/keys';
import { mintedVia } from './apiKeys';
import type { KeyRevocation, PublishableKey, PublishableKeyCreate, PublishableKeyWithSecret } from '../../schemas/types/keys';

/** The wire form of a publishable key (never the key itself). */
export function toPublishableKeyView(k: ApiKeyInfo): PublishableKey {
  return {
    id: k.id,
    name: k.name,
    prefix: k.displayPrefix,
    agentId: k.agentId ?? '',
    allowedOrigins: k.allowedOrigins ?? [],
    createdAt: k.createdAt.toISOString(),
    lastUsedAt: k.lastUsedAt?.toISOString() ?? null,
  };
}

/** Origin errors of a body the schema may have refused (only when every entry is a string). */
function originChecks(b: Record<string, any>) {
  const list = b.allowedOrigins;
  return Array.isArray(list) && list.every((o: unknown) => typeof o === 'string') ? parseAllowedOrigins(list).errors : [];
}

/** GET /publishable-keys: the organization's publishable keys that are not revoked, oldest first, cursor-paginated. */
export const listPublishableKeys: Handler = listHandler((db, orgId, page) => listActiveKeys(db, orgId, 'publishable', page), toPublishableKeyView);

/**
 * POST /publishable-keys: 201 with the key (shown only here).
 * @throws 400 validation_error naming each refused `allowedOrigins.N`; 404 agent_not_found naming
 *   `agentId` when the agent is not one of the organization's
 */
export const createPublishableKey: Handler = async (ctx, { db, config }) => {
  const body = ctx.request.body as unknown as PublishableKeyCreate;
  const { origins, errors } = parseAllowedOrigins(body.allowedOrigins);
  if (errors.length) throw validationError(errors);
  const orgId = orgOf(ctx);
  const agent = await getAgent(db, orgId, body.agentId);
  if (!agent) {
    throw new ApiError(404, 'agent_not_found', `Agent ${body.agentId} was not found`, {
      errors: [{ field: 'agentId', message: 'is not an agent of this organization' }],
    });
  }
  const { key, info } = await insertPublishableKey(db, orgId, { brand: config.keyBrandPrefix, agentId: agent.id, allowedOrigins: origins, name: body.name, viaGrantId: mintedVia(ctx) });
  setAuditResource(ctx, 'publishable_key', info.id);
  const data: PublishableKeyWithSecret = { ...toPublishableKeyView(info), key };
  return { data, status: 201, message: 'Copy the key now: it is not shown again' };
};

/**
 * DELETE /publishable-keys/{id}: revokes the key at once in every API process (idempotent).
 * @throws 404 publishable_key_not_found (also another organization's key, or a secret key's id)
 */
export const revokePublishableKey: Handler = async (ctx, { db }) => {
  const k = await revokeKey(db, orgOf(ctx), ctx.params.id, 'publishable');
  if (!k) throw notFound(`Publishable key ${ctx.params.id}`, 'publishable_key_not_found');
  const data: KeyRevocation = { id: k.id, revokedAt: k.revokedAt!.toISOString() };
  return { data };
};

/** Handlers of this area by operationId. */
export const handlers = { listPublishableKeys, createPublishableKey, revokePublishableKey };

/** Schemas of this area's operations (merged into the route table). */
export const routeSchemas = {
  listPublishableKeys: { responseSchema: 'PublishableKeyList' },
  createPublishableKey: { requestSchema: 'PublishableKeyCreate', responseSchema: 'PublishableKeyWithSecret', bodyChecks: originChecks },
  revokePublishableKey: { responseSchema: 'KeyRevocation' },
};
