/**
 * Request helpers shared by every handler (DESIGN.md "Wire conventions"): the caller's organization,
 * list paging (`?limit=`, `?cursor=`), the 503 a handler answers when Temporal is unreachable, and an
 * E.164 path parameter. One implementation each, so every route answers the same input the same way.
 */
import { decodeCursor, DEFAULT_PAGE_LIMIT, InvalidCursorError, MAX_PAGE_LIMIT, type CursorKey, type CursorValue, type Page } from '../db/pagination';
import { ApiError, temporalUnavailable, validationError } from '../domain/errors';
import { isE164 } from '../domain/sms/draftChecks';
import { ownedIds, type OwnedKind } from '../db/repositories/ownership';
import type { Db } from '../db';
import type { AppContext, AppDeps, Handler } from './context';

/**
 * Sets one response header whose value is a plain string, straight on Node's response: what Koa's `ctx.set`
 * ends in for such a value, without the arrays and closure Koa 3's `set` builds around each call (every
 * request sets several; docs/benchmarks.md). Only before the response is sent (Node throws after).
 */
export function setHeader(ctx: AppContext, name: string, value: string): void {
  ctx.res.setHeader(name, value);
}

/**
 * The organization of the authenticated caller: the credential alone decides it (spec "Authentication").
 * Only for routes that authenticate (every route but provider callbacks and docs).
 */
export function orgOf(ctx: AppContext): string {
  return ctx.state.auth!.orgId;
}

/**
 * `?limit=` (an integer 1..200, default 50) and `?cursor=` of a list request (docs/api-notes.md: lists).
 * @throws ApiError 400 validation_error naming `limit`
 */
export function pageParams(ctx: AppContext): { limit: number; cursor?: string } {
  const rawLimit = ctx.query.limit;
  let limit = DEFAULT_PAGE_LIMIT;
  if (rawLimit !== undefined) {
    const s = Array.isArray(rawLimit) ? rawLimit[0] : rawLimit;
    if (!/^\d{1,4}$/.test(s) || Number(s) < 1 || Number(s) > MAX_PAGE_LIMIT) throw validationError([{ field: 'limit', message: `must be an integer from 1 to ${MAX_PAGE_LIMIT}` }]);
    limit = Number(s);
  }
  const c = ctx.query.cursor;
  const cursor = (Array.isArray(c) ? c[0] : c) || undefined;
  return { limit, cursor };
}

/** 400 `invalid_cursor` naming `cursor`: what every list answers for a cursor it did not issue. */
export function invalidCursor(detail = 'The cursor is not a cursor of this list'): ApiError {
  return new ApiError(400, 'invalid_cursor', detail, { errors: [{ field: 'cursor', message: 'is not a cursor of this list' }] });
}

/**
 * Runs a paged query, turning a cursor the list did not issue (db/pagination.ts InvalidCursorError)
 * into 400 `invalid_cursor`.
 */
export async function paged<T>(run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (err) {
    if (err instanceof InvalidCursorError) throw invalidCursor(err.message);
    throw err;
  }
}

/**
 * A handler answering one page of an organization-wide list (DESIGN.md "Wire conventions": `items`,
 * `nextCursor`, `hasMore`; `?limit=` 1..200, default 50, and `?cursor=`), each row through `view` when given.
 * @param list the repository's page query, scoped by the caller's organization
 * @throws (from the handler) 400 validation_error naming `limit`; 400 `invalid_cursor`
 */
export function listHandler<R, V = R>(
  list: (db: Db, orgId: string, page: { limit: number; cursor?: string }) => Promise<Page<R>>,
  view?: (row: R) => V,
): Handler {
  return async (ctx, { db }) => {
    const page = pageParams(ctx);
    const out = await paged(() => list(db, orgOf(ctx), page));
    return { data: view ? { ...out, items: out.items.map(view) } : out };
  };
}

