/**
 * Text messages (docs/sms.md "Numbers, consent and sending"): outbound ones move queued → held → sent → delivered | failed;
 * inbound ones are `received`. A status never moves backwards (delivery receipts can arrive out of order).
 */
import type { Knex } from 'knex';
import { prepared, type Db } from '../index';
import type { SmsMessage } from '../../schemas/types/sms';
import { iso } from '../timestamps';
import { smsMessages } from '../../metrics';
import { eventCtes, EVENTS_NOTIFY_SELECT } from './events';
import { runPrepared } from '../preparedQuery';
import { BATCH_PLANNED_AS_FEW, inOrganization, PerOrgGroupCommit, type GroupCommitStats } from '../groupCommit';


/** Rank of outbound statuses: a report of a lower rank never replaces a higher one. */
export const MESSAGE_STATUS_RANK: Record<SmsMessage['status'], number> = { queued: 0, held: 1, sent: 2, delivered: 3, failed: 3, received: 0 };

/** Row → API shape. */
export function toMessage(r: any): SmsMessage {
  return {
    id: r.id,
    direction: r.direction,
    trigger: r.trigger ?? null,
    from: r.from_e164,
    to: r.to_e164,
    status: r.status,
    heldUntil: iso(r.held_until),
    error: r.error ?? null,
    mediaIds: r.media_ids ?? [],
    createdAt: iso(r.created_at)!,
  };
}

/**
 * A message as its webhook events report it (`sms.message.received` / `sms.message.updated`):
 * `previousStatus` is null for a message just created; `attachmentIds` are the stored media ids.
 */
export interface MessageChange {
  messageId: string;
  direction: 'inbound' | 'outbound';
  status: SmsMessage['status'];
  previousStatus: SmsMessage['status'] | null;
  from: string;
  to: string;
  body: string;
  attachmentIds: string[];
  error: string | null;
  /** ISO 8601 time of the change. */
  at: string;
}

/** Called inside the transaction that created or moved a message (webhook events are written there). */
export type OnMessageChange = (trx: Knex.Transaction, change: MessageChange) => Promise<unknown>;

function messageChange(row: any, previousStatus: SmsMessage['status'] | null): MessageChange {
  return {
    messageId: row.id,
    direction: row.direction,
    status: row.status,
    previousStatus,
    from: row.from_e164,
    to: row.to_e164,
    body: row.body,
    attachmentIds: row.media_ids ?? [],
    error: row.error ?? null,
    at: new Date(row.updated_at ?? row.created_at).toISOString(),
  };
}

/** Runs `fn` in `db` when it is already a transaction, else in a new one. */
function inTransaction<T>(db: Db, fn: (trx: Knex.Transaction) => Promise<T>): Promise<T> {
  return (db as Knex.Transaction).isTransaction ? fn(db as Knex.Transaction) : db.transaction(fn);
}

/**
 * Inserts a message (id chosen by the caller, `msg_…`); an existing id is left as is.
 * @param onChange runs in the insert's transaction (`db` itself when it is one) only when the row was
 *   inserted now, not for an id that already existed
 */
export async function insertMessage(
  db: Db,
  orgId: string,
  m: {
    id: string;
    direction: 'outbound' | 'inbound';
    trigger: string | null;
    from: string;
    to: string;
    body: string;
    mediaIds?: string[];
    status: SmsMessage['status'];
    providerMessageId?: string | null;
    /** An agent's reply: the inbound text it answers (unique per organization: one reply per text). */
    replyTo?: string | null;
    /** The conversation the text belongs to (an agent's `sms` conversation). */
    conversationId?: string | null;
    /** An inbound text the number's agent owes an answer: `pending` (docs/sms.md "Agents answer texts"). */
    answerState?: 'pending' | null;
  },
  onChange?: OnMessageChange,
): Promise<SmsMessage> {
  const row = {
    id: m.id,
    org_id: orgId,
    direction: m.direction,
    trigger: m.trigger,
    from_e164: m.from,
    to_e164: m.to,
    body: m.body,
    media_ids: m.mediaIds ?? [],
    status: m.status,
    provider_message_id: m.providerMessageId ?? null,
    reply_to: m.replyTo ?? null,
    conversation_id: m.conversationId ?? null,
    answer_state: m.answerState ?? null,
  };
  if (!onChange) {
    await db('sms_messages').insert(row).onConflict('id').ignore();
    return toMessage(await db('sms_messages').where({ id: m.id, org_id: orgId }).first());
  }
  return inTransaction(db, async (trx) => {
    const [inserted] = await trx('sms_messages').insert(row).onConflict('id').ignore().returning('*');
    if (inserted) {
      await onChange(trx, messageChange(inserted, null));
      return toMessage(inserted);
    }
    return toMessage(await trx('sms_messages').where({ id: m.id, org_id: orgId }).first());
  });
}

