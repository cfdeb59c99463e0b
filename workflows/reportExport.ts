/**
 * Report export (docs/api-notes.md "Variables, escalation, onboarding, meta and settings"; id `report-export/{reportId}`,
 * started by `POST /reports`). An on-demand report exports its range once and ends `ready`. A scheduled one
 * exports the period that just ended, then sleeps on a durable timer to the end of each next period and
 * exports it (one file per period), continuing as new every 30 periods to keep its history short; it ends
 * when the report is cancelled (`POST /reports/{id}/cancel` cancels the workflow and marks the row).
 */
import { CancellationScope, continueAsNew, isCancellation, proxyActivities, sleep } from '@temporalio/workflow';
import type { ReportActivities } from '../activities/reports';
import { lastEndedPeriod, nextPeriodStart, type Period } from '../domain/settings/reports';
import type { ReportSchedule } from '../schemas/types/settings';
import { RETRY } from './retryPolicies';

const { exportReportPeriod, finishReport } = proxyActivities<ReportActivities>({
  startToCloseTimeout: '5 minutes',
  retry: RETRY.standard,
});

/** Input of the report workflow. */
export interface ReportExportInput {
  orgId: string;
  reportId: string;
  /** On-demand: the one range; scheduled: null. */
  range: Period | null;
  schedule: ReportSchedule | null;
  /** Scheduled: the next period to export (set when continuing as new). */
  nextPeriod?: Period;
}

/** Periods a run exports before continuing as new. */
const PERIODS_PER_RUN = 30;

/** Exports one report (see the module comment). @returns the number of files this run wrote */
export async function reportExport(input: ReportExportInput): Promise<{ files: number }> {
  try {
    if (!input.schedule) {
      const r = await exportReportPeriod({ orgId: input.orgId, reportId: input.reportId, period: input.range!, final: true });
      return { files: r.cancelled ? 0 : 1 };
    }
    let period = input.nextPeriod ?? lastEndedPeriod(input.schedule, new Date());
    for (let i = 0; i < PERIODS_PER_RUN; i++) {
      const wait = Date.parse(period.to) - Date.now();
      if (wait > 0) await sleep(wait);
      const r = await exportReportPeriod({ orgId: input.orgId, reportId: input.reportId, period, final: false });
      if (r.cancelled) return { files: i };
      const to = nextPeriodStart(input.schedule, new Date(period.to));
      period = { from: period.to, to: to.toISOString() };
    }
    input = { ...input, nextPeriod: period };
  } catch (err) {
    if (isCancellation(err)) {
      await CancellationScope.nonCancellable(() => finishReport({ orgId: input.orgId, reportId: input.reportId, status: 'cancelled', error: null }));
    } else {
      await finishReport({ orgId: input.orgId, reportId: input.reportId, status: 'failed', error: (err as Error).message?.slice(0, 500) ?? 'export failed' });
    }
    throw err;
  }
  // Outside the try: continuing as new is thrown as an error the catch above must not see.
  return continueAsNew<typeof reportExport>(input);
}
