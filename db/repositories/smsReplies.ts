/**
 * An agent's reply to an inbound text, answered in the process that received it (docs/sms.md "Agents answer
 * texts"), in two statements around the carrier's send — each atomic on its own, so the guarantees of the
 * step-by-step path hold (docs/operations.md "Provider calls happen once"):
 * 1. {@link queueReplyWithIntent}: the turn's reply recorded on the inbound text, the reply stored `queued` with
 *    its segments' usage entry and pending charge (folded into the wallet by the settle, ./walletSettle.ts, so
 *    replies of one organization never wait on its wallet row), `sms.message.updated`, and the send's provider
 *    intent — committed before the carrier is asked;
 * 2. {@link markReplySent}: the intent resolved with the carrier's answer, the reply moved `queued → sent` with
 *    `sms.message.updated`, and the inbound text's owed answer settled `answered`.
 * A process that dies between them leaves the text `pending` with a pending intent: the hand-over sweep's
 * `sms-reply/{id}` finds the reply and delivers it, asking the carrier's look-up before sending again.
 */
import type { Knex } from 'knex';
import type { Db } from '../index';
import { runPrepared } from '../preparedQuery';
import { newId } from '../ids';
import { eventCtes, EVENTS_NOTIFY_SELECT } from './events';
import { usageDeferredChargeCtes, usageRows, type UsageInput } from './usage';
import { toMessage } from './smsMessages';
import type { ProviderIntent } from './providerIntents';
import type { SmsMessage } from '../../schemas/types/sms';
import { smsMessages } from '../../metrics';

/** Rows of events a statement stores itself (checked against the catalog by the caller, events/sms.ts). */
type EventRows = readonly { type: string; data: Record<string, unknown> }[];

/** The reply to store: numbers in E.164, `at` the ISO 8601 instant it is stored as created. */
export interface ReplyToQueue {
  id: string;
  from: string;
  to: string;
  body: string;
  /** The inbound text answered (`reply_to`, unique per organization) and its conversation. */
  inboundId: string;
  conversationId: string;
  /** The turn's reply text, recorded on the inbound text (a retried answer sends it, not a second turn). */
  agentReply: string;
  at: string;
}

/**
 * Statement 1 (see the module comment).
 * @param usage the segments' charge (deduplicated by its key), recorded pending: the caller owes a settle
 *   (services/billing/settle.ts `settleSoon`), which emits `billing.wallet.low` when the charge crosses the threshold
 * @param intent the send's intent: provider and what is asked (no secrets); its reference is the reply's id
 * @param events `sms.message.updated` of the reply created (previousStatus null)
 * @returns the reply and its intent as stored
 * @throws a unique violation when the inbound text already has a reply (nothing is written)
 */
export async function queueReplyWithIntent(
  db: Db,
  orgId: string,
  r: ReplyToQueue,
  usage: UsageInput,
  intent: { provider: string; request: Record<string, unknown> },
  events: EventRows,
): Promise<{ reply: SmsMessage; intent: ProviderIntent }> {
  const charges = usageDeferredChargeCtes(orgId, usageRows([usage]), 'EXISTS (SELECT 1 FROM m)');
  const ev = eventCtes(orgId, events, { gate: 'EXISTS (SELECT 1 FROM m)' });
  const sql = `WITH inb AS (
       UPDATE sms_messages SET conversation_id = ?, agent_reply = ? WHERE org_id = ? AND id = ? AND direction = 'inbound' RETURNING id
     ),
     m AS (
       INSERT INTO sms_messages (id, org_id, direction, trigger, from_e164, to_e164, body, status, reply_to, conversation_id, created_at, updated_at)
       SELECT ?, ?, 'outbound', 'reply', ?, ?, ?, 'queued', inb.id, ?, ?::timestamptz, ?::timestamptz FROM inb
       RETURNING *
     ),
     pi AS (
       INSERT INTO provider_intents (id, org_id, kind, reference, subject_id, provider, request)
       SELECT ?, ?, 'sms_send', m.id, m.id, ?, ?::jsonb FROM m
       RETURNING *
     ),
     ${charges.sql},
     ${ev.sql}
     SELECT (SELECT row_to_json(m) FROM m) AS message, (SELECT row_to_json(pi) FROM pi) AS intent, ${EVENTS_NOTIFY_SELECT}`;
  const bindings: Knex.RawBinding[] = [
    r.conversationId, r.agentReply, orgId, r.inboundId,
    r.id, orgId, r.from, r.to, r.body, r.conversationId, r.at, r.at,
    newId('pin'), orgId, intent.provider, JSON.stringify(intent.request),
    ...charges.bindings,
    ...ev.bindings,
  ];
  const row = (await runPrepared(db, sql, bindings)).rows[0];
  if (!row.message || !row.intent) throw new Error(`inbound text ${r.inboundId} of ${orgId} not found`);
  const i = row.intent;
  return {
    reply: toMessage(row.message),
    intent: {
      id: i.id, orgId: i.org_id, kind: i.kind, reference: i.reference, subjectId: i.subject_id, provider: i.provider, status: i.status,
      request: i.request ?? {}, result: i.result ?? null, tries: i.tries, note: i.note ?? null,
      createdAt: new Date(i.created_at).toISOString(), updatedAt: new Date(i.updated_at).toISOString(),
    },
  };
}

/**
 * Statement 2 (see the module comment): moves the reply `queued → sent` (at `at`, ISO 8601) only from `queued`,
 * so `events` (its `sms.message.updated`, previousStatus `queued`) are stored only with that move.
 * @param result the carrier's answer, recorded on the intent
 * @returns true when the reply moved (false: a receipt or another attempt moved it first; the intent and the
 *   owed answer are recorded all the same)
 */
export async function markReplySent(
  db: Db,
  orgId: string,
  s: { replyId: string; inboundId: string; intentId: string; providerMessageId: string; result: unknown; at: string },
  events: EventRows,
): Promise<boolean> {
  const ev = eventCtes(orgId, events, { gate: 'EXISTS (SELECT 1 FROM m)' });
  const sql = `WITH pi AS (
       UPDATE provider_intents SET status = 'done', result = ?::jsonb, updated_at = now() WHERE org_id = ? AND id = ? RETURNING id
     ),
     prev AS (SELECT id, org_id, status FROM sms_messages WHERE id = ? AND org_id = ? FOR UPDATE),
     m AS (
       UPDATE sms_messages x SET status = 'sent', provider_message_id = ?, updated_at = ?::timestamptz
         FROM prev WHERE x.id = prev.id AND x.org_id = prev.org_id AND prev.status = 'queued'
       RETURNING x.id
     ),
     inb AS (
       UPDATE sms_messages SET answer_state = 'answered', answer_note = NULL
        WHERE org_id = ? AND id = ? AND direction = 'inbound' AND answer_state = 'pending' RETURNING id
     ),
     ${ev.sql}
     SELECT (SELECT count(*) FROM m) AS moved, (SELECT count(*) FROM pi) AS resolved, (SELECT count(*) FROM inb) AS settled, ${EVENTS_NOTIFY_SELECT}`;
  const bindings: Knex.RawBinding[] = [
    JSON.stringify(s.result ?? {}), orgId, s.intentId,
    s.replyId, orgId,
    s.providerMessageId, s.at,
    orgId, s.inboundId,
    ...ev.bindings,
  ];
  const row = (await runPrepared(db, sql, bindings)).rows[0];
  const moved = Number(row.moved) > 0;
  if (moved) smsMessages.inc({ status: 'sent' });
  return moved;
}
