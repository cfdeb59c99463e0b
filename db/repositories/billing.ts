/**
 * The wallet, its append-only ledger and monthly invoices (docs/api-notes.md "Billing"). Every function takes
 * the organization id except the month close, which works through all organizations in id order.
 *
 * Concurrency: the `wallets` row carries the balance, and every ledger write changes it under the row's
 * lock (an upsert, or the `UPDATE` of a charge), so the running balance each ledger row carries
 * (`balance_after_cents`) follows the previous one and no cent is lost between parallel top-ups and
 * charges; the wallet row's balance is always `SUM(amount_cents)` of the ledger. Charges a hot statement deferred
 * (`wallet_pending_charges`, ./walletSettle.ts) are in neither until settled; the balance shown subtracts them.
 */
import type { Knex } from 'knex';
import type { Db } from '../index';
import { newId } from '../ids';
import { DEFAULT_LOW_BALANCE_THRESHOLD_CENTS, WALLET_CURRENCY, type AutoRechargeSettings, type LedgerKind, type PaymentLedgerKind } from '../../domain/billing/wallet';
import { periodRange, type Period } from '../../domain/billing/periods';
import type { LedgerEntryView, Wallet } from '../../schemas/types/billing';
import { fromNullableColumns, fromNumericColumns } from '../rows';

/** The wallet as `GET /billing/wallet` shows it, but for `low`, which the route derives (schemas/types/billing.ts `Wallet`). */
export type WalletRecord = Omit<Wallet, 'low'>;

/** One ledger entry (schemas/types/billing.ts `LedgerEntryView`): signed US cents, credits > 0, charges < 0. */
export interface LedgerEntry extends LedgerEntryView {
  kind: LedgerKind;
}

/** A ledger write and the balance around it (for `billing.wallet.low`). */
export interface WalletChange {
  entry: LedgerEntry;
  balanceBeforeCents: number;
  balanceAfterCents: number;
  thresholdCents: number;
}

/** A ledger row (snake_case columns) as a {@link LedgerEntry}. */
export function ledgerEntry(r: Record<string, any>): LedgerEntry {
  return {
    id: r.id,
    kind: r.kind,
    ...fromNumericColumns(r, ['amountCents', 'balanceAfterCents']),
    ...fromNullableColumns(r, ['usageEntryId', 'paymentId', 'description']),
    createdAt: new Date(r.created_at).toISOString(),
  };
}

/**
 * Locks the organization's wallet row, creating it, and reads its balance: one statement (an upsert that
 * locks the row it returns). Inside a transaction only.
 */
async function lockWallet(trx: Knex.Transaction, orgId: string): Promise<{ balance: number; threshold: number }> {
  const res = await trx.raw(
    `INSERT INTO wallets (org_id, currency, low_balance_threshold_cents) VALUES (?, ?, ?)
     ON CONFLICT (org_id) DO UPDATE SET currency = wallets.currency
     RETURNING balance_cents, low_balance_threshold_cents`,
    [orgId, WALLET_CURRENCY, DEFAULT_LOW_BALANCE_THRESHOLD_CENTS],
  );
  const w = res.rows[0];
  return { balance: Number(w.balance_cents), threshold: Number(w.low_balance_threshold_cents) };
}

/** Appends a ledger row after a balance read by {@link lockWallet} in the same transaction, and moves the wallet's balance. */
async function appendLocked(
  trx: Knex.Transaction,
  orgId: string,
  wallet: { balance: number; threshold: number },
  e: { kind: LedgerKind; amountCents: number; usageEntryId?: string; paymentId?: string; description?: string },
): Promise<WalletChange> {
  const after = wallet.balance + e.amountCents;
  const [row] = await trx('wallet_ledger')
    .insert({
      id: newId('led'),
      org_id: orgId,
      kind: e.kind,
      amount_cents: e.amountCents,
      balance_after_cents: after,
      usage_entry_id: e.usageEntryId ?? null,
      payment_id: e.paymentId ?? null,
      description: e.description ?? null,
    })
    .returning('*');
  await trx('wallets').where({ org_id: orgId }).update({ balance_cents: after });
  return { entry: ledgerEntry(row), balanceBeforeCents: wallet.balance, balanceAfterCents: after, thresholdCents: wallet.threshold };
}

