/**
 * Phone calls (docs/voice.md; migration 20261124000400_voice_calls) and the one voice-only change
 * to a stored transcript: truncating the agent's interrupted line to what the caller heard. Every
 * function takes the organization id first.
 */
import { iso } from '../timestamps';
import type { Conn } from './agents';
import { newCallColumns, toCall, type NewCallRow } from './calls';

/** A call as stored. */
export interface VoiceCallRecord {
  id: string;
  orgId: string;
  agentId: string | null;
  versionId: string | null;
  conversationId: string | null;
  provider: string;
  /** The carrier's call id; null while a call placed by `POST /calls` is `queued` (not dialed yet). */
  providerCallId: string | null;
  direction: 'inbound' | 'outbound';
  from: string;
  to: string;
  /** `queued`: a call placed by `POST /calls`, not dialed yet (docs/api-notes.md "Calls on demand"). */
  status: 'queued' | 'ringing' | 'answered' | 'completed' | 'failed';
  failureReason: string | null;
  /** Seconds connected, once the carrier reported the end. */
  durationSeconds: number | null;
  campaignId: string | null;
  /** The message the call left on an answering machine (docs/voice.md "Voicemail"), or null. */
  voicemailMessage: string | null;
  /** How an inbound call was routed by the number's settings: `agent`, or after hours `voicemail`, `message`, `escalation`. */
  routing: string | null;
  /** The voicemail the caller left (the carrier's recording), or null. */
  recording: { url: string; seconds: number; transcript: string | null; receivedAt: string } | null;
  /** Where the call was transferred (a number or SIP URI) and the escalation destination, or null. */
  transfer: { to: string; destinationId: string | null } | null;
  createdAt: string;
  endedAt: string | null;
}

/** A `voice_calls` row as stored: the Call resource's members (./calls.ts `toCall`) with its organization and the recording's URL. */
function toRecord(r: any): VoiceCallRecord {
  const { source, outcome, mode, variables, metadata, recording, ...call } = toCall(r);
  return {
    ...call,
    orgId: r.org_id,
    recording: r.recording_url ? { url: r.recording_url, seconds: r.recording_seconds ?? 0, transcript: r.recording_transcript ?? null, receivedAt: iso(r.recording_received_at) } : null,
  };
}

/** What a new call a carrier reports is stored with (besides ./calls.ts NewCallRow: its carrier call id is known). */
export interface NewVoiceCall extends NewCallRow {
  providerCallId: string;
  failureReason?: string | null;
  campaignId?: string | null;
  /** The message this call leaves on an answering machine (docs/voice.md "Voicemail"). */
  voicemailMessage?: string | null;
  /** How an inbound call was routed (`agent`, `voicemail`, `message`, `escalation`). */
  routing?: string | null;
}

/**
 * Stores a call, or returns the one already stored for this (provider, provider call id) — a carrier
 * retrying its webhook gets the same call.
 */
export async function createVoiceCall(conn: Conn, orgId: string, c: NewVoiceCall): Promise<VoiceCallRecord> {
  const [row] = await conn('voice_calls')
    .insert({
      ...newCallColumns(orgId, c),
      failure_reason: c.failureReason ?? null,
      campaign_id: c.campaignId ?? null,
      voicemail_message: c.voicemailMessage ?? null,
      routing: c.routing ?? null,
      ended_at: c.status === 'failed' ? conn.fn.now() : null,
    })
    .onConflict(['provider', 'provider_call_id'])
    .ignore()
    .returning('*');
  if (row) return toRecord(row);
  const existing = await conn('voice_calls').where({ org_id: orgId, provider: c.provider, provider_call_id: c.providerCallId }).first();
  if (!existing) throw new Error(`call ${c.provider}/${c.providerCallId} belongs to another organization`);
  return toRecord(existing);
}

/** A call of this organization, or undefined. */
export async function getVoiceCall(conn: Conn, orgId: string, id: string): Promise<VoiceCallRecord | undefined> {
  const r = await conn('voice_calls').where({ org_id: orgId, id }).first();
  return r ? toRecord(r) : undefined;
}

/**
 * Links the conversation the relay opened for the call (first link wins); the conversation of a campaign call takes
 * the call's campaign (`GET /conversations?campaignId=` lists it).
 */
export async function linkCallConversation(conn: Conn, orgId: string, id: string, conversationId: string): Promise<void> {
  await conn('voice_calls').where({ org_id: orgId, id }).whereNull('conversation_id').update({ conversation_id: conversationId });
  await conn('conversations')
    .where({ org_id: orgId, id: conversationId })
    .whereNull('campaign_id')
    .update({ campaign_id: conn('voice_calls').select('campaign_id').where({ org_id: orgId, id, conversation_id: conversationId }) });
}

/**
 * Moves a call forward: `answered` only from `ringing`; `completed` (with its duration) from any state
 * but `completed`/`failed`. @returns the call after the change, or undefined when it does not exist
 */
export async function advanceVoiceCall(
  conn: Conn,
  orgId: string,
  id: string,
  change: { status: 'answered' } | { status: 'completed'; durationSeconds: number } | { status: 'failed'; reason: string },
): Promise<VoiceCallRecord | undefined> {
  const q = conn('voice_calls').where({ org_id: orgId, id });
  if (change.status === 'answered') await q.clone().where({ status: 'ringing' }).update({ status: 'answered' });
  else if (change.status === 'completed') {
    await q.clone().whereNotIn('status', ['completed', 'failed']).update({ status: 'completed', duration_seconds: change.durationSeconds, ended_at: conn.fn.now() });
  } else await q.clone().whereNotIn('status', ['completed', 'failed']).update({ status: 'failed', failure_reason: change.reason, ended_at: conn.fn.now() });
  return getVoiceCall(conn, orgId, id);
}