/** A received text without attachments to store with its provider event (see {@link storeInboundText}). */
export interface InboundTextToStore {
  id: string;
  provider: string;
  externalId: string;
  payload: Record<string, unknown>;
  from: string;
  to: string;
  body: string;
  answerState: 'pending' | null;
  /** ISO 8601 instant the text is stored as created (the events' `receivedAt` names the same). */
  at: string;
  /** `sms.message.received`, already checked against the catalog (events/sms.ts). */
  events: readonly { type: string; data: Record<string, unknown> }[];
}

/**
 * Stores a received text without attachments and its provider event (docs/sms.md "Agents answer texts": the hot
 * path of an inbound callback): the provider event once per (provider, external id), the text (`received`,
 * created at `at`) only when the event is new, and its events only when the text was stored — one atomic
 * statement, so nothing is stored without the rest. Texts of one organization that arrive while its previous
 * statement is in flight are stored together by the next one (db/groupCommit.ts), each with the same guarantee;
 * the promise resolves once the statement holding the text has committed.
 * @returns the stored text, or null for a duplicate callback (nothing written)
 * @throws what storing this text alone threw
 */
export function storeInboundText(db: Db, orgId: string, t: Omit<InboundTextToStore, 'events'>, events: InboundTextToStore['events']): Promise<SmsMessage | null> {
  return inboundStores.submit(db, orgId, { ...t, events });
}

const inboundStores = new PerOrgGroupCommit<InboundTextToStore, SmsMessage | null>(storeInboundTexts, 200, { prepareOnConnect: true });

/** The inbound text batches `db` wrote so far (the benchmark's figures). */
export const inboundStoreStats = (db: Db): GroupCommitStats => inboundStores.stats(db);

/**
 * {@link storeInboundText} for a batch of one organization in one statement (`k` the item's place in `batch`).
 * A provider event repeated within the batch is stored for its first text only (the others are duplicates).
 * @returns per item, the stored text or null
 */
async function storeInboundTexts(db: Db | Knex.Transaction, orgId: string, batch: InboundTextToStore[]): Promise<(SmsMessage | null)[]> {
  const seen = new Set<string>();
  const items = batch.flatMap((t, k) => {
    const key = `${t.provider}\u0000${t.externalId}`;
    if (seen.has(key)) return [];
    seen.add(key);
    return [{ k, id: t.id, provider: t.provider, external_id: t.externalId, payload: t.payload, from_e164: t.from, to_e164: t.to, body: t.body, answer_state: t.answerState, at: t.at }];
  });
  const ev = eventCtes(orgId, items.flatMap((i) => batch[i.k].events.map((e) => ({ ...e, k: i.k }))), { gate: 'ev_x.k IN (SELECT mk.k FROM mk)' });
  const sql = `/* sms inbound store */ WITH bx AS (
       SELECT * FROM jsonb_to_recordset(?::jsonb) AS bx(k int, id text, provider text, external_id text, payload jsonb, from_e164 text, to_e164 text,
                                                        body text, answer_state text, at timestamptz) WHERE ${BATCH_PLANNED_AS_FEW}
     ),
     pe AS (
       INSERT INTO sms_provider_events (org_id, provider, object_type, external_id, status, revision, payload)
       SELECT ?, bx.provider, 'inbound', bx.external_id, 'RECEIVED', 0, bx.payload FROM bx ORDER BY bx.k
       ON CONFLICT (provider, external_id, status, revision) DO NOTHING RETURNING provider, external_id
     ),
     m AS (
       INSERT INTO sms_messages (id, org_id, direction, from_e164, to_e164, body, status, provider_message_id, answer_state, created_at, updated_at)
       SELECT bx.id, ?, 'inbound', bx.from_e164, bx.to_e164, bx.body, 'received', bx.external_id, bx.answer_state, bx.at, bx.at
         FROM bx JOIN pe ON pe.provider = bx.provider AND pe.external_id = bx.external_id ORDER BY bx.k
       ON CONFLICT (id) DO NOTHING RETURNING *
     ),
     mk AS (SELECT bx.k, m FROM m JOIN bx ON bx.id = m.id),
     ${ev.sql}
     SELECT (SELECT coalesce(json_agg(json_build_object('k', mk.k, 'm', row_to_json(mk.m))), '[]'::json) FROM mk) AS messages, ${EVENTS_NOTIFY_SELECT}`;
  const bindings: Knex.RawBinding[] = [JSON.stringify(items), orgId, orgId, ...ev.bindings];
  const stored = (await runPrepared(db, sql, bindings)).rows[0].messages as { k: number; m: any }[];
  const out: (SmsMessage | null)[] = batch.map(() => null);
  for (const s of stored) out[s.k] = toMessage(s.m);
  return out;
}