/**
 * Records a payment provider's object in the ledger once per `(orgId, paymentId)`: a settled payment
 * (`topup`, `refund`, `dispute_won`: a credit) or a card refund or dispute of a top-up (`topup_refund`,
 * `dispute`: a debit).
 * @param p.amountCents signed whole cents: > 0 for the credits, < 0 for the debits (the table's CHECK refuses others)
 * @param p.paymentId the provider's object id (payment, refund, dispute)
 * @returns the change, or the existing entry (and `duplicate: true`) when this object was recorded before
 */
export async function creditPayment(
  trx: Knex.Transaction,
  orgId: string,
  p: { kind: PaymentLedgerKind; amountCents: number; paymentId: string; description?: string },
): Promise<WalletChange & { duplicate: boolean }> {
  const wallet = await lockWallet(trx, orgId);
  const existing = await trx('wallet_ledger').where({ org_id: orgId, payment_id: p.paymentId }).first();
  if (existing) return { entry: ledgerEntry(existing), balanceBeforeCents: wallet.balance, balanceAfterCents: wallet.balance, thresholdCents: wallet.threshold, duplicate: true };
  return { ...(await appendLocked(trx, orgId, wallet, p)), duplicate: false };
}

/** An organization's auto-recharge settings (off, nothing set, before any). */
export interface AutoRechargeRecord extends AutoRechargeSettings {
  /** Why it was turned off by the service (a declined card), null otherwise. */
  disabledReason: string | null;
}

const autoRechargeOf = (w: Record<string, any> | undefined): AutoRechargeRecord => ({
  enabled: Boolean(w?.auto_recharge_enabled),
  thresholdCents: w?.auto_recharge_threshold_cents == null ? null : Number(w.auto_recharge_threshold_cents),
  amountCents: w?.auto_recharge_amount_cents == null ? null : Number(w.auto_recharge_amount_cents),
  disabledReason: w?.auto_recharge_disabled_reason ?? null,
});

/** The organization's auto-recharge settings. */
export async function getAutoRecharge(db: Db | Knex.Transaction, orgId: string): Promise<AutoRechargeRecord> {
  return autoRechargeOf(await db('wallets').where({ org_id: orgId }).first('auto_recharge_enabled', 'auto_recharge_threshold_cents', 'auto_recharge_amount_cents', 'auto_recharge_disabled_reason'));
}

/** Saves the auto-recharge settings (creating the wallet row), clearing a disabled reason. */
export async function setAutoRecharge(trx: Knex.Transaction, orgId: string, s: AutoRechargeSettings): Promise<void> {
  await lockWallet(trx, orgId);
  await trx('wallets')
    .where({ org_id: orgId })
    .update({ auto_recharge_enabled: s.enabled, auto_recharge_threshold_cents: s.thresholdCents, auto_recharge_amount_cents: s.amountCents, auto_recharge_disabled_reason: null });
}

/** Turns auto-recharge off with the reason (a declined card). @returns false when it was already off */
export async function disableAutoRecharge(trx: Knex.Transaction, orgId: string, reason: string): Promise<boolean> {
  const n = await trx('wallets').where({ org_id: orgId, auto_recharge_enabled: true }).update({ auto_recharge_enabled: false, auto_recharge_disabled_reason: reason.slice(0, 500) });
  return n > 0;
}

/**
 * The wallet of an organization (balance 0 and the default threshold before its first ledger entry): the
 * wallet row's balance less the charges still pending (./walletSettle.ts), read in one statement (one snapshot),
 * so the balance is exact whether a settle committed or not; `updatedAt` is the last ledger entry's or pending
 * charge's time.
 */
