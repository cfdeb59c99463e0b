/**
 * Webhook delivery activities (docs/api-notes.md "Webhooks and audit logs"; DESIGN.md "activities/"): one signed HTTP POST per attempt
 * through the SSRF guard, with every attempt recorded (time, status, duration, first 1 KB of the
 * response). The workflow (workflows/webhookDelivery.ts) owns the retry schedule; these functions
 * are idempotent per (delivery, run, attempt) and usable without Temporal (tests, benchmarks).
 */
import { Context } from '@temporalio/activity';
import { Agent, request, type Dispatcher } from 'undici';
import { assertHostLiteralAllowed, HostUnresolvableError, SsrfRefusedError, type AllowList } from '../domain/net/guard';
import { guardedConnector } from '../providers/http';
import type { ActivityDeps } from './index';
import { webhookDeliveries } from '../metrics';
import { abandonDelivery, loadDeliveryContext, recordAttempt, type EndpointDisabled } from '../db/repositories/webhookDeliveries';
import { releaseAttemptSlot, takeAttemptSlot } from '../db/repositories/webhookAttemptSlots';
import { replayStep } from '../db/repositories/webhookEvents';
import { insertAuditLogs } from '../db/repositories/auditLogs';
import { emitEvent } from '../events/emit';
import type { Knex } from 'knex';
import type { WebhookReplay } from '../schemas/types/webhooks';
import { openSecret, signatureHeaders } from '../domain/webhooks/signing';
import { loadWebhookSettings, type WebhookSettings } from '../domain/webhooks/settings';
import { webhookUrlProblem } from '../domain/webhooks/urlPolicy';
import type { WebhookEventEnvelope, WebhookEventType } from '../schemas/types/events';
import { workflowIds } from '../temporal.config';

/** The running activity's cancellation signal (Temporal `Context.cancellationSignal`); undefined outside an activity. */
function activityCancellation(): AbortSignal | undefined {
  try {
    return Context.current().cancellationSignal;
  } catch {
    return undefined;
  }
}

/** Bytes of the response body kept on an attempt. */
export const RESPONSE_EXCERPT_BYTES = 1024;
/** Bytes of a response read (and discarded) before the connection is dropped instead of reused. */
const DRAIN_LIMIT_BYTES = 64 * 1024;

/** What one POST produced. `statusCode` null: no response (timeout, network error, refusal). */
export interface WebhookPostResult {
  statusCode: number | null;
  durationMs: number;
  /** First 1 KB of the response body as UTF-8 (NUL characters removed). */
  responseBody: string | null;
  error: string | null;
  /** `dns`: the host name did not resolve (ENOTFOUND, EAI_AGAIN…); `timeout`: connect or response timeout. */
  errorCode: 'timeout' | 'dns' | 'network' | 'ssrf_refused' | null;
}

/** Signs and POSTs webhook bodies through the SSRF guard. */
export interface WebhookSender {
  /**
   * POSTs `body` (JSON text) to `url` with `headers`. Never throws for HTTP or network failures:
   * they come back as a result. Redirects are not followed (a 3xx is a failed attempt).
   * @param cancel the activity's cancellation signal: once it aborts, the request is dropped and the abort is
   *   rethrown (a stopping worker's attempt is retried, not recorded as a timeout)
   */
  post(url: string, headers: Record<string, string>, body: string, cancel?: AbortSignal): Promise<WebhookPostResult>;
  close(): Promise<void>;
}

function findSsrf(err: unknown): SsrfRefusedError | undefined {
  for (let e = err as { cause?: unknown } | undefined, i = 0; e && i < 5; e = e.cause as never, i++) {
    if (e instanceof SsrfRefusedError) return e;
  }
  return undefined;
}

/** Resolver codes of a host name that did not resolve, or whose resolver did not answer (getaddrinfo, c-ares). */
const DNS_CODES = new Set(['ENOTFOUND', 'EAI_AGAIN', 'EAI_NONAME', 'EAI_NODATA', 'ENODATA', 'EAI_FAIL', 'ESERVFAIL', 'ETIMEOUT']);

