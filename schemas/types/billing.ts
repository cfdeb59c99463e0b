/**
 * Billing request and response types (spec "Billing": `GET /billing/wallet`, `POST /billing/wallet/topup`,
 * `GET /billing/usage`, `GET /billing/invoices`; payloads "not shown", decided in the docs/api-notes.md "Billing"
 * notes). Amounts are US cents.
 */

/** The organization's wallet. */
export interface Wallet {
  /** Balance in US cents: the sum of the ledger (negative when usage exceeded the credit). */
  balanceCents: number;
  /** Always `USD`. */
  currency: string;
  /** `billing.wallet.low` fires when a charge takes the balance below this, US cents. */
  lowBalanceThresholdCents: number;
  /** True while the balance is below the threshold. */
  low: boolean;
  /** Time of the last ledger entry. @format date-time */
  updatedAt: string | null;
  /** Auto-recharge (an addition to the spec; `PUT /billing/wallet/auto-recharge`). */
  autoRecharge: WalletAutoRecharge;
}

/** Auto-recharge settings as the wallet shows them. */
export interface WalletAutoRecharge {
  enabled: boolean;
  /** A usage charge taking the balance below this starts one recharge, US cents. */
  thresholdCents: number | null;
  /** What one recharge charges the saved payment method, US cents. */
  amountCents: number | null;
  /** Why the service turned it off (a declined card: `card_declined: …`), null otherwise. */
  disabledReason: string | null;
}

/**
 * `PUT /billing/wallet/auto-recharge` (billing:write; an addition to the spec). With `enabled`, `thresholdCents`
 * (0..1,000,000) and `amountCents` (500..1,000,000) are required.
 */
export interface WalletAutoRechargeRequest {
  enabled: boolean;
  thresholdCents?: number | null;
  amountCents?: number | null;
}

/** `POST /billing/wallet/topup` (an `Idempotency-Key` header is required). */
export interface WalletTopUpRequest {
  /**
   * US cents, 500..1,000,000. Sandbox payments: an amount ending in 02 is declined, 03 has insufficient
   * funds, 09 finds the provider unavailable.
   */
  amountCents: number;
  /** @maxLength 200 */
  description?: string;
}

/** One entry of the wallet's append-only ledger. */
export interface LedgerEntryView {
  /** `led_…` */
  id: string;
  /**
   * `topup`, `refund` and `dispute_won` credit; `usage`, `topup_refund` (a card refund of a top-up) and
   * `dispute` (a disputed top-up withdrawn) debit.
   */
  kind: 'topup' | 'usage' | 'refund' | 'topup_refund' | 'dispute' | 'dispute_won';
  /** Signed US cents. */
  amountCents: number;
  /** Balance right after this entry, US cents. */
  balanceAfterCents: number;
  usageEntryId: string | null;
  /** The payment provider's id of a top-up, refund or dispute (Stripe `pi_…`, `re_…`, `dp_…`). */
  paymentId: string | null;
  description: string | null;
  /** @format date-time */
  createdAt: string;
}

/** The payment behind a top-up, at the payments provider. */
export interface TopUpPayment {
  /** The provider's id (sandbox `pay_sbx_…`, Stripe `pi_…`). */
  id: string;
  /** `succeeded`: credited; `processing`: credited once the provider reports it succeeded (its webhook). */
  status: 'succeeded' | 'processing';
}

/** Answer of a top-up: the credit (null while the payment is processing) and the wallet after it. */
export interface WalletTopUpResult {
  entry: LedgerEntryView | null;
  wallet: Wallet;
  payment: TopUpPayment;
}

/** Answer to a payments provider's webhook (`POST /billing/provider-webhooks/{provider}`). */
export interface PaymentWebhookResult {
  received: true;
  /** The provider's event id was seen before: nothing was recorded. */
  duplicate: boolean;
  /** Ledger entries this delivery wrote (top-up credits, refund and dispute debits). */
  recorded: number;
}

/** One usage entry (`GET /billing/usage`). */
export interface UsageEntryView {
  /** `use_…` */
  id: string;
  /** e.g. `10dlc_brand_registration`, `phone_number_purchase`, `conversation_message`, `llm_tokens`. */
  kind: string;
  quantity: number;
  /** Price of one unit, US cents (may be fractional). */
  unitPriceCents: number;
  /** Amount charged, whole US cents. */
  amountCents: number;
  /** The conversation, number or 10DLC registration the entry is about. */
  resourceId: string | null;
  /** @format date-time */
  createdAt: string;
}

/** Usage of one kind on one UTC day (`GET /billing/usage?groupBy=day`). */
export interface UsageDayView {
  /** `yyyy-mm-dd`, UTC. */
  day: string;
  kind: string;
  quantity: number;
  amountCents: number;
  /** Number of usage entries. */
  entries: number;
}

/** A page of usage entries, or (with `groupBy=day`) every day-and-kind group of the range (`nextCursor` null). */
export interface UsagePage {
  items: Array<UsageEntryView | UsageDayView>;
  nextCursor: string | null;
  hasMore: boolean;
}

/** One line of an invoice: the usage of one kind in the month. */
export interface InvoiceLine {
  kind: string;
  quantity: number;
  /** The unit price when every entry had the same one, else null. */
  unitPriceCents: number | null;
  amountCents: number;
  /** Number of usage entries. */
  entries: number;
}

/** A monthly invoice: `open` (the running total of a month not closed yet) or `closed` (immutable). */
export interface Invoice {
  /** `inv_…` once closed; null while open. */
  id: string | null;
  /** `yyyy-mm` (UTC month). */
  period: string;
  status: 'open' | 'closed';
  /** @format date-time */
  periodStart: string;
  /** @format date-time */
  periodEnd: string;
  currency: string;
  lines: InvoiceLine[];
  totalCents: number;
  /** @format date-time */
  closedAt: string | null;
}

/** A page of invoices, newest month first (the open months lead the first page). */
export interface InvoicePage {
  items: Invoice[];
  nextCursor: string | null;
  hasMore: boolean;
}
