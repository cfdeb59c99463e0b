/**
 * Provider intents (docs/operations.md "Provider calls happen once"): one row per non-idempotent write at an outside
 * provider, written and committed before the request, resolved with the provider's answer in the
 * transaction that records it, or marked `unknown` when the provider cannot tell whether it happened.
 * Every query is scoped by organization.
 */
import type { Knex } from 'knex';
import type { Db } from '../index';
import { newId } from '../ids';

type Conn = Db | Knex.Transaction;

/** What the write is. */
export type IntentKind = 'dial' | 'brand_create' | 'campaign_create' | 'number_purchase' | 'sms_send' | 'number_release' | 'crm_note' | 'booking' | 'recharge';

/** `pending`: asked (or about to ask), no answer recorded; `done`: answer recorded; `unknown`: the provider could not tell. */
export type IntentStatus = 'pending' | 'done' | 'unknown';

/** A provider intent as stored. */
export interface ProviderIntent {
  /** `pin_…` */
  id: string;
  orgId: string;
  kind: IntentKind;
  /** The client reference sent with the request and echoed by the provider (dial key, registration, number or message id). */
  reference: string;
  /** Our resource the write is for (attempt, registration, number or message id). */
  subjectId: string;
  provider: string;
  status: IntentStatus;
  request: Record<string, unknown>;
  /** The provider's answer once recorded (its ids, a dial's outcome). */
  result: Record<string, any> | null;
  /** How many activity attempts found this intent (1 = never retried). */
  tries: number;
  /** Why it is `unknown`. */
  note: string | null;
  createdAt: string;
  updatedAt: string;
}

const toIntent = (r: any): ProviderIntent => ({
  id: r.id,
  orgId: r.org_id,
  kind: r.kind,
  reference: r.reference,
  subjectId: r.subject_id,
  provider: r.provider,
  status: r.status,
  request: r.request ?? {},
  result: r.result ?? null,
  tries: r.tries,
  note: r.note ?? null,
  createdAt: new Date(r.created_at).toISOString(),
  updatedAt: new Date(r.updated_at).toISOString(),
});

/**
 * Records the intent of a write, or finds the one a previous attempt recorded (then counts the try).
 * Call it on the pool, not in a transaction: the row must be committed before the provider is asked.
 * @returns the intent and whether this call created it
 */
export async function beginIntent(
  db: Conn,
  orgId: string,
  i: { kind: IntentKind; reference: string; subjectId: string; provider: string; request: unknown },
): Promise<{ intent: ProviderIntent; created: boolean }> {
  const inserted = await db('provider_intents')
    .insert({ id: newId('pin'), org_id: orgId, kind: i.kind, reference: i.reference, subject_id: i.subjectId, provider: i.provider, request: JSON.stringify(i.request ?? {}) })
    .onConflict(['org_id', 'kind', 'reference'])
    .ignore()
    .returning('*');
  if (inserted.length) return { intent: toIntent(inserted[0]), created: true };
  const [row] = await db('provider_intents')
    .where({ org_id: orgId, kind: i.kind, reference: i.reference })
    .update({ tries: db.raw('tries + 1'), updated_at: db.fn.now() })
    .returning('*');
  return { intent: toIntent(row), created: false };
}

/** Records the provider's answer (`done`). Idempotent; an `unknown` intent becomes `done` when the answer turns up. */
export async function resolveIntent(db: Conn, orgId: string, id: string, result: unknown): Promise<void> {
  await db('provider_intents').where({ org_id: orgId, id }).update({ status: 'done', result: JSON.stringify(result ?? {}), updated_at: db.fn.now() });
}

/** Marks a pending intent `unknown` for an operator. @returns false when it was no longer pending */
export async function markIntentUnknown(db: Conn, orgId: string, id: string, note: string): Promise<boolean> {
  const n = await db('provider_intents').where({ org_id: orgId, id, status: 'pending' }).update({ status: 'unknown', note, updated_at: db.fn.now() });
  return n > 0;
}

/** The intent of a write by its reference, or undefined. */
export async function getIntent(db: Conn, orgId: string, kind: IntentKind, reference: string): Promise<ProviderIntent | undefined> {
  const row = await db('provider_intents').where({ org_id: orgId, kind, reference }).first();
  return row ? toIntent(row) : undefined;
}

/** The organization's intents, oldest first, optionally of one status (operators, tests). */
export async function listIntents(db: Conn, orgId: string, opts: { status?: IntentStatus; kind?: IntentKind } = {}): Promise<ProviderIntent[]> {
  const q = db('provider_intents').where({ org_id: orgId });
  if (opts.status) q.where({ status: opts.status });
  if (opts.kind) q.where({ kind: opts.kind });
  return (await q.orderBy('created_at').orderBy('id')).map(toIntent);
}
