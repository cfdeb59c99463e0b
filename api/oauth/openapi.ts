/**
 * The OAuth 2.0 endpoints at the origin root (spec "Authentication" 4; docs/team-and-oauth.md "Connect an app with OAuth")
 * as OpenAPI 3.1 path items for the document at `/api/v1/openapi.json` (api/openapi.ts). Each item names
 * its own server, the origin, since the document's server is `<origin>/api/v1` (OpenAPI 3.1 "Path Item
 * Object": `servers`). Their answers follow the OAuth RFCs, not the API's envelope: the token and
 * revocation endpoints answer errors as RFC 6749 §5.2 JSON (`error`, `error_description`), the
 * authorization endpoint redirects errors to the app (§4.1.2.1) or shows an HTML page.
 */
import { NON_RESERVED_SCOPES } from '../../domain/scopes';
import { OAUTH_PATHS } from './authorizationServer';

const FORM = 'application/x-www-form-urlencoded';

/** A form field (string). */
const text = (description: string, extra: Record<string, unknown> = {}) => ({ type: 'string', description, ...extra });

/** The authorization request's parameters (RFC 6749 §4.1.1, RFC 7636 §4.3). */
const AUTHORIZATION_REQUEST = {
  response_type: text('Always `code`', { enum: ['code'] }),
  client_id: text('The client id (`oac_…`)'),
  redirect_uri: text('One of the client’s registered redirect URIs'),
  scope: text(`Space-delimited scopes the app asks for (${NON_RESERVED_SCOPES.length} grantable; the member may grant a subset, never beyond their role)`),
  state: text('Opaque value returned to the app unchanged'),
  code_challenge: text('PKCE challenge: base64url SHA-256 of the verifier, 43 characters (required for public clients)', { pattern: '^[A-Za-z0-9_-]{43}$' }),
  code_challenge_method: text('Always `S256`', { enum: ['S256'] }),
};

/** An RFC 6749 §5.2 error answer. */
const OAUTH_ERROR = {
  type: 'object',
  required: ['error'],
  properties: {
    error: { type: 'string', description: 'invalid_request, invalid_client, invalid_grant, unauthorized_client, unsupported_grant_type or invalid_scope' },
    error_description: { type: 'string' },
  },
};

/** Client authentication in the body (RFC 6749 §2.3.1), for clients that do not send HTTP Basic. */
const CLIENT_AUTHENTICATION = {
  client_id: text('The client id, when not sent with HTTP Basic'),
  client_secret: text('The client secret of a confidential client, when not sent with HTTP Basic'),
};

/** A required `application/x-www-form-urlencoded` request body of these fields. */
const formBody = (required: string[], properties: Record<string, unknown>) => ({
  required: true,
  content: { [FORM]: { schema: { type: 'object', required, properties } } },
});

const errorResponse = (description: string) => ({ description, content: { 'application/json': { schema: OAUTH_ERROR } } });
const redirect = (description: string) => ({ description, headers: { Location: { schema: { type: 'string', format: 'uri' } } } });
const html = (description: string) => ({ description, content: { 'text/html': { schema: { type: 'string' } } } });

/**
 * The OAuth endpoints' path items, keyed by their origin-root paths.
 * @param origin the public origin (e.g. `https://api.example.com`), the items' server
 */
