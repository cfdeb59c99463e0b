/**
 * The refresh schedule of a URL knowledge source (docs/knowledge.md "Refresh and crawl"): one Temporal schedule
 * `knowledge-refresh/{sourceId}` per source that starts `knowledgeRefreshWorkflow` every `everyHours` hours
 * (Temporal ScheduleSpec interval; overlap SKIP, so a slow crawl is never run twice at once). Created with the
 * source, updated or removed when its refresh changes; a run that finds its source deleted removes it too.
 */
import { ScheduleNotFoundError, ScheduleOverlapPolicy, type Client } from '@temporalio/client';
import { ensureSchedule, workflowIds } from '../../temporal.config';

/** Where schedules are made: the client and the task queue the worker polls. */
export interface ScheduleTarget {
  client: Client;
  taskQueue: string;
}

/** Temporal ScheduleSpec of "every `everyHours` hours". */
function everySpec(everyHours: number) {
  return { intervals: [{ every: `${everyHours} hours` as const }] };
}

/**
 * Creates the source's schedule, or sets the interval of the existing one.
 * @param everyHours integer ≥ 1
 * @throws any connection error of the client
 */
export async function putKnowledgeRefreshSchedule(target: ScheduleTarget, ref: { orgId: string; sourceId: string }, everyHours: number): Promise<void> {
  const scheduleId = workflowIds.knowledgeRefresh(ref.sourceId);
  const created = await ensureSchedule(target, 'knowledgeRefreshWorkflow', {
    scheduleId,
    spec: everySpec(everyHours),
    args: [{ orgId: ref.orgId, sourceId: ref.sourceId }],
    orgId: ref.orgId,
    resourceId: ref.sourceId,
    policies: { overlap: ScheduleOverlapPolicy.SKIP },
  });
  if (!created) await target.client.schedule.getHandle(scheduleId).update((prev) => ({ ...prev, spec: everySpec(everyHours) }));
}

/**
 * Removes the source's schedule (workflows it started keep running to their end).
 * @returns false when there was none
 */
export async function removeKnowledgeRefreshSchedule(client: Client, sourceId: string): Promise<boolean> {
  try {
    await client.schedule.getHandle(workflowIds.knowledgeRefresh(sourceId)).delete();
    return true;
  } catch (err) {
    if (err instanceof ScheduleNotFoundError) return false;
    throw err;
  }
}
