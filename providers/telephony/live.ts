/**
 * What the real carrier adapters (Telnyx, Twilio) share (docs/going-live.md): their settings read from
 * the environment, the URLs they give the provider for webhooks, waiting out a provider's rate limit with
 * its `Retry-After` (RFC 9110 §10.2.3), and waiting for an outbound call to end as its webhooks report it.
 */
import { Context } from '@temporalio/activity';
import type { AppConfig } from '../../config';
import type { Db } from '../../db';
import { getProviderCall, type ProviderCallRecord } from '../../db/repositories/providerWebhooks';
import { findVoiceCallByProviderId } from '../../db/repositories/voiceCalls';
import type { DialOutcome, DialResult } from './index';

/** An environment variable a real adapter cannot work without. @throws Error naming it when unset */
export function requiredEnv(name: string, forWhat: string): string {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set (required for ${forWhat})`);
  return v;
}

/**
 * Where a provider posts its webhooks: `PUBLIC_BASE_URL/api/v1/sms/provider-callbacks/{provider}`, with
 * optional query parameters (our organization and client reference, which the provider echoes).
 */
export function providerCallbackUrl(config: AppConfig, provider: string, query: Record<string, string> = {}): string {
  const qs = new URLSearchParams(query).toString();
  return `${config.publicBaseUrl.replace(/\/+$/, '')}/api/v1/sms/provider-callbacks/${provider}${qs ? `?${qs}` : ''}`;
}

/**
 * Where an answered outbound call is pointed for the agent's conversation: `VOICE_WEBHOOK_URL` with
 * `{provider}` replaced, default `PUBLIC_BASE_URL/api/v1/voice/{provider}/inbound` (the voice webhook that
 * answers with the ConversationRelay instructions), with optional query parameters — a campaign call's
 * `org`, `agt` and `cmp`, which the webhook trusts only from carriers that sign the URL (Twilio).
 */
export function voiceWebhookUrl(config: AppConfig, provider: string, query: Record<string, string> = {}): string {
  const template = process.env.VOICE_WEBHOOK_URL || `${config.publicBaseUrl.replace(/\/+$/, '')}/api/v1/voice/{provider}/inbound`;
  const url = template.replace('{provider}', provider);
  const qs = new URLSearchParams(query).toString();
  return qs ? `${url}${url.includes('?') ? '&' : '?'}${qs}` : url;
}

/** Longest single wait a provider's `Retry-After` may impose inside an activity, ms. */
export const MAX_RETRY_AFTER_MS = 60_000;
/** Rate-limited answers waited out before the error is thrown (Temporal then retries the activity). */
export const MAX_RATE_LIMITED_TRIES = 5;

/**
 * Milliseconds a `Retry-After` value asks for (delay-seconds or an HTTP-date, RFC 9110 §10.2.3); 1000
 * when absent or unreadable; never above MAX_RETRY_AFTER_MS.
 */
export function retryAfterMs(value: string | null | undefined, nowMs = Date.now()): number {
  if (!value) return 1000;
  const v = value.trim();
  const ms = /^\d+$/.test(v) ? Number(v) * 1000 : Date.parse(v) - nowMs;
  return Number.isFinite(ms) ? Math.min(Math.max(ms, 0), MAX_RETRY_AFTER_MS) : 1000;
}

/** Status and `Retry-After` of an SDK error: 429s are the only errors `withRateLimit` waits out. */
export type RateLimitProbe = (err: unknown) => { rateLimited: boolean; retryAfter: string | null };

/** Sleeps `ms`, heartbeating when inside an activity. */
async function pause(ms: number): Promise<void> {
  let ctx: Context | undefined;
  try {
    ctx = Context.current();
  } catch {
    ctx = undefined;
  }
  ctx?.heartbeat();
  await new Promise((r) => setTimeout(r, ms));
}

/**
 * Runs one provider request, waiting out a 429 answer for its `Retry-After` and asking again. A 429
 * means the provider refused the request without performing it, so asking again never repeats a write;
 * nothing else is retried here (a timeout or 5xx of a write is left to performOnce's look-up).
 * @throws the last error after MAX_RATE_LIMITED_TRIES rate-limited answers, or any other error at once
 */
export async function withRateLimit<T>(probe: RateLimitProbe, fn: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await fn();
    } catch (err) {
      const p = probe(err);
      if (!p.rateLimited || attempt >= MAX_RATE_LIMITED_TRIES) throw err;
      await pause(retryAfterMs(p.retryAfter));
    }
  }
}

/**
 * The message a call left on a machine (docs/voice.md "Voicemail"): stored with the call by the voice webhook
 * (Twilio) or the adapter (Telnyx) when it was spoken; null when none was.
 */
export async function voicemailLeft(db: Db, orgId: string, provider: string, providerCallId: string): Promise<string | null> {
  const call = await findVoiceCallByProviderId(db, provider, providerCallId);
  return call && call.orgId === orgId ? call.voicemailMessage : null;
}

/** How often a dial reads its call's state while waiting for the end, ms. */
export const CALL_POLL_MS = 250;

/**
 * Waits until the status webhooks have ended the call (`provider_calls.outcome` set), heartbeating.
 * @param timeoutMs how long to wait at most (the dial activity's own timeout is 2 hours)
 * @param onProgress called with the call's state on every read before it has ended (a carrier whose
 *   answered call must be handed to the agent by a command: Telnyx Call Control)
 * @throws Error when the call has not ended in time (the activity is retried; its look-up finds the call)
 */
export async function waitForCallEnd(
  db: Db,
  orgId: string,
  provider: string,
  providerCallId: string,
  timeoutMs = 2 * 3600_000,
  onProgress?: (call: ProviderCallRecord) => Promise<void>,
): Promise<DialResult> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const c = await getProviderCall(db, orgId, provider, providerCallId);
    if (c && !c.outcome && onProgress) await onProgress(c);
    if (c?.outcome) return { providerCallId, outcome: c.outcome as DialOutcome, durationSeconds: c.durationSeconds, dialedNow: true, voicemailMessage: await voicemailLeft(db, orgId, provider, providerCallId) };
    if (Date.now() > end) throw new Error(`${provider} call ${providerCallId} has not ended after ${Math.round(timeoutMs / 1000)} s`);
    await pause(CALL_POLL_MS);
  }
}

/**
 * The outcome of an ended call from the provider's final status and answering-machine verdict
 * (Twilio `CallStatus`/`AnsweredBy`; Telnyx `hangup_cause` and `call.machine.detection.ended` result).
 */
export function endedCallOutcome(status: string, answeredBy: string | null): DialOutcome {
  const s = status.toLowerCase();
  if (s === 'busy' || s === 'user_busy') return 'busy';
  if (s === 'no-answer' || s === 'no_answer' || s === 'timeout' || s === 'originator_cancel' || s === 'canceled') return 'no_answer';
  if (s === 'failed' || s === 'call_rejected' || s === 'not_found' || s === 'unallocated_number' || s === 'normal_temporary_failure') return 'failed';
  if (answeredBy && /^machine|^fax|^machine_/.test(answeredBy.toLowerCase())) return 'voicemail';
  return 'answered';
}
