/**
 * Webhook endpoints (spec "Events" → Webhooks; docs/api-notes.md "Webhooks and audit logs"). Endpoints receive Standard Webhooks signed
 * deliveries of the event catalog; the signing secret is shown once, at creation and on rotation.
 * Deliveries are queued in the transactional outbox and started by the dispatcher in the worker, so
 * these handlers never wait on Temporal and never answer 503: a queued delivery goes out as soon as
 * a worker runs.
 */
import type { Handler } from '../context';
import { ApiError, notFound, temporalUnavailable, validationError } from '../../domain/errors';
import { mergeFieldErrors, schemaErrors } from '../../domain/validation';
import { listHandler, orgOf, pageParams, paged, requireTemporal } from '../http';
import { createEndpoint, deleteEndpoint, getEndpoint, listEndpoints, rotateEndpointSecret, updateEndpoint } from '../../db/repositories/webhookEndpoints';
import { getDelivery, listDeliveries, retryDelivery } from '../../db/repositories/webhookDeliveries';
import { createReplay, getReplay, stopReplay } from '../../db/repositories/webhookEvents';
import { startWorkflow, workflowIds } from '../../temporal.config';
import { replayWindow } from '../../domain/webhooks/replay';
import { emitEvent } from '../../events/emit';
import { setAuditResource } from '../middleware/audit';
import { generateSecret, sealSecret, secretDisplayPrefix } from '../../domain/webhooks/signing';
import { loadWebhookSettings } from '../../domain/webhooks/settings';
import { webhookUrlProblem } from '../../domain/webhooks/urlPolicy';
import type {
  WebhookDeliveryStatus,
  WebhookEndpointCreate,
  WebhookEndpointUpdate,
  WebhookEndpointWithSecret,
  WebhookReplayCreate,
  WebhookSecretRotate,
  WebhookSecretRotation,
} from '../../schemas/types/webhooks';

const DELIVERY_STATUSES: WebhookDeliveryStatus[] = ['pending', 'retrying', 'succeeded', 'failed'];

function urlErrors(url: unknown): Array<{ field: string; message: string }> {
  if (typeof url !== 'string') return [];
  const problem = webhookUrlProblem(url, loadWebhookSettings());
  return problem ? [{ field: 'url', message: problem }] : [];
}

/** The endpoint named by the path, or 404 `webhook_not_found` (also for another organization's). */
async function endpointOr404(ctx: Parameters<Handler>[0], deps: Parameters<Handler>[1]) {
  const ep = await getEndpoint(deps.db, orgOf(ctx), ctx.params.id);
  if (!ep) throw notFound(`Webhook ${ctx.params.id}`, 'webhook_not_found');
  return ep;
}

/** GET /webhooks: the organization's endpoints, oldest first, cursor-paginated. */
export const listWebhooks: Handler = listHandler(listEndpoints);

/** POST /webhooks: creates an endpoint; 201 with the secret, shown only in this answer. @throws 400 naming `url` when refused */
export const createWebhook: Handler = async (ctx, { db }) => {
  const raw = ctx.request.body as unknown;
  const errors = mergeFieldErrors(schemaErrors('WebhookEndpointCreate', raw), urlErrors((raw as { url?: unknown } | undefined)?.url));
  if (errors.length) throw validationError(errors);
  const body = raw as WebhookEndpointCreate;
  const settings = loadWebhookSettings();
  const secret = generateSecret();
  const ep = await createEndpoint(db, orgOf(ctx), {
    url: body.url,
    description: body.description ?? null,
    eventTypes: body.eventTypes ?? [],
    enabled: body.enabled ?? true,
    secretSealed: sealSecret(secret, settings.secretKey),
    secretPrefix: secretDisplayPrefix(secret),
  });
  const data: WebhookEndpointWithSecret = { ...ep, secret };
  return { data, status: 201, message: 'Store the signing secret now: it is not shown again' };
};

/** GET /webhooks/{id}. */
export const getWebhook: Handler = async (ctx, deps) => ({ data: await endpointOr404(ctx, deps) });

/** PATCH /webhooks/{id}: url, description, eventTypes, enabled (false disables; true re-enables and clears the failing period). */
export const updateWebhook: Handler = async (ctx, { db }) => {
  const raw = ctx.request.body as unknown;
  const errors = mergeFieldErrors(schemaErrors('WebhookEndpointUpdate', raw), urlErrors((raw as { url?: unknown } | undefined)?.url));
  if (errors.length) throw validationError(errors);
  const ep = await updateEndpoint(db, orgOf(ctx), ctx.params.id, raw as WebhookEndpointUpdate);
  if (!ep) throw notFound(`Webhook ${ctx.params.id}`, 'webhook_not_found');
  return { data: ep };
};

