/**
 * Replay of past events to one webhook endpoint, workflow id `webhook-replay/{replayId}` (docs/api-notes.md
 * "Replaying missed events"). Reads like the process: queue the next batch of the window's events as
 * deliveries → wait the pacing interval → … until the window is exhausted or the endpoint is disabled.
 * The deliveries themselves go out through the outbox and `webhook-delivery/{deliveryId}` as any other.
 * Each step is one activity that is idempotent per step (a compare-and-set on the replay's cursor), and
 * the unique (endpoint, event) delivery keeps an event from reaching the endpoint twice.
 */
import { continueAsNew, proxyActivities, setHandler, sleep } from '@temporalio/workflow';
import type { WebhookActivities } from '../activities/webhooks';
import type { WebhookReplay } from '../schemas/types/webhooks';
import { RETRY } from './retryPolicies';
import { webhookReplayProgressQuery } from './definitions';

/** Input of the workflow. */
export interface WebhookReplayInput {
  orgId: string;
  replayId: string;
  /** Pause between two batches, ms (WEBHOOK_REPLAY_INTERVAL, passed in by the API: workflows read no environment). */
  intervalMs: number;
  /** First step of this run (set by continue-as-new; 0 at the start). */
  firstStep?: number;
}

/** Steps per run before continuing as new, keeping each run's event history short (Temporal's history limits). */
const STEPS_PER_RUN = 500;

/** Progress of a replay (query `webhookReplayProgress`; the API reads the same figures from Postgres). */
export type WebhookReplayProgress = Pick<WebhookReplay, 'status' | 'total' | 'processed' | 'queued' | 'skipped'> & { steps: number };

const { replayWebhookEvents } = proxyActivities<WebhookActivities>({
  startToCloseTimeout: '1 minute',
  retry: RETRY.quick,
});

/** Queues the window's events to the endpoint, one paced batch at a time. @returns the final progress */
export async function webhookReplay(input: WebhookReplayInput): Promise<WebhookReplayProgress> {
  const progress: WebhookReplayProgress = { status: 'running', total: 0, processed: 0, queued: 0, skipped: 0, steps: 0 };
  setHandler(webhookReplayProgressQuery, () => progress);
  const first = input.firstStep ?? 0;
  for (let step = first; ; step++) {
    if (step - first >= STEPS_PER_RUN) return continueAsNew<typeof webhookReplay>({ ...input, firstStep: step });
    const r = await replayWebhookEvents({ orgId: input.orgId, replayId: input.replayId, step });
    Object.assign(progress, { status: r.status, total: r.total, processed: r.processed, queued: r.queued, skipped: r.skipped, steps: step + 1 });
    if (r.status !== 'running') return progress;
    if (input.intervalMs > 0) await sleep(input.intervalMs);
  }
}
