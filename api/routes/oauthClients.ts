/**
 * OAuth clients through the API (spec "Authentication" 4, scope keys:write; paths and fields decided in
 * docs/team-and-oauth.md "Connect an app with OAuth"): name, exact redirect URIs, confidential or public, the scopes the
 * app may ever ask for. A confidential client's secret is shown once; deleting a client revokes every
 * grant and token it holds, at once in every API process.
 */
import type { Handler } from '../context';
import { notFound, validationError } from '../../domain/errors';
import { listHandler, orgOf } from '../http';
import { setAuditResource } from '../middleware/audit';
import { createClient, deleteClient, listClients, type OAuthClient } from '../../db/repositories/oauth';
import { clientScopeErrors, redirectUriErrors } from '../../domain/oauth';
import { mintedVia, refuseEscalation } from './apiKeys';
import type { OAuthClientCreate, OAuthClientView, OAuthClientWithSecret, TeamRemoval } from '../../schemas/types/team';

/** The wire form of a client (never its secret). */
export function toClientView(c: OAuthClient): OAuthClientView {
  return { id: c.id, name: c.name, confidential: c.confidential, redirectUris: c.redirectUris, scopes: c.scopes, createdAt: c.createdAt.toISOString() };
}

/** Redirect URI and scope errors of a body the schema may have refused (only when the lists hold strings). */
function clientChecks(b: Record<string, any>) {
  const strings = (v: unknown): v is string[] => Array.isArray(v) && v.every((x) => typeof x === 'string');
  return [...(strings(b.redirectUris) ? redirectUriErrors(b.redirectUris) : []), ...(strings(b.scopes) ? clientScopeErrors(b.scopes) : [])];
}

/** GET /oauth-clients: the organization's clients, oldest first, cursor-paginated. */
export const listOAuthClients: Handler = listHandler(listClients, toClientView);

/**
 * POST /oauth-clients: registers a client (201); a confidential client's `clientSecret` is shown only here.
 * The caller must hold every scope the client may ask for, as for `POST /api-keys`; a client registered
 * with an app's access token is deleted with that app.
 * @throws 400 validation_error naming each refused `redirectUris.N` or `scopes.N`; 403 insufficient_scope
 *   naming the scopes the caller does not hold
 */
export const createOAuthClient: Handler = async (ctx, { db, config }) => {
  const body = ctx.request.body as unknown as OAuthClientCreate;
  const errors = clientChecks(body as unknown as Record<string, unknown>);
  if (errors.length) throw validationError(errors);
  refuseEscalation(ctx, body.scopes);
  const { client, secret } = await createClient(db, orgOf(ctx), {
    brand: config.keyBrandPrefix,
    name: body.name,
    confidential: body.confidential ?? true,
    redirectUris: [...new Set(body.redirectUris)],
    scopes: body.scopes,
    viaGrantId: mintedVia(ctx),
  });
  setAuditResource(ctx, 'oauth_client', client.id);
  const data: OAuthClientWithSecret = { ...toClientView(client), clientSecret: secret };
  return { data, status: 201, message: secret ? 'Copy the client secret now: it is not shown again' : undefined };
};

/**
 * DELETE /oauth-clients/{id}: deletes a client and revokes at once its grants and tokens and every
 * credential minted through them (keys, and clients registered with its tokens, recursively).
 * @throws 404 oauth_client_not_found; 403 insufficient_scope when the client holds scopes the caller does not
 */
export const deleteOAuthClient: Handler = async (ctx, { db }) => {
  const c = await deleteClient(db, orgOf(ctx), ctx.params.id, (client) => refuseEscalation(ctx, client.scopes));
  if (!c) throw notFound(`OAuth client ${ctx.params.id}`, 'oauth_client_not_found');
  const data: TeamRemoval = { id: c.id, removed: true };
  return { data };
};

/** Handlers of this area by operationId. */
export const handlers = { listOAuthClients, createOAuthClient, deleteOAuthClient };

/** Schemas of this area's operations (merged into the route table). */
export const routeSchemas = {
  listOAuthClients: { responseSchema: 'OAuthClientList' },
  createOAuthClient: { requestSchema: 'OAuthClientCreate', responseSchema: 'OAuthClientWithSecret', bodyChecks: clientChecks },
  deleteOAuthClient: { responseSchema: 'TeamRemoval' },
};