/** DELETE /webhooks/{id}: removes the endpoint; deliveries still queued for it are given up. */
export const deleteWebhook: Handler = async (ctx, { db }) => {
  const ok = await deleteEndpoint(db, orgOf(ctx), ctx.params.id);
  if (!ok) throw notFound(`Webhook ${ctx.params.id}`, 'webhook_not_found');
  return { data: { id: ctx.params.id, deleted: true } };
};

/**
 * POST /webhooks/{id}/rotate-secret: a new secret, shown once. The previous one keeps signing for
 * `previousSecretTtlSeconds` (default 24 h), as a second `v1,` signature.
 */
export const rotateWebhookSecret: Handler = async (ctx, { db }) => {
  const raw = (ctx.request.body as unknown) ?? {};
  const errors = schemaErrors('WebhookSecretRotate', raw);
  if (errors.length) throw validationError(errors);
  const body = raw as WebhookSecretRotate;
  const settings = loadWebhookSettings();
  const secret = generateSecret();
  const r = await rotateEndpointSecret(db, orgOf(ctx), ctx.params.id, {
    secretSealed: sealSecret(secret, settings.secretKey),
    secretPrefix: secretDisplayPrefix(secret),
    previousTtlSeconds: body.previousSecretTtlSeconds ?? 86_400,
  });
  if (!r) throw notFound(`Webhook ${ctx.params.id}`, 'webhook_not_found');
  const data: WebhookSecretRotation = { id: ctx.params.id, secret, ...r };
  return { data, message: 'Store the new signing secret now: it is not shown again' };
};

/**
 * POST /webhooks/{id}/test: emits `webhook.test` to this endpoint only; 202 with the queued delivery.
 * @throws 409 `webhook_disabled` when the endpoint is disabled (enable it first)
 */
export const testWebhook: Handler = async (ctx, deps) => {
  const orgId = orgOf(ctx);
  const ep = await endpointOr404(ctx, deps);
  if (!ep.enabled) throw new ApiError(409, 'webhook_disabled', `Webhook ${ep.id} is disabled (${ep.disabledReason}); enable it with PATCH before testing`);
  const { deliveryIds } = await deps.db.transaction((trx) =>
    emitEvent(trx, orgId, 'webhook.test', { webhookId: ep.id, message: 'This is a test event from the Agent Control-Plane.' }, { onlyEndpointId: ep.id }),
  );
  const delivery = deliveryIds[0] ? await getDelivery(deps.db, orgId, deliveryIds[0]) : undefined;
  if (!delivery) throw new ApiError(409, 'webhook_disabled', `Webhook ${ep.id} was disabled meanwhile`);
  return { data: delivery, status: 202 };
};

/** GET /webhooks/{id}/deliveries: newest first, each with its attempts; `?status=` filters. */
export const listWebhookDeliveries: Handler = async (ctx, deps) => {
  const ep = await endpointOr404(ctx, deps);
  const page = pageParams(ctx);
  const status = typeof ctx.query.status === 'string' ? ctx.query.status : undefined;
  if (status !== undefined && !DELIVERY_STATUSES.includes(status as WebhookDeliveryStatus)) {
    throw validationError([{ field: 'status', message: `must be one of: ${DELIVERY_STATUSES.join(', ')}` }]);
  }
  return { data: await paged(() => listDeliveries(deps.db, orgOf(ctx), ep.id, { ...page, status: status as WebhookDeliveryStatus | undefined })) };
};

/**
 * POST /webhooks/{id}/deliveries/{deliveryId}/retry: starts a new run of a failed delivery (the full
 * retry schedule again); 202 with the delivery.
 * @throws 409 `delivery_not_failed` unless the delivery failed; 409 `webhook_disabled` when the endpoint is disabled
 */
export const retryWebhookDelivery: Handler = async (ctx, deps) => {
  const orgId = orgOf(ctx);
  const ep = await endpointOr404(ctx, deps);
  if (!ep.enabled) throw new ApiError(409, 'webhook_disabled', `Webhook ${ep.id} is disabled (${ep.disabledReason}); enable it with PATCH before retrying`);
  setAuditResource(ctx, 'webhook_delivery', ctx.params.deliveryId);
  const r = await retryDelivery(deps.db, orgId, ep.id, ctx.params.deliveryId);
  if (r.kind === 'not_found') throw notFound(`Delivery ${ctx.params.deliveryId}`, 'delivery_not_found');
  if (r.kind === 'not_failed') throw new ApiError(409, 'delivery_not_failed', `Only a failed delivery can be retried; this one is ${r.status}`);
  return { data: r.delivery, status: 202 };
};

