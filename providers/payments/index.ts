/**
 * The payments interface (DESIGN.md "Providers": `payments`, wallet top-ups; docs/api-notes.md "Billing";
 * docs/going-live.md "Stripe"). The sandbox is the default; `PAYMENTS_PROVIDER=stripe` selects the adapter on
 * the official `stripe` package (providers/payments/stripe.ts).
 */
import { SandboxPayments } from './sandbox';
import { StripePayments, loadStripeSettings } from './stripe';

/** A charge to make. */
export interface PaymentRequest {
  /** Whole US cents, > 0. */
  amountCents: number;
  currency: 'USD';
  /**
   * The caller's idempotency key (the request's `Idempotency-Key`, scoped by organization): the same key
   * never charges twice and answers the first result, as payment providers' idempotent requests do.
   */
  idempotencyKey: string;
  description?: string;
  /** The organization's customer at the provider ({@link PaymentsAdapter.createCustomer}); null for the sandbox. */
  customerId?: string | null;
}

/** A charge the provider accepted. */
export interface PaymentResult {
  /** The provider's id of the payment (the ledger stores it once). */
  paymentId: string;
  amountCents: number;
  /** `succeeded`: settled, credit it now; `processing`: credited when the provider's webhook says it succeeded. */
  status: 'succeeded' | 'processing';
}

/** Why a provider refused or failed a charge. */
export type PaymentFailureCode = 'card_declined' | 'insufficient_funds' | 'authentication_required' | 'payment_method_required' | 'provider_unavailable';

/**
 * A charge that did not settle: `card_declined`, `insufficient_funds`, `authentication_required` (the bank
 * wants the cardholder present), `payment_method_required` (no card on file) → 402; `provider_unavailable` → 502.
 */
export class PaymentError extends Error {
  constructor(
    readonly code: PaymentFailureCode,
    message: string,
  ) {
    super(message);
    this.name = 'PaymentError';
  }
}

/**
 * What a verified provider webhook means for the ledger (amounts in whole US cents, positive): a top-up
 * that succeeded, a refund of one that succeeded, a dispute opened (funds withdrawn) or won (reinstated).
 * `paymentId` is the top-up's payment; `objectId` the refund or dispute.
 */
export type PaymentEvent =
  | { type: 'payment_succeeded'; orgId: string; paymentId: string; amountCents: number; description: string | null }
  | { type: 'refund_succeeded'; orgId: string; paymentId: string; objectId: string; amountCents: number }
  | { type: 'dispute_opened'; orgId: string; paymentId: string; objectId: string; amountCents: number; reason: string }
  | { type: 'dispute_won'; orgId: string; paymentId: string; objectId: string; amountCents: number };

/** A webhook whose signature does not verify (forged, tampered, stale or unsigned): nothing is applied. */
export class PaymentWebhookSignatureError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'PaymentWebhookSignatureError';
  }
}

/** A payments adapter. */
export interface PaymentsAdapter {
  readonly provider: string;
  /** True when charges need {@link PaymentRequest.customerId} (a customer at the provider). */
  readonly needsCustomer: boolean;
  /** Creates the organization's customer at the provider. @returns its id @throws PaymentError `provider_unavailable` */
  createCustomer(orgId: string): Promise<string>;
  /** Charges the organization's payment method. @throws PaymentError */
  charge(orgId: string, req: PaymentRequest): Promise<PaymentResult>;
  /**
   * Verifies a webhook on its raw body and headers and says what it means for the ledger (an event of
   * no concern, or for another integration on the same account, means nothing: []).
   * @returns the event id (deduplication) and its ledger events
   * @throws PaymentWebhookSignatureError when the signature does not verify; PaymentError
   *   `provider_unavailable` when a look-up the event needs failed (the provider re-delivers)
   */
  parseWebhook(raw: string, headers: Record<string, string | string[] | undefined>): Promise<{ eventId: string; eventType: string; events: PaymentEvent[] }>;
}

/**
 * The configured payments provider (PAYMENTS_PROVIDER, default `sandbox`; `stripe` with STRIPE_SECRET_KEY and
 * STRIPE_WEBHOOK_SECRET).
 * @throws Error naming the setting for an unknown provider or a missing Stripe setting
 */
export function createPayments(env: NodeJS.ProcessEnv = process.env): PaymentsAdapter {
  const name = env.PAYMENTS_PROVIDER || 'sandbox';
  if (name === 'sandbox') return new SandboxPayments();
  if (name === 'stripe') return new StripePayments(loadStripeSettings(env));
  throw new Error(`PAYMENTS_PROVIDER=${name} is not supported; use "sandbox" or "stripe"`);
}
