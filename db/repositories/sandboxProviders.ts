/**
 * The sandbox providers' own records as a real provider keeps them (docs/operations.md
 * "Provider calls happen once"): every dial received (no deduplication unless asked), the answers to purchases and texts in
 * `provider_requests`, and the look-ups by client reference real providers offer. Scoped by organization.
 */
import type { Knex } from 'knex';
import type { Db } from '../index';
import { runPrepared } from '../preparedQuery';
import { BATCH_PLANNED_AS_FEW, PerOrgGroupCommit, type GroupCommitStats } from '../groupCommit';

type Conn = Db | Knex.Transaction;

/** A dial as the sandbox telephony stores it. `reference` is the client reference (the dial key). */
export interface SandboxDialRow {
  reference: string;
  from: string;
  to: string;
  providerCallId: string;
  outcome: string;
  durationSeconds: number;
  /** What the sandbox callee's voicemail recorded after the beep (docs/voice.md "Voicemail"), or null. */
  voicemailMessage: string | null;
  createdAt: Date;
}

const toDial = (r: any): SandboxDialRow => ({
  reference: r.idempotency_key,
  from: r.from,
  to: r.to,
  providerCallId: r.provider_call_id,
  outcome: r.outcome,
  durationSeconds: r.duration_seconds,
  voicemailMessage: r.voicemail_message ?? null,
  createdAt: new Date(r.created_at),
});

/**
 * Stores a dial the sandbox received. With `deduplicate` (SANDBOX_DEDUPLICATE_KEYS) a reference seen
 * before answers the first dial instead (serialized per reference by an advisory lock).
 * @returns the stored dial and whether it is new
 */
export async function sandboxRecordDial(db: Db, orgId: string, d: Omit<SandboxDialRow, 'createdAt'>, deduplicate: boolean): Promise<{ dial: SandboxDialRow; created: boolean }> {
  const insert = async (c: Conn) => {
    const [row] = await c('sandbox_dials')
      .insert({ idempotency_key: d.reference, org_id: orgId, from: d.from, to: d.to, provider_call_id: d.providerCallId, outcome: d.outcome, duration_seconds: d.durationSeconds, voicemail_message: d.voicemailMessage })
      .returning('*');
    return toDial(row);
  };
  if (!deduplicate) return { dial: await insert(db), created: true };
  return db.transaction(async (trx) => {
    await trx.raw('SELECT pg_advisory_xact_lock(hashtext(?))', [`sandbox_dial:${d.reference}`]);
    const first = await trx('sandbox_dials').where({ org_id: orgId, idempotency_key: d.reference }).orderBy('id').first();
    if (first) return { dial: toDial(first), created: false };
    return { dial: await insert(trx), created: true };
  });
}

/** The first dial with this client reference, else the first from `from` to `to` since `since`; undefined when none. */
export async function sandboxFindDial(db: Conn, orgId: string, q: { reference: string; from: string; to: string; since: Date }): Promise<SandboxDialRow | undefined> {
  const byRef = await db('sandbox_dials').where({ org_id: orgId, idempotency_key: q.reference }).orderBy('id').first();
  if (byRef) return toDial(byRef);
  const byParties = await db('sandbox_dials').where({ org_id: orgId, from: q.from, to: q.to }).where('created_at', '>=', q.since).orderBy('id').first();
  return byParties ? toDial(byParties) : undefined;
}

/** Dials the sandbox received, oldest first (every request, duplicates included). */
export async function sandboxDials(db: Conn, orgId: string): Promise<SandboxDialRow[]> {
  return (await db('sandbox_dials').where({ org_id: orgId }).orderBy('id')).map(toDial);
}

/** Appends a request and what the sandbox answered to `provider_requests`. */
export async function logProviderExchange(db: Conn, orgId: string, provider: string, operation: string, request: Record<string, unknown>, response: Record<string, unknown>): Promise<void> {
  await db('provider_requests').insert({ org_id: orgId, provider, operation, request: JSON.stringify(request), response: JSON.stringify(response) });
}

/** One exchange of {@link logExchangeWithCallback}: the log line's fields and its callback. */
interface ExchangeItem {
  provider: string;
  exchange: { operation: string; request: Record<string, unknown>; response: Record<string, unknown> };
  callback: { payload: Record<string, unknown>; delayMs: number };
}