export async function getWallet(db: Db | Knex.Transaction, orgId: string): Promise<WalletRecord> {
  const res = await db.raw(
    `SELECT w.low_balance_threshold_cents, w.currency, w.balance_cents, w.auto_recharge_enabled, w.auto_recharge_threshold_cents,
            w.auto_recharge_amount_cents, w.auto_recharge_disabled_reason, p.pending_cents,
            greatest((SELECT l.created_at FROM wallet_ledger l WHERE l.org_id = o.id ORDER BY l.seq DESC LIMIT 1), p.last_at) AS updated_at
       FROM (SELECT ?::text AS id) o
       LEFT JOIN wallets w ON w.org_id = o.id
       CROSS JOIN LATERAL (SELECT coalesce(sum(amount_cents), 0) AS pending_cents, max(created_at) AS last_at
                             FROM wallet_pending_charges WHERE org_id = o.id) p`,
    [orgId],
  );
  const r = res.rows[0];
  const w = r.balance_cents == null ? undefined : r;
  return {
    balanceCents: (w ? Number(w.balance_cents) : 0) - Number(r.pending_cents),
    currency: w?.currency ?? WALLET_CURRENCY,
    lowBalanceThresholdCents: w ? Number(w.low_balance_threshold_cents) : DEFAULT_LOW_BALANCE_THRESHOLD_CENTS,
    updatedAt: r.updated_at ? new Date(r.updated_at).toISOString() : null,
    autoRecharge: autoRechargeOf(w),
  };
}

/**
 * Sum of every ledger amount of the organization, cents: the wallet row's (settled) balance; the balance shown
 * ({@link getWallet}) also subtracts the charges still pending (tests and audits).
 */
export async function ledgerSum(db: Db, orgId: string): Promise<number> {
  const r = await db('wallet_ledger').where({ org_id: orgId }).sum({ s: 'amount_cents' }).first();
  return Number(r?.s ?? 0);
}

/** Ledger entries of the organization, oldest first. */
export async function listLedger(db: Db, orgId: string): Promise<LedgerEntry[]> {
  return (await db('wallet_ledger').where({ org_id: orgId }).orderBy('seq')).map(ledgerEntry);
}

/** One line of an invoice: the usage of one kind in the period. */
export interface InvoiceLineRecord {
  kind: string;
  quantity: number;
  /** The unit price when every entry had the same one, else null. */
  unitPriceCents: number | null;
  amountCents: number;
  entries: number;
}

/** An invoice: a closed (stored, immutable) one or the running open one. */
export interface InvoiceRecord {
  /** `inv_…` once closed; null while open. */
  id: string | null;
  period: Period;
  status: 'open' | 'closed';
  periodStart: string;
  periodEnd: string;
  currency: string;
  lines: InvoiceLineRecord[];
  totalCents: number;
  closedAt: string | null;
}

const LINE_COLUMNS = `kind, sum(quantity) AS quantity, sum(amount_cents) AS amount, count(*) AS entries,
  CASE WHEN min(unit_price_cents) = max(unit_price_cents) THEN min(unit_price_cents) END AS unit_price`;

function toLine(r: Record<string, any>): InvoiceLineRecord {
  return { kind: r.kind, quantity: Number(r.quantity), unitPriceCents: r.unit_price === null ? null : Number(r.unit_price), amountCents: Number(r.amount), entries: Number(r.entries) };
}

function toInvoice(r: Record<string, any>): InvoiceRecord {
  return {
    id: r.id,
    period: r.period,
    status: 'closed',
    periodStart: new Date(r.period_start).toISOString(),
    periodEnd: new Date(r.period_end).toISOString(),
    currency: r.currency,
    lines: r.lines,
    totalCents: Number(r.total_cents),
    closedAt: new Date(r.closed_at).toISOString(),
  };
}