/**
 * POST /webhooks/{id}/replay: resends the organization's events of [since, until) to this endpoint as new
 * deliveries, in paced batches (workflow `webhook-replay/{replayId}`); 202 with the replay. An event the
 * endpoint already has (delivered, or on its way) is skipped, so replaying a window twice sends nothing
 * twice; a failed delivery gets a new run (docs/api-notes.md "Replaying missed events").
 * Order of answers: 400 (body; `since` before the retention or not before `until`) → 404 → 409
 * `webhook_disabled` (enable it with PATCH first) → 503 (no Temporal; the replay is marked stopped).
 */
export const replayWebhook: Handler = async (ctx, deps) => {
  const orgId = orgOf(ctx);
  const raw = ctx.request.body as unknown;
  const shape = schemaErrors('WebhookReplayCreate', raw);
  if (shape.length) throw validationError(shape);
  const body = raw as WebhookReplayCreate;
  const settings = loadWebhookSettings();
  const { window, errors } = replayWindow(body, new Date(), settings.eventRetentionMs);
  if (!window) throw validationError(errors);
  const ep = await endpointOr404(ctx, deps);
  if (!ep.enabled) throw new ApiError(409, 'webhook_disabled', `Webhook ${ep.id} is disabled (${ep.disabledReason}); enable it with PATCH before replaying`);
  const temporal = requireTemporal(deps);
  const replay = await createReplay(deps.db, orgId, ep.id, { ...window, eventTypes: body.eventTypes ?? [] });
  if (!replay) throw notFound(`Webhook ${ep.id}`, 'webhook_not_found');
  setAuditResource(ctx, 'webhook_replay', replay.id);
  try {
    await startWorkflow(temporal, 'webhookReplay', {
      workflowId: workflowIds.webhookReplay(replay.id),
      args: [{ orgId, replayId: replay.id, intervalMs: settings.replayIntervalMs }],
      orgId,
      resourceId: ep.id,
    });
  } catch (err) {
    await stopReplay(deps.db, orgId, replay.id, 'workflow_not_started');
    ctx.state.log.error({ err, orgId, replayId: replay.id }, 'starting webhook-replay workflow failed');
    throw temporalUnavailable('The replay could not be started; request it again');
  }
  return { data: replay, status: 202, headers: { Location: `/api/v1/webhooks/${ep.id}/replays/${replay.id}` } };
};

/** GET /webhooks/{id}/replays/{replayId}: the replay with its progress. @throws 404 `replay_not_found` */
export const getWebhookReplay: Handler = async (ctx, deps) => {
  const ep = await endpointOr404(ctx, deps);
  const replay = await getReplay(deps.db, orgOf(ctx), ep.id, ctx.params.replayId);
  if (!replay) throw notFound(`Replay ${ctx.params.replayId}`, 'replay_not_found');
  return { data: replay };
};

/** Handlers of this area by operationId (api/routes/index.ts). */
export const handlers = {
  listWebhooks,
  createWebhook,
  getWebhook,
  updateWebhook,
  deleteWebhook,
  rotateWebhookSecret,
  testWebhook,
  listWebhookDeliveries,
  retryWebhookDelivery,
  replayWebhook,
  getWebhookReplay,
};

/** Schemas of this area's operations (merged into the route table). */
export const routeSchemas = {
  listWebhooks: { responseSchema: 'WebhookEndpointList' },
  createWebhook: { requestSchema: 'WebhookEndpointCreate', responseSchema: 'WebhookEndpointWithSecret', bodyChecks: (b: Record<string, any>) => urlErrors(b.url) },
  getWebhook: { responseSchema: 'WebhookEndpoint' },
  updateWebhook: { requestSchema: 'WebhookEndpointUpdate', responseSchema: 'WebhookEndpoint', bodyChecks: (b: Record<string, any>) => urlErrors(b.url) },
  rotateWebhookSecret: { requestSchema: 'WebhookSecretRotate', responseSchema: 'WebhookSecretRotation' },
  testWebhook: { responseSchema: 'WebhookDelivery' },
  listWebhookDeliveries: { responseSchema: 'WebhookDeliveryList' },
  retryWebhookDelivery: { responseSchema: 'WebhookDelivery' },
  replayWebhook: { requestSchema: 'WebhookReplayCreate', responseSchema: 'WebhookReplay' },
  getWebhookReplay: { responseSchema: 'WebhookReplay' },
};

