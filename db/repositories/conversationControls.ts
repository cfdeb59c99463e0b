/**
 * Live control of conversations (docs/api-notes.md "Live control"; migration 20261129000600_conversation_control):
 * taking a chat, widget or SMS conversation over and handing it back, the controls queued for a call's relay
 * session, the messages a live stream follows and the list of conversations in progress. Every function takes the
 * organization id.
 */
import type { Knex } from 'knex';
import type { Db } from '../index';
import { newId } from '../ids';
import { iso } from '../timestamps';
import { rowMapper } from '../rows';
import type { Conn } from './agents';
import { toMessage, toRecord, type ConversationRecord } from './conversations';
import type { ConversationMessage } from '../../schemas/types/chat';

/** The change-feed entry (db/changeFeed.ts) raised when a control is queued: `conversation_controls:<conversationId>`. */
export const CONTROLS_FEED_TABLE = 'conversation_controls';

/**
 * Sets or clears who took an active conversation over, in the caller's transaction.
 * @param actor `mem_…` or a key id; null hands the conversation back to its agent
 * @returns the conversation after the change, or undefined when it is not active (or not the organization's)
 */
export async function setTakeover(conn: Conn, orgId: string, id: string, actor: string | null): Promise<ConversationRecord | undefined> {
  const [row] = await conn('conversations')
    .where({ org_id: orgId, id, status: 'active' })
    .update({ taken_over_by: actor, taken_over_at: actor ? conn.fn.now() : null })
    .returning('*');
  return row ? toRecord(row) : undefined;
}

/** A control queued for a call's relay session. */
export interface QueuedControl {
  /** `ctl_…` */
  id: string;
  conversationId: string;
  action: 'say' | 'add_message' | 'transfer' | 'end';
  content: string | null;
  /** The E.164 number or SIP URI of a transfer. */
  destination: string | null;
  actor: string;
  status: 'queued' | 'applied';
  createdAt: string;
}

function toControl(r: any): QueuedControl {
  return { id: r.id, conversationId: r.conversation_id, action: r.action, content: r.content ?? null, destination: r.destination ?? null, actor: r.actor, status: r.status, createdAt: iso(r.created_at)! };
}

/**
 * Queues a control and raises `conversation_controls:<conversationId>` on the change feed at commit, so the process
 * holding the call's socket claims it (services/voice/liveCalls.ts).
 */
export async function queueControl(db: Db, orgId: string, c: Omit<QueuedControl, 'id' | 'status' | 'createdAt'>): Promise<QueuedControl> {
  return db.transaction(async (trx) => {
    const [row] = await trx('conversation_controls')
      .insert({ id: newId('ctl'), org_id: orgId, conversation_id: c.conversationId, action: c.action, content: c.content, destination: c.destination, actor: c.actor })
      .returning('*');
    await trx.raw('SELECT pg_notify(?, ?)', ['acp_changes', `${CONTROLS_FEED_TABLE}:${c.conversationId}`]);
    return toControl(row);
  });
}

/** Claims the queued controls of a conversation, oldest first: each is returned to one caller only. */
export async function claimControls(db: Db, orgId: string, conversationId: string): Promise<QueuedControl[]> {
  const rows = await db.raw(
    `UPDATE conversation_controls SET status = 'applied', applied_at = now()
      WHERE id IN (SELECT id FROM conversation_controls WHERE org_id = ? AND conversation_id = ? AND status = 'queued' ORDER BY created_at, id FOR UPDATE SKIP LOCKED)
      RETURNING *`,
    [orgId, conversationId],
  );
  return (rows.rows as any[]).map(toControl).sort((a, b) => (a.createdAt < b.createdAt ? -1 : a.createdAt > b.createdAt ? 1 : a.id < b.id ? -1 : 1));
}

/** What a live stream reads on each poll: the conversation and the messages stored after `afterSeq`. */
export interface LiveSlice {
  conversation: ConversationRecord;
  messages: (ConversationMessage & { seq: number })[];
}

/**
 * The conversation and its messages after `afterSeq` (oldest first, at most `limit`), in one round trip.
 * @returns undefined when the conversation is not the organization's
 */
export async function liveSlice(conn: Conn, orgId: string, id: string, afterSeq: number, limit = 200): Promise<LiveSlice | undefined> {
  const res = await (conn as Knex).raw(
    `SELECT c.*, (SELECT coalesce(json_agg(x ORDER BY x.seq), '[]'::json)
                    FROM (SELECT * FROM conversation_messages m WHERE m.org_id = c.org_id AND m.conversation_id = c.id AND m.seq > ? ORDER BY m.seq LIMIT ?) x) AS fresh
       FROM conversations c WHERE c.org_id = ? AND c.id = ?`,
    [afterSeq, limit, orgId, id],
  );
  const r = res.rows[0];
  if (!r) return undefined;
  return { conversation: toRecord(r), messages: (r.fresh as any[]).map((m) => ({ ...toMessage(m), seq: m.seq })) };
}

/** A conversation in progress as the live list shows it. */
export interface LiveConversation {
  id: string;
  agentId: string;
  agentName: string | null;
  channel: ConversationRecord['channel'];
  counterpart: string | null;
  takenOverBy: string | null;
  messageCount: number;
  startedAt: string;
  lastActivityAt: string;
}

const toLiveConversation = rowMapper<LiveConversation>({
  id: 'value',
  agentId: 'value',
  agentName: 'nullable',
  channel: 'value',
  counterpart: 'nullable',
  takenOverBy: 'nullable',
  messageCount: 'value',
  startedAt: 'iso',
  lastActivityAt: (r) => iso(r.last_activity_at ?? r.started_at),
});

/** The organization's active conversations (simulations excepted), most recently active first. */
export async function liveConversations(db: Db, orgId: string, limit = 100): Promise<LiveConversation[]> {
  const rows = await db('conversations as c')
    .leftJoin('agents as a', (j) => j.on('a.id', 'c.agent_id').andOn('a.org_id', 'c.org_id'))
    .where({ 'c.org_id': orgId, 'c.status': 'active', 'c.simulation': false })
    .orderBy('c.started_at', 'desc')
    .limit(limit)
    .select('c.id', 'c.agent_id', 'a.name as agent_name', 'c.channel', 'c.counterpart', 'c.taken_over_by', 'c.message_count', 'c.started_at', 'c.last_activity_at');
  return rows.map(toLiveConversation);
}

