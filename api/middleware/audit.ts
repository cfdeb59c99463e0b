/**
 * Audit middleware (spec "Audit"; docs/api-notes.md "Webhooks and audit logs"): one append-only entry per write through the API — every
 * operation of the route table whose method is not GET/HEAD/OPTIONS — successful or not, with the
 * organization, actor (credential id and kind), operation id, resource type and id, request id,
 * source IP, time and outcome (status code).
 *
 * Placement (api/app.ts): after `requestId` and `accessLog`, before `problem`, i.e. OUTSIDE the
 * problem middleware, so `ctx.status` is the final status even when a handler threw:
 *   app.use(requestId(logger)); app.use(accessLog()); app.use(auditLog(db)); app.use(problem()); …
 * Requests that never authenticated (401, unknown routes) have no organization and are not recorded
 * here (the access log has them).
 */
import type { Db } from '../../db';
import type { AppContext } from '../context';
import { insertAuditLogs, type AuditRecord } from '../../db/repositories/auditLogs';
import { GroupCommit } from '../../db/groupCommit';

/** What a handler may set to name the resource precisely (otherwise derived from the route). */
export interface AuditResource {
  type: string;
  id: string | null;
}

const RESOURCE_KEY = 'auditResource';
const READ_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/** Lets a handler name the resource it acted on, e.g. `setAuditResource(ctx, 'agent_version', ver.id)`. */
export function setAuditResource(ctx: AppContext, type: string, id: string | null): void {
  (ctx.state as unknown as Record<string, unknown>)[RESOURCE_KEY] = { type, id } satisfies AuditResource;
}

function singular(word: string): string {
  const w = word.replace(/-/g, '_');
  if (w === 'sms' || w.endsWith('ss')) return w;
  if (w.endsWith('ies')) return `${w.slice(0, -3)}y`;
  if (w.endsWith('s')) return w.slice(0, -1);
  return w;
}

/**
 * The resource of a request, from its route path: the last `{param}` names the resource type (the
 * segment before it) and id (`/agents/{id}/publish` → agent, id); a POST to a collection after it
 * (`/agents/{agentId}/skills`, `/webhooks`) creates a resource whose id is the answer's `data.id`.
 * @param path route path in spec form; `params` the matched path parameters; `responseBody` the envelope
 */
export function deriveResource(method: string, path: string, params: Record<string, string>, responseBody: unknown): AuditResource {
  const key = `${method} ${path}`;
  let plan = resourcePlans.get(key);
  if (!plan) resourcePlans.set(key, (plan = planResource(method, path)));
  if (plan.param !== undefined) return { type: plan.type, id: params[plan.param] ?? null };
  const data = (responseBody as { data?: { id?: unknown } } | undefined)?.data;
  return { type: plan.type, id: data && typeof data === 'object' && typeof data.id === 'string' ? data.id : null };
}

/** How a route names its resource: the type, and the path parameter holding its id (else the answer's `data.id`). */
interface ResourcePlan {
  type: string;
  param?: string;
}

/** Plans by `METHOD path` of the route table (a fixed set), worked out on a route's first write. */
const resourcePlans = new Map<string, ResourcePlan>();

function planResource(method: string, path: string): ResourcePlan {
  const segments = path.split('/').filter(Boolean);
  let lastParam = -1;
  segments.forEach((s, i) => {
    if (s.startsWith('{')) lastParam = i;
  });
  const after = segments.slice(lastParam + 1);
  const trailing = after[after.length - 1];
  const isCollectionCreate = method === 'POST' && trailing !== undefined && /s$/.test(trailing) && trailing !== 'sms';
  if (isCollectionCreate || lastParam < 0) {
    const words = (isCollectionCreate ? after : segments).map(singular);
    const type = isCollectionCreate ? words.join('_') : words[0] ?? 'unknown';
    return { type };
  }
  return { type: singular(segments[lastParam - 1] ?? 'unknown'), param: segments[lastParam].slice(1, -1) };
}

/** Marks the middleware so tests (and app assembly) can tell it is installed. */
export const AUDIT_MIDDLEWARE = Symbol.for('acp.auditMiddleware');

