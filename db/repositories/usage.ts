/**
 * Billable usage entries (table `usage_entries`, unique per organization and dedupe key): one entry per
 * business event, never two, however often an activity or request is retried. Every entry with an
 * amount is charged to the organization's wallet in the same transaction (README "Billing": the ledger
 * references each usage entry once), so usage and balance never disagree.
 */
import type { Knex } from 'knex';
import type { Db } from '../index';
import { newId } from '../ids';
import { keysetPage, type Page } from '../pagination';
import { feeOf, PRICES, priceOf } from '../../domain/billing/prices';
import { chargeUsage, type WalletChange } from './billing';
import type { UsageEntryView } from '../../schemas/types/billing';
import { fromNumericColumns } from '../rows';

/** Registration and number fees in US cents (README "Billing": prices; domain/billing/prices.ts). */
export const FEES = {
  /** TCR brand registration, charged once per registration. */
  brandRegistration: feeOf(PRICES.brandRegistration),
  /** Campaign vetting, charged once per registration. */
  campaignVetting: feeOf(PRICES.campaignVetting),
  /** A long-code number purchase (first month). */
  numberPurchase: feeOf(PRICES.numberPurchase),
} as const;

/** One usage entry as read back: the API's `UsageEntryView` (schemas/types/billing.ts; US cents) plus its dedupe key and details. */
export interface UsageEntry extends UsageEntryView {
  dedupeKey: string;
  details: Record<string, unknown>;
}

/** What a caller records. */
export interface UsageInput {
  kind: string;
  /** Total amount, whole US cents (≥ 0). */
  amountCents: number;
  /** One charge per business event: `(orgId, dedupeKey)` is unique. */
  dedupeKey: string;
  /** Units (default 1). */
  quantity?: number;
  /** Default: the price table's unit price for `kind`, else amount / quantity. */
  unitPriceCents?: number;
  /** Default: `details.conversationId`, `numberId` or `registrationId`. */
  resourceId?: string;
  details?: Record<string, unknown>;
}

/** Result of {@link recordUsageCharged}. */
export interface RecordedUsage {
  /** False when an entry with this dedupe key existed already (nothing was written). */
  inserted: boolean;
  /** The wallet change of the charge; null when nothing was charged (duplicate, or amount 0). */
  charge: WalletChange | null;
}

function inTransaction<T>(db: Db | Knex.Transaction, fn: (trx: Knex.Transaction) => Promise<T>): Promise<T> {
  return (db as Knex.Transaction).isTransaction ? fn(db as Knex.Transaction) : (db as Db).transaction(fn);
}

/**
 * Records a usage entry once per `(orgId, dedupeKey)` and, when it is new and has an amount, charges it
 * to the wallet in the same transaction (one `usage` ledger entry referencing it). Entries of 0 cents
 * do not touch the ledger. The wallet may go negative: usage is never refused for lack of funds.
 * @param db a transaction (the change the usage is for) or the pool (a transaction of its own)
 */
export async function recordUsageCharged(db: Db | Knex.Transaction, orgId: string, entry: UsageInput): Promise<RecordedUsage> {
  const quantity = entry.quantity ?? 1;
  const details = entry.details ?? {};
  const unitPrice = entry.unitPriceCents ?? priceOf(entry.kind)?.unitPriceCents ?? (quantity > 0 ? entry.amountCents / quantity : entry.amountCents);
  const resourceId = entry.resourceId ?? ([details.conversationId, details.numberId, details.registrationId].find((v) => typeof v === 'string') as string | undefined) ?? null;
  return inTransaction(db, async (trx) => {
    const rows = await trx('usage_entries')
      .insert({
        id: newId('use'),
        org_id: orgId,
        kind: entry.kind,
        quantity,
        unit_price_cents: unitPrice,
        amount_cents: entry.amountCents,
        resource_id: resourceId,
        dedupe_key: entry.dedupeKey,
        details: JSON.stringify(details),
      })
      .onConflict(['org_id', 'dedupe_key'])
      .ignore()
      .returning('id');
    if (!rows.length) return { inserted: false, charge: null };
    const charge = entry.amountCents > 0 ? await chargeUsage(trx, orgId, { usageEntryId: rows[0].id, amountCents: entry.amountCents, description: entry.kind }) : null;
    return { inserted: true, charge };
  });
}

/**
 * Records a usage entry once per `(orgId, dedupeKey)`, charged to the wallet ({@link recordUsageCharged}).
 * Callers that must report a low balance use services/billing/usage.ts instead.
 * @returns true when this call inserted it, false when it existed already
 */
export async function recordUsage(db: Db | Knex.Transaction, orgId: string, entry: UsageInput): Promise<boolean> {
  return (await recordUsageCharged(db, orgId, entry)).inserted;
}

function toEntry(r: Record<string, any>): UsageEntry {
  return {
    id: r.id,
    kind: r.kind,
    ...fromNumericColumns(r, ['quantity', 'unitPriceCents', 'amountCents']),
    resourceId: r.resource_id ?? null,
    dedupeKey: r.dedupe_key,
    details: r.details,
    createdAt: new Date(r.created_at).toISOString(),
  };
}

/** Usage entries of an organization, oldest first (tests, billing). */
export async function listUsage(db: Db, orgId: string): Promise<UsageEntry[]> {
  const rows = await db('usage_entries').where({ org_id: orgId }).orderBy('seq');
  return rows.map(toEntry);
}

/** Filters of a usage listing: kind, and a half-open time range `[from, to)`. */
export interface UsageFilter {
  kind?: string;
  from?: Date;
  to?: Date;
}

function filtered(db: Db, orgId: string, f: UsageFilter): Knex.QueryBuilder {
  const q = db('usage_entries').where({ org_id: orgId });
  if (f.kind) q.andWhere({ kind: f.kind });
  if (f.from) q.andWhere('created_at', '>=', f.from);
  if (f.to) q.andWhere('created_at', '<', f.to);
  return q;
}

/**
 * One page of usage entries, newest first (`GET /billing/usage`).
 * @throws InvalidCursorError for a cursor of another list
 */
export async function pageUsage(db: Db, orgId: string, f: UsageFilter, page: { limit: number; cursor?: string }): Promise<Page<UsageEntry>> {
  return keysetPage(filtered(db, orgId, f).select('*'), { ...page, column: 'seq', direction: 'desc', map: toEntry });
}

/** Usage of one kind on one UTC day. */
export interface UsageDay {
  /** `yyyy-mm-dd` (UTC). */
  day: string;
  kind: string;
  quantity: number;
  amountCents: number;
  entries: number;
}

/** Usage grouped by UTC day and kind, newest day first, kinds in name order (`GET /billing/usage?groupBy=day`). */
export async function usageByDay(db: Db, orgId: string, f: UsageFilter): Promise<UsageDay[]> {
  const rows = await filtered(db, orgId, f)
    .select(db.raw(`to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD') AS day`), 'kind')
    .sum({ quantity: 'quantity', amount: 'amount_cents' })
    .count({ entries: '*' })
    .groupBy('day', 'kind')
    .orderBy([{ column: 'day', order: 'desc' }, { column: 'kind', order: 'asc' }]);
  return rows.map((r: any) => ({ day: r.day, kind: r.kind, quantity: Number(r.quantity), amountCents: Number(r.amount), entries: Number(r.entries) }));
}