export function oauthPathItems(origin: string): Record<string, Record<string, unknown>> {
  const servers = [{ url: origin, description: 'Origin root: the OAuth endpoints live outside /api/v1' }];
  const common = { tags: ['OAuth2'], security: [] };
  return {
    [OAUTH_PATHS.authorize]: {
      servers,
      get: {
        ...common,
        operationId: 'authorizeOAuthApp',
        summary: 'Authorization request (RFC 6749 §4.1.1): sign-in, then the consent page',
        description:
          'Redirects to `/login` without a member session; otherwise shows the consent page listing the requested scopes. A request whose client or redirect URI is unknown gets an HTML error page and is never redirected (RFC 6749 §4.1.2.1); other errors are redirected to the app with `error` and `state`.',
        parameters: Object.entries(AUTHORIZATION_REQUEST).map(([name, schema]) => ({
          name,
          in: 'query',
          required: ['response_type', 'client_id', 'redirect_uri'].includes(name),
          schema,
        })),
        responses: { '200': html('The consent page'), '303': redirect('To `/login`, or to the app with an error'), '400': html('Unknown client or redirect URI') },
      },
      post: {
        ...common,
        operationId: 'approveOAuthApp',
        summary: 'The consent page’s answer: issues the authorization code (RFC 6749 §4.1.2)',
        description: 'Needs the member session and its CSRF token. Redirects to the app with `code` and `state`, or with `error=access_denied` when the member denies or grants no scope.',
        requestBody: formBody(['csrf', 'client_id', 'redirect_uri', 'decision'], {
          ...AUTHORIZATION_REQUEST,
          csrf: text('The session’s CSRF token (from the consent page)'),
          decision: text('`allow` grants the ticked scopes; anything else denies', { enum: ['allow', 'deny'] }),
          granted: { type: 'array', items: { type: 'string' }, description: 'The scopes the member ticked (repeated field)' },
        }),
        responses: { '303': redirect('To the app with `code` and `state`, or with an error'), '400': html('Unknown client or redirect URI'), '401': html('The member session has ended') },
      },
    },
    [OAUTH_PATHS.token]: {
      servers,
      post: {
        ...common,
        operationId: 'issueOAuthToken',
        summary: 'Token endpoint (RFC 6749 §4.1.3, §6): exchanges a code or a refresh token',
        description:
          'Confidential clients authenticate with HTTP Basic or `client_secret` in the body; public clients send `client_id` alone and must have used PKCE. Refresh tokens rotate on every use; reusing a rotated one revokes the whole grant (RFC 9700 §4.14.2). Answers carry `Cache-Control: no-store`.',
        requestBody: formBody(['grant_type'], {
          grant_type: text('`authorization_code` or `refresh_token`', { enum: ['authorization_code', 'refresh_token'] }),
          code: text('The authorization code (authorization_code)'),
          redirect_uri: text('The redirect URI of the authorization request (authorization_code)'),
          code_verifier: text('The PKCE verifier (RFC 7636 §4.5)'),
          refresh_token: text('The refresh token (refresh_token)'),
          ...CLIENT_AUTHENTICATION,
        }),
        responses: {
          '200': {
            description: 'Tokens (RFC 6749 §5.1): an access token `<brand>_oat_…` that rides the API’s scope matrix, and a refresh token `<brand>_ort_…`',
            content: {
              'application/json': {
                schema: {
                  type: 'object',
                  required: ['access_token', 'token_type', 'expires_in'],
                  properties: {
                    access_token: { type: 'string' },
                    token_type: { type: 'string', enum: ['Bearer'] },
                    expires_in: { type: 'integer', description: 'Seconds' },
                    refresh_token: { type: 'string' },
                    scope: { type: 'string', description: 'Space-delimited granted scopes' },
                  },
                },
              },
            },
          },
          '400': errorResponse('Invalid request, grant or scope'),
          '401': errorResponse('Client authentication failed'),
          '429': errorResponse('Too many client authentication attempts (`error` `rate_limited`); retry after `Retry-After` seconds'),
        },
      },
    },
    [OAUTH_PATHS.revoke]: {
      servers,
      post: {
        ...common,
        operationId: 'revokeOAuthToken',
        summary: 'Token revocation (RFC 7009): an access or refresh token of the calling client',
        description: 'Client authentication as at the token endpoint. Answers 200 whether or not the token was valid; a token of another client is left alone (RFC 7009 §2.2).',
        requestBody: formBody(['token'], {
          token: text('The token to revoke'),
          token_type_hint: text('`access_token` or `refresh_token` (optional)'),
          ...CLIENT_AUTHENTICATION,
        }),
        responses: { '200': { description: 'Revoked, or nothing to revoke' }, '400': errorResponse('`token` is missing'), '401': errorResponse('Client authentication failed'), '429': errorResponse('Too many client authentication attempts (`error` `rate_limited`); retry after `Retry-After` seconds') },
      },
    },
    [OAUTH_PATHS.metadata]: {
      servers,
      get: {
        ...common,
        operationId: 'getOAuthServerMetadata',
        summary: 'Authorization server metadata (RFC 8414)',
        description: 'The issuer, endpoints, grant types, PKCE methods, client authentication methods and scopes.',
        responses: {
          '200': {
            description: 'The metadata (RFC 8414 §2)',
            content: { 'application/json': { schema: { type: 'object', required: ['issuer', 'authorization_endpoint', 'token_endpoint'], additionalProperties: true } } },
          },
        },
      },
    },
  };
}
