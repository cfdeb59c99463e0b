/**
 * Reports (scopes reports:read/write; paths decided in docs/api-notes.md
 * "Variables, escalation, onboarding, meta and settings"): exports of conversations, usage or consent as CSV, on demand over a range or on a schedule
 * (one file per UTC day, ISO week or month), produced by the workflow `report-export/{reportId}` and
 * downloaded with `GET /reports/{id}/files/{fileId}`.
 */
import type { Handler } from '../context';
import { ApiError, notFound, temporalUnavailable, validationError, type FieldError } from '../../domain/errors';
import { listHandler, orgOf, requireTemporal } from '../http';
import { setAuditResource } from '../middleware/audit';
import { isTimeZone } from '../../domain/settings/hours';
import { createReport as insertReport, getReport as findReport, getReportFile, listReports as pageReports, setReportStatus } from '../../db/repositories/reports';
import { startWorkflow, workflowIds } from '../../temporal.config';
import type { Report, ReportCreate } from '../../schemas/types/settings';

const missing = (id: string) => notFound(`Report ${id}`, 'report_not_found');

/** Longest on-demand range: 366 days (as the analytics). */
const MAX_RANGE_MS = 366 * 86_400_000;

/** The on-demand range (default: the 30 days before now) and the checks the schema cannot make. */
function reportRange(b: ReportCreate): { from: string; to: string; errors: FieldError[] } {
  const errors: FieldError[] = [];
  const to = b.to ?? new Date().toISOString();
  const from = b.from ?? new Date(Date.parse(to) - 30 * 86_400_000).toISOString();
  if (b.schedule && (b.from || b.to)) errors.push({ field: b.from ? 'from' : 'to', message: 'is for on-demand reports; a scheduled report exports each period' });
  else if (Date.parse(from) >= Date.parse(to)) errors.push({ field: 'to', message: 'must be after from' });
  else if (Date.parse(to) - Date.parse(from) > MAX_RANGE_MS) errors.push({ field: 'from', message: 'the range is at most 366 days' });
  if (b.timeZone !== undefined && !isTimeZone(b.timeZone)) errors.push({ field: 'timeZone', message: 'must be an IANA time zone, e.g. America/Chicago' });
  return { from: new Date(from).toISOString(), to: new Date(to).toISOString(), errors };
}

/** GET /reports: newest first, each with its files. */
export const listReports: Handler = listHandler(pageReports);

/**
 * POST /reports: 202 with the report (`queued`); the workflow writes its files.
 * @throws 400 naming `from`/`to`/`timeZone`; 503 `temporal_unavailable` (the report is marked failed)
 */
export const createReport: Handler = async (ctx, deps) => {
  const orgId = orgOf(ctx);
  const body = ctx.request.body as unknown as ReportCreate;
  const range = reportRange(body);
  if (range.errors.length) throw validationError(range.errors);
  const temporal = requireTemporal(deps);
  const schedule = body.schedule ?? null;
  const report = await insertReport(deps.db, orgId, { kind: body.kind, schedule, timeZone: body.timeZone ?? 'UTC', from: schedule ? null : range.from, to: schedule ? null : range.to });
  try {
    await startWorkflow(temporal, 'reportExport', {
      workflowId: workflowIds.reportExport(report.id),
      args: [{ orgId, reportId: report.id, range: schedule ? null : { from: range.from, to: range.to }, schedule }],
      orgId,
      resourceId: report.id,
    });
  } catch (err) {
    await setReportStatus(deps.db, orgId, report.id, 'failed', 'workflow_not_started');
    ctx.state.log.error({ err, orgId, reportId: report.id }, 'starting report-export workflow failed');
    throw temporalUnavailable('The report could not be started; request it again');
  }
  setAuditResource(ctx, 'report', report.id);
  return { data: report, status: 202, headers: { Location: `/api/v1/reports/${report.id}` } };
};

/** GET /reports/{id}: status and files. @throws 404 `report_not_found` */
export const getReport: Handler = async (ctx, { db }) => {
  const r = await findReport(db, orgOf(ctx), ctx.params.id);
  if (!r) throw missing(ctx.params.id);
  return { data: r };
};

/**
 * POST /reports/{id}/cancel: stops a scheduled or unfinished report (files already written stay).
 * @throws 404; 409 `report_finished` for a report that is ready, failed or cancelled already
 */
export const cancelReport: Handler = async (ctx, deps) => {
  const orgId = orgOf(ctx);
  const r = await findReport(deps.db, orgId, ctx.params.id);
  if (!r) throw missing(ctx.params.id);
  if (['ready', 'failed', 'cancelled'].includes(r.status)) throw new ApiError(409, 'report_finished', `Report ${r.id} is ${r.status} already`);
  await setReportStatus(deps.db, orgId, r.id, 'cancelled');
  // The row decides (the workflow never writes a cancelled report); cancelling the workflow only ends its timer early.
  await deps.temporal?.client.workflow
    .getHandle(workflowIds.reportExport(r.id))
    .cancel()
    .catch((err: unknown) => ctx.state.log.warn({ err, reportId: r.id }, 'cancelling report-export workflow failed'));
  const data: Report = (await findReport(deps.db, orgId, r.id))!;
  return { data };
};

/** GET /reports/{id}/files/{fileId}: the file itself (`text/csv`), not the JSON envelope. @throws 404 `report_file_not_found` */
export const downloadReportFile: Handler = async (ctx, { db }) => {
  const f = await getReportFile(db, orgOf(ctx), ctx.params.id, ctx.params.fileId);
  if (!f) throw notFound(`Report file ${ctx.params.fileId}`, 'report_file_not_found');
  // Koa's documented escape hatch: write the response ourselves; the envelope step is then a no-op.
  ctx.respond = false;
  ctx.res.statusCode = 200;
  ctx.res.setHeader('Content-Type', f.contentType);
  ctx.res.setHeader('Content-Disposition', `attachment; filename="${ctx.params.id}-${f.periodFrom.slice(0, 10)}.csv"`);
  ctx.res.setHeader('Content-Length', f.content.length);
  ctx.res.end(f.content);
  return { data: null };
};

/** Handlers of this area by operationId. */
export const handlers = { listReports, createReport, getReport, cancelReport, downloadReportFile };

/** Schemas of this area's operations (merged into the route table). */
export const routeSchemas = {
  listReports: { responseSchema: 'ReportList' },
  createReport: { requestSchema: 'ReportCreate', responseSchema: 'Report' },
  getReport: { responseSchema: 'Report' },
  cancelReport: { responseSchema: 'Report' },
};
