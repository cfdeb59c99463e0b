/**
 * Webhook endpoint, delivery and attempt wire types (spec "Events" → Webhooks; fields "not shown",
 * decided here). Secrets are Standard Webhooks secrets `whsec_<base64>` shown only at creation and
 * on rotation.
 */
import type { WebhookEventType } from './events';

/**
 * Request body of `POST /webhooks` (createWebhook).
 * @additionalProperties false
 */
export interface WebhookEndpointCreate {
  /**
   * Where deliveries are POSTed. https only; http only to hosts the operator lists in
   * WEBHOOK_ALLOW_HTTP_HOSTS (local development). Private and loopback addresses are refused.
   * @format uri
   * @maxLength 2048
   */
  url: string;
  /** @maxLength 500 */
  description?: string | null;
  /**
   * Event types delivered to this endpoint; omitted or empty means every type.
   * @uniqueItems true
   * @maxItems 50
   */
  eventTypes?: WebhookEventType[];
  /** Default true. */
  enabled?: boolean;
}

/**
 * Request body of `PATCH /webhooks/{id}` (updateWebhook). Every field is optional; enabling an
 * endpoint clears its disabled reason and its failing period.
 * @additionalProperties false
 */
export interface WebhookEndpointUpdate {
  /**
   * @format uri
   * @maxLength 2048
   */
  url?: string;
  /** @maxLength 500 */
  description?: string | null;
  /**
   * @uniqueItems true
   * @maxItems 50
   */
  eventTypes?: WebhookEventType[];
  enabled?: boolean;
}

/**
 * Request body of `POST /webhooks/{id}/rotate-secret` (rotateWebhookSecret); the body is optional.
 * @additionalProperties false
 */
export interface WebhookSecretRotate {
  /**
   * How long the previous secret keeps signing alongside the new one (a second `v1,` signature in
   * `webhook-signature`), so receivers can roll over. Default 86400 (24 h); 0 revokes it at once.
   * @minimum 0
   * @maximum 604800
   * @asType integer
   */
  previousSecretTtlSeconds?: number;
}

/** Why an endpoint is disabled: by a caller, by a 410 Gone answer, or after failing continuously. */
export type WebhookDisabledReason = 'manual' | 'gone' | 'failing';

/** A webhook endpoint as returned (never its secret, except in the creation/rotation answers). */
export interface WebhookEndpoint {
  /** `whk_…` */
  id: string;
  url: string;
  description: string | null;
  /** Empty means every event type. */
  eventTypes: WebhookEventType[];
  enabled: boolean;
  disabledReason: WebhookDisabledReason | null;
  /** @format date-time */
  disabledAt: string | null;
  /** Start of the current run of failed attempts; null while deliveries succeed. @format date-time */
  failingSince: string | null;
  /** First characters of the secret, to tell secrets apart (`whsec_AbCd…`). */
  secretPrefix: string;
  /** @format date-time */
  createdAt: string;
  /** @format date-time */
  updatedAt: string;
}

/** Answer of createWebhook: the endpoint plus its signing secret, shown this once. */
export interface WebhookEndpointWithSecret extends WebhookEndpoint {
  /** `whsec_` + base64 of 32 random bytes. Store it now: it is never returned again. */
  secret: string;
}

/** Answer of rotateWebhookSecret. */
export interface WebhookSecretRotation {
  id: string;
  /** The new secret, shown this once. */
  secret: string;
  secretPrefix: string;
  /** Until when the previous secret also signs deliveries; null when revoked at once. @format date-time */
  previousSecretExpiresAt: string | null;
}

/** A page of endpoints. */
export interface WebhookEndpointList {
  items: WebhookEndpoint[];
  nextCursor: string | null;
  hasMore: boolean;
}

/** Status of a delivery: waiting for its first attempt, between retries, delivered, or given up. */
export type WebhookDeliveryStatus = 'pending' | 'retrying' | 'succeeded' | 'failed';

/** One HTTP attempt of a delivery. */
export interface WebhookDeliveryAttempt {
  /** 1-based attempt number within its run (a manual retry starts a new run). */
  attempt: number;
  /** Run of the delivery: 1 for the automatic schedule, +1 per manual retry. */
  run: number;
  /** @format date-time */
  attemptedAt: string;
  /** HTTP status, or null when no response arrived (timeout, connection refused, refused by the SSRF guard). */
  statusCode: number | null;
  durationMs: number;
  /** First 1 KB of the response body (UTF-8, may be cut mid-character). */
  responseBody: string | null;
  /** Network or guard error, e.g. `timeout after 15000 ms`. */
  error: string | null;
  outcome: 'succeeded' | 'failed';
}

/** One delivery of one event to one endpoint, with its attempts (oldest first). */
export interface WebhookDelivery {
  /** `whd_…` */
  id: string;
  webhookId: string;
  /** `evt_…`; also the `webhook-id` header. */
  eventId: string;
  eventType: WebhookEventType;
  status: WebhookDeliveryStatus;
  attemptCount: number;
  run: number;
  lastStatusCode: number | null;
  /** Why the last attempt failed or why the delivery was given up. */
  lastError: string | null;
  /** @format date-time */
  createdAt: string;
  /** @format date-time */
  updatedAt: string;
  /** @format date-time */
  succeededAt: string | null;
  attempts: WebhookDeliveryAttempt[];
}

/** A page of deliveries, newest first. */
export interface WebhookDeliveryList {
  items: WebhookDelivery[];
  nextCursor: string | null;
  hasMore: boolean;
}

/**
 * Request body of `POST /webhooks/{id}/replay` (replayWebhook): resend the organization's past events of
 * a window to this endpoint, as new deliveries (docs/api-notes.md "Replaying missed events").
 * @additionalProperties false
 */
export interface WebhookReplayCreate {
  /**
   * Start of the window (inclusive): not before the event retention (WEBHOOK_EVENT_RETENTION) and not after `until`.
   * @format date-time
   */
  since: string;
  /**
   * End of the window (exclusive); default: the time of the request.
   * @format date-time
   */
  until?: string;
  /**
   * Only these event types (each must also be one the endpoint subscribes to); omitted or empty: every type it subscribes to.
   * @uniqueItems true
   * @maxItems 50
   */
  eventTypes?: WebhookEventType[];
}

/** Where a replay is: queuing deliveries, done, or stopped (the endpoint was disabled or deleted meanwhile). */
export type WebhookReplayStatus = 'running' | 'completed' | 'stopped';

/** A replay of past events to one endpoint (`webhook-replay/{replayId}`), with its progress. */
export interface WebhookReplay {
  /** `rpl_…` */
  id: string;
  webhookId: string;
  status: WebhookReplayStatus;
  /** @format date-time */
  since: string;
  /** @format date-time */
  until: string;
  /** Event types replayed; empty: every type the endpoint subscribes to. */
  eventTypes: WebhookEventType[];
  /** Events of the window, counted when the replay was created. */
  total: number;
  /** Events looked at so far. */
  processed: number;
  /** Events given to the endpoint as a delivery by this replay (a new one, or a new run of a failed one). */
  queued: number;
  /** Events skipped because the endpoint already has them (delivered, or on their way). */
  skipped: number;
  /** Why the replay stopped, when `status` is `stopped`. */
  error: string | null;
  /** @format date-time */
  createdAt: string;
  /** @format date-time */
  updatedAt: string;
  /** @format date-time */
  completedAt: string | null;
}
