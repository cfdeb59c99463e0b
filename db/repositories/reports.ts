/**
 * Report exports and their files (scopes reports:read/write; docs/api-notes.md
 * "Variables, escalation, onboarding, meta and settings"). The export activity reads the rows of a period here and stores the file once per
 * (report, period), so a retried activity finds the file it wrote.
 */
import type { Knex } from 'knex';
import type { Db } from '../index';
import { newId } from '../ids';
import { keysetPage, type Page } from '../pagination';
import { iso } from '../timestamps';
import type { Report, ReportFile, ReportKind, ReportSchedule, ReportStatus } from '../../schemas/types/settings';

type Conn = Db | Knex.Transaction;

function toFile(r: Record<string, any>): ReportFile {
  return {
    id: r.id,
    periodFrom: iso(r.period_from)!,
    periodTo: iso(r.period_to)!,
    rowCount: r.row_count,
    byteSize: r.byte_size,
    contentType: r.content_type,
    downloadUrl: `/api/v1/reports/${r.report_id}/files/${r.id}`,
    createdAt: iso(r.created_at)!,
  };
}

async function toReports(conn: Conn, orgId: string, rows: Record<string, any>[]): Promise<Report[]> {
  const files = rows.length
    ? await conn('report_files').where({ org_id: orgId }).whereIn('report_id', rows.map((r) => r.id)).orderBy('seq').select('id', 'report_id', 'period_from', 'period_to', 'row_count', 'byte_size', 'content_type', 'created_at')
    : [];
  return rows.map((r) => ({
    id: r.id,
    kind: r.kind,
    format: r.format,
    schedule: r.schedule ?? null,
    timeZone: r.time_zone,
    from: iso(r.range_from),
    to: iso(r.range_to),
    status: r.status,
    error: r.error ?? null,
    files: files.filter((f) => f.report_id === r.id).map(toFile),
    createdAt: iso(r.created_at)!,
    updatedAt: iso(r.updated_at)!,
  }));
}

/** Creates a report (status `queued`). */
export async function createReport(
  db: Conn,
  orgId: string,
  r: { kind: ReportKind; schedule: ReportSchedule | null; timeZone: string; from: string | null; to: string | null },
): Promise<Report> {
  const [row] = await db('reports')
    .insert({ id: newId('rpt'), org_id: orgId, kind: r.kind, format: 'csv', schedule: r.schedule, time_zone: r.timeZone, range_from: r.from, range_to: r.to, status: 'queued' })
    .returning('*');
  return (await toReports(db, orgId, [row]))[0];
}

/** One report with its files, or undefined. */
export async function getReport(db: Conn, orgId: string, id: string): Promise<Report | undefined> {
  const row = await db('reports').where({ org_id: orgId, id }).first();
  return row ? (await toReports(db, orgId, [row]))[0] : undefined;
}

/** One page of reports, newest first. @throws InvalidCursorError */
export async function listReports(db: Conn, orgId: string, page: { limit: number; cursor?: string }): Promise<Page<Report>> {
  const out = await keysetPage(db('reports').where({ org_id: orgId }).select('*'), { ...page, column: 'seq', direction: 'desc', map: (r) => r });
  return { ...out, items: await toReports(db, orgId, out.items) };
}

/**
 * Sets the status (and error) unless the report was cancelled (a cancel wins over a late export).
 * @returns false when the report is cancelled or missing
 */
export async function setReportStatus(db: Conn, orgId: string, id: string, status: ReportStatus, error: string | null = null): Promise<boolean> {
  const n = await db('reports').where({ org_id: orgId, id }).whereNot({ status: 'cancelled' }).update({ status, error, updated_at: db.fn.now() });
  return n > 0;
}

/** Stores a file of a period once; a second store of the same period keeps the first. */
export async function storeReportFile(db: Conn, orgId: string, reportId: string, f: { from: string; to: string; rowCount: number; contentType: string; content: Buffer }): Promise<void> {
  await db('report_files')
    .insert({ id: newId('rpf'), org_id: orgId, report_id: reportId, period_from: f.from, period_to: f.to, row_count: f.rowCount, byte_size: f.content.length, content_type: f.contentType, content: f.content })
    .onConflict(['report_id', 'period_from'])
    .ignore();
}

/** A file's bytes, or undefined. */
export async function getReportFile(db: Conn, orgId: string, reportId: string, fileId: string): Promise<{ contentType: string; content: Buffer; periodFrom: string; periodTo: string } | undefined> {
  const r = await db('report_files').where({ org_id: orgId, report_id: reportId, id: fileId }).first();
  return r ? { contentType: r.content_type, content: r.content, periodFrom: iso(r.period_from)!, periodTo: iso(r.period_to)! } : undefined;
}

const local = (col: string) => `to_char(${col} AT TIME ZONE ?, 'YYYY-MM-DD"T"HH24:MI:SS')`;

/**
 * The rows of a report kind over `[from, to)` (at most `limit`), with a local-time column in `timeZone`.
 * Conversations leave simulations out; consent is every consent event recorded in the period.
 */
export async function reportRows(db: Conn, orgId: string, kind: ReportKind, q: { from: string; to: string; timeZone: string; limit: number }): Promise<Record<string, string | number | null>[]> {
  const isoOf = (v: unknown) => iso(v as Date | null);
  if (kind === 'conversations') {
    const rows = await db('conversations')
      .where({ org_id: orgId, simulation: false })
      .where('started_at', '>=', q.from)
      .where('started_at', '<', q.to)
      .orderBy([{ column: 'started_at' }, { column: 'id' }])
      .limit(q.limit)
      .select('id', 'agent_id', 'channel', 'status', 'end_reason', 'started_at', 'ended_at', 'message_count', 'prompt_tokens', 'completion_tokens', 'cost_cents', db.raw(`${local('started_at')} AS local_start`, [q.timeZone]));
    return rows.map((r) => ({
      id: r.id, agentId: r.agent_id, channel: r.channel, status: r.status, endReason: r.end_reason ?? null, startedAt: isoOf(r.started_at), endedAt: isoOf(r.ended_at),
      localStart: r.local_start, messages: r.message_count, tokens: r.prompt_tokens + r.completion_tokens, costCents: r.cost_cents,
    }));
  }
  if (kind === 'usage') {
    const rows = await db('usage_entries')
      .where({ org_id: orgId })
      .where('created_at', '>=', q.from)
      .where('created_at', '<', q.to)
      .orderBy('seq')
      .limit(q.limit)
      .select('id', 'kind', 'quantity', 'unit_price_cents', 'amount_cents', 'resource_id', 'created_at', db.raw(`${local('created_at')} AS local_created`, [q.timeZone]));
    return rows.map((r) => ({
      id: r.id, kind: r.kind, quantity: Number(r.quantity), unitPriceCents: Number(r.unit_price_cents), amountCents: Number(r.amount_cents), resourceId: r.resource_id ?? null,
      createdAt: isoOf(r.created_at), localCreatedAt: r.local_created,
    }));
  }
  const rows = await db('sms_consent_events').where({ org_id: orgId }).where('created_at', '>=', q.from).where('created_at', '<', q.to).orderBy('id').limit(q.limit);
  return rows.map((r) => ({ e164: r.e164, event: r.event, source: r.source ?? null, occurredAt: isoOf(r.occurred_at), recordedAt: isoOf(r.created_at), proofText: r.proof_text ?? null }));
}
