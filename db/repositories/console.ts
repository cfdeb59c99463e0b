/**
 * The operator console's reads that no API operation serves in the shape a page needs (docs/operations.md "Operator
 * console"): the call behind a conversation (its recording), agent names, the 10DLC status timeline (the
 * `sms.registration.updated` events) and the organization's texts, newest first. Every function takes the
 * organization id.
 */
import type { Db } from '../index';
import { iso } from '../timestamps';

/** The call of a voice conversation: its id and recording, or undefined. */
export async function callOfConversation(db: Db, orgId: string, conversationId: string): Promise<{ id: string; recordingUrl: string | null; recordingSeconds: number | null } | undefined> {
  const r = await db('voice_calls').where({ org_id: orgId, conversation_id: conversationId }).orderBy('created_at', 'desc').first('id', 'recording_url', 'recording_seconds');
  return r ? { id: r.id, recordingUrl: r.recording_url ?? null, recordingSeconds: r.recording_seconds ?? null } : undefined;
}

/** Agent id → name, for the organization's agents (archived ones included). */
export async function agentNames(db: Db, orgId: string): Promise<Map<string, string>> {
  const rows = await db('agents').where({ org_id: orgId }).select('id', 'name').orderBy('name');
  return new Map(rows.map((r: { id: string; name: string }) => [r.id, r.name]));
}

/** One step of the 10DLC registration's status timeline. */
export interface RegistrationStep {
  at: string;
  status: string;
  detail: string | null;
}

/** The registration's status changes, oldest first (from its `sms.registration.updated` events). */
export async function registrationTimeline(db: Db, orgId: string, limit = 200): Promise<RegistrationStep[]> {
  const rows = await db('events').where({ org_id: orgId, type: 'sms.registration.updated' }).orderBy('created_at', 'asc').limit(limit).select('data', 'created_at');
  return rows.map((r: { data: Record<string, unknown>; created_at: Date }) => ({
    at: iso(r.created_at)!,
    status: String(r.data.status ?? 'updated'),
    detail: typeof r.data.lastError === 'string' ? r.data.lastError : typeof r.data.providerStatus === 'string' ? r.data.providerStatus : null,
  }));
}

/** A text as the console lists it. */
export interface TextRow {
  id: string;
  direction: 'inbound' | 'outbound';
  from: string;
  to: string;
  body: string;
  status: string;
  conversationId: string | null;
  createdAt: string;
}

/** The organization's texts, newest first; `before` continues after the last one shown (its `createdAt|id`). */
export async function listTexts(db: Db, orgId: string, limit: number, before?: { at: string; id: string }): Promise<TextRow[]> {
  const q = db('sms_messages').where({ org_id: orgId }).orderBy([{ column: 'created_at', order: 'desc' }, { column: 'id', order: 'desc' }]).limit(limit);
  if (before) q.andWhereRaw('(created_at, id) < (?::timestamptz, ?)', [before.at, before.id]);
  const rows = await q.select('id', 'direction', 'from_e164', 'to_e164', 'body', 'status', 'conversation_id', 'created_at');
  return rows.map((r: any) => ({ id: r.id, direction: r.direction, from: r.from_e164, to: r.to_e164, body: r.body, status: r.status, conversationId: r.conversation_id ?? null, createdAt: iso(r.created_at)! }));
}

/**
 * Latency percentiles (p50, p95, p99, ms) per stage of the receipts of conversations started in [from, to), over at
 * most the latest 20,000 turns (PostgreSQL `percentile_cont`).
 */
export async function latencyPercentiles(db: Db, orgId: string, from: string, to: string): Promise<{ stage: string; p50: number; p95: number; p99: number }[]> {
  const res = await db.raw(
    `WITH t AS (SELECT t.receipt FROM conversation_turns t JOIN conversations c ON c.id = t.conversation_id AND c.org_id = t.org_id
                 WHERE t.org_id = ? AND c.started_at >= ? AND c.started_at < ? AND NOT c.simulation ORDER BY c.started_at DESC LIMIT 20000)
     SELECT l->>'stage' AS stage,
            percentile_cont(0.5) WITHIN GROUP (ORDER BY (l->>'ms')::float8) AS p50,
            percentile_cont(0.95) WITHIN GROUP (ORDER BY (l->>'ms')::float8) AS p95,
            percentile_cont(0.99) WITHIN GROUP (ORDER BY (l->>'ms')::float8) AS p99
       FROM t, jsonb_array_elements(t.receipt->'latency') AS l
      WHERE l->>'detail' IS NULL
      GROUP BY 1 ORDER BY 1`,
    [orgId, from, to],
  );
  return res.rows.map((r: any) => ({ stage: r.stage, p50: Math.round(r.p50), p95: Math.round(r.p95), p99: Math.round(r.p99) }));
}

/** Conversations started in [from, to) per outcome (the call's, else the analysis's; `none` without either). */
export async function outcomeCounts(db: Db, orgId: string, from: string, to: string): Promise<{ outcome: string; n: number }[]> {
  const res = await db.raw(
    `SELECT coalesce(c.outcome, a.outcome, 'none') AS outcome, count(*)::int AS n
       FROM conversations c LEFT JOIN conversation_analyses a ON a.conversation_id = c.id AND a.org_id = c.org_id
      WHERE c.org_id = ? AND c.started_at >= ? AND c.started_at < ? AND NOT c.simulation
      GROUP BY 1 ORDER BY 2 DESC LIMIT 12`,
    [orgId, from, to],
  );
  return res.rows.map((r: any) => ({ outcome: r.outcome, n: r.n }));
}