/**
 * What a failed POST was, from the error undici threw (the error or one of its causes): an SSRF refusal,
 * a DNS failure, a connect timeout (undici `UND_ERR_CONNECT_TIMEOUT`), a response timeout, or another
 * network error. A DNS failure or connect timeout ends the attempt at once: it is retried on the schedule.
 */
export function classifyPostError(err: unknown, timeouts: { connectTimeoutMs: number; timeoutMs: number }): Pick<WebhookPostResult, 'error' | 'errorCode'> {
  const ssrf = findSsrf(err);
  if (ssrf) return { error: ssrf.message, errorCode: 'ssrf_refused' };
  const chain: Array<{ name?: string; code?: string; message?: string; hostname?: string; host?: string }> = [];
  for (let e = err as { cause?: unknown } | undefined, i = 0; e && i < 5; e = e.cause as never, i++) chain.push(e as never);
  const dns = chain.find((e) => e instanceof HostUnresolvableError || DNS_CODES.has(e?.code ?? ''));
  if (dns) {
    const host = dns.hostname ?? dns.host;
    return { error: `dns lookup failed: ${dns.code}${host ? ` ${host}` : ''}`, errorCode: 'dns' };
  }
  if (chain.some((e) => e?.code === 'UND_ERR_CONNECT_TIMEOUT')) return { error: `connect timeout after ${timeouts.connectTimeoutMs} ms`, errorCode: 'timeout' };
  const timeoutCodes = ['UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT', 'ETIMEDOUT'];
  if (chain.some((e) => e?.name === 'TimeoutError' || e?.name === 'AbortError' || timeoutCodes.includes(e?.code ?? ''))) {
    return { error: `timeout after ${timeouts.timeoutMs} ms`, errorCode: 'timeout' };
  }
  const [e, cause] = chain;
  const detail = cause?.code ?? e?.code ?? cause?.message ?? e?.message ?? String(err);
  return { error: `connection failed: ${detail}`, errorCode: 'network' };
}

/**
 * Creates a sender: an undici Agent whose connections go only to addresses the SSRF guard allows
 * (checked on DNS answers and again on the socket's peer), with a connect timeout (DNS, TCP and TLS;
 * `connectTimeoutMs`, default 5 s, at most `timeoutMs`) and a total timeout per attempt.
 * @param opts.connections connections kept per origin (default 128)
 */
export function createWebhookSender(
  settings: Pick<WebhookSettings, 'allowPrivate' | 'timeoutMs'> & Partial<Pick<WebhookSettings, 'connectTimeoutMs'>>,
  opts: { connections?: number; userAgent?: string } = {},
): WebhookSender {
  const timeoutMs = settings.timeoutMs;
  const connectTimeoutMs = Math.min(settings.connectTimeoutMs ?? 5000, timeoutMs);
  const agent: Dispatcher = new Agent({
    connect: guardedConnector(settings.allowPrivate, connectTimeoutMs),
    headersTimeout: timeoutMs,
    bodyTimeout: timeoutMs,
    connections: opts.connections ?? 128,
  });
  const userAgent = opts.userAgent ?? 'agent-control-plane-webhooks/1.0';

  async function post(url: string, headers: Record<string, string>, body: string, cancel?: AbortSignal): Promise<WebhookPostResult> {
    const started = process.hrtime.bigint();
    const elapsed = () => Math.round(Number(process.hrtime.bigint() - started) / 1e6);
    try {
      const target = new URL(url);
      assertHostLiteralAllowed(target.hostname, settings.allowPrivate);
      const res = await request(target, {
        dispatcher: agent,
        method: 'POST',
        headers: { 'content-type': 'application/json', 'user-agent': userAgent, ...headers },
        body,
        signal: cancel ? AbortSignal.any([AbortSignal.timeout(timeoutMs), cancel]) : AbortSignal.timeout(timeoutMs),
      });
      const kept: Buffer[] = [];
      let keptBytes = 0;
      let read = 0;
      for await (const chunk of res.body) {
        const buf = chunk as Buffer;
        read += buf.length;
        if (keptBytes < RESPONSE_EXCERPT_BYTES) {
          const part = buf.subarray(0, RESPONSE_EXCERPT_BYTES - keptBytes);
          kept.push(part);
          keptBytes += part.length;
        }
        if (read > DRAIN_LIMIT_BYTES) {
          res.body.destroy();
          break;
        }
      }
      const text = Buffer.concat(kept).toString('utf8').replace(/\u0000/g, '');
      return { statusCode: res.statusCode, durationMs: elapsed(), responseBody: text, error: null, errorCode: null };
    } catch (err) {
      if (cancel?.aborted) throw err;
      return { statusCode: null, durationMs: elapsed(), responseBody: null, ...classifyPostError(err, { connectTimeoutMs, timeoutMs }) };
    }
  }

  return { post, close: () => agent.close() };
}