/**
 * The key of a cursor of a list paged in memory (db/pagination.ts decodeCursor).
 * @param tag the list's cursor tag, e.g. `voice.id`
 * @param type the key's type (db/pagination.ts CursorKey), e.g. `text`
 * @throws ApiError 400 `invalid_cursor` for a cursor of another list, a forged one, or one whose key does not fit `type`
 */
export function decodeCursorOr400(tag: string, cursor: string, type: CursorKey): CursorValue {
  return pagedSync(() => decodeCursor(tag, cursor, type));
}

function pagedSync<T>(run: () => T): T {
  try {
    return run();
  } catch (err) {
    if (err instanceof InvalidCursorError) throw invalidCursor(err.message);
    throw err;
  }
}
export { temporalUnavailable } from '../domain/errors';

/**
 * The Temporal Web UI page of a workflow's latest run (docs/operations.md "Inspecting workflows": the id alone opens
 * its history), in the configured namespace; undefined when this API process serves no UI.
 */
export function workflowUiUrl(deps: AppDeps, workflowId: string): string | undefined {
  if (!deps.temporalUiUrl) return undefined;
  return `${deps.temporalUiUrl}/namespaces/${encodeURIComponent(deps.config.temporalNamespace)}/workflows/${encodeURIComponent(workflowId)}`;
}

/** The Temporal client and task queue, or 503 `temporal_unavailable` when this API process runs without one. */
export function requireTemporal(deps: AppDeps): NonNullable<AppDeps['temporal']> {
  if (!deps.temporal) throw temporalUnavailable();
  return deps.temporal;
}

/**
 * A `{e164}` path parameter (URL-decoded by the router; `+` may arrive as a space when not percent-encoded).
 * @throws ApiError 400 validation_error naming the parameter
 */
export function e164Param(value: string | undefined, field = 'e164'): string {
  const v = (value ?? '').trim().replace(/^ /, '+');
  const normalized = /^\d/.test(v) ? `+${v}` : v;
  if (!isE164(normalized)) throw validationError([{ field, message: 'must be a phone number in E.164, e.g. +14155550100' }]);
  return normalized;
}

/** The 404 code and name of each kind of referenced resource (the codes the resource's own routes answer). */
const NOT_FOUND: Record<OwnedKind, { code: string; what: string }> = {
  agent: { code: 'agent_not_found', what: 'agent' },
  agentVersion: { code: 'version_not_found', what: 'agent version' },
  number: { code: 'number_not_found', what: 'number' },
  contactList: { code: 'contact_list_not_found', what: 'contact list' },
  campaign: { code: 'campaign_not_found', what: 'campaign' },
  knowledgeSource: { code: 'knowledge_source_not_found', what: 'knowledge source' },
  upload: { code: 'file_expired', what: 'file' },
  webhook: { code: 'webhook_not_found', what: 'webhook endpoint' },
};

/** An id a request names in its body or query, and the field that names it (e.g. `agentId`, `mediaIds[2]`). */
export interface IdReference {
  field: string;
  kind: OwnedKind;
  /** null/undefined: the field was not given (nothing to check). */
  id: string | null | undefined;
}

/**
 * Checks that every id a request names in its body or query belongs to the caller's organization
 * (spec "Authentication"; DESIGN.md "Tenancy"): another organization's id answers exactly like a
 * missing one. Call it before anything is written.
 * @throws ApiError 404 with the kind's code (e.g. `agent_not_found`) naming the first field whose id is not the organization's
 */
export async function requireOwned(db: Db, orgId: string, refs: IdReference[]): Promise<void> {
  for (const ref of refs) {
    if (ref.id === null || ref.id === undefined) continue;
    const found = await ownedIds(db, orgId, ref.kind, [ref.id]);
    if (!found.has(ref.id)) {
      const nf = NOT_FOUND[ref.kind];
      throw new ApiError(404, nf.code, `No ${nf.what} ${ref.id} exists in this organization`, { errors: [{ field: ref.field, message: `no ${nf.what} with this id` }] });
    }
  }
}
