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
 * Each statement starts with a comment naming it, as the benchmark's statement count shows it (bench/smsReplies.ts).
 */
import type { Knex } from 'knex';
import type { Db } from '../index';
import { runPrepared } from '../preparedQuery';
import { BATCH_PLANNED_AS_FEW, inOrganization, PerOrgGroupCommit, type GroupCommitStats } from '../groupCommit';
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

/** Statement 1's item: the reply, its usage, its send's intent and its events (see {@link queueReplyWithIntent}). */
interface QueueItem {
  r: ReplyToQueue;
  usage: UsageInput;
  intent: { provider: string; request: Record<string, unknown> };
  events: EventRows;
}

/**
 * Statement 1 (see the module comment). Replies of one organization queued while its previous statement 1 is in
 * flight are stored together by the next one (db/groupCommit.ts), each with the same guarantee; a batch that
 * fails (e.g. one item's unique violation) is written again item by item, so only the item at fault fails.
 * @param usage the segments' charge (deduplicated by its key), recorded pending: the caller owes a settle
 *   (services/billing/settle.ts `settleSoon`), which emits `billing.wallet.low` when the charge crosses the threshold
 * @param intent the send's intent: provider and what is asked (no secrets); its reference is the reply's id
 * @param events `sms.message.updated` of the reply created (previousStatus null)
 * @returns the reply and its intent as stored, once committed
 * @throws a unique violation when the inbound text already has a reply (nothing is written)
 */
export function queueReplyWithIntent(
  db: Db,
  orgId: string,
  r: ReplyToQueue,
  usage: UsageInput,
  intent: { provider: string; request: Record<string, unknown> },
  events: EventRows,
): Promise<{ reply: SmsMessage; intent: ProviderIntent }> {
  return queues.submit(db, orgId, { r, usage, intent, events }).then((out) => {
    if (out instanceof Error) throw out;
    return out;
  });
}

const queues = new PerOrgGroupCommit<QueueItem, { reply: SmsMessage; intent: ProviderIntent } | Error>(queueReplies, 200, { prepareOnConnect: true });

/**
 * Statement 1 for a batch of one organization (`k` an item's place in `batch`).
 * @returns per item, the stored reply and intent, or an Error when its inbound text is missing (the others are stored)
 */
async function queueReplies(db: Db | Knex.Transaction, orgId: string, batch: QueueItem[]): Promise<({ reply: SmsMessage; intent: ProviderIntent } | Error)[]> {
  const items = batch.map(({ r, intent }, k) => ({
    k, org_id: orgId, id: r.id, from_e164: r.from, to_e164: r.to, body: r.body, inbound_id: r.inboundId, conversation_id: r.conversationId, agent_reply: r.agentReply, at: r.at,
    intent_id: newId('pin'), provider: intent.provider, request: intent.request,
  }));
  const stored = 'us_x.k IN (SELECT mk.k FROM mk)';
  const charges = usageDeferredChargeCtes(orgId, usageRows(batch.map((b, k) => ({ ...b.usage, k }))), stored);
  const ev = eventCtes(orgId, batch.flatMap((b, k) => b.events.map((e) => ({ ...e, k }))), { gate: 'ev_x.k IN (SELECT mk.k FROM mk)' });
  const sql = `/* sms reply queue */ WITH bx AS (
       SELECT * FROM jsonb_to_recordset(?::jsonb) AS bx(k int, org_id text, id text, from_e164 text, to_e164 text, body text, inbound_id text, conversation_id text,
                                                        agent_reply text, at timestamptz, intent_id text, provider text, request jsonb) WHERE ${BATCH_PLANNED_AS_FEW}
     ),
     inb AS (
       UPDATE sms_messages s SET conversation_id = bx.conversation_id, agent_reply = bx.agent_reply
         FROM bx WHERE s.id = bx.inbound_id AND ${inOrganization('s.org_id', 'bx.org_id')} AND s.direction = 'inbound' RETURNING s.id
     ),
     m AS (
       INSERT INTO sms_messages (id, org_id, direction, trigger, from_e164, to_e164, body, status, reply_to, conversation_id, created_at, updated_at)
       SELECT bx.id, ?, 'outbound', 'reply', bx.from_e164, bx.to_e164, bx.body, 'queued', inb.id, bx.conversation_id, bx.at, bx.at
         FROM bx JOIN inb ON inb.id = bx.inbound_id ORDER BY bx.k
       RETURNING *
     ),
     mk AS (SELECT bx.k, bx.intent_id, bx.provider, bx.request, m FROM m JOIN bx ON bx.id = m.id),
     pi AS (
       INSERT INTO provider_intents (id, org_id, kind, reference, subject_id, provider, request)
       SELECT mk.intent_id, ?, 'sms_send', (mk.m).id, (mk.m).id, mk.provider, mk.request FROM mk ORDER BY mk.k
       RETURNING *
     ),
     ${charges.sql},
     ${ev.sql}
     SELECT (SELECT coalesce(json_agg(json_build_object('k', mk.k, 'message', row_to_json(mk.m), 'intent', row_to_json(pi))), '[]'::json)
               FROM mk JOIN pi ON pi.id = mk.intent_id) AS queued, ${EVENTS_NOTIFY_SELECT}`;
  const bindings: Knex.RawBinding[] = [JSON.stringify(items), orgId, orgId, ...charges.bindings, ...ev.bindings];
  const rows = (await runPrepared(db, sql, bindings)).rows[0].queued as { k: number; message: any; intent: any }[];
  const out: ({ reply: SmsMessage; intent: ProviderIntent } | undefined)[] = batch.map(() => undefined);
  for (const { k, message, intent: i } of rows) {
    out[k] = {
      reply: toMessage(message),
      intent: {
        id: i.id, orgId: i.org_id, kind: i.kind, reference: i.reference, subjectId: i.subject_id, provider: i.provider, status: i.status,
        request: i.request ?? {}, result: i.result ?? null, tries: i.tries, note: i.note ?? null,
        createdAt: new Date(i.created_at).toISOString(), updatedAt: new Date(i.updated_at).toISOString(),
      },
    };
  }
  return out.map((o, k) => o ?? new Error(`inbound text ${batch[k].r.inboundId} of ${orgId} not found`));
}

