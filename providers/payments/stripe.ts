/**
 * The Stripe payments adapter on the official `stripe` package (docs/going-live.md "Stripe"; Stripe API
 * reference: PaymentIntents, Customers, Refunds, Disputes, Events; "Idempotent requests"; "Check the webhook
 * signatures").
 *
 * - A top-up is one PaymentIntent confirmed off-session on the organization's customer with the customer's
 *   default payment method (`invoice_settings.default_payment_method`), `metadata.org_id` and
 *   `metadata.purpose = wallet_topup`, sent with the Stripe `Idempotency-Key` `topup:{orgId}:{key}` (the
 *   request's own key), so a retried top-up answers the same PaymentIntent. The SDK's own network retries are
 *   off: a retry is the caller's, with the same key.
 * - Webhooks are verified with `stripe.webhooks.constructEvent` over the raw body and the `Stripe-Signature`
 *   header with STRIPE_WEBHOOK_SECRET (300 s tolerance). `payment_intent.succeeded` credits; refunds
 *   (`charge.refunded`, `refund.created`, `refund.updated`, `charge.refund.updated`) are re-read from Stripe
 *   (`GET /v1/refunds?payment_intent=`), every succeeded one a debit; `charge.dispute.created` /
 *   `charge.dispute.funds_withdrawn` debit the disputed amount, `charge.dispute.closed` (won) and
 *   `charge.dispute.funds_reinstated` credit it back. A refund or dispute names its PaymentIntent, which is
 *   retrieved for the organization (`metadata.org_id`); payments without `purpose: wallet_topup` are not ours.
 */
import type Stripe from 'stripe';
import { lazyModule } from '../lazyModule';
import { PaymentError, PaymentWebhookSignatureError, type PaymentEvent, type PaymentRequest, type PaymentResult, type PaymentsAdapter } from './index';

/** The `stripe` SDK, loaded when the adapter first needs it (../lazyModule.ts). */
const stripeSdk = lazyModule(() => require('stripe') as typeof import('stripe'), 'stripe');

/** Stripe's settings (docs/configuration.md). */
export interface StripeSettings {
  /** STRIPE_SECRET_KEY: `sk_live_…`, `sk_test_…` or a restricted `rk_…` key. */
  secretKey: string;
  /** STRIPE_WEBHOOK_SECRET: the endpoint's signing secret, `whsec_…`. */
  webhookSecret: string;
  /** STRIPE_API_BASE: another origin for the API (a loopback stub in tests); default Stripe's. */
  apiBase: string | null;
  /** STRIPE_TIMEOUT_MS: a request's timeout, ms (default 30,000). */
  timeoutMs: number;
}

/** `metadata.purpose` of our PaymentIntents. */
export const TOPUP_PURPOSE = 'wallet_topup';

/** Webhook signature tolerance, seconds (Stripe's default: five minutes). */
export const STRIPE_WEBHOOK_TOLERANCE_S = 300;

/**
 * Reads the Stripe settings.
 * @throws Error naming STRIPE_SECRET_KEY, STRIPE_WEBHOOK_SECRET, STRIPE_API_BASE or STRIPE_TIMEOUT_MS when missing or malformed
 */
export function loadStripeSettings(env: NodeJS.ProcessEnv = process.env): StripeSettings {
  const secretKey = env.STRIPE_SECRET_KEY ?? '';
  if (!/^(sk|rk)_(live|test)_\S+$/.test(secretKey)) throw new Error('STRIPE_SECRET_KEY must be a Stripe secret key (sk_live_…, sk_test_… or rk_…) when PAYMENTS_PROVIDER=stripe');
  const webhookSecret = env.STRIPE_WEBHOOK_SECRET ?? '';
  if (!/^whsec_\S+$/.test(webhookSecret)) throw new Error("STRIPE_WEBHOOK_SECRET must be the webhook endpoint's signing secret (whsec_…) when PAYMENTS_PROVIDER=stripe");
  const apiBase = env.STRIPE_API_BASE || null;
  if (apiBase && !/^https?:\/\/[^/]+\/?$/.test(apiBase)) throw new Error('STRIPE_API_BASE must be an origin, e.g. http://127.0.0.1:12111');
  const timeoutMs = env.STRIPE_TIMEOUT_MS ? Number(env.STRIPE_TIMEOUT_MS) : 30_000;
  if (!Number.isInteger(timeoutMs) || timeoutMs < 100 || timeoutMs > 120_000) throw new Error('STRIPE_TIMEOUT_MS must be an integer from 100 to 120000');
  return { secretKey, webhookSecret, apiBase, timeoutMs };
}