/** The JSON body of a delivery (Standard Webhooks layout). */
export function deliveryBody(orgId: string, event: { id: string; type: string; data: Record<string, unknown>; createdAt: Date }): string {
  const envelope: WebhookEventEnvelope = {
    id: event.id,
    type: event.type as WebhookEventType,
    timestamp: new Date(event.createdAt).toISOString(),
    organizationId: orgId,
    data: event.data,
  };
  return JSON.stringify(envelope);
}

/** Input of one attempt. */
export interface WebhookAttemptInput {
  orgId: string;
  deliveryId: string;
  /** Run of the delivery this workflow serves; stale runs do nothing. */
  run: number;
  /** 1-based attempt number within the run. */
  attempt: number;
  /** Last attempt of the schedule: a failure finishes the delivery as `failed`. */
  final: boolean;
  /** Workflow time (ms since epoch) for the endpoint's failing period; default now. */
  clockMs?: number;
  /** Times this attempt was deferred already for want of a place (0 first): the next wait doubles with it. */
  deferrals?: number;
}

/**
 * What an attempt decided: `succeeded` (2xx), `retry` (try again on the schedule), `failed` (given
 * up: final attempt, 410, endpoint disabled or deleted, URL refused), `stale` (another run owns the
 * delivery, or it is finished), `deferred` (the endpoint or the organization has its limit of attempts
 * in flight: the same attempt again after `retryInMs`, nothing recorded).
 */
export interface WebhookAttemptResult {
  outcome: 'succeeded' | 'retry' | 'failed' | 'stale' | 'deferred';
  /** With `deferred`: how long to wait at most before trying the attempt again, ms (a freed place wakes it sooner). */
  retryInMs?: number;
  /** Workflow id of a deferred delivery the place this attempt freed can serve: the workflow signals it `webhookPlaceFree`. */
  wake?: string | null;
  statusCode: number | null;
  /** Set when this attempt disabled the endpoint. */
  endpointDisabled: 'gone' | 'failing' | null;
  error: string | null;
}

/**
 * Reports an endpoint its deliveries just disabled, in the transaction that disabled it: the
 * `webhook.endpoint.disabled` event (to the organization's other enabled endpoints subscribed to it: the
 * disabled one no longer matches) and an audit entry by the system (actor: the delivery that disabled it).
 */
export async function reportEndpointDisabled(trx: Knex.Transaction, orgId: string, d: EndpointDisabled): Promise<void> {
  const { event } = await emitEvent(trx, orgId, 'webhook.endpoint.disabled', {
    webhookId: d.endpointId,
    url: d.url,
    reason: d.reason,
    lastStatusCode: d.lastStatusCode,
    lastError: d.lastError,
    disabledAt: d.disabledAt.toISOString(),
  });
  await insertAuditLogs(trx, [
    {
      orgId,
      rec: {
        actorId: d.deliveryId,
        actorKind: 'system',
        operationId: 'disableWebhook',
        method: 'DISABLE',
        path: `/webhooks/${d.endpointId}`,
        resourceType: 'webhook',
        resourceId: d.endpointId,
        requestId: event.id,
        sourceIp: null,
        statusCode: d.reason === 'gone' ? 410 : 200,
      },
    },
  ]);
}

/**
 * How long an attempt deferred `deferrals` times already waits before trying again, ms: `baseMs`
 * doubled per deferral up to 60 × `baseMs`, with equal jitter (half fixed, half random), so deferred
 * attempts of a busy endpoint spread out instead of asking together.
 */
