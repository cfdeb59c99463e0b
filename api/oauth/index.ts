/**
 * The pages and endpoints at the origin root, outside `/api/v1` (spec "Authentication" 4: the OAuth2
 * endpoints live at the origin root; docs/team-and-oauth.md "Connect an app with OAuth"): sign-in, invitation acceptance,
 * consent, token, revocation and metadata. One Koa middleware dispatching on method and path; every
 * other request passes through.
 */
import type { AppContext, AppDeps } from '../context';
import { ApiError } from '../../domain/errors';
import { createAuthorizationServer, OAUTH_PATHS } from './authorizationServer';
import { showAcceptInvitation, showLogin, submitAcceptInvitation, submitLogin, submitLogout } from './session';

/** Builds the middleware. */
export function oauthRoutes(deps: AppDeps): (ctx: AppContext, next: () => Promise<unknown>) => Promise<unknown> {
  const server = createAuthorizationServer(deps);
  const routes: Record<string, Partial<Record<'GET' | 'POST', (ctx: AppContext) => unknown>>> = {
    '/login': { GET: (ctx) => showLogin(ctx, deps), POST: (ctx) => submitLogin(ctx, deps) },
    '/logout': { POST: (ctx) => submitLogout(ctx, deps) },
    '/invitations/accept': { GET: (ctx) => showAcceptInvitation(ctx, deps), POST: (ctx) => submitAcceptInvitation(ctx, deps) },
    [OAUTH_PATHS.authorize]: { GET: (ctx) => server.showAuthorize(ctx), POST: (ctx) => server.submitAuthorize(ctx) },
    [OAUTH_PATHS.token]: { POST: (ctx) => server.token(ctx) },
    [OAUTH_PATHS.revoke]: { POST: (ctx) => server.revoke(ctx) },
    [OAUTH_PATHS.metadata]: { GET: (ctx) => server.metadata(ctx) },
  };
  // Other paths pass through synchronously: an async frame here cost every API request a promise. A Map, as in
  // api/pages/site.ts: an object indexed by the request's path string costs a string-table lookup a request.
  const byPath = new Map(Object.entries(routes));
  return (ctx, next) => {
    const route = byPath.get(ctx.path);
    return route ? serve(ctx, route) : next();
  };
  async function serve(ctx: AppContext, route: (typeof routes)[string]): Promise<void> {
    const handler = route[(ctx.method === 'HEAD' ? 'GET' : ctx.method) as 'GET' | 'POST'];
    if (!handler) {
      const allow = Object.keys(route).join(', ');
      throw new ApiError(405, 'method_not_allowed', `${ctx.method} is not allowed on ${ctx.path}; allowed: ${allow}`, { headers: { Allow: allow } });
    }
    await handler(ctx);
  }
}
