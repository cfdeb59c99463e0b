/**
 * Phone calls as the API shows them (docs/api-notes.md "Calls on demand"; the `voice_calls` rows of
 * every inbound, campaign and on-demand call) and the steps of a call placed by `POST /calls`: stored
 * `queued` before it is dialed, given its carrier call id when dialed or connected, and its dial's
 * outcome once. Every function takes the organization id first.
 */
import { newId } from '../ids';
import { iso } from '../timestamps';
import { keysetPage, type Page } from '../pagination';
import type { Conn } from './agents';
import type { Call } from '../../schemas/types/calls';

function jsonObject<T>(v: unknown): T {
  if (!v) return {} as T;
  return (typeof v === 'string' ? JSON.parse(v) : v) as T;
}

/** A `voice_calls` row as the Call resource (schemas/types/calls.ts): the one mapping of the row, which the placed-call and voice-call records (./voiceCalls.ts) are read through. */
export function toCall(r: any): Call {
  const recorded = r.recording_url != null || r.recording_seconds != null || r.recording_received_at != null;
  return {
    id: r.id,
    direction: r.direction,
    source: r.direction === 'inbound' ? 'inbound' : r.campaign_id ? 'campaign' : 'api',
    status: r.status,
    outcome: r.outcome ?? null,
    failureReason: r.failure_reason ?? null,
    from: r.from_e164,
    to: r.to_e164,
    agentId: r.agent_id ?? null,
    versionId: r.version_id ?? null,
    mode: r.mode === 'draft' ? 'draft' : 'published',
    campaignId: r.campaign_id ?? null,
    conversationId: r.conversation_id ?? null,
    durationSeconds: r.duration_seconds ?? null,
    provider: r.provider,
    providerCallId: r.provider_call_id ?? null,
    routing: r.routing ?? null,
    voicemailMessage: r.voicemail_message ?? null,
    attemptId: r.attempt_id ?? null,
    recording: recorded ? { durationSeconds: r.recording_seconds ?? null, transcript: r.recording_transcript ?? null, receivedAt: iso(r.recording_received_at) } : null,
    transfer: r.transferred_to ? { to: r.transferred_to, destinationId: r.transfer_destination_id ?? null } : null,
    variables: jsonObject(r.variables),
    metadata: jsonObject(r.metadata),
    createdAt: iso(r.created_at),
    endedAt: iso(r.ended_at),
  };
}

/** A call placed by `POST /calls`, before it is dialed. */
export interface NewPlacedCall {
  agentId: string;
  /** The published version pinned at placement; null in `draft` mode. */
  versionId: string | null;
  mode: 'published' | 'draft';
  /** The telephony provider expected to dial it (the dial stores the one that did). */
  provider: string;
  from: string;
  to: string;
  timeZone: string | null;
  variables: Record<string, string>;
  metadata: Record<string, string | number | boolean | null>;
  /** The traffic split `versionId` was picked from (domain/agents/traffic.ts); absent in `draft` mode. */
  trafficSplit?: NewCallRow['trafficSplit'];
}

/** What every new `voice_calls` row states: a call placed by `POST /calls` and one a carrier reports alike. */
export interface NewCallRow {
  agentId: string | null;
  versionId: string | null;
  provider: string;
  providerCallId: string | null;
  direction: 'inbound' | 'outbound';
  from: string;
  to: string;
  status: Call['status'];
  /** The traffic split `versionId` was picked from (domain/agents/traffic.ts); absent: pinned explicitly. */
  trafficSplit?: { splits: { versionId: string; percent: number }[]; stickiness: string } | null;
}

/** The columns of a new `voice_calls` row: a fresh `call_…` id, the organization, and `c` under the column names. */
export function newCallColumns(orgId: string, c: NewCallRow): Record<string, unknown> {
  return {
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
    traffic_split: c.trafficSplit ? JSON.stringify(c.trafficSplit) : null,
  };
}

/** Stores a placed call `queued` (outbound, no campaign, no carrier call id yet). @returns the call */
export async function insertPlacedCall(conn: Conn, orgId: string, c: NewPlacedCall): Promise<Call> {
  const [row] = await conn('voice_calls')
    .insert({
      ...newCallColumns(orgId, { ...c, providerCallId: null, direction: 'outbound', status: 'queued' }),
      mode: c.mode,
      time_zone: c.timeZone,
      variables: JSON.stringify(c.variables),
      metadata: JSON.stringify(c.metadata),
    })
    .returning('*');
  return toCall(row);
}

/**
 * The attempt a campaign call dialed: the dial's record (a `voice` conversation of mode `none`,
 * ./conversations.ts recordCallConversation) names the carrier's call id and the dial's key `{attemptId}:{n}`.
 */
