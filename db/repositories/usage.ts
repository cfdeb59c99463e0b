/**
 * Billable usage entries (table `usage_entries`, unique per organization and dedupe key): one entry per
 * business event, never two, however often an activity or request is retried. Every entry with an
 * amount is charged to the organization's wallet in the same statement (docs/api-notes.md "Billing": the ledger
 * references each usage entry once), or, on a hot path, recorded as a pending charge in that statement and folded
 * into the wallet by the settle (./walletSettle.ts), so usage and balance never disagree.
 */
import type { Knex } from 'knex';
import { prepared, type Db, type SqlPart } from '../index';
import { newId } from '../ids';
import { keysetPage, type Page } from '../pagination';
import { feeOf, PRICES, priceOf } from '../../domain/billing/prices';
import { ledgerEntry, type WalletChange } from './billing';
import { AUTO_RECHARGE_WORKFLOW, autoRechargeWorkflowId, DEFAULT_LOW_BALANCE_THRESHOLD_CENTS, WALLET_CURRENCY } from '../../domain/billing/wallet';
import type { UsageEntryView } from '../../schemas/types/billing';
import { fromNumericColumns } from '../rows';

/** Registration and number fees in US cents (docs/api-notes.md "Billing": prices; domain/billing/prices.ts). */
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

/** A usage entry ready to store: its row and the id of the ledger charge it gets when it is new. */
export interface UsageRow {
  id: string;
  ledger_id: string;
  ord: number;
  kind: string;
  quantity: number;
  unit_price_cents: number;
  amount_cents: number;
  resource_id: string | null;
  dedupe_key: string;
  details: Record<string, unknown>;
  /** The key a statement's gate may test (`us_x.k`), e.g. the turn of a batch the entry belongs to; null when unused. */
  k: number | null;
}

/** The stored form of usage inputs (unit price from the price table, resource id from the details, new ids). */
export function usageRows(entries: readonly (UsageInput & { k?: number })[]): UsageRow[] {
  return entries.map((entry, ord) => {
    const quantity = entry.quantity ?? 1;
    const details = entry.details ?? {};
    return {
      id: newId('use'),
      ledger_id: newId('led'),
      ord,
      kind: entry.kind,
      quantity,
      unit_price_cents: entry.unitPriceCents ?? priceOf(entry.kind)?.unitPriceCents ?? (quantity > 0 ? entry.amountCents / quantity : entry.amountCents),
      amount_cents: entry.amountCents,
      resource_id: entry.resourceId ?? ([details.conversationId, details.numberId, details.registrationId].find((v) => typeof v === 'string') as string | undefined) ?? null,
      dedupe_key: entry.dedupeKey,
      details,
      k: entry.k ?? null,
    };
  });
}

/** The CTEs `us_x` (the rows) and `us_i` (the usage entries inserted once per `(orgId, dedupeKey)`, subject to `gate`). */
function usageInsertCtes(gate: string): string {
  return `us_x AS (
       SELECT * FROM jsonb_to_recordset(?::jsonb) AS x(id text, ledger_id text, ord int, kind text, quantity int, unit_price_cents numeric,
                                                     amount_cents int, resource_id text, dedupe_key text, details jsonb, k int)
     ),
     us_i AS (
       INSERT INTO usage_entries (id, org_id, kind, quantity, unit_price_cents, amount_cents, resource_id, dedupe_key, details)
       SELECT us_x.id, ?, us_x.kind, us_x.quantity, us_x.unit_price_cents, us_x.amount_cents, us_x.resource_id, us_x.dedupe_key, us_x.details
         FROM us_x WHERE ${gate} ORDER BY us_x.ord
       ON CONFLICT (org_id, dedupe_key) DO NOTHING
       RETURNING id, amount_cents, kind
     )`;
}

/**
 * The CTEs `us_w`, `us_r` and `us_l` that charge to the wallet the charges of a preceding CTE `us_c`
 * (`id` the usage entry, `amount_cents` > 0, `kind`, `ledger_id`, `ord`, `cum` the running and `total` the whole
 * sum in `ord` order): the wallet's balance moves in one `INSERT … ON CONFLICT DO UPDATE` of its row (locked only
 * from there to the statement's commit), a crossing of the auto-recharge threshold owes one recharge
 * (`workflow_starts`), and each charge gets its ledger row (kind `usage`, −amount, running balance).
 * Used by {@link usageChargeCtes} and by the settle of deferred charges (./walletSettle.ts).
 */