/** A message with its body and its place in an agent's conversation (internal: workflows and activities). */
export interface SmsMessageRecord extends SmsMessage {
  body: string;
  mediaIds: string[];
  providerMessageId: string | null;
  /** The agent's `sms` conversation the text belongs to, once an agent took it up. */
  conversationId: string | null;
  /** Inbound: the reply the agent's turn produced (kept so a retried answer sends it, not a second turn). */
  agentReply: string | null;
  /** Outbound agent reply: the inbound text it answers. */
  replyTo: string | null;
}

/** A message with its body (internal: workflows and activities). */
export async function getMessageRecord(db: Db, orgId: string, id: string): Promise<SmsMessageRecord | undefined> {
  const r = await db('sms_messages').where({ id, org_id: orgId }).first();
  return r
    ? { ...toMessage(r), body: r.body, mediaIds: r.media_ids ?? [], providerMessageId: r.provider_message_id ?? null, conversationId: r.conversation_id ?? null, agentReply: r.agent_reply ?? null, replyTo: r.reply_to ?? null }
    : undefined;
}

/** The agent's reply to an inbound text, if one was queued. */
export async function findReplyTo(db: Db, orgId: string, inboundId: string): Promise<SmsMessage | undefined> {
  const r = await db('sms_messages').where({ org_id: orgId, reply_to: inboundId }).first();
  return r ? toMessage(r) : undefined;
}

/** Ends an inbound text's owed answer: `answered`, or `declined` with why (an opt-out, the SMS toggle, …). */
export async function settleInboundAnswer(db: Db, orgId: string, id: string, state: 'answered' | 'declined', note: string | null = null): Promise<void> {
  await db('sms_messages').where({ org_id: orgId, id, direction: 'inbound', answer_state: 'pending' }).update({ answer_state: state, answer_note: note });
}

/**
 * Inbound texts still owed an answer that arrived before `before` (their process died before answering),
 * across organizations like the other housekeeping sweeps, oldest first, each with its arrival time — one
 * query for the whole sweep. @returns at most `limit`
 */
export async function pendingAnswers(db: Db, before: Date, limit: number): Promise<{ orgId: string; id: string; createdAt: Date }[]> {
  const rows = await db('sms_messages').where({ answer_state: 'pending' }).where('created_at', '<', before).orderBy('created_at').limit(limit).select('org_id', 'id', 'created_at');
  return rows.map((r: { org_id: string; id: string; created_at: Date | string }) => ({ orgId: r.org_id, id: r.id, createdAt: new Date(r.created_at) }));
}

/** {@link settleInboundAnswer} for many texts of one organization in one statement (the recovery sweep's too-old ones). */
export async function settleInboundAnswers(db: Db, orgId: string, ids: string[], state: 'answered' | 'declined', note: string | null = null): Promise<void> {
  if (!ids.length) return;
  await db('sms_messages').where({ org_id: orgId, direction: 'inbound', answer_state: 'pending' }).whereIn('id', ids).update({ answer_state: state, answer_note: note });
}

/** Records on an inbound text the agent conversation that took it up and, once the turn ran, its reply. */
export async function setInboundAnswer(db: Db, orgId: string, id: string, answer: { conversationId: string; agentReply?: string }): Promise<void> {
  await db('sms_messages')
    .where({ org_id: orgId, id, direction: 'inbound' })
    .update({ conversation_id: answer.conversationId, ...(answer.agentReply !== undefined ? { agent_reply: answer.agentReply } : {}) });
}

/**
 * Moves a message forward; a lower-ranked status is ignored (out-of-order receipts).
 * @param onChange runs in the same transaction when the status moved (the row is locked, so the
 *   reported previous status is the one replaced); a refused or repeated move emits nothing
 * @returns true when the row changed
 */