/** The closed invoice of a period, or undefined while it is open. */
export async function getClosedInvoice(db: Db | Knex.Transaction, orgId: string, period: Period): Promise<InvoiceRecord | undefined> {
  const r = await db('invoices').where({ org_id: orgId, period }).first();
  return r ? toInvoice(r) : undefined;
}

/** The running (open) invoice of a period, computed from its usage entries. */
export async function openInvoice(db: Db, orgId: string, period: Period): Promise<InvoiceRecord> {
  const { start, end } = periodRange(period);
  const rows = await db('usage_entries')
    .select(db.raw(LINE_COLUMNS))
    .where({ org_id: orgId })
    .andWhere('created_at', '>=', start)
    .andWhere('created_at', '<', end)
    .groupBy('kind')
    .orderBy('kind');
  const lines = rows.map(toLine);
  return {
    id: null,
    period,
    status: 'open',
    periodStart: start.toISOString(),
    periodEnd: end.toISOString(),
    currency: WALLET_CURRENCY,
    lines,
    totalCents: lines.reduce((s, l) => s + l.amountCents, 0),
    closedAt: null,
  };
}

/** Up to `limit` closed invoices with a period before `beforePeriod` (all when undefined), newest first. */
export async function closedInvoicesBefore(db: Db, orgId: string, beforePeriod: Period | undefined, limit: number): Promise<InvoiceRecord[]> {
  const q = db('invoices').where({ org_id: orgId });
  if (beforePeriod) q.andWhere('period', '<', beforePeriod);
  return (await q.orderBy('period', 'desc').limit(limit)).map(toInvoice);
}

/**
 * Closes `period` for the next `limit` organizations after `afterOrgId` (id order) that existed before
 * the period ended: one invoice each (zero-total ones included) with a line per usage kind. The unique
 * `(org_id, period)` makes a second close of the same organization and period a no-op, so the
 * `billing-month` workflow's activity may run twice.
 * @returns the invoices this call inserted (not those closed before), and the last organization seen
 *   (null when there was none: the period is closed for everyone)
 */
export async function closePeriodBatch(
  trx: Knex.Transaction,
  period: Period,
  afterOrgId: string,
  limit: number,
): Promise<{ closed: Array<InvoiceRecord & { orgId: string }>; lastOrgId: string | null }> {
  const { start, end } = periodRange(period);
  const orgIds: string[] = (await trx('organizations').where('id', '>', afterOrgId).andWhere('created_at', '<', end).orderBy('id').limit(limit).select('id')).map((r: { id: string }) => r.id);
  if (!orgIds.length) return { closed: [], lastOrgId: null };
  const lineRows = await trx('usage_entries')
    .select('org_id', trx.raw(LINE_COLUMNS))
    .whereIn('org_id', orgIds)
    .andWhere('created_at', '>=', start)
    .andWhere('created_at', '<', end)
    .groupBy('org_id', 'kind')
    .orderBy(['org_id', 'kind']);
  const byOrg = new Map<string, InvoiceLineRecord[]>();
  for (const r of lineRows) {
    const list = byOrg.get(r.org_id) ?? [];
    list.push(toLine(r));
    byOrg.set(r.org_id, list);
  }
  const rows = orgIds.map((orgId) => {
    const lines = byOrg.get(orgId) ?? [];
    return {
      id: newId('inv'),
      org_id: orgId,
      period,
      period_start: start,
      period_end: end,
      currency: WALLET_CURRENCY,
      lines: JSON.stringify(lines),
      total_cents: lines.reduce((s, l) => s + l.amountCents, 0),
    };
  });
  const inserted = await trx('invoices').insert(rows).onConflict(['org_id', 'period']).ignore().returning('*');
  return { closed: inserted.map((r: Record<string, any>) => ({ ...toInvoice(r), orgId: r.org_id })), lastOrgId: orgIds[orgIds.length - 1] };
}