export function walletChargeCtes(orgId: string): SqlPart {
  const attemptId = newId('rch');
  return {
    sql: `us_w AS (
       INSERT INTO wallets AS w (org_id, currency, low_balance_threshold_cents, balance_cents)
       SELECT ?, ?, ?, -t.total FROM (SELECT max(us_c.total) AS total FROM us_c) t WHERE t.total IS NOT NULL
       ON CONFLICT (org_id) DO UPDATE SET balance_cents = w.balance_cents + EXCLUDED.balance_cents
       RETURNING w.balance_cents AS after_cents, w.low_balance_threshold_cents AS threshold_cents, w.currency,
                 (SELECT max(us_c.total) FROM us_c) AS total_cents, w.auto_recharge_enabled, w.auto_recharge_threshold_cents
     ),
     us_r AS (
       -- The charge crossed the auto-recharge threshold with it on: one recharge owed, in the workflow_starts outbox
       -- (services/billing/autoRecharge.ts; services/workflowStarts.ts starts it after the commit).
       INSERT INTO workflow_starts (org_id, workflow_type, workflow_id, args, resource_id, options)
       SELECT ?, ?, ?, ?::jsonb, ?, '{}'::jsonb FROM us_w
        WHERE us_w.auto_recharge_enabled AND us_w.auto_recharge_threshold_cents IS NOT NULL
          AND us_w.after_cents + us_w.total_cents >= us_w.auto_recharge_threshold_cents AND us_w.after_cents < us_w.auto_recharge_threshold_cents
       RETURNING id
     ),
     us_l AS (
       INSERT INTO wallet_ledger (id, org_id, kind, amount_cents, balance_after_cents, usage_entry_id, description)
       SELECT us_c.ledger_id, ?, 'usage', -us_c.amount_cents, us_w.after_cents + us_c.total - us_c.cum, us_c.id, us_c.kind
         FROM us_c CROSS JOIN us_w ORDER BY us_c.ord
       RETURNING *
     )`,
    bindings: [orgId, WALLET_CURRENCY, DEFAULT_LOW_BALANCE_THRESHOLD_CENTS, orgId, AUTO_RECHARGE_WORKFLOW, autoRechargeWorkflowId(orgId), JSON.stringify([{ orgId, attemptId }]), attemptId, orgId],
  };
}

/**
 * Common table expressions (`us_x`, `us_i`, `us_c`, `us_w`, `us_l`) that record usage rows once per
 * `(orgId, dedupeKey)` and charge the new ones with an amount to the wallet, in the statement they join
 * ({@link walletChargeCtes}: the wallet's row is locked from its update to the statement's commit).
 * Entries of 0 cents do not touch the ledger; the wallet may go negative (usage is never refused).
 * Read the outcome with {@link usageOutcomeSelect}.
 * @param gate a SQL condition every insert is subject to (e.g. `EXISTS (SELECT 1 FROM u)`, or per row on
 *   `us_x.k`), or `TRUE`
 */
export function usageChargeCtes(orgId: string, rows: readonly UsageRow[], gate = 'TRUE'): SqlPart {
  const charge = walletChargeCtes(orgId);
  return {
    sql: `${usageInsertCtes(gate)},
     us_c AS (
       SELECT us_i.id, us_i.amount_cents, us_i.kind, us_x.ledger_id, us_x.ord,
              sum(us_i.amount_cents) OVER (ORDER BY us_x.ord) AS cum, sum(us_i.amount_cents) OVER () AS total
         FROM us_i JOIN us_x ON us_x.id = us_i.id
        WHERE us_i.amount_cents > 0
     ),
     ${charge.sql}`,
    bindings: [JSON.stringify(rows), orgId, ...charge.bindings],
  };
}

/**
 * Common table expressions (`us_x`, `us_i`, `us_p`) that record usage rows once per `(orgId, dedupeKey)` and
 * defer the charge of the new ones with an amount: one `wallet_pending_charges` row each (its ledger id
 * reserved), folded into the ledger and the wallet by the settle (./walletSettle.ts `settlePendingCharges`),
 * which emits `billing.wallet.low` and owes the auto-recharge on a crossing there. The statement takes no lock
 * on the wallet's row, so statements of one organization never wait for each other on it; the balance read
 * (./billing.ts `getWallet`) subtracts the pending charges, so it is exact meanwhile (docs/api-notes.md "Billing").
 * @param gate as for {@link usageChargeCtes}
 */