export async function advanceMessage(
  db: Db,
  orgId: string,
  id: string,
  to: { status: SmsMessage['status']; heldUntil?: Date | null; providerMessageId?: string; error?: string | null },
  onChange?: OnMessageChange,
): Promise<boolean> {
  const lower = Object.entries(MESSAGE_STATUS_RANK).filter(([, r]) => r < MESSAGE_STATUS_RANK[to.status]).map(([s]) => s);
  const update: Record<string, unknown> = { status: to.status, updated_at: db.fn.now() };
  if (to.heldUntil !== undefined) update.held_until = to.heldUntil;
  if (to.providerMessageId) update.provider_message_id = to.providerMessageId;
  if (to.error !== undefined) update.error = to.error;
  if (!onChange) {
    const n = await db('sms_messages').where({ id, org_id: orgId }).whereIn('status', lower).update(update);
    if (n > 0) countMessage(to.status);
    return n > 0;
  }
  return inTransaction(db, async (trx) => {
    // One statement: the row is locked and its status read by the subquery, then moved only from a lower rank
    // (under READ COMMITTED a concurrent move is waited for and its status is the one compared and reported).
    const row = await moveReturningPrevious(trx, orgId, id, update, lower);
    if (!row) return false;
    await onChange(trx, messageChange(row, row.previous_status));
    return true;
  }).then((changed) => {
    if (changed) countMessage(to.status);
    return changed;
  });
}

/**
 * `UPDATE … RETURNING` of one message whose locked status is one of `from`, with the status it had
 * (`previous_status`). @returns the moved row, or undefined when it is missing or of another status
 */
async function moveReturningPrevious(trx: Knex.Transaction, orgId: string, id: string, update: Record<string, unknown>, from: string[]): Promise<any> {
  const cols = Object.keys(update);
  const sets = cols.map((c) => `${c} = ${c === 'updated_at' ? 'now()' : '?'}`).join(', ');
  const values = cols.filter((c) => c !== 'updated_at').map((c) => update[c] as Knex.RawBinding);
  const sql = `UPDATE sms_messages m SET ${sets}
      FROM (SELECT id, org_id, status FROM sms_messages WHERE id = ? AND ${inOrganization('org_id', '?')} FOR UPDATE) prev
     WHERE m.id = prev.id AND ${inOrganization('m.org_id', 'prev.org_id')} AND prev.status = ANY(?::text[])
     RETURNING m.*, prev.status AS previous_status`;
  const res = await trx.raw(sql, [...values, id, orgId, from]).options(prepared(sql));
  return res.rows[0];
}

/** Counts the outbound statuses operators watch (`sms_messages_total`), once per transition written. */
function countMessage(status: SmsMessage['status']): void {
  if (status === 'sent' || status === 'delivered' || status === 'failed') smsMessages.inc({ status });
}

/**
 * The outbound message with our id `messageId`, in any organization (delivery receipts that echo our
 * reference: a receipt can overtake the write of the provider's id when the provider answers at once).
 */
export async function findOutboundMessageById(db: Db, messageId: string): Promise<{ orgId: string; id: string } | undefined> {
  const r = await db('sms_messages').where({ id: messageId, direction: 'outbound' }).first('org_id', 'id');
  return r ? { orgId: r.org_id, id: r.id } : undefined;
}

/**
 * The inbound text a carrier's message id names (unique per carrier), with its organization and owed answer
 * (`answer_state`: pending, answered, declined, or null for a keyword or a text no agent takes up).
 */
export async function findInboundByProviderId(db: Db, providerMessageId: string): Promise<{ orgId: string; id: string; answerState: string | null; answerNote: string | null } | undefined> {
  const r = await db('sms_messages').where({ provider_message_id: providerMessageId, direction: 'inbound' }).first('org_id', 'id', 'answer_state', 'answer_note');
  return r ? { orgId: r.org_id, id: r.id, answerState: r.answer_state ?? null, answerNote: r.answer_note ?? null } : undefined;
}

/** The outbound message with this provider id (delivery receipts: a cross-organization lookup by the provider's id). */
export async function findMessageByProviderId(db: Db, providerMessageId: string): Promise<{ orgId: string; id: string } | undefined> {
  const r = await db('sms_messages').where({ provider_message_id: providerMessageId, direction: 'outbound' }).first('org_id', 'id');
  return r ? { orgId: r.org_id, id: r.id } : undefined;
}
