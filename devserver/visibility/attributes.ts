/**
 * Attribute values of a visibility record for List Filters (docs.temporal.io/list-filter): the
 * system attributes (WorkflowId, ExecutionStatus, StartTime, ...) and custom search attributes by
 * case-sensitive name, plus the RFC 3339 datetime parsing both the parser and the evaluator use.
 */
import type { VisibilityRecord } from './ast';

/** How a system attribute is typed in filters: Keyword, ExecutionStatus or Datetime. */
export type SystemKind = 'keyword' | 'status' | 'datetime';

const SYSTEM_ATTRIBUTES: Record<string, { kind: SystemKind; get: (r: VisibilityRecord) => unknown }> = {
  WorkflowType: { kind: 'keyword', get: (r) => r.workflowType },
  WorkflowId: { kind: 'keyword', get: (r) => r.workflowId },
  RunId: { kind: 'keyword', get: (r) => r.runId },
  TaskQueue: { kind: 'keyword', get: (r) => r.taskQueue },
  ExecutionStatus: { kind: 'status', get: (r) => r.status },
  StartTime: { kind: 'datetime', get: (r) => r.startTime },
  CloseTime: { kind: 'datetime', get: (r) => r.closeTime },
  ExecutionTime: { kind: 'datetime', get: (r) => r.executionTime },
};

/** The system attribute named `name` (case-sensitive): its kind for type checks and its getter; undefined for custom names. */
export function systemAttribute(name: string): { kind: SystemKind; get: (r: VisibilityRecord) => unknown } | undefined {
  return Object.prototype.hasOwnProperty.call(SYSTEM_ATTRIBUTES, name) ? SYSTEM_ATTRIBUTES[name] : undefined;
}

/** Value of a system or custom attribute on a record; undefined when the record does not have it. */
export function attributeValue(rec: VisibilityRecord, name: string): unknown {
  const sys = systemAttribute(name);
  if (sys) return sys.get(rec);
  const attrs = rec.searchAttributes;
  if (!attrs || !Object.prototype.hasOwnProperty.call(attrs, name)) return undefined;
  return attrs[name];
}

// ---------------------------------------------------------------------------------------------
// Datetime handling (RFC 3339)
// ---------------------------------------------------------------------------------------------

const RFC3339 =
  /^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?(?:([Zz])|([+-])(\d{2}):(\d{2}))$/;

const datetimeCache = new Map<string, number | null>();

/**
 * Parse an RFC 3339 timestamp (`2021-08-22T15:04:05Z`, `...05.123456789+02:00`) to epoch
 * milliseconds (sub-millisecond digits are truncated). Returns null if it is not RFC 3339.
 */
export function parseRfc3339(text: string): number | null {
  const cached = datetimeCache.get(text);
  if (cached !== undefined) return cached;
  let result: number | null = null;
  const m = RFC3339.exec(text);
  if (m) {
    const [year, month, day, hour, minute, second] = [m[1], m[2], m[3], m[4], m[5], m[6]].map(Number) as [
      number,
      number,
      number,
      number,
      number,
      number,
    ];
    const ms = m[7] ? Number((m[7] + '00').slice(0, 3)) : 0;
    const valid =
      month >= 1 && month <= 12 && day >= 1 && day <= daysInMonth(year, month) && hour <= 23 && minute <= 59 && second <= 60;
    if (valid) {
      let offsetMin = 0;
      if (!m[8]) {
        const oh = Number(m[10]);
        const om = Number(m[11]);
        if (oh <= 23 && om <= 59) offsetMin = (m[9] === '-' ? -1 : 1) * (oh * 60 + om);
        else offsetMin = NaN;
      }
      const utc = Date.UTC(year, month - 1, day, hour, minute, second, ms) - offsetMin * 60_000;
      result = Number.isFinite(utc) ? utc : null;
    }
  }
  if (datetimeCache.size > 10_000) datetimeCache.clear();
  datetimeCache.set(text, result);
  return result;
}

function daysInMonth(year: number, month: number): number {
  return new Date(Date.UTC(year, month, 0)).getUTCDate();
}

/** Epoch ms of a record-side datetime value (Date, or ISO / RFC 3339 string), else null. */
export function recordDatetime(v: unknown): number | null {
  if (v instanceof Date) return Number.isNaN(v.getTime()) ? null : v.getTime();
  if (typeof v === 'string') {
    const r = parseRfc3339(v);
    if (r !== null) return r;
    const p = Date.parse(v);
    return /^\d{4}-\d{2}-\d{2}/.test(v) && !Number.isNaN(p) ? p : null;
  }
  return null;
}
