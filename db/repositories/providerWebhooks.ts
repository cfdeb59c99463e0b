/**
 * Real providers' webhook bookkeeping (docs/going-live.md): event ids seen once per provider, and the
 * state of outbound calls placed at a real provider as their status webhooks report it.
 */
import type { Db } from '../index';

/**
 * Records a webhook event id. @returns true when first seen now, false for a re-delivery or a replay
 * (the caller changes nothing then).
 */
export async function claimWebhookEvent(db: Db, provider: string, eventId: string, eventType: string): Promise<boolean> {
  const rows = await db('provider_webhook_events').insert({ provider, event_id: eventId, event_type: eventType }).onConflict(['provider', 'event_id']).ignore().returning('event_id');
  return rows.length > 0;
}

/** Forgets an event id whose processing failed, so the provider's retry is processed (not deduplicated). */
export async function releaseWebhookEvent(db: Db, provider: string, eventId: string): Promise<void> {
  await db('provider_webhook_events').where({ provider, event_id: eventId }).delete();
}

/** One call placed at a real provider. `outcome` is set once the call has ended. */
export interface ProviderCallRecord {
  provider: string;
  providerCallId: string;
  orgId: string;
  reference: string;
  from: string;
  to: string;
  status: string;
  answeredBy: string | null;
  /** Telnyx `call.machine.greeting.ended` result (`beep_detected`, `ended`, `not_sure`), or null before it (docs/voice.md "Voicemail"). */
  greetingEnded: string | null;
  /** Whether Telnyx reported the end of a `speak` command on the call (`call.speak.ended`). */
  speakEnded: boolean;
  outcome: string | null;
  durationSeconds: number;
  createdAt: Date;
}

function toCall(r: any): ProviderCallRecord {
  return {
    provider: r.provider,
    providerCallId: r.provider_call_id,
    orgId: r.org_id,
    reference: r.reference,
    from: r.from_e164,
    to: r.to_e164,
    status: r.status,
    answeredBy: r.answered_by,
    greetingEnded: r.greeting_ended ?? null,
    speakEnded: !!r.speak_ended_at,
    outcome: r.outcome,
    durationSeconds: r.duration_seconds,
    createdAt: r.created_at,
  };
}

/** Records a call the provider accepted (idempotent by provider call id). */
export async function recordProviderCall(db: Db, orgId: string, c: { provider: string; providerCallId: string; reference: string; from: string; to: string }): Promise<void> {
  await db('provider_calls')
    .insert({ org_id: orgId, provider: c.provider, provider_call_id: c.providerCallId, reference: c.reference, from_e164: c.from, to_e164: c.to })
    .onConflict(['provider', 'provider_call_id'])
    .ignore();
}

/**
 * Applies a status webhook to a call: `status`, the answering-machine verdict, the end of a machine's
 * greeting and of a spoken message (docs/voice.md "Voicemail"), and once ended its
 * outcome and duration (seconds). An ended call never changes again.
 * @returns the call, or undefined when no call has this provider id
 */
export async function updateProviderCall(
  db: Db,
  provider: string,
  providerCallId: string,
  change: { status?: string; answeredBy?: string | null; greetingEnded?: string; speakEnded?: true; outcome?: string; durationSeconds?: number },
): Promise<ProviderCallRecord | undefined> {
  const set: Record<string, unknown> = { updated_at: db.fn.now() };
  if (change.greetingEnded !== undefined) set.greeting_ended = change.greetingEnded;
  if (change.speakEnded) set.speak_ended_at = db.fn.now();
  if (change.status !== undefined) set.status = change.status;
  if (change.answeredBy !== undefined) set.answered_by = change.answeredBy;
  if (change.outcome !== undefined) set.outcome = change.outcome;
  if (change.durationSeconds !== undefined) set.duration_seconds = change.durationSeconds;
  const rows = await db('provider_calls').where({ provider, provider_call_id: providerCallId }).whereNull('outcome').update(set).returning('*');
  if (rows[0]) return toCall(rows[0]);
  const r = await db('provider_calls').where({ provider, provider_call_id: providerCallId }).first();
  return r ? toCall(r) : undefined;
}

/** A call of the organization by provider id. */
export async function getProviderCall(db: Db, orgId: string, provider: string, providerCallId: string): Promise<ProviderCallRecord | undefined> {
  const r = await db('provider_calls').where({ org_id: orgId, provider, provider_call_id: providerCallId }).first();
  return r ? toCall(r) : undefined;
}

/** The first call placed with this client reference. */
export async function findProviderCallByReference(db: Db, orgId: string, provider: string, reference: string): Promise<ProviderCallRecord | undefined> {
  const r = await db('provider_calls').where({ org_id: orgId, provider, reference }).orderBy('created_at').first();
  return r ? toCall(r) : undefined;
}

/**
 * The provider message id of an outbound text as its stored status webhooks know it (webhooks echo our
 * message id as `reference`): the look-up of a provider without a list by client reference.
 */
export async function providerMessageIdByReference(db: Db, orgId: string, provider: string, reference: string): Promise<string | undefined> {
  const r = await db('sms_provider_events').where({ org_id: orgId, provider, object_type: 'message' }).whereRaw(`payload->>'reference' = ?`, [reference]).first('external_id');
  return r?.external_id;
}
