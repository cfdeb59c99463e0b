/**
 * The window of a webhook replay (docs/api-notes.md "Replaying missed events"): which past events
 * `POST /webhooks/{id}/replay` may resend. Plain rules, shared by the API and its tests.
 */
import type { FieldError } from '../errors';

/** A checked window: [since, until). */
export interface ReplayWindow {
  since: Date;
  until: Date;
}

/**
 * Checks `since`/`until` (RFC 3339 date-times, already schema-checked) against the event retention.
 * `until` defaults to `now` and is capped at it (later events reach the endpoint as they happen).
 * @param retentionMs how far back events are kept for replay (WEBHOOK_EVENT_RETENTION)
 * @returns the window, or the field errors: `since` before the retention or not before `until`
 */
export function replayWindow(body: { since: string; until?: string }, now: Date, retentionMs: number): { window?: ReplayWindow; errors: FieldError[] } {
  const since = new Date(body.since);
  const until = body.until === undefined ? now : new Date(Math.min(new Date(body.until).getTime(), now.getTime()));
  const earliest = new Date(now.getTime() - retentionMs);
  if (since.getTime() < earliest.getTime()) {
    return { errors: [{ field: 'since', message: `is before the event retention: events are kept for replay since ${earliest.toISOString()}` }] };
  }
  if (since.getTime() >= until.getTime()) {
    return { errors: [{ field: 'since', message: `must be before until (${until.toISOString()})` }] };
  }
  return { window: { since, until }, errors: [] };
}