/** The `stripe` client of these settings (network retries off, telemetry off). */
export function stripeClient(s: StripeSettings): Stripe {
  const base = s.apiBase ? new URL(s.apiBase) : null;
  return new (stripeSdk())(s.secretKey, {
    maxNetworkRetries: 0,
    timeout: s.timeoutMs,
    telemetry: false,
    ...(base ? { host: base.hostname, port: base.port || (base.protocol === 'https:' ? 443 : 80), protocol: base.protocol.replace(':', '') as 'http' | 'https' } : {}),
  });
}

const idOf = (v: string | { id: string } | null | undefined): string | null => (typeof v === 'string' ? v : (v?.id ?? null));

/** A Stripe error as a PaymentError (card errors 402, the rest `provider_unavailable`). */
function paymentError(err: unknown): PaymentError {
  const errors = stripeSdk.loaded()?.errors;
  if (errors && err instanceof errors.StripeCardError) {
    if (err.code === 'authentication_required') return new PaymentError('authentication_required', `Stripe: ${err.message}`);
    if (err.decline_code === 'insufficient_funds') return new PaymentError('insufficient_funds', `Stripe: ${err.message}`);
    return new PaymentError('card_declined', `Stripe: ${err.message}`);
  }
  if (errors && err instanceof errors.StripeError) return new PaymentError('provider_unavailable', `Stripe answered ${err.statusCode ?? 'no status'} (${err.type}): ${err.message}`);
  return new PaymentError('provider_unavailable', `Stripe could not be reached: ${err instanceof Error ? err.message : String(err)}`);
}

/** The Stripe adapter. */
export class StripePayments implements PaymentsAdapter {
  readonly provider = 'stripe';
  readonly needsCustomer = true;
  readonly stripe: Stripe;

  constructor(private readonly settings: StripeSettings) {
    this.stripe = stripeClient(settings);
  }

  /** Creates the organization's customer (Stripe `Idempotency-Key` `customer:{orgId}`). @throws PaymentError `provider_unavailable` */
  async createCustomer(orgId: string): Promise<string> {
    try {
      const c = await this.stripe.customers.create({ description: `Organization ${orgId}`, metadata: { org_id: orgId } }, { idempotencyKey: `customer:${orgId}` });
      return c.id;
    } catch (err) {
      throw paymentError(err);
    }
  }

  /**
   * Confirms an off-session PaymentIntent with the customer's default payment method.
   * @throws PaymentError `payment_method_required` (no default card), `card_declined`, `insufficient_funds`,
   *   `authentication_required` (status `requires_action`), `provider_unavailable` (5xx, 429, timeout, refused key)
   */
  async charge(orgId: string, req: PaymentRequest): Promise<PaymentResult> {
    if (!req.customerId) throw new PaymentError('payment_method_required', 'No Stripe customer for this organization');
    let intent: Stripe.PaymentIntent;
    try {
      const customer = await this.stripe.customers.retrieve(req.customerId);
      const method = customer.deleted ? null : idOf(customer.invoice_settings?.default_payment_method);
      if (!method) throw new PaymentError('payment_method_required', `Stripe customer ${req.customerId} has no default payment method: add a card to it (Dashboard or Customer Portal)`);
      intent = await this.stripe.paymentIntents.create(
        {
          amount: req.amountCents,
          currency: req.currency.toLowerCase(),
          customer: req.customerId,
          payment_method: method,
          off_session: true,
          confirm: true,
          description: req.description ?? 'Wallet top-up',
          metadata: { org_id: orgId, purpose: TOPUP_PURPOSE },
        },
        { idempotencyKey: `topup:${orgId}:${req.idempotencyKey}` },
      );
    } catch (err) {
      throw err instanceof PaymentError ? err : paymentError(err);
    }
    if (intent.status === 'succeeded') return { paymentId: intent.id, amountCents: intent.amount_received || intent.amount, status: 'succeeded' };
    if (intent.status === 'processing') return { paymentId: intent.id, amountCents: intent.amount, status: 'processing' };
    if (intent.status === 'requires_action') throw new PaymentError('authentication_required', `Stripe: the bank asks for the cardholder's authentication (PaymentIntent ${intent.id})`);
    throw new PaymentError('card_declined', `Stripe: PaymentIntent ${intent.id} is ${intent.status}`);
  }

