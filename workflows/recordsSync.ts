/**
 * `records-sync/{connectionId}` (DESIGN.md "Durable processes"; docs/api-notes.md "Integrations and records"):
 * pulls every record of a connected spreadsheet or CRM into the organization's Records, one provider
 * page per activity, with the progress in the connection's `sync` (GET /integrations). Reads begin →
 * pages until the source is exhausted → finish (`succeeded`, or `failed` with the reason).
 */
import { ActivityFailure, ApplicationFailure } from '@temporalio/common';
import { proxyActivities, workflowInfo } from '@temporalio/workflow';
import type { IntegrationActivities } from '../activities/integrations';
import { RETRY } from './retryPolicies';

/** Input of `records-sync/{connectionId}`. */
export interface RecordsSyncInput {
  orgId: string;
  connectionId: string;
}

const { recordsSyncBegin, recordsSyncPage, recordsSyncFinish } = proxyActivities<IntegrationActivities>({
  startToCloseTimeout: '2 minutes',
  retry: RETRY.fetch,
});

/** Syncs one connection's records. @returns records written, or the error that ended the run */
export async function recordsSync(input: RecordsSyncInput): Promise<{ processed: number } | { error: string }> {
  const startedAt = new Date(workflowInfo().startTime).toISOString();
  if (!(await recordsSyncBegin(input.orgId, input.connectionId, startedAt))) return { error: 'connection_gone' };
  let processed = 0;
  let cursor: string | null = null;
  try {
    do {
      const page: { nextCursor: string | null; processed: number } = await recordsSyncPage(input.orgId, input.connectionId, cursor, processed);
      processed = page.processed;
      cursor = page.nextCursor;
    } while (cursor);
  } catch (err) {
    const cause = err instanceof ActivityFailure && err.cause instanceof ApplicationFailure ? err.cause : undefined;
    const reason = cause ? `${cause.type ?? 'error'}: ${cause.message}` : err instanceof Error ? err.message : String(err);
    await recordsSyncFinish(input.orgId, input.connectionId, { processed, error: reason, startedAt });
    return { error: reason };
  }
  await recordsSyncFinish(input.orgId, input.connectionId, { processed, error: null, startedAt });
  return { processed };
}
