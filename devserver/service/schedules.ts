/**
 * temporal.api.workflowservice.v1 schedule RPCs: CreateSchedule, DescribeSchedule, UpdateSchedule,
 * PatchSchedule, DeleteSchedule, ListSchedules, ListScheduleMatchingTimes — thin mappings onto
 * `devserver/schedules.ts` (devserver/README.md "Schedules").
 */
import { status as Code } from '@grpc/grpc-js';
import { temporal } from '@temporalio/proto';
import type { Engine } from '../engine';
import { fromMs, toMs } from '../proto';
import { Payload, Plain } from '../protoTypes';
import { applyTypeMap } from '../searchAttributes';
import { scheduleInfo, schedulerOf } from '../schedules';
import { ServiceError } from '../types';
import { Handlers, pageToken } from './common';
import { matchesVisibilityQuery, parseVisibilityQuery, VisibilityQueryError } from '../visibility/query';
import { scheduleVisibilityRecord } from './visibility';

import ws = temporal.api.workflowservice.v1;

/** Schedule handlers bound to an engine. */
export function scheduleHandlers(engine: Engine): Handlers {
  const sch = schedulerOf(engine);
  const nsOf = (req: { namespace?: string | null }) => req.namespace || 'default';
  /** Types the untyped search attributes of the schedule and of its start action (applyTypeMap). */
  const typed = (ns: string, schedule: Plain<ws.ICreateScheduleRequest>['schedule'], own?: Record<string, Payload> | null) => {
    const state = engine.namespace(ns);
    applyTypeMap(state, schedule?.action?.startWorkflow?.searchAttributes?.indexedFields);
    return applyTypeMap(state, own);
  };
  return {
    async CreateSchedule(req: Plain<ws.ICreateScheduleRequest>) {
      if (!req.schedule) throw new ServiceError(Code.INVALID_ARGUMENT, 'Schedule is not set on request.');
      const s = sch.create(nsOf(req), req.scheduleId ?? '', req.schedule, {
        memo: req.memo?.fields,
        searchAttributes: typed(nsOf(req), req.schedule, req.searchAttributes?.indexedFields),
        requestId: req.requestId,
        initialPatch: req.initialPatch,
      });
      return { conflictToken: Buffer.from(String(s.conflictToken)) };
    },
    async DescribeSchedule(req: Plain<ws.IDescribeScheduleRequest>) {
      const s = sch.get(nsOf(req), req.scheduleId);
      return {
        schedule: s.schedule,
        info: scheduleInfo(sch, s),
        memo: s.memo ? { fields: s.memo } : undefined,
        searchAttributes: s.searchAttributes ? { indexedFields: s.searchAttributes } : undefined,
        conflictToken: Buffer.from(String(s.conflictToken)),
      };
    },
    async UpdateSchedule(req: Plain<ws.IUpdateScheduleRequest>) {
      const s = sch.get(nsOf(req), req.scheduleId);
      if (!req.schedule) throw new ServiceError(Code.INVALID_ARGUMENT, 'Schedule is not set on request.');
      sch.update(s, req.schedule, req.conflictToken, typed(nsOf(req), req.schedule, req.searchAttributes?.indexedFields));
      return {};
    },
    async PatchSchedule(req: Plain<ws.IPatchScheduleRequest>) {
      sch.patch(sch.get(nsOf(req), req.scheduleId), req.patch ?? {});
      return {};
    },
    async DeleteSchedule(req: Plain<ws.IDeleteScheduleRequest>) {
      sch.delete(sch.get(nsOf(req), req.scheduleId));
      return {};
    },
    async ListSchedules(req: Plain<ws.IListSchedulesRequest>) {
      // The query filters the schedules as the real server's visibility records of them
      // (ScheduleId, TemporalSchedulePaused, custom search attributes; scheduleVisibilityRecord).
      let all = sch.list(nsOf(req));
      if (req.query) {
        let q;
        try {
          q = parseVisibilityQuery(req.query);
        } catch (err) {
          if (err instanceof VisibilityQueryError) throw new ServiceError(Code.INVALID_ARGUMENT, err.message);
          throw err;
        }
        all = all.filter((s) => matchesVisibilityQuery(q, scheduleVisibilityRecord(s)));
      }
      const start = pageToken.decode<number>(req.nextPageToken) ?? 0;
      const size = req.maximumPageSize && req.maximumPageSize > 0 ? req.maximumPageSize : 1000;
      const page = all.slice(start, start + size);
      return {
        schedules: page.map((s) => {
          const info = scheduleInfo(sch, s);
          return {
            scheduleId: s.scheduleId,
            memo: s.memo ? { fields: s.memo } : undefined,
            searchAttributes: s.searchAttributes ? { indexedFields: s.searchAttributes } : undefined,
            info: {
              spec: s.schedule.spec,
              workflowType: s.schedule.action?.startWorkflow?.workflowType,
              notes: s.schedule.state?.notes,
              paused: !!s.schedule.state?.paused,
              recentActions: info.recentActions,
              futureActionTimes: info.futureActionTimes,
            },
          };
        }),
        nextPageToken: start + size < all.length ? pageToken.encode(start + size) : undefined,
      };
    },
    async ListScheduleMatchingTimes(req: Plain<ws.IListScheduleMatchingTimesRequest>) {
      const s = sch.get(nsOf(req), req.scheduleId);
      const from = toMs(req.startTime) ?? engine.clock.now();
      const until = toMs(req.endTime) ?? from;
      return { startTime: sch.futureTimes(s, from - 1, 1000, until).map(fromMs) };
    },
  };
}
