/**
 * CountWorkflowExecutions with the real server's `GROUP BY ExecutionStatus` (the Web UI's status
 * counts): the query's filter counted as a whole and per status, each group value a Keyword
 * search-attribute payload (`json/plain`, as the real server encodes it). Other GROUP BY fields
 * are INVALID_ARGUMENT, as on the real server's SQL visibility.
 * `GROUP BY ExecutionStatus` alone (no filter: what the UI asks first) groups the whole namespace.
 */
import { status as Code } from '@grpc/grpc-js';
import type { temporal } from '@temporalio/proto';
import type { Engine } from '../engine';
import type { Execution } from '../types';
import { Plain } from '../protoTypes';
import { ServiceError } from '../types';
import { schedulerOf } from '../schedules';
import { matchesVisibilityQuery, parseVisibilityQuery } from '../visibility/query';
import { listExecutions, scheduleVisibilityRecord, STATUS_NAMES } from './visibility';

const GROUP_BY = /(?:^|\s+)GROUP\s+BY\s+([A-Za-z_][A-Za-z0-9_]*)\s*$/i;

/** Counts the executions matching `req.query`, grouped when it ends with `GROUP BY ExecutionStatus`. */
export function countExecutions(engine: Engine, req: Plain<temporal.api.workflowservice.v1.ICountWorkflowExecutionsRequest>): Record<string, unknown> {
  const query = req.query ?? '';
  const m = GROUP_BY.exec(query);
  const filter = m ? query.slice(0, m.index) : query;
  const rows = listExecutions(engine, { ...req, query: filter, pageSize: Number.MAX_SAFE_INTEGER }, true).executions as Array<{ exec: Execution }>;
  // Schedules are scheduler workflows in the real server's visibility, seen only by a query naming
  // their division (the Web UI's schedule count: TemporalNamespaceDivision="TemporalScheduler").
  let schedules = 0;
  if (/\bTemporalNamespaceDivision\b/.test(filter)) {
    const q = parseVisibilityQuery(filter);
    schedules = schedulerOf(engine).list(req.namespace || 'default').filter((s) => matchesVisibilityQuery(q, scheduleVisibilityRecord(s))).length;
  }
  if (!m) return { count: rows.length + schedules };
  if (m[1] !== 'ExecutionStatus') throw new ServiceError(Code.INVALID_ARGUMENT, `'GROUP BY' clause is only supported for ExecutionStatus, not ${m[1]}`);
  const byStatus = new Map<string, number>(schedules ? [['Running', schedules]] : []);
  for (const { exec } of rows) {
    const name = STATUS_NAMES[exec.status] ?? 'Unspecified';
    byStatus.set(name, (byStatus.get(name) ?? 0) + 1);
  }
  return {
    count: rows.length + schedules,
    groups: [...byStatus].map(([name, count]) => ({
      groupValues: [{ metadata: { encoding: Buffer.from('json/plain'), type: Buffer.from('Keyword') }, data: Buffer.from(JSON.stringify(name)) }],
      count,
    })),
  };
}
