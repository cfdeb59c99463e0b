/**
 * Wallet rules (docs/api-notes.md "Billing": wallet and ledger). The balance is the sum of an append-only ledger
 * of signed amounts in US cents: top-ups and refunds credit, usage charges debit.
 */

/** Currency of every wallet (spec "Billing"; only USD so far). */
export const WALLET_CURRENCY = 'USD';

/** Smallest and largest top-up, in cents ($5.00 .. $10,000.00). */
export const TOPUP_MIN_CENTS = 500;
export const TOPUP_MAX_CENTS = 1_000_000;

/** Low-balance threshold of a new wallet, in cents ($10.00). */
export const DEFAULT_LOW_BALANCE_THRESHOLD_CENTS = 1000;

/**
 * Kinds of ledger entries: `topup`, `refund` and `dispute_won` credit (amount > 0); `usage`,
 * `topup_refund` (a card refund of a top-up) and `dispute` (a disputed top-up withdrawn) debit (amount < 0).
 */
export type LedgerKind = 'topup' | 'usage' | 'refund' | 'topup_refund' | 'dispute' | 'dispute_won';

/** Ledger kinds that reference a payment provider's object (`payment_id`), credits or debits. */
export type PaymentLedgerKind = Exclude<LedgerKind, 'usage'>;

/**
 * True when a change moved the balance from at or above the threshold to below it: the moment
 * `billing.wallet.low` is emitted, so it fires once per crossing (not on every charge below it).
 * @param before balance before the change, cents
 * @param after balance after it, cents
 */
export function crossedBelow(before: number, after: number, thresholdCents: number): boolean {
  return before >= thresholdCents && after < thresholdCents;
}

/**
 * Field problems of a top-up amount (cents, an integer in TOPUP_MIN_CENTS..TOPUP_MAX_CENTS).
 * @returns a message for field `amountCents`, or null when valid
 */
export function topUpAmountProblem(amountCents: unknown): string | null {
  if (typeof amountCents !== 'number' || !Number.isInteger(amountCents)) return 'must be an integer number of cents';
  if (amountCents < TOPUP_MIN_CENTS || amountCents > TOPUP_MAX_CENTS) return `must be from ${TOPUP_MIN_CENTS} to ${TOPUP_MAX_CENTS} cents`;
  return null;
}

/** Largest auto-recharge threshold, cents ($10,000.00); the smallest is 0. */
export const AUTO_RECHARGE_THRESHOLD_MAX_CENTS = 1_000_000;

/** Auto-recharge settings as `PUT /billing/wallet/auto-recharge` takes them (docs/api-notes.md "Billing": auto-recharge). */
export interface AutoRechargeSettings {
  enabled: boolean;
  /** A usage charge taking the balance below this starts one recharge, cents. */
  thresholdCents: number | null;
  /** What one recharge charges, cents (a top-up's limits). */
  amountCents: number | null;
}

/**
 * Field problems of auto-recharge settings: `enabled` a boolean; with it on, `thresholdCents` an integer in
 * 0..AUTO_RECHARGE_THRESHOLD_MAX_CENTS and `amountCents` a top-up amount ({@link topUpAmountProblem}); each may be
 * null (or absent) only with it off.
 * @returns one problem per field, empty when valid
 */
export function autoRechargeProblems(s: { enabled?: unknown; thresholdCents?: unknown; amountCents?: unknown }): { field: string; message: string }[] {
  const out: { field: string; message: string }[] = [];
  if (typeof s.enabled !== 'boolean') out.push({ field: 'enabled', message: 'must be true or false' });
  const on = s.enabled === true;
  const t = s.thresholdCents;
  if (t === undefined || t === null) {
    if (on) out.push({ field: 'thresholdCents', message: 'is required when enabled' });
  } else if (typeof t !== 'number' || !Number.isInteger(t) || t < 0 || t > AUTO_RECHARGE_THRESHOLD_MAX_CENTS) {
    out.push({ field: 'thresholdCents', message: `must be an integer from 0 to ${AUTO_RECHARGE_THRESHOLD_MAX_CENTS} cents` });
  }
  const a = s.amountCents;
  if (a === undefined || a === null) {
    if (on) out.push({ field: 'amountCents', message: 'is required when enabled' });
  } else {
    const p = topUpAmountProblem(a);
    if (p) out.push({ field: 'amountCents', message: p });
  }
  return out;
}

/**
 * The workflow type and id of an organization's auto-recharge (temporal.config.ts `workflowIds.walletAutoRecharge`,
 * which must agree): written also by the SQL that charges a chat turn's usage (db/repositories/usage.ts).
 */
export const AUTO_RECHARGE_WORKFLOW = 'walletAutoRecharge';
export const autoRechargeWorkflowId = (orgId: string) => `wallet-recharge/${orgId}`;
