/**
 * The read an agent's answer to an inbound text starts with (docs/sms.md "Agents answer texts"): the sender's
 * consent record and the agent's open `sms` conversation with the sender, with the history its turn reads.
 * Reads of one organization asked while its previous read is in flight are answered together by the next
 * statement (db/groupCommit.ts): one round trip for many texts under load.
 */
import type { Knex } from 'knex';
import type { Db } from '../index';
import { runPrepared } from '../preparedQuery';
import { BATCH_PLANNED_AS_FEW, PerOrgGroupCommit, type GroupCommitStats } from '../groupCommit';
import { RECORD_COLUMNS, toMessage, toRecord, type ConversationRecord } from './conversations';
import { toContact } from './smsContacts';
import type { ConversationMessage } from '../../schemas/types/chat';
import type { SmsContact } from '../../schemas/types/sms';
import { LIVE_TRAFFIC_COLUMNS, LIVE_TRAFFIC_FROM, liveTrafficOf, type LiveTraffic } from './traffic';

/** The open conversation as the answer reads it: the record, its last activity (ISO 8601) and its recent messages. */
export type OpenSmsConversation = ConversationRecord & { lastActivityAt: string; recent: ConversationMessage[] };

/** What {@link findOpenSmsConversationAndContact} answers. */
export interface SenderState {
  /** undefined when the organization has no record of the number */
  contact: SmsContact | undefined;
  /** undefined when none is open */
  conversation: OpenSmsConversation | undefined;
  /**
   * When none is open, what starting one needs of the agent (db/repositories/traffic.ts `liveAgentTraffic`'s answer,
   * `read` undefined: no such agent, or archived); absent when one is open.
   */
  traffic?: { read: LiveTraffic | undefined };
}

interface SenderRead {
  agentId: string;
  counterpart: string;
  historyLimit: number;
}

// Per item (`k`): the contact, and the conversation with its history as the index range of (conversation_id, seq) the
// turn reads (db/repositories/conversations.ts `getConversationWithHistory`), the columns toRecord and toMessage read;
// when none is open, the agent's published version and split its start reads (traffic.ts `liveAgentTraffic`), so a
// text that starts a conversation costs no statement of its own before the start's.
const OPEN_SMS_WITH_CONSENT_SQL = `/* sms sender read */ SELECT bx.k, (SELECT row_to_json(sc) FROM sms_contacts sc WHERE sc.org_id = ? AND sc.e164 = bx.counterpart) AS sender_contact,
            ${RECORD_COLUMNS.map((col) => `c.${col}`).join(', ')}, c.last_activity_at, ag.*,
            (SELECT coalesce(json_agg(x ORDER BY x.seq), '[]'::json)
               FROM (SELECT m.id, m.seq, m.turn, m.role, m.content, m.tool_calls, m.tool_call_id, m.name, m.created_at
                       FROM conversation_messages m WHERE m.org_id = c.org_id AND m.conversation_id = c.id
                        AND m.seq >= greatest(c.message_count - bx.history, 0) ORDER BY m.seq DESC LIMIT bx.history) x) AS recent
       FROM jsonb_to_recordset(?::jsonb) AS bx(k int, agent_id text, counterpart text, history int)
       LEFT JOIN LATERAL (
         SELECT * FROM conversations c0
          WHERE c0.org_id = ? AND c0.agent_id = bx.agent_id AND c0.counterpart = bx.counterpart AND c0.channel = 'sms' AND c0.status = 'active'
            AND c0.mode = 'published' AND c0.simulation = false
          LIMIT 1) c ON true
       LEFT JOIN LATERAL (
         SELECT true AS agent_found, ${LIVE_TRAFFIC_COLUMNS}
           FROM ${LIVE_TRAFFIC_FROM}
          WHERE c.id IS NULL AND a.org_id = ? AND a.id = bx.agent_id AND a.archived_at IS NULL) ag ON true
      WHERE ${BATCH_PLANNED_AS_FEW}`;

const reads = new PerOrgGroupCommit<SenderRead, SenderState>(async (db: Db | Knex.Transaction, orgId, batch) => {
  const items = batch.map((b, k) => ({ k, agent_id: b.agentId, counterpart: b.counterpart, history: b.historyLimit }));
  const rows = (await runPrepared(db, OPEN_SMS_WITH_CONSENT_SQL, [orgId, JSON.stringify(items), orgId, orgId])).rows;
  const out: SenderState[] = batch.map(() => ({ contact: undefined, conversation: undefined }));
  for (const r of rows) {
    const contact = r.sender_contact ? toContact(r.sender_contact) : undefined;
    out[r.k] = {
      contact,
      conversation: r.id ? { ...toRecord(r), lastActivityAt: new Date(r.last_activity_at ?? r.started_at).toISOString(), recent: (r.recent as any[]).map(toMessage) } : undefined,
      ...(r.id ? {} : { traffic: { read: r.agent_found ? liveTrafficOf(r) : undefined } }),
    };
  }
  return out;
}, 200, { prepareOnConnect: true });

/** The read batches `db` ran so far (the benchmark's figures). */
export const senderReadStats = (db: Db): GroupCommitStats => reads.stats(db);

/**
 * The counterpart's SMS contact (consent and opt-out; db/repositories/smsContacts.ts) and the agent's open `sms`
 * conversation with them (as conversations.ts `findOpenSmsConversation` finds it) with its last `historyLimit`
 * messages (oldest first, as `getConversationWithHistory` reads them for a turn), in one round trip shared with the
 * organization's other reads of the moment (a prepared statement).
 */
export function findOpenSmsConversationAndContact(db: Db, orgId: string, agentId: string, counterpart: string, historyLimit: number): Promise<SenderState> {
  return reads.submit(db, orgId, { agentId, counterpart, historyLimit });
}