/**
 * Stores the voicemail a caller left on a call (the carrier's `<Record>` callback); a later callback with
 * the transcription only adds it.
 * @returns the call, and whether this stored the recording (false: stored before, or no such call)
 */
export async function recordCallRecording(conn: Conn, orgId: string, id: string, rec: { url?: string | null; seconds?: number | null; transcript?: string | null }): Promise<{ call: VoiceCallRecord | undefined; storedNow: boolean }> {
  let storedNow = false;
  if (rec.url) {
    const n = await conn('voice_calls')
      .where({ org_id: orgId, id })
      .whereNull('recording_url')
      .update({ recording_url: rec.url, recording_seconds: Math.max(0, Math.round(rec.seconds ?? 0)), recording_received_at: conn.fn.now(), ...(rec.transcript ? { recording_transcript: rec.transcript } : {}) });
    storedNow = n > 0;
  }
  if (!storedNow && rec.transcript) await conn('voice_calls').where({ org_id: orgId, id }).whereNull('recording_transcript').update({ recording_transcript: rec.transcript });
  return { call: await getVoiceCall(conn, orgId, id), storedNow };
}

/**
 * Claims a call's relay: the first upgrade of a reference to the call sets `relay_opened_at`; the call must
 * still be ringing or answered. @returns the call's carrier (`provider`), or null when the relay was opened before
 * or the call has ended
 */
export async function claimCallRelay(conn: Conn, orgId: string, id: string): Promise<{ provider: string } | null> {
  const rows: Array<{ provider: string }> = await conn('voice_calls').where({ org_id: orgId, id }).whereNull('relay_opened_at').whereIn('status', ['ringing', 'answered']).update({ relay_opened_at: conn.fn.now() }, ['provider']);
  return rows[0] ?? null;
}

/** Whether a call's relay was opened (a reference to it was used). */
export async function callRelayOpened(conn: Conn, orgId: string, id: string): Promise<boolean> {
  const r = await conn('voice_calls').where({ org_id: orgId, id }).first('relay_opened_at');
  return !!r?.relay_opened_at;
}

/** Records where a call was transferred (once: a repeated webhook keeps the first). */
export async function recordCallTransfer(conn: Conn, orgId: string, id: string, t: { to: string; destinationId: string | null }): Promise<boolean> {
  return (await conn('voice_calls').where({ org_id: orgId, id }).whereNull('transferred_to').update({ transferred_to: t.to, transfer_destination_id: t.destinationId })) > 0;
}

/**
 * Ends a call that has not ended: `completed` with its duration, or `failed` with the reason, in one
 * statement (the row lock of the UPDATE decides between concurrent enders).
 * @returns the call when this statement ended it; undefined when it had ended before (or does not exist)
 */
export async function endVoiceCall(
  conn: Conn,
  orgId: string,
  id: string,
  end: { status: 'completed'; durationSeconds: number } | { status: 'failed'; reason: string },
): Promise<VoiceCallRecord | undefined> {
  const change = end.status === 'completed' ? { status: 'completed', duration_seconds: end.durationSeconds } : { status: 'failed', failure_reason: end.reason };
  const [row] = await conn('voice_calls')
    .where({ org_id: orgId, id })
    .whereNotIn('status', ['completed', 'failed'])
    .update({ ...change, ended_at: conn.fn.now() })
    .returning('*');
  return row ? toRecord(row) : undefined;
}

/**
 * Rewrites the conversation's latest agent line (an assistant message with text and no tool calls) to
 * `heard`, the part the caller heard before interrupting (ConversationRelay `interrupt`
 * `utteranceUntilInterrupt`), in one statement.
 * @returns the message id changed, or undefined when the conversation has no such line
 */
export async function truncateLastAgentLine(conn: Conn, orgId: string, conversationId: string, heard: string): Promise<string | undefined> {
  const [row] = await conn('conversation_messages')
    .where({ org_id: orgId })
    .where(
      'id',
      conn('conversation_messages')
        .select('id')
        .where({ org_id: orgId, conversation_id: conversationId, role: 'assistant' })
        .whereNotNull('content')
        .whereNull('tool_calls')
        .orderBy('seq', 'desc')
        .limit(1),
    )
    .update({ content: heard })
    .returning('id');
  return row?.id;
}

/**
 * The call a carrier's callback names, with its organization (callbacks carry no credential of ours;
 * the carrier's signature was checked and its call id is unique per carrier).
 */
export async function findVoiceCallByProviderId(conn: Conn, provider: string, providerCallId: string): Promise<VoiceCallRecord | undefined> {
  const r = await conn('voice_calls').where({ provider, provider_call_id: providerCallId }).first();
  return r ? toRecord(r) : undefined;
}

/**
 * Links a campaign dial's record (the `voice` conversation of mode `none` that
 * db/repositories/conversations.ts recordCallConversation keeps per dial) to the conversation the
 * answered call held: its metadata gains `conversationId`.
 */
export async function linkDialConversation(conn: Conn, orgId: string, dialKey: string, conversationId: string): Promise<void> {
  await conn('conversations')
    .where({ org_id: orgId, mode: 'none' })
    .whereRaw(`metadata->>'dialKey' = ?`, [dialKey])
    .update({ metadata: conn.raw(`metadata || jsonb_build_object('conversationId', ?::text)`, [conversationId]) });
}
