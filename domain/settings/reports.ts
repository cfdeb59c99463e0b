/**
 * Report exports (scopes reports:read/write; docs/api-notes.md
 * "Variables, escalation, onboarding, meta and settings"): the periods of a scheduled report and the CSV (RFC 4180) of each kind.
 */
import { csvField } from '../sms/consentCsv';
import type { ReportKind, ReportSchedule } from '../../schemas/types/settings';

/** A half-open period `[from, to)`, ISO 8601 UTC. */
export interface Period {
  from: string;
  to: string;
}

const DAY = 86_400_000;

/** Start (UTC) of the period of `schedule` that contains `at`: the day, the ISO week (Monday), the month. */
export function periodStart(schedule: ReportSchedule, at: Date): Date {
  const d = new Date(Date.UTC(at.getUTCFullYear(), at.getUTCMonth(), at.getUTCDate()));
  if (schedule === 'weekly') return new Date(d.getTime() - ((d.getUTCDay() + 6) % 7) * DAY);
  if (schedule === 'monthly') return new Date(Date.UTC(at.getUTCFullYear(), at.getUTCMonth(), 1));
  return d;
}

/** The period after the one starting at `start`. */
export function nextPeriodStart(schedule: ReportSchedule, start: Date): Date {
  if (schedule === 'daily') return new Date(start.getTime() + DAY);
  if (schedule === 'weekly') return new Date(start.getTime() + 7 * DAY);
  return new Date(Date.UTC(start.getUTCFullYear(), start.getUTCMonth() + 1, 1));
}

/** The last whole period of `schedule` that ended at or before `at`. */
export function lastEndedPeriod(schedule: ReportSchedule, at: Date): Period {
  const to = periodStart(schedule, at);
  const from = periodStart(schedule, new Date(to.getTime() - 1));
  return { from: from.toISOString(), to: to.toISOString() };
}

/** Columns of each report kind; `free` columns hold free text (neutralised against CSV injection). */
export const REPORT_COLUMNS: Record<ReportKind, { name: string; free?: boolean }[]> = {
  conversations: [
    { name: 'id' }, { name: 'agentId' }, { name: 'channel' }, { name: 'status' }, { name: 'endReason', free: true }, { name: 'startedAt' },
    { name: 'endedAt' }, { name: 'localStart' }, { name: 'messages' }, { name: 'tokens' }, { name: 'costCents' },
  ],
  usage: [{ name: 'id' }, { name: 'kind' }, { name: 'quantity' }, { name: 'unitPriceCents' }, { name: 'amountCents' }, { name: 'resourceId' }, { name: 'createdAt' }, { name: 'localCreatedAt' }],
  consent: [{ name: 'e164' }, { name: 'event' }, { name: 'source', free: true }, { name: 'occurredAt' }, { name: 'recordedAt' }, { name: 'proofText', free: true }],
};

/** The CSV document of `rows` for `kind`: a header line, then one CRLF-terminated line per row. */
export function reportCsv(kind: ReportKind, rows: Record<string, string | number | null>[]): string {
  const cols = REPORT_COLUMNS[kind];
  const lines = [cols.map((c) => c.name).join(',')];
  for (const r of rows) lines.push(cols.map((c) => csvField(r[c.name] === null || r[c.name] === undefined ? null : String(r[c.name]), !!c.free)).join(','));
  return lines.join('\r\n') + '\r\n';
}
