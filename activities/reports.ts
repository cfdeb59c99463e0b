/**
 * Report export activities (docs/api-notes.md "Variables, escalation, onboarding, meta and settings"): read one
 * period's rows, write the CSV file once per (report, period) — a retried activity finds the file it
 * wrote — and set the report's status. A cancelled report is never written again.
 */
import type { ActivityDeps } from './index';
import { getReport, reportRows, setReportStatus, storeReportFile } from '../db/repositories/reports';
import { reportCsv, type Period } from '../domain/settings/reports';
import type { ReportStatus } from '../schemas/types/settings';

/** Most rows one file holds (the rest of a larger period is left out; docs/api-notes.md "Variables, escalation, onboarding, meta and settings" says so). */
export const MAX_REPORT_ROWS = 100_000;

/** Builds the report activities. */
export function createReportActivities(deps: Pick<ActivityDeps, 'db'>) {
  return {
    /**
     * Exports one period of a report as CSV.
     * @param final true for an on-demand report: it ends `ready` with this file
     * @returns `cancelled` when the report was cancelled (nothing written)
     */
    async exportReportPeriod(input: { orgId: string; reportId: string; period: Period; final: boolean }): Promise<{ cancelled: boolean; rowCount: number }> {
      const report = await getReport(deps.db, input.orgId, input.reportId);
      if (!report || report.status === 'cancelled') return { cancelled: true, rowCount: 0 };
      if (!(await setReportStatus(deps.db, input.orgId, report.id, 'running'))) return { cancelled: true, rowCount: 0 };
      const rows = await reportRows(deps.db, input.orgId, report.kind, { ...input.period, timeZone: report.timeZone, limit: MAX_REPORT_ROWS });
      const content = Buffer.from(reportCsv(report.kind, rows), 'utf8');
      await storeReportFile(deps.db, input.orgId, report.id, { ...input.period, rowCount: rows.length, contentType: 'text/csv; charset=utf-8', content });
      const done = await setReportStatus(deps.db, input.orgId, report.id, input.final ? 'ready' : 'scheduled');
      return { cancelled: !done, rowCount: rows.length };
    },

    /** Sets the final status of a report (a cancelled report stays cancelled). */
    async finishReport(input: { orgId: string; reportId: string; status: ReportStatus; error: string | null }): Promise<void> {
      await setReportStatus(deps.db, input.orgId, input.reportId, input.status, input.error);
    },
  };
}

/** Report activity functions, for `proxyActivities<ReportActivities>()`. */
export type ReportActivities = ReturnType<typeof createReportActivities>;
