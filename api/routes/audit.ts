/**
 * `GET /audit-logs` (spec "Audit"; docs/api-notes.md "Webhooks and audit logs"): the organization's audit entries, newest first,
 * cursor-paginated. Filters (all optional, combined with AND): `since` (inclusive) and `until`
 * (exclusive) as ISO 8601 date-times, `actorId` (credential id), `resourceType`, `resourceId`,
 * `operationId`.
 */
import type { Handler } from '../context';
import { validationError, type FieldError } from '../../domain/errors';
import { orgOf, pageParams, paged } from '../http';
import { listAuditLogs, type AuditLogFilter } from '../../db/repositories/auditLogs';

const ISO = /^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?)?$/;

function str(v: unknown): string | undefined {
  const s = Array.isArray(v) ? v[0] : v;
  return typeof s === 'string' && s !== '' ? s : undefined;
}

/** GET /audit-logs. @throws 400 validation_error naming `since`/`until` when they are not date-times, or when since ≥ until */
export const listAuditLogsHandler: Handler = async (ctx, { db }) => {
  const errors: FieldError[] = [];
  const filter: AuditLogFilter = {};
  for (const field of ['since', 'until'] as const) {
    const raw = str(ctx.query[field]);
    if (raw === undefined) continue;
    const d = new Date(raw);
    if (!ISO.test(raw) || Number.isNaN(d.getTime())) errors.push({ field, message: 'must be an ISO 8601 date-time, e.g. 2026-11-22T10:00:00Z' });
    else filter[field] = d;
  }
  if (filter.since && filter.until && filter.since >= filter.until) errors.push({ field: 'until', message: 'must be after since' });
  for (const field of ['actorId', 'resourceType', 'resourceId', 'operationId'] as const) {
    const v = str(ctx.query[field]);
    if (v !== undefined) {
      if (v.length > 200) errors.push({ field, message: 'must be at most 200 characters' });
      else filter[field] = v;
    }
  }
  if (errors.length) throw validationError(errors);
  const page = pageParams(ctx);
  return { data: await paged(() => listAuditLogs(db, orgOf(ctx), filter, page)) };
};

/** Handlers of this area by operationId (api/routes/index.ts). */
export const handlers = { listAuditLogs: listAuditLogsHandler };

/** Schemas of this area's operations (merged into the route table). */
export const routeSchemas = { listAuditLogs: { responseSchema: 'AuditLogList' } };
