/**
 * The payments interface (DESIGN.md "Providers": `payments`, wallet top-ups; docs/api-notes.md "Billing"). The
 * sandbox is the default and the only adapter built in: a Stripe adapter needs the official `stripe`
 * package, which is not installed, so `PAYMENTS_PROVIDER=stripe` is refused at start for now.
 */
import { SandboxPayments } from './sandbox';

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
}

/** A settled charge. */
export interface PaymentResult {
  /** The provider's id of the payment (the ledger stores it once). */
  paymentId: string;
  amountCents: number;
}

/** Why a provider refused or failed a charge. */
export type PaymentFailureCode = 'card_declined' | 'insufficient_funds' | 'provider_unavailable';

/** A charge that did not settle: `card_declined` / `insufficient_funds` (402), `provider_unavailable` (502). */
export class PaymentError extends Error {
  constructor(
    readonly code: PaymentFailureCode,
    message: string,
  ) {
    super(message);
    this.name = 'PaymentError';
  }
}

/** A payments adapter. */
export interface PaymentsAdapter {
  readonly provider: string;
  /** Charges the organization's payment method. @throws PaymentError */
  charge(orgId: string, req: PaymentRequest): Promise<PaymentResult>;
}

/**
 * The configured payments provider (PAYMENTS_PROVIDER, default `sandbox`).
 * @throws Error for any other name (no real adapter ships yet)
 */
export function createPayments(env: NodeJS.ProcessEnv = process.env): PaymentsAdapter {
  const name = env.PAYMENTS_PROVIDER || 'sandbox';
  if (name !== 'sandbox') throw new Error(`PAYMENTS_PROVIDER=${name} is not supported; only "sandbox" is built in (a Stripe adapter needs the stripe package)`);
  return new SandboxPayments();
}