export function usageDeferredChargeCtes(orgId: string, rows: readonly UsageRow[], gate = 'TRUE'): SqlPart {
  return {
    sql: `${usageInsertCtes(gate)},
     us_p AS (
       INSERT INTO wallet_pending_charges (org_id, usage_entry_id, ledger_id, kind, amount_cents)
       SELECT ?, us_i.id, us_x.ledger_id, us_i.kind, us_i.amount_cents
         FROM us_i JOIN us_x ON us_x.id = us_i.id
        WHERE us_i.amount_cents > 0
        ORDER BY us_x.ord
       RETURNING seq
     )`,
    bindings: [JSON.stringify(rows), orgId, orgId],
  };
}

/** The select-list expression (a json value named `usage`) that {@link usageOutcome} reads, after {@link usageChargeCtes}. */
export const usageOutcomeSelect = `json_build_object(
       'inserted', (SELECT coalesce(json_agg(us_i.id), '[]'::json) FROM us_i),
       'wallet', (SELECT row_to_json(us_w) FROM us_w),
       'last', (SELECT row_to_json(l) FROM (SELECT * FROM us_l ORDER BY us_l.seq DESC LIMIT 1) l)
     ) AS usage`;

/**
 * A row (`id, ord, type, data`) of the `billing.wallet.low` event when the charge of {@link usageChargeCtes}
 * moved the balance from at least the threshold to below it (domain/billing/wallet.ts `crossedBelow`), for
 * the events the same statement records (db/repositories/events.ts `eventCtes`); no row otherwise.
 */
export function walletLowEventRow(ord: number): SqlPart {
  return {
    sql: `SELECT ?::text AS id, ?::int AS ord, 'billing.wallet.low'::text AS type,
                 jsonb_build_object('balanceCents', us_w.after_cents, 'previousBalanceCents', us_w.after_cents + us_w.total_cents,
                                    'lowBalanceThresholdCents', us_w.threshold_cents, 'currency', us_w.currency,
                                    'ledgerEntryId', l.id, 'usageEntryId', l.usage_entry_id) AS data, NULL::int AS k
            FROM us_w CROSS JOIN (SELECT us_l.id, us_l.usage_entry_id FROM us_l ORDER BY us_l.seq DESC LIMIT 1) l
           WHERE us_w.after_cents + us_w.total_cents >= us_w.threshold_cents AND us_w.after_cents < us_w.threshold_cents`,
    bindings: [newId('evt'), ord],
  };
}

/** What a statement with {@link usageChargeCtes} did, from its `usage` column. */
export function usageOutcome(usage: { inserted: string[]; wallet: Record<string, any> | null; last: Record<string, any> | null }): {
  insertedIds: string[];
  charge: WalletChange | null;
} {
  if (!usage.wallet || !usage.last) return { insertedIds: usage.inserted, charge: null };
  const after = Number(usage.wallet.after_cents);
  return {
    insertedIds: usage.inserted,
    charge: {
      entry: ledgerEntry(usage.last),
      balanceBeforeCents: after + Number(usage.wallet.total_cents),
      balanceAfterCents: after,
      thresholdCents: Number(usage.wallet.threshold_cents),
    },
  };
}

/**
 * Records a usage entry once per `(orgId, dedupeKey)` and, when it is new and has an amount, charges it
 * to the wallet, in one statement ({@link usageChargeCtes}) on the caller's transaction or the pool.
 * @param db a transaction (the change the usage is for) or the pool
 */
export async function recordUsageCharged(db: Db | Knex.Transaction, orgId: string, entry: UsageInput): Promise<RecordedUsage> {
  const part = usageChargeCtes(orgId, usageRows([entry]));
  const sql = `WITH ${part.sql} SELECT ${usageOutcomeSelect}`;
  const res = await db.raw(sql, part.bindings).options(prepared(sql));
  const out = usageOutcome(res.rows[0].usage);
  return { inserted: out.insertedIds.length > 0, charge: out.charge };
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