const ATTEMPT_ID_SQL = `(SELECT split_part(d.metadata->>'dialKey', ':', 1) FROM conversations d
  WHERE d.org_id = voice_calls.org_id AND d.campaign_id = voice_calls.campaign_id AND d.mode = 'none'
    AND d.metadata->>'providerCallId' = voice_calls.provider_call_id LIMIT 1) AS attempt_id`;

/** A call of this organization, or undefined. */
export async function getCall(conn: Conn, orgId: string, id: string): Promise<Call | undefined> {
  const r = await conn('voice_calls').where({ org_id: orgId, id }).first('voice_calls.*', conn.raw(ATTEMPT_ID_SQL));
  return r ? toCall(r) : undefined;
}

/** Filters of `GET /calls`; every one optional. */
export interface CallFilter {
  direction?: 'inbound' | 'outbound';
  agentId?: string;
  status?: Call['status'];
  /** Calls created at or after this instant. */
  since?: Date;
  /** Calls created before this instant. */
  until?: Date;
}

/** The organization's calls, newest first, filtered. @throws InvalidCursorError */
export async function listCalls(conn: Conn, orgId: string, filter: CallFilter, page: { limit: number; cursor?: string }): Promise<Page<Call>> {
  const q = conn('voice_calls').where({ org_id: orgId });
  if (filter.direction) q.where({ direction: filter.direction });
  if (filter.agentId) q.where({ agent_id: filter.agentId });
  if (filter.status) q.where({ status: filter.status });
  if (filter.since) q.where('created_at', '>=', filter.since);
  if (filter.until) q.where('created_at', '<', filter.until);
  return keysetPage(q.select('voice_calls.*', conn.raw(ATTEMPT_ID_SQL)), { ...page, column: 'seq', direction: 'desc', map: toCall });
}

/** What dialing a placed call needs (a `voice_calls` row that `POST /calls` stored). */
export interface PlacedCall {
  id: string;
  orgId: string;
  agentId: string;
  versionId: string | null;
  mode: 'published' | 'draft';
  provider: string;
  providerCallId: string | null;
  from: string;
  to: string;
  timeZone: string | null;
  variables: Record<string, string>;
  metadata: Record<string, string | number | boolean | null>;
  status: Call['status'];
  outcome: string | null;
  createdAt: string;
}

/** A `voice_calls` row as a placed call: the Call resource's members a dial reads ({@link toCall}), with its organization and time zone. */
function toPlaced(r: any): PlacedCall {
  const { direction, source, failureReason, campaignId, conversationId, durationSeconds, routing, voicemailMessage, recording, transfer, endedAt, ...placed } = toCall(r);
  return { ...placed, orgId: r.org_id, agentId: r.agent_id, timeZone: r.time_zone ?? null };
}

/** A call of this organization placed by `POST /calls` (outbound, no campaign), or undefined. */
export async function getPlacedCall(conn: Conn, orgId: string, id: string): Promise<PlacedCall | undefined> {
  const r = await conn('voice_calls').where({ org_id: orgId, id, direction: 'outbound' }).whereNull('campaign_id').whereNotNull('agent_id').first();
  return r ? toPlaced(r) : undefined;
}

/**
 * A placed call was answered and is being connected to its agent: its carrier call id is stored (the
 * first one wins: a second, different id is not this call's) and it moves `queued`/`ringing` → `answered`.
 * @returns the call, or undefined when it is not a placed call of this organization, has ended, or is
 *   another carrier call's
 */
export async function connectPlacedCall(conn: Conn, orgId: string, id: string, carrier: { provider: string; providerCallId: string }): Promise<PlacedCall | undefined> {
  const [row] = await conn('voice_calls')
    .where({ org_id: orgId, id, direction: 'outbound' })
    .whereNull('campaign_id')
    .whereIn('status', ['queued', 'ringing', 'answered'])
    .where((w) => w.whereNull('provider_call_id').orWhere({ provider: carrier.provider, provider_call_id: carrier.providerCallId }))
    .update({ provider: carrier.provider, provider_call_id: carrier.providerCallId, status: 'answered' })
    .returning('*');
  return row ? toPlaced(row) : undefined;
}

/**
 * Stores how a placed call's dial ended (the first outcome recorded wins) and, when the call has none
 * yet, the carrier and call id that dialed it.
 */
export async function recordPlacedOutcome(conn: Conn, orgId: string, id: string, dial: { provider: string; providerCallId: string | null; outcome: string }): Promise<void> {
  await conn('voice_calls').where({ org_id: orgId, id }).whereNull('outcome').update({ outcome: dial.outcome });
  if (dial.providerCallId) {
    await conn('voice_calls').where({ org_id: orgId, id }).whereNull('provider_call_id').update({ provider: dial.provider, provider_call_id: dial.providerCallId });
  }
}
