/**
 * The audit log (spec "Audit"; docs/api-notes.md "Webhooks and audit logs"): append-only. This module has only insert and select
 * functions, and the database refuses UPDATE, DELETE and TRUNCATE of `audit_logs` with a trigger
 * (migration 20261122000400), so not even a stray query elsewhere can rewrite history.
 */
import { prepared, type Db } from '../index';
import { newId } from '../ids';
import { storableText } from '../../domain/text';
import { keysetPage, type Page } from '../pagination';
import type { AuditLogEntry } from '../../schemas/types/audit';
import { fromColumns } from '../rows';

/** What the audit middleware records for one write. */
export interface AuditRecord {
  actorId: string;
  actorKind: string;
  operationId: string;
  method: string;
  path: string;
  resourceType: string;
  resourceId: string | null;
  requestId: string;
  sourceIp: string | null;
  statusCode: number;
}

function toEntry(r: Record<string, any>): AuditLogEntry {
  return {
    id: r.id,
    occurredAt: new Date(r.occurred_at).toISOString(),
    actor: { id: r.actor_id, kind: r.actor_kind },
    ...fromColumns(r, ['operationId', 'method', 'path']),
    resource: { type: r.resource_type, id: r.resource_id ?? null },
    requestId: r.request_id,
    sourceIp: r.source_ip ?? null,
    statusCode: r.status_code,
    outcome: r.status_code < 400 ? 'success' : 'failure',
  };
}

/** Appends one entry. @returns the stored entry */
export async function insertAuditLog(db: Db, orgId: string, rec: AuditRecord): Promise<AuditLogEntry> {
  const [row] = await db('audit_logs').insert(auditRow(orgId, rec)).returning('*');
  return toEntry(row);
}

/** The stored row of an entry (column names), as {@link AUDIT_RECORD_COLUMNS} reads it back from JSON. */
export function auditRow(orgId: string, rec: AuditRecord): Record<string, unknown> {
  return {
    id: newId('aud'),
    org_id: orgId,
    actor_id: rec.actorId,
    actor_kind: rec.actorKind,
    operation_id: rec.operationId,
    method: rec.method,
    path: rec.path.slice(0, 2048),
    resource_type: rec.resourceType,
    // A resource id can come from a decoded path parameter (`%00`, say): the entry keeps it with U+FFFD
    // in place of what Postgres cannot store, instead of being lost.
    resource_id: rec.resourceId === null ? null : storableText(rec.resourceId),
    request_id: rec.requestId,
    source_ip: rec.sourceIp,
    status_code: rec.statusCode,
  };
}

/**
 * Appends several entries in one statement (group commit of the audit middleware). Each entry names its
 * own organization; nothing is read, so no tenant can see another's rows through this.
 */
export async function insertAuditLogs(db: Db, entries: { orgId: string; rec: AuditRecord }[]): Promise<void> {
  if (entries.length === 0) return;
  // One JSON parameter instead of 12 bind parameters per row: building and binding hundreds of
  // parameters cost more than the insert itself under load.
  await db.raw(AUDIT_INSERT_SQL, [JSON.stringify(entries.map((e) => auditRow(e.orgId, e.rec)))]).options(prepared(AUDIT_INSERT_SQL));
}

/** The columns an entry writes, in order (the occurrence time is the column's default, the commit's `now()`). */
export const AUDIT_COLUMNS = 'id, org_id, actor_id, actor_kind, operation_id, method, path, resource_type, resource_id, request_id, source_ip, status_code';

/**
 * The column definition list that reads an {@link auditRow} back from JSON (`jsonb_to_record(x) AS a(…)`), for
 * statements that store entries beside their change (db/repositories/smsRegistrations.ts).
 */
export const AUDIT_RECORD_COLUMNS =
  'id text, org_id text, actor_id text, actor_kind text, operation_id text, method text, path text, ' +
  'resource_type text, resource_id text, request_id text, source_ip text, status_code int';

const AUDIT_INSERT_SQL = `INSERT INTO audit_logs (${AUDIT_COLUMNS}) SELECT ${AUDIT_COLUMNS} FROM jsonb_to_recordset(?::jsonb) AS v(${AUDIT_RECORD_COLUMNS})`;

/** Filters of {@link listAuditLogs}; every one is optional and they combine with AND. */
export interface AuditLogFilter {
  /** Entries at or after this time. */
  since?: Date;
  /** Entries strictly before this time. */
  until?: Date;
  /** Credential id of the actor. */
  actorId?: string;
  resourceType?: string;
  resourceId?: string;
  operationId?: string;
}

/** One page of the organization's entries, newest first. @throws InvalidCursorError */
export async function listAuditLogs(db: Db, orgId: string, filter: AuditLogFilter, page: { limit: number; cursor?: string }): Promise<Page<AuditLogEntry>> {
  const q = db('audit_logs').select('*').where({ org_id: orgId });
  if (filter.since) q.andWhere('occurred_at', '>=', filter.since);
  if (filter.until) q.andWhere('occurred_at', '<', filter.until);
  if (filter.actorId) q.andWhere({ actor_id: filter.actorId });
  if (filter.resourceType) q.andWhere({ resource_type: filter.resourceType });
  if (filter.resourceId) q.andWhere({ resource_id: filter.resourceId });
  if (filter.operationId) q.andWhere({ operation_id: filter.operationId });
  return keysetPage(q, { ...page, column: 'seq', direction: 'desc', map: toEntry });
}
