/**
 * The sandbox providers' own records as a real provider keeps them (docs/operations.md
 * "Provider calls happen once"): every dial received (no deduplication unless asked), the answers to purchases and texts in
 * `provider_requests`, and the look-ups by client reference real providers offer. Scoped by organization.
 */
import type { Knex } from 'knex';
import type { Db } from '../index';
import { runPrepared } from '../preparedQuery';

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

const EXCHANGE_WITH_CALLBACK_SQL = `WITH pr AS (
       INSERT INTO provider_requests (org_id, provider, operation, request, response) VALUES (?, ?, ?, ?::jsonb, ?::jsonb)
     )
     INSERT INTO sandbox_callbacks (org_id, provider, payload, due_at) VALUES (?, ?, ?::jsonb, now() + make_interval(secs => ?::double precision))
     RETURNING id`;

/**
 * {@link logProviderExchange} and the callback it owes `delayMs` (ms) from now (`sandbox_callbacks`, which the dispatcher
 * of providers/carrier/sandbox.ts delivers) in one statement: a sent text's log line and its delivery receipt.
 * @returns the callback's id
 */
export async function logExchangeWithCallback(
  db: Db,
  orgId: string,
  provider: string,
  exchange: { operation: string; request: Record<string, unknown>; response: Record<string, unknown> },
  callback: { payload: Record<string, unknown>; delayMs: number },
): Promise<number> {
  const bindings = [orgId, provider, exchange.operation, JSON.stringify(exchange.request), JSON.stringify(exchange.response), orgId, provider, JSON.stringify(callback.payload), callback.delayMs / 1000];
  return Number((await runPrepared(db, EXCHANGE_WITH_CALLBACK_SQL, bindings)).rows[0].id);
}

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