export function deferralDelayMs(baseMs: number, deferrals: number, random: () => number = Math.random): number {
  const ceiling = Math.min(baseMs * 2 ** Math.min(deferrals, 16), baseMs * 60);
  return Math.round(ceiling / 2 + random() * (ceiling / 2));
}

/** Input of one replay step (workflows/webhookReplay.ts). */
export interface WebhookReplayStepInput {
  orgId: string;
  replayId: string;
  /** The step the workflow is at (0, 1, …): a retried step that already committed changes nothing. */
  step: number;
}

/**
 * The webhook activities.
 * @param overrides settings that win over the environment (tests: allow-lists, timeouts)
 * @param sender an existing sender (benchmarks share one); default: one per factory
 */
export function createWebhookActivities(deps: ActivityDeps, overrides: Partial<WebhookSettings> = {}, sender?: WebhookSender) {
  const settings = loadWebhookSettings(overrides);
  const http = sender ?? createWebhookSender(settings);

  /**
   * One delivery attempt: loads the delivery, refuses URLs the policy forbids, signs with the
   * current secret (and the previous one during a rotation), POSTs, records the attempt and moves
   * the delivery and the endpoint forward (2xx success; 410 disables the endpoint; a failure extends
   * the endpoint's failing period and disables it once that exceeds the configured period).
   */
  async function attemptWebhookDelivery(input: WebhookAttemptInput): Promise<WebhookAttemptResult> {
    const { orgId, deliveryId, run } = input;
    const ctx = await loadDeliveryContext(deps.db, orgId, deliveryId);
    if (!ctx || ctx.run !== run || (ctx.status !== 'pending' && ctx.status !== 'retrying')) {
      return { outcome: 'stale', statusCode: null, endpointDisabled: null, error: null };
    }
    if (ctx.endpoint.deleted || !ctx.endpoint.enabled) {
      const why = ctx.endpoint.deleted ? 'endpoint deleted' : `endpoint disabled (${ctx.endpoint.disabledReason ?? 'manual'})`;
      await abandonDelivery(deps.db, orgId, deliveryId, run, why);
      return { outcome: 'failed', statusCode: null, endpointDisabled: null, error: why };
    }
    const base = {
      deliveryId,
      run,
      attempt: input.attempt,
      disableAfterFailingMs: settings.disableAfterFailingMs,
      clock: input.clockMs ? new Date(input.clockMs) : undefined,
      onDisabled: (trx: Knex.Transaction, d: EndpointDisabled) => reportEndpointDisabled(trx, orgId, d),
    };
    const problem = webhookUrlProblem(ctx.endpoint.url, settings);
    if (problem) {
      const error = `url refused: ${problem}`;
      const r = await recordAttempt(deps.db, orgId, {
        ...base,
        attemptedAt: new Date(),
        statusCode: null,
        durationMs: 0,
        responseBody: null,
        error,
        outcome: 'failed',
        nextStatus: 'failed',
        endpointEffect: 'failure',
      });
      return { outcome: r.applied ? 'failed' : 'stale', statusCode: null, endpointDisabled: r.endpointDisabled === 'failing' ? 'failing' : null, error };
    }

    // A place among the endpoint's and the organization's attempts in flight, or wait without holding a worker slot.
    const leaseMs = settings.connectTimeoutMs + settings.timeoutMs + 60_000;
    const limits = { perEndpoint: settings.maxInFlightPerEndpoint, perOrg: settings.maxInFlightPerOrg, leaseMs, waitMs: 60 * settings.deferralDelayMs + leaseMs };
    if (!(await takeAttemptSlot(deps.db, orgId, ctx.endpoint.id, deliveryId, limits))) {
      return { outcome: 'deferred', retryInMs: deferralDelayMs(settings.deferralDelayMs, input.deferrals ?? 0), statusCode: null, endpointDisabled: null, error: null };
    }
    const keys = [settings.secretKey, settings.previousSecretKey];
    const secrets = [openSecret(ctx.endpoint.secretSealed, keys)];
    if (ctx.endpoint.previousSecretSealed) secrets.push(openSecret(ctx.endpoint.previousSecretSealed, keys));
    const body = deliveryBody(orgId, ctx.event);
    const headers = signatureHeaders(secrets, ctx.event.id, Math.floor(Date.now() / 1000), body);
    const attemptedAt = new Date();
    let res: WebhookPostResult;
    let wake: string | null = null;
    try {
      res = await http.post(ctx.endpoint.url, headers, body, activityCancellation());
    } finally {
      // A place not given back (database down) frees itself when its lease ends; the POST is not repeated for it.
      const waiter = await releaseAttemptSlot(deps.db, orgId, deliveryId, settings.maxInFlightPerEndpoint).catch((err: unknown) => {
        deps.logger.warn({ err: String(err), deliveryId }, 'webhook attempt place not released; its lease ends it');
        return null;
      });
      wake = waiter ? workflowIds.webhookDelivery(waiter) : null;
    }

    const ok = res.statusCode !== null && res.statusCode >= 200 && res.statusCode < 300;
    const gone = res.statusCode === 410;
    const permanent = gone || res.errorCode === 'ssrf_refused';
    const error = ok ? null : res.error ?? `HTTP ${res.statusCode}`;
    const r = await recordAttempt(deps.db, orgId, {
      ...base,
      attemptedAt,
      statusCode: res.statusCode,
      durationMs: res.durationMs,
      responseBody: res.responseBody,
      error: res.error,
      outcome: ok ? 'succeeded' : 'failed',
      nextStatus: ok ? 'succeeded' : permanent || input.final ? 'failed' : 'retrying',
      endpointEffect: ok ? 'success' : gone ? 'gone' : 'failure',
    });
    if (!r.applied) return { outcome: 'stale', statusCode: res.statusCode, endpointDisabled: null, error, wake };
    const outcome = r.status === 'succeeded' ? 'succeeded' : r.status === 'failed' ? 'failed' : 'retry';
    return { outcome, statusCode: res.statusCode, endpointDisabled: r.endpointDisabled === 'manual' ? null : r.endpointDisabled, error, wake };
  }

  /** Gives up a run without another attempt (the workflow's last resort when attempts kept erroring). */
  async function abandonWebhookDelivery(input: { orgId: string; deliveryId: string; run: number; reason: string }): Promise<boolean> {
    return abandonDelivery(deps.db, input.orgId, input.deliveryId, input.run, input.reason);
  }

  /**
   * One step of a replay: queues the next WEBHOOK_REPLAY_BATCH events of its window as deliveries to
   * the endpoint (db/repositories/webhookEvents.ts `replayStep`). Idempotent per step.
   * @returns the replay's progress; `status` other than `running` ends the workflow
   * @throws Error when the replay does not exist (it cannot be deleted, so only a wrong id)
   */
  async function replayWebhookEvents(input: WebhookReplayStepInput): Promise<WebhookReplay & { step: number }> {
    const r = await replayStep(deps.db, input.orgId, input.replayId, input.step, settings.replayBatchSize);
    if (!r) throw new Error(`replay ${input.replayId} not found`);
    return r;
  }

  return {
    replayWebhookEvents,
    attemptWebhookDelivery: async (input: WebhookAttemptInput): Promise<WebhookAttemptResult> => {
      const result = await attemptWebhookDelivery(input);
      // A deferred attempt that was woken but ended before taking a place (stale, endpoint disabled, URL
      // refused) passes the wake on, so the freed place still serves a waiter.
      if (result.outcome !== 'deferred' && result.wake === undefined && (input.deferrals ?? 0) > 0) {
        const waiter = await releaseAttemptSlot(deps.db, input.orgId, input.deliveryId, settings.maxInFlightPerEndpoint);
        result.wake = waiter ? workflowIds.webhookDelivery(waiter) : null;
      }
      webhookDeliveries.inc({ outcome: result.outcome });
      return result;
    },
    abandonWebhookDelivery,
  };
}

/** The activity interface the workflow proxies. */
export type WebhookActivities = ReturnType<typeof createWebhookActivities>;