// The callbacks' ids are drawn first (a volatile CTE is evaluated once), so each item learns its own.
// The leading comment names the tables, so the benchmark's statement count tells the carrier's rows apart.
const EXCHANGES_WITH_CALLBACKS_SQL = `/* provider_requests, sandbox_callbacks */ WITH bx AS (
       SELECT * FROM jsonb_to_recordset(?::jsonb) AS bx(k int, provider text, operation text, request jsonb, response jsonb, payload jsonb, delay_s double precision) WHERE ${BATCH_PLANNED_AS_FEW}
     ),
     ids AS (SELECT bx.k, nextval(pg_get_serial_sequence('sandbox_callbacks', 'id')) AS id FROM bx),
     pr AS (
       INSERT INTO provider_requests (org_id, provider, operation, request, response)
       SELECT ?, bx.provider, bx.operation, bx.request, bx.response FROM bx ORDER BY bx.k
     ),
     cb AS (
       INSERT INTO sandbox_callbacks (id, org_id, provider, payload, due_at)
       SELECT ids.id, ?, bx.provider, bx.payload, now() + make_interval(secs => bx.delay_s) FROM bx JOIN ids ON ids.k = bx.k ORDER BY bx.k
     )
     SELECT coalesce(json_agg(json_build_object('k', ids.k, 'id', ids.id)), '[]'::json) AS ids FROM ids`;

/**
 * {@link logProviderExchange} and the callback it owes `delayMs` (ms) from now (`sandbox_callbacks`, which the dispatcher
 * of providers/carrier/sandbox.ts delivers) in one statement: a sent text's log line and its delivery receipt. Exchanges
 * of one organization logged while its previous statement is in flight are written together by the next one
 * (db/groupCommit.ts), as a carrier's own store would batch them.
 * @returns the callback's id, once committed
 */
export function logExchangeWithCallback(
  db: Db,
  orgId: string,
  provider: string,
  exchange: ExchangeItem['exchange'],
  callback: ExchangeItem['callback'],
): Promise<number> {
  return exchanges.submit(db, orgId, { provider, exchange, callback });
}

const exchanges = new PerOrgGroupCommit<ExchangeItem, number>(async (db, orgId, batch) => {
  const items = batch.map((b, k) => ({
    k, provider: b.provider, operation: b.exchange.operation, request: b.exchange.request, response: b.exchange.response, payload: b.callback.payload, delay_s: b.callback.delayMs / 1000,
  }));
  const ids = (await runPrepared(db, EXCHANGES_WITH_CALLBACKS_SQL, [JSON.stringify(items), orgId, orgId])).rows[0].ids as { k: number; id: string | number }[];
  const out = batch.map(() => 0);
  for (const { k, id } of ids) out[k] = Number(id);
  return out;
}, 200, { prepareOnConnect: true });

/** The exchange batches `db` wrote so far (the benchmark's figures). */
export const exchangeBatchStats = (db: Db): GroupCommitStats => exchanges.stats(db);

/** What the sandbox answered the first `operation` request with this client reference, or undefined. */
export async function providerResponseByReference(db: Conn, orgId: string, provider: string, operation: string, reference: string): Promise<Record<string, any> | undefined> {
  const row = await db('provider_requests')
    .where({ org_id: orgId, provider, operation })
    .whereRaw(`request->>'reference' = ?`, [reference])
    .whereNotNull('response')
    .orderBy('id')
    .first('response');
  return row?.response ?? undefined;
}

/** How many `operation` requests the sandbox received (optionally with this client reference). */
export async function countProviderRequests(db: Conn, orgId: string, operation: string, reference?: string): Promise<number> {
  const q = db('provider_requests').where({ org_id: orgId, operation });
  if (reference !== undefined) q.whereRaw(`request->>'reference' = ?`, [reference]);
  const [{ count }] = await q.count<{ count: string }[]>('* as count');
  return Number(count);
}

/** The sandbox carrier's brands or campaigns created with this reference, oldest first (ids). */
export async function sandboxCarrierObjectsByReference(db: Conn, orgId: string, kind: 'brand' | 'campaign', reference: string): Promise<{ id: string; revision: number }[]> {
  return db('sandbox_carrier_objects').where({ org_id: orgId, kind, reference }).orderBy('updated_at').select('id', 'revision');
}
