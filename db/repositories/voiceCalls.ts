/**
 * Phone calls (README "Voice calls"; migration 20261124000400_voice_calls) and the one voice-only change
 * to a stored transcript: truncating the agent's interrupted line to what the caller heard. Every
 * function takes the organization id first.
 */
import { newId } from '../ids';
import { iso } from '../timestamps';
import type { Conn } from './agents';

/** A call as stored. */
export interface VoiceCallRecord {
  id: string;
  orgId: string;
  agentId: string | null;
  versionId: string | null;
  conversationId: string | null;
  provider: string;
  providerCallId: string;
  direction: 'inbound' | 'outbound';
  from: string;
  to: string;
  status: 'ringing' | 'answered' | 'completed' | 'failed';
  failureReason: string | null;
  /** Seconds connected, once the carrier reported the end. */
  durationSeconds: number | null;
  campaignId: string | null;
  /** The message the call left on an answering machine (README "Voicemail"), or null. */
  voicemailMessage: string | null;
  createdAt: string;
  endedAt: string | null;
}

function toRecord(r: any): VoiceCallRecord {
  return {
    id: r.id,
    orgId: r.org_id,
    agentId: r.agent_id ?? null,
    versionId: r.version_id ?? null,
    conversationId: r.conversation_id ?? null,
    provider: r.provider,
    providerCallId: r.provider_call_id,
    direction: r.direction,
    from: r.from_e164,
    to: r.to_e164,
    status: r.status,
    failureReason: r.failure_reason ?? null,
    durationSeconds: r.duration_seconds ?? null,
    campaignId: r.campaign_id ?? null,
    voicemailMessage: r.voicemail_message ?? null,
    createdAt: iso(r.created_at),
    endedAt: r.ended_at ? iso(r.ended_at) : null,
  };
}

/** What a new call is stored with. */
export interface NewVoiceCall {
  agentId: string | null;
  versionId: string | null;
  provider: string;
  providerCallId: string;
  direction: 'inbound' | 'outbound';
  from: string;
  to: string;
  status: VoiceCallRecord['status'];
  failureReason?: string | null;
  campaignId?: string | null;
  /** The message this call leaves on an answering machine (README "Voicemail"). */
  voicemailMessage?: string | null;
}

/**
 * Stores a call, or returns the one already stored for this (provider, provider call id) — a carrier
 * retrying its webhook gets the same call.
 */
export async function createVoiceCall(conn: Conn, orgId: string, c: NewVoiceCall): Promise<VoiceCallRecord> {
  const [row] = await conn('voice_calls')
    .insert({
      id: newId('call'),
      org_id: orgId,
      agent_id: c.agentId,
      version_id: c.versionId,
      provider: c.provider,
      provider_call_id: c.providerCallId,
      direction: c.direction,
      from_e164: c.from,
      to_e164: c.to,
      status: c.status,
      failure_reason: c.failureReason ?? null,
      campaign_id: c.campaignId ?? null,
      voicemail_message: c.voicemailMessage ?? null,
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

/** Links the conversation the relay opened for the call (first link wins). */
export async function linkCallConversation(conn: Conn, orgId: string, id: string, conversationId: string): Promise<void> {
  await conn('voice_calls').where({ org_id: orgId, id }).whereNull('conversation_id').update({ conversation_id: conversationId });
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
