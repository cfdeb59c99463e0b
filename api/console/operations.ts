/**
 * The console reads and acts through the API's own operations (api/routes/table.ts, api/routes/*): a page calls an
 * operation's handler in-process as the signed-in member, with the scopes the member's role may hold
 * (domain/team.ts `approvableScopes`: owner and admin every non-reserved scope, developer all but the admin ones,
 * viewer the `:read` ones), so the console shows exactly what the API serves, scoped to the member's organization,
 * and refuses what the role may not do with the API's own 403 `insufficient_scope`.
 */
import type { AppContext, AppDeps, AuthContext } from '../context';
import type { Member } from '../../db/repositories/team';
import { approvableScopes } from '../../domain/team';
import { ROUTES, type RouteDef } from '../routes/table';
import { HANDLERS, ROUTE_SCHEMAS } from '../routes';
import { authorizeGuard } from '../middleware/auth';
import { validateBody } from '../../domain/validation';
import { ApiError } from '../../domain/errors';

const BY_ID = new Map<string, RouteDef>(ROUTES.map((r) => [r.operationId, r]));

/** The credential of a signed-in member as the handlers see it: the member id stands where a key id would. */
export function memberAuth(member: Member): AuthContext {
  return { orgId: member.orgId, keyId: member.id, kind: 'secret', scopes: approvableScopes(member.role), rateLimitPoints: null, rateLimitWindowSeconds: null, expiresAt: null };
}

/** Whether the member's role holds every scope of an operation (a page shows its action only then). */
export function may(member: Member, operationId: string): boolean {
  const route = BY_ID.get(operationId);
  const scopes = approvableScopes(member.role);
  return !!route && !route.reserved && route.scopes.every((s) => scopes.has(s)) && (!route.scopesAnyOf || route.scopesAnyOf.some((s) => scopes.has(s)));
}

/**
 * Runs one operation as `member` and returns its envelope's `data`.
 * @param input path parameters, query and JSON body, as the API would have parsed them
 * @throws ApiError what the operation throws: 403 `insufficient_scope` for the role, 404 for another organization's id, …
 */
export async function callOperation<T = any>(
  ctx: AppContext,
  deps: AppDeps,
  member: Member,
  operationId: string,
  input: { params?: Record<string, string>; query?: Record<string, string | undefined>; body?: unknown } = {},
): Promise<{ data: T; status: number }> {
  const route = BY_ID.get(operationId);
  const handler = HANDLERS[operationId];
  if (!route || !handler) throw new ApiError(501, 'not_implemented', `${operationId} is not available`);
  const query: Record<string, string> = {};
  for (const [k, v] of Object.entries(input.query ?? {})) if (v !== undefined && v !== '') query[k] = v;
  // A context of its own over the request's: the handler sees the operation's parameters and the member's credential.
  const op = Object.create(ctx) as AppContext;
  const request = Object.create(ctx.request);
  Object.defineProperty(request, 'body', { value: input.body ?? {}, writable: true });
  Object.defineProperty(op, 'request', { value: request });
  Object.defineProperty(op, 'query', { value: query });
  Object.defineProperty(op, 'params', { value: input.params ?? {} });
  Object.defineProperty(op, 'state', { value: { ...ctx.state, route, auth: memberAuth(member) } });
  if (route.method !== 'GET') {
    // A write (refused ones too) is audited like the API's (api/middleware/audit.ts reads the request's route, credential and
    // parameters): the member is the actor.
    ctx.state.route = route;
    ctx.state.auth = memberAuth(member);
    (ctx as unknown as { params: Record<string, string> }).params = input.params ?? {};
  }
  authorizeGuard(route)(op);
  const schema = ROUTE_SCHEMAS[operationId]?.requestSchema ?? route.requestSchema;
  if (schema && input.body !== undefined) validateBody(schema, input.body);
  const out = await handler(op, deps);
  return { data: out.data as T, status: out.status ?? route.successStatus ?? 200 };
}