/**
 * Group commit of audit entries (db/groupCommit.ts): entries that arrive while an insert is in flight
 * are written together by the next one, so under load many requests share one INSERT while each
 * request still waits until its own entry is committed.
 */
export class AuditWriter {
  private readonly group: GroupCommit<{ orgId: string; rec: AuditRecord }, void>;

  constructor(db: Db, maxBatch = 500) {
    // One entry the database refuses must not cost the others theirs: a failed batch is written again
    // entry by entry, and each caller gets its own outcome.
    this.group = new GroupCommit<{ orgId: string; rec: AuditRecord }, void>(
      async (batch) => {
        await insertAuditLogs(db, batch);
        return batch.map(() => undefined);
      },
      maxBatch,
      { isolateFailures: true },
    );
  }

  /** Resolves once the entry is committed; rejects when it could not be written. */
  write(orgId: string, rec: AuditRecord): Promise<void> {
    return this.group.submit({ orgId, rec });
  }
}

/**
 * The audit entry of the request as it reads once answered with `status` and `responseBody` (the
 * envelope), or undefined for a request with no route or organization (not recorded).
 */
function auditEntry(ctx: AppContext, status: number, responseBody: unknown): { orgId: string; rec: AuditRecord } | undefined {
  const route = ctx.state.route;
  const auth = ctx.state.auth;
  if (!route || !auth) return undefined;
  const override = (ctx.state as unknown as Record<string, unknown>)[RESOURCE_KEY] as AuditResource | undefined;
  let resource: AuditResource = { type: 'unknown', id: null };
  try {
    resource = override ?? deriveResource(route.method, route.path, (ctx as unknown as { params?: Record<string, string> }).params ?? {}, responseBody);
  } catch {
    // keep `unknown`
  }
  return {
    orgId: auth.orgId,
    rec: {
      actorId: auth.keyId,
      actorKind: auth.kind,
      operationId: route.operationId,
      method: ctx.method,
      path: ctx.path,
      resourceType: resource.type,
      resourceId: resource.id,
      requestId: ctx.state.requestId,
      sourceIp: ctx.ip || null,
      statusCode: status,
    },
  };
}

/**
 * For a handler whose write can store the request's audit entry in its own statement (one commit for
 * the change and its entry, so a committed change is always audited): the entry as it will read when
 * the request is answered `status` with the envelope `{ success: true, data }`. Once that statement has
 * committed, call {@link markAuditStored}; a handler whose statement did not write the entry (its change
 * was refused) just does not, and the middleware records the request as usual.
 * @returns undefined outside an audited write (no audit middleware, a read, no organization)
 */
export function pendingAuditEntry(ctx: AppContext, status: number, data: unknown): { orgId: string; rec: AuditRecord } | undefined {
  if (READ_METHODS.has(ctx.method)) return undefined;
  return auditEntry(ctx, status, { success: true, data });
}

/** Notes that the handler's statement stored the request's audit entry for `status` (see pendingAuditEntry). */
export function markAuditStored(ctx: AppContext, status: number): void {
  ctx.state.auditStored = status;
}

/**
 * The audit middleware. Awaits the insert before the response is sent, so an answered write is an
 * audited write; a failed insert is logged (error) and does not change the response.
 */
export function auditLog(db: Db) {
  const writer = new AuditWriter(db);
  // Reads are never recorded: they pass through synchronously (no async frame).
  const mw = (ctx: AppContext, next: () => Promise<unknown>): Promise<unknown> => (READ_METHODS.has(ctx.method) ? next() : audited(ctx, next));
  const audited = async (ctx: AppContext, next: () => Promise<unknown>) => {
    try {
      await next();
    } finally {
      // An entry the handler's own statement stored with the change needs no second one; a different
      // final status (something failed after the commit) is recorded too.
      const entry = ctx.state.auditStored === ctx.status ? undefined : auditEntry(ctx, ctx.status, ctx.body);
      if (entry) {
        try {
          await writer.write(entry.orgId, entry.rec);
        } catch (err) {
          ctx.state.log?.error({ err, operationId: entry.rec.operationId }, 'audit log write failed');
        }
      }
    }
  };
  (mw as unknown as Record<symbol, boolean>)[AUDIT_MIDDLEWARE] = true;
  return mw;
}
