/**
 * Webhook delivery, workflow id `webhook-delivery/{deliveryId}` (DESIGN.md "Durable processes";
 * docs/api-notes.md "Webhooks and audit logs"). Reads like the process: attempt → wait the next delay of the retry schedule → attempt …
 * until a 2xx, a permanent refusal (410 disables the endpoint), or the schedule runs out.
 *
 * Default schedule (WEBHOOK_RETRY_SCHEDULE, passed in by the dispatcher): immediately, 5 s, 5 min,
 * 30 min, 2 h, 5 h, 10 h, 10 h. Each attempt is one activity that records itself; the activity's own
 * Temporal retries only cover infrastructure errors (database down), never a receiver's failure.
 * An attempt that finds its endpoint or organization at its limit of attempts in flight is deferred:
 * the workflow waits (no worker slot held) until an attempt that freed a place signals it
 * `webhookPlaceFree`, or at most the delay the activity names, and tries the same attempt again; an
 * attempt that freed a place signals the waiter the activity names (docs/operations.md "Fair sharing").
 * A workflow serves one `run` of a delivery; a manual retry starts a new run under the same id.
 */
import { ActivityFailure, condition, getExternalWorkflowHandle, proxyActivities, setHandler, sleep } from '@temporalio/workflow';
import type { WebhookActivities, WebhookAttemptResult } from '../activities/webhooks';
import { RETRY } from './retryPolicies';
import { webhookDeliveryProgressQuery, webhookPlaceFreeSignal } from './definitions';

/** Input of the workflow. */
export interface WebhookDeliveryInput {
  orgId: string;
  deliveryId: string;
  /** Run of the delivery (1, then +1 per manual retry). */
  run: number;
  /** Delay before each attempt, ms; one attempt per entry. */
  retryScheduleMs: number[];
}

/** Result: the final outcome and how many attempts this run made. */
export interface WebhookDeliveryResult {
  outcome: 'succeeded' | 'failed' | 'stale';
  attempts: number;
  lastStatusCode: number | null;
}

/** Progress of the run (Temporal UI / tests). */
export interface WebhookDeliveryProgress {
  attempts: number;
  lastOutcome: WebhookAttemptResult['outcome'] | null;
  lastStatusCode: number | null;
  /** Delay being waited before the next attempt, ms; null while attempting or finished. */
  waitingMs: number | null;
  /** Times attempts of this run were deferred for want of a place among the attempts in flight. */
  deferrals: number;
}


const { attemptWebhookDelivery, abandonWebhookDelivery } = proxyActivities<WebhookActivities>({
  // 15 s HTTP timeout + database writes; a hung worker is detected and the attempt retried.
  startToCloseTimeout: '1 minute',
  retry: RETRY.webhookAttempt,
});

/** An attempt's result other than `deferred`. */
type Decided = WebhookAttemptResult & { outcome: Exclude<WebhookAttemptResult['outcome'], 'deferred'> };

/** Delivers one event to one endpoint on the retry schedule. */
export async function webhookDelivery(input: WebhookDeliveryInput): Promise<WebhookDeliveryResult> {
  const schedule = input.retryScheduleMs.length ? input.retryScheduleMs : [0];
  const progress: WebhookDeliveryProgress = { attempts: 0, lastOutcome: null, lastStatusCode: null, waitingMs: null, deferrals: 0 };
  setHandler(webhookDeliveryProgressQuery, () => progress);
  let placeFree = false;
  setHandler(webhookPlaceFreeSignal, () => void (placeFree = true));
  /** Wakes the deferred delivery the freed place can serve (one that finished meanwhile is fine). */
  const wake = async (workflowId: string | null | undefined) => {
    if (workflowId) await getExternalWorkflowHandle(workflowId).signal(webhookPlaceFreeSignal).catch(() => undefined);
  };

  for (let i = 0; i < schedule.length; i++) {
    if (schedule[i] > 0) {
      progress.waitingMs = schedule[i];
      await sleep(schedule[i]);
      progress.waitingMs = null;
    }
    const final = i === schedule.length - 1;
    let result: Decided;
    try {
      for (let deferrals = 0; ; deferrals++) {
        // A signal arriving while the attempt runs (after it was noted waiting) is kept for the wait below.
        placeFree = false;
        const r = await attemptWebhookDelivery({
          orgId: input.orgId,
          deliveryId: input.deliveryId,
          run: input.run,
          attempt: i + 1,
          final,
          clockMs: Date.now(), // workflow time: deterministic, and follows time skipping in tests
          deferrals,
        });
        if (r.outcome !== 'deferred') {
          result = r as Decided;
          break;
        }
        progress.deferrals++;
        progress.waitingMs = r.retryInMs ?? 1000;
        await condition(() => placeFree, progress.waitingMs);
        progress.waitingMs = null;
      }
    } catch (err) {
      if (!(err instanceof ActivityFailure)) throw err;
      // The attempt could not even be recorded (infrastructure down); count it and move on.
      result = { outcome: final ? 'failed' : 'retry', statusCode: null, endpointDisabled: null, error: err.message };
      if (final) {
        await abandonWebhookDelivery({ orgId: input.orgId, deliveryId: input.deliveryId, run: input.run, reason: `attempt errored: ${err.message}` });
      }
    }
    await wake(result.wake);
    progress.attempts = i + 1;
    progress.lastOutcome = result.outcome;
    progress.lastStatusCode = result.statusCode;
    if (result.outcome !== 'retry') {
      return { outcome: result.outcome, attempts: i + 1, lastStatusCode: result.statusCode };
    }
  }
  return { outcome: 'failed', attempts: schedule.length, lastStatusCode: progress.lastStatusCode };
}
