/**
 * The sandbox payments adapter (docs/api-notes.md "Billing": magic amounts, as payment providers' test modes
 * choose outcomes by test card). Outcomes by the amount's last two digits (cents):
 * `02` → `card_declined`, `03` → `insufficient_funds`, `09` → `provider_unavailable`; anything else
 * settles at once. The payment id is derived from the organization and the idempotency key, so a retried
 * charge answers the same payment. It needs no customer and sends no webhooks.
 */
import crypto from 'node:crypto';
import { PaymentError, PaymentWebhookSignatureError, type PaymentRequest, type PaymentResult, type PaymentsAdapter } from './index';

/** Magic last two digits of an amount in cents and what they do. */
export const SANDBOX_PAYMENT_MAGIC = { declined: 2, insufficientFunds: 3, unavailable: 9 } as const;

/** The deterministic sandbox payments adapter. */
export class SandboxPayments implements PaymentsAdapter {
  readonly provider = 'sandbox';
  readonly needsCustomer = false;

  async createCustomer(orgId: string): Promise<string> {
    return `cus_sbx_${orgId}`;
  }

  /** @throws PaymentError for the magic amounts */
  async charge(orgId: string, req: PaymentRequest): Promise<PaymentResult> {
    const tail = req.amountCents % 100;
    if (tail === SANDBOX_PAYMENT_MAGIC.declined) throw new PaymentError('card_declined', 'The card was declined (sandbox: amount ending in 02)');
    if (tail === SANDBOX_PAYMENT_MAGIC.insufficientFunds) throw new PaymentError('insufficient_funds', 'The card has insufficient funds (sandbox: amount ending in 03)');
    if (tail === SANDBOX_PAYMENT_MAGIC.unavailable) throw new PaymentError('provider_unavailable', 'The payment provider is unavailable (sandbox: amount ending in 09)');
    const id = crypto.createHash('sha256').update(`${orgId}\n${req.idempotencyKey}`).digest('base64url').slice(0, 24);
    return { paymentId: `pay_sbx_${id}`, amountCents: req.amountCents, status: 'succeeded' };
  }

  /** @throws PaymentWebhookSignatureError always: the sandbox settles at once and sends no webhooks */
  async parseWebhook(): Promise<never> {
    throw new PaymentWebhookSignatureError('The sandbox payments provider sends no webhooks (PAYMENTS_PROVIDER=sandbox)');
  }
}
