/**
 * Request-body validation before any handler logic (docs/api-notes.md: wire conventions): the body of
 * every operation that declares a request schema (api/routes/index.ts ROUTE_SCHEMAS, the same name the
 * OpenAPI document uses) is checked against schemas/<name>.schema.json with the one ajv setup
 * (domain/validation.ts). A refused body answers 400 `validation_error` with one `{field, message}` per
 * offending field, before the handler reads a header, a row or a workflow; the handler receives a body
 * of its declared shape.
 */
import { validationError } from '../../domain/errors';
import { loadSchema, mergeFieldErrors, schemaErrors } from '../../domain/validation';
import type { RouteDef } from '../routes/table';
import type { AppContext } from '../context';

/** Schemas whose every field is optional: for those an absent body means "all defaults" (the handler's `?? {}`). */
const optionalBody = new Map<string, boolean>();

function allOptional(name: string): boolean {
  let v = optionalBody.get(name);
  if (v === undefined) {
    const required = loadSchema(name).required as unknown[] | undefined;
    v = !required || required.length === 0;
    optionalBody.set(name, v);
  }
  return v;
}

/**
 * Middleware checking `ctx.request.body` against the route's request schema.
 * @param route the operation, with its `requestSchema` (undefined: no body is read, nothing is checked)
 *   and its `bodyChecks`, whose errors join the schema's when the schema refuses the body
 * @throws ApiError 400 validation_error naming every offending field (`(body)` when the body is not a JSON object)
 */
export function validateRequestBody(route: Pick<RouteDef, 'operationId' | 'requestSchema' | 'bodyChecks'>) {
  const name = route.requestSchema;
  // Synchronous: the check needs no I/O, so no async frame of its own.
  return (ctx: AppContext, next: () => Promise<unknown>): Promise<unknown> => {
    if (!name) return next();
    const body = (ctx.request as { body?: unknown }).body;
    if (body === undefined && allOptional(name)) return next();
    const errors = schemaErrors(name, body);
    if (errors.length) {
      const isObject = !!body && typeof body === 'object' && !Array.isArray(body);
      throw validationError(isObject && route.bodyChecks ? mergeFieldErrors(errors, route.bodyChecks(body as Record<string, unknown>)) : errors);
    }
    return next();
  };
}