  /**
   * Verifies the `Stripe-Signature` of a webhook and maps its event (see the module comment).
   * @throws PaymentWebhookSignatureError; PaymentError `provider_unavailable` when a look-up failed
   */
  async parseWebhook(raw: string, headers: Record<string, string | string[] | undefined>): Promise<{ eventId: string; eventType: string; events: PaymentEvent[] }> {
    const h = headers['stripe-signature'];
    const signature = Array.isArray(h) ? h[0] : h;
    if (!signature) throw new PaymentWebhookSignatureError('The Stripe-Signature header is missing');
    let event: Stripe.Event;
    try {
      event = this.stripe.webhooks.constructEvent(raw, signature, this.settings.webhookSecret, STRIPE_WEBHOOK_TOLERANCE_S);
    } catch (err) {
      throw new PaymentWebhookSignatureError(`The Stripe-Signature does not verify: ${err instanceof Error ? err.message : String(err)}`);
    }
    const done = (events: PaymentEvent[]) => ({ eventId: event.id, eventType: event.type, events });
    try {
      switch (event.type) {
        case 'payment_intent.succeeded': {
          const pi = event.data.object;
          const orgId = this.orgOf(pi);
          return done(orgId ? [{ type: 'payment_succeeded', orgId, paymentId: pi.id, amountCents: pi.amount_received || pi.amount, description: pi.description ?? null }] : []);
        }
        case 'charge.refunded':
        case 'refund.created':
        case 'refund.updated':
        case 'charge.refund.updated':
          return done(await this.refundsOf(idOf(event.data.object.payment_intent)));
        case 'charge.dispute.created':
        case 'charge.dispute.funds_withdrawn':
        case 'charge.dispute.closed':
        case 'charge.dispute.funds_reinstated': {
          const d = event.data.object;
          const orgId = await this.orgOfIntent(idOf(d.payment_intent));
          if (!orgId) return done([]);
          const paymentId = idOf(d.payment_intent)!;
          if (event.type === 'charge.dispute.closed' || event.type === 'charge.dispute.funds_reinstated') {
            return done(d.status === 'won' || event.type === 'charge.dispute.funds_reinstated' ? [{ type: 'dispute_won', orgId, paymentId, objectId: d.id, amountCents: d.amount }] : []);
          }
          return done([{ type: 'dispute_opened', orgId, paymentId, objectId: d.id, amountCents: d.amount, reason: String(d.reason) }]);
        }
        default:
          return done([]);
      }
    } catch (err) {
      throw err instanceof PaymentError ? err : paymentError(err);
    }
  }

  /** The organization of one of our PaymentIntents (null for another integration's payment). */
  private orgOf(pi: Stripe.PaymentIntent): string | null {
    return pi.metadata?.purpose === TOPUP_PURPOSE && pi.metadata.org_id ? pi.metadata.org_id : null;
  }

  private async orgOfIntent(paymentIntentId: string | null): Promise<string | null> {
    if (!paymentIntentId) return null;
    return this.orgOf(await this.stripe.paymentIntents.retrieve(paymentIntentId));
  }

  /** Every succeeded refund of one of our PaymentIntents (Stripe lists at most 100 per page; all pages are read). */
  private async refundsOf(paymentIntentId: string | null): Promise<PaymentEvent[]> {
    const orgId = await this.orgOfIntent(paymentIntentId);
    if (!orgId || !paymentIntentId) return [];
    const out: PaymentEvent[] = [];
    for await (const r of this.stripe.refunds.list({ payment_intent: paymentIntentId, limit: 100 })) {
      if (r.status === 'succeeded') out.push({ type: 'refund_succeeded', orgId, paymentId: paymentIntentId, objectId: r.id, amountCents: r.amount });
    }
    return out;
  }
}