/** Statement 2's item (see {@link markReplySent}). */
interface SentItem {
  s: { replyId: string; inboundId: string; intentId: string; providerMessageId: string; result: unknown; at: string };
  events: EventRows;
}

/**
 * Statement 2 (see the module comment): moves the reply `queued → sent` (at `at`, ISO 8601) only from `queued`,
 * so `events` (its `sms.message.updated`, previousStatus `queued`) are stored only with that move. Batched per
 * organization as statement 1 is.
 * @param result the carrier's answer, recorded on the intent
 * @returns true when the reply moved (false: a receipt or another attempt moved it first; the intent and the
 *   owed answer are recorded all the same), once committed
 */
export function markReplySent(
  db: Db,
  orgId: string,
  s: SentItem['s'],
  events: EventRows,
): Promise<boolean> {
  return sents.submit(db, orgId, { s, events });
}

const sents = new PerOrgGroupCommit<SentItem, boolean>(markRepliesSent, 200, { prepareOnConnect: true });

/** The batches of statements 1 and 2 `db` wrote so far (the benchmark's figures). */
export const replyBatchStats = (db: Db): { queue: GroupCommitStats; sent: GroupCommitStats } => ({ queue: queues.stats(db), sent: sents.stats(db) });

/** Statement 2 for a batch of one organization (`k` an item's place in `batch`). */
async function markRepliesSent(db: Db | Knex.Transaction, orgId: string, batch: SentItem[]): Promise<boolean[]> {
  const items = batch.map(({ s }, k) => ({
    k, org_id: orgId, reply_id: s.replyId, inbound_id: s.inboundId, intent_id: s.intentId, provider_message_id: s.providerMessageId, result: s.result ?? {}, at: s.at,
  }));
  const ev = eventCtes(orgId, batch.flatMap((b, k) => b.events.map((e) => ({ ...e, k }))), { gate: 'ev_x.k IN (SELECT m.k FROM m)' });
  const sql = `/* sms reply sent */ WITH bx AS (
       SELECT * FROM jsonb_to_recordset(?::jsonb) AS bx(k int, org_id text, reply_id text, inbound_id text, intent_id text, provider_message_id text, result jsonb, at timestamptz) WHERE ${BATCH_PLANNED_AS_FEW}
     ),
     pi AS (
       UPDATE provider_intents p SET status = 'done', result = bx.result, updated_at = now() FROM bx WHERE p.id = bx.intent_id AND ${inOrganization('p.org_id', 'bx.org_id')} RETURNING p.id
     ),
     prev AS (SELECT s.id, s.org_id, s.status FROM bx JOIN sms_messages s ON s.id = bx.reply_id AND ${inOrganization('s.org_id', 'bx.org_id')} FOR UPDATE OF s),
     m AS (
       UPDATE sms_messages x SET status = 'sent', provider_message_id = bx.provider_message_id, updated_at = bx.at
         FROM prev JOIN bx ON bx.reply_id = prev.id WHERE x.id = prev.id AND ${inOrganization('x.org_id', 'prev.org_id')} AND prev.status = 'queued'
       RETURNING bx.k
     ),
     inb AS (
       UPDATE sms_messages s SET answer_state = 'answered', answer_note = NULL
         FROM bx WHERE s.id = bx.inbound_id AND ${inOrganization('s.org_id', 'bx.org_id')} AND s.direction = 'inbound' AND s.answer_state = 'pending' RETURNING s.id
     ),
     ${ev.sql}
     SELECT (SELECT coalesce(json_agg(m.k), '[]'::json) FROM m) AS moved, (SELECT count(*) FROM pi) AS resolved, (SELECT count(*) FROM inb) AS settled, ${EVENTS_NOTIFY_SELECT}`;
  const bindings: Knex.RawBinding[] = [JSON.stringify(items), ...ev.bindings];
  const moved = new Set((await runPrepared(db, sql, bindings)).rows[0].moved as number[]);
  return batch.map((_, k) => {
    if (!moved.has(k)) return false;
    smsMessages.inc({ status: 'sent' });
    return true;
  });
}
