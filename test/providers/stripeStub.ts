/**
 * A loopback Stripe for the payments adapter's tests: the paths the `stripe` SDK calls (`/v1/customers`,
 * `/v1/customers/{customer}`, `/v1/payment_intents`, `/v1/payment_intents/{intent}`, `/v1/refunds`), Bearer
 * auth with the secret key and `Stripe-Version` checked on every request, form bodies and query parameters
 * validated against Stripe's OpenAPI document (test/providers/stripeWire.ts) and every answer and event
 * validated against its documented schema. `Idempotency-Key` is honoured as Stripe does: the same key answers
 * the first response again.
 *
 * Webhooks are events signed as Stripe signs them (`Stripe-Signature: t=…,v1=…`, the SDK's
 * `webhooks.generateTestHeaderString` with the endpoint secret), POSTed to `webhookUrl`. With `webhookFirst`,
 * a PaymentIntent's `payment_intent.succeeded` is delivered before the API answers; otherwise it is held
 * until {@link StripeStub.flush}. `slowNext` delays an answer (a timeout when longer than the client's).
 */
import crypto from 'node:crypto';
import Stripe from 'stripe';
import { StubServer, type StubAnswer, type StubRequest } from './stubServer';
import { useEnvVars, useResource } from '../helpers/mocha';
import { decodeStripeForm, stripeDocument, stripeObjectErrors, stripeRequestErrors, stripeResponseErrors, warmStripeValidators } from './stripeWire';

const rid = (prefix: string) => `${prefix}_${crypto.randomBytes(12).toString('hex')}`;
const now = () => Math.floor(Date.now() / 1000);

/** What the next PaymentIntent confirmation does. */
export type IntentOutcome = 'succeeded' | 'processing' | 'card_declined' | 'insufficient_funds' | 'requires_action';

/** The loopback Stripe. */
export class StripeStub extends StubServer {
  readonly customers = new Map<string, any>();
  readonly intents = new Map<string, any>();
  readonly refunds: any[] = [];
  /** Events delivered (or held), in order. */
  readonly events: any[] = [];
  /** Where webhooks go (the API's `/billing/provider-webhooks/stripe`). */
  webhookUrl = '';
  /** Customers created get a default card (`pm_card_visa`); false: no card on file. */
  cardOnFile = true;
  /** The next confirmations' outcome. */
  outcome: IntentOutcome = 'succeeded';
  /** Deliver `payment_intent.succeeded` before answering the confirmation. */
  webhookFirst = false;
  private readonly held: any[] = [];
  private readonly idempotent = new Map<string, StubAnswer>();
  private readonly slow: { match: RegExp; ms: number }[] = [];
  private readonly signer = new Stripe('sk_test_signer');

  constructor(
    readonly secretKey: string,
    readonly webhookSecret: string,
  ) {
    super();
  }

  /** Starts once Stripe's document is readable. @throws Error in one line when it is missing */
  override async start(): Promise<this> {
    stripeDocument();
    warmStripeValidators(
      [
        ['/v1/customers', 'POST', 200],
        ['/v1/customers/{customer}', 'GET', 200],
        ['/v1/payment_intents', 'POST', 200],
        ['/v1/payment_intents', 'POST', 402],
        ['/v1/payment_intents/{intent}', 'GET', 200],
        ['/v1/refunds', 'GET', 200],
      ],
      ['event', 'payment_intent', 'charge', 'refund', 'dispute'],
    );
    return super.start();
  }

  /** The next request matching `METHOD /path` is answered after `ms` (longer than the client's timeout: a timeout). */
  slowNext(match: RegExp, ms: number): void {
    this.slow.push({ match, ms });
  }

  /** The Stripe-Signature header of a payload (optionally with another secret: a forgery). */
  signature(payload: string, secret = this.webhookSecret): string {
    return this.signer.webhooks.generateTestHeaderString({ payload, secret });
  }

  /** Builds an event of `type` around `object` (validated against `event` and the object's schema). */
  event(type: string, object: any, component: string): any {
    const e = { id: rid('evt'), object: 'event', api_version: '2023-08-16', created: now(), data: { object }, livemode: false, pending_webhooks: 1, request: { id: null, idempotency_key: null }, type };
    this.problem(`event ${type}`, stripeObjectErrors('event', e));
    this.problem(`event ${type} data.object`, stripeObjectErrors(component, object));
    return e;
  }

  /** POSTs an event, signed, to `webhookUrl` (after the answers already queued). */
  send(e: any): void {
    this.events.push(e);
    const payload = JSON.stringify(e);
    this.deliver(this.webhookUrl, payload, () => ({ 'content-type': 'application/json; charset=utf-8', 'stripe-signature': this.signature(payload) }));
  }

  /** Delivers the held `payment_intent.succeeded` events. */
  async flush(): Promise<void> {
    for (const e of this.held.splice(0)) this.send(e);
    await this.settled();
  }

  /** Refunds `amount` cents of a PaymentIntent (Dashboard), then sends `charge.refunded` and `refund.created`. */
  refund(intentId: string, amount: number): any {
    const pi = this.intents.get(intentId);
    const r = { id: rid('re'), object: 'refund', amount, balance_transaction: null, charge: pi.latest_charge, created: now(), currency: 'usd', metadata: {}, payment_intent: pi.id, reason: 'requested_by_customer', receipt_number: null, source_transfer_reversal: null, status: 'succeeded', transfer_reversal: null };
    this.refunds.push(r);
    const refunded = this.refunds.filter((x) => x.payment_intent === pi.id).reduce((s, x) => s + x.amount, 0);
    this.send(this.event('charge.refunded', this.charge(pi, refunded), 'charge'));
    this.send(this.event('refund.created', r, 'refund'));
    return r;
  }

  /** Opens a dispute on a PaymentIntent (`charge.dispute.created`); `close('won')` later sends `charge.dispute.closed`. */
  dispute(intentId: string): { dispute: any; close: (status: 'won' | 'lost') => void } {
    const pi = this.intents.get(intentId);
    const d: any = {
      id: rid('dp'),
      object: 'dispute',
      amount: pi.amount,
      balance_transactions: [],
      charge: pi.latest_charge,
      created: now(),
      currency: 'usd',
      evidence: {},
      evidence_details: { due_by: now() + 7 * 86_400, has_evidence: false, past_due: false, submission_count: 0 },
      is_charge_refundable: false,
      livemode: false,
      metadata: {},
      payment_intent: pi.id,
      reason: 'fraudulent',
      status: 'needs_response',
    };
    this.send(this.event('charge.dispute.created', d, 'dispute'));
    return {
      dispute: d,
      close: (status) => this.send(this.event('charge.dispute.closed', { ...d, status }, 'dispute')),
    };
  }

  private charge(pi: any, refunded: number): any {
    return {
      id: pi.latest_charge,
      object: 'charge',
      amount: pi.amount,
      amount_captured: pi.amount,
      amount_refunded: refunded,
      billing_details: { address: null, email: null, name: null, phone: null },
      captured: true,
      created: pi.created,
      currency: 'usd',
      customer: pi.customer,
      disputed: false,
      livemode: false,
      metadata: {},
      paid: true,
      payment_intent: pi.id,
      refunded: refunded >= pi.amount,
      status: 'succeeded',
    };
  }

  private answer(req: StubRequest, template: string, status: number, body: unknown): StubAnswer {
    this.problem(`${req.method} ${req.path} response`, stripeResponseErrors(template, req.method, status, body));
    return { status, body, headers: { 'request-id': rid('req') } };
  }

  private error(req: StubRequest, template: string, status: number, error: Record<string, unknown>): StubAnswer {
    return this.answer(req, template, status, { error });
  }

  protected async handle(req: StubRequest): Promise<StubAnswer> {
    const s = this.slow.findIndex((x) => x.match.test(`${req.method} ${req.path}`));
    if (s >= 0) await new Promise((r) => setTimeout(r, this.slow.splice(s, 1)[0].ms));
    if (req.headers.authorization !== `Bearer ${this.secretKey}`) return { status: 401, body: { error: { type: 'invalid_request_error', message: 'Invalid API Key provided' } } };
    if (!req.headers['stripe-version']) this.problem(req, 'no Stripe-Version header');
    const form = req.method === 'POST' ? decodeStripeForm(req.raw) : {};
    if (req.method === 'POST' && !/^application\/x-www-form-urlencoded/.test(String(req.headers['content-type']))) this.problem(req, `content-type ${req.headers['content-type']}`);
    const key = req.headers['idempotency-key'];
    const idemKey = typeof key === 'string' ? `${req.method} ${req.path} ${key}` : null;
    if (idemKey && this.idempotent.has(idemKey)) return this.idempotent.get(idemKey)!;
    const a = await this.route(req, form);
    if (idemKey && a.status < 500) this.idempotent.set(idemKey, a);
    return a;
  }

  private async route(req: StubRequest, form: any): Promise<StubAnswer> {
    const m = (re: RegExp) => re.exec(`${req.method} ${req.path}`);
    let g: RegExpExecArray | null;
    if (m(/^POST \/v1\/customers$/)) {
      this.problem(req, stripeRequestErrors('/v1/customers', 'POST', form, req.query));
      const c = { id: rid('cus'), object: 'customer', created: now(), livemode: false, description: form.description ?? null, metadata: form.metadata ?? {}, invoice_settings: { custom_fields: null, default_payment_method: this.cardOnFile ? 'pm_card_visa' : null, footer: null, rendering_options: null } };
      this.customers.set(c.id, c);
      return this.answer(req, '/v1/customers', 200, c);
    }
    if ((g = m(/^GET \/v1\/customers\/([^/]+)$/))) {
      this.problem(req, stripeRequestErrors('/v1/customers/{customer}', 'GET', form, req.query));
      const c = this.customers.get(g[1]);
      if (!c) return this.error(req, '/v1/customers/{customer}', 404, { type: 'invalid_request_error', code: 'resource_missing', message: `No such customer: '${g[1]}'`, param: 'id' });
      return this.answer(req, '/v1/customers/{customer}', 200, c);
    }
    if (m(/^POST \/v1\/payment_intents$/)) return this.confirm(req, form);
    if ((g = m(/^GET \/v1\/payment_intents\/([^/]+)$/))) {
      this.problem(req, stripeRequestErrors('/v1/payment_intents/{intent}', 'GET', form, req.query));
      const pi = this.intents.get(g[1]);
      if (!pi) return this.error(req, '/v1/payment_intents/{intent}', 404, { type: 'invalid_request_error', code: 'resource_missing', message: `No such payment_intent: '${g[1]}'` });
      return this.answer(req, '/v1/payment_intents/{intent}', 200, pi);
    }
    if (m(/^GET \/v1\/refunds$/)) {
      this.problem(req, stripeRequestErrors('/v1/refunds', 'GET', form, req.query));
      const pi = req.query.get('payment_intent');
      const data = this.refunds.filter((r) => !pi || r.payment_intent === pi);
      return this.answer(req, '/v1/refunds', 200, { object: 'list', data, has_more: false, url: '/v1/refunds' });
    }
    this.problem(req, 'not a path the adapter should call');
    return { status: 404, body: { error: { type: 'invalid_request_error', message: `Unrecognized request URL (${req.method}: ${req.path})` } } };
  }

  private async confirm(req: StubRequest, form: any): Promise<StubAnswer> {
    const T = '/v1/payment_intents';
    this.problem(req, stripeRequestErrors(T, 'POST', form, req.query));
    if (!req.headers['idempotency-key']) this.problem(req, 'a PaymentIntent was created without an Idempotency-Key');
    const customer = this.customers.get(form.customer);
    if (!customer) return this.error(req, T, 400, { type: 'invalid_request_error', code: 'resource_missing', message: `No such customer: '${form.customer}'`, param: 'customer' });
    const status = this.outcome === 'succeeded' ? 'succeeded' : this.outcome === 'processing' ? 'processing' : this.outcome === 'requires_action' ? 'requires_action' : 'requires_payment_method';
    const amount = Number(form.amount);
    const pi = {
      id: rid('pi'),
      object: 'payment_intent',
      amount,
      amount_capturable: 0,
      amount_received: status === 'succeeded' ? amount : 0,
      capture_method: 'automatic',
      client_secret: `${rid('pi')}_secret_${rid('x')}`,
      confirmation_method: 'automatic',
      created: now(),
      currency: form.currency,
      customer: form.customer,
      description: form.description ?? null,
      latest_charge: rid('ch'),
      livemode: false,
      metadata: form.metadata ?? {},
      payment_method: form.payment_method,
      payment_method_types: ['card'],
      status,
    };
    this.intents.set(pi.id, pi);
    if (this.outcome === 'card_declined' || this.outcome === 'insufficient_funds') {
      return this.error(req, T, 402, { type: 'card_error', code: 'card_declined', decline_code: this.outcome === 'insufficient_funds' ? 'insufficient_funds' : 'generic_decline', message: 'Your card was declined.', payment_intent: pi });
    }
    if (status === 'succeeded') {
      const e = this.event('payment_intent.succeeded', pi, 'payment_intent');
      if (this.webhookFirst) {
        this.send(e);
        await this.settled();
      } else this.held.push(e);
    }
    return this.answer(req, T, 200, pi);
  }
}

/**
 * A Stripe stub for the enclosing mocha suite, configured as the payments provider (PAYMENTS_PROVIDER=stripe with its
 * secret key, webhook secret, API base and a 1 s timeout) and delivering its webhooks to `webhookUrl()`; before each
 * test its payments succeed, answer before their webhook and find a card on file; after each, no wire problem.
 */
export function useStripeStub(webhookUrl: () => string): StripeStub {
  const secretKey = `sk_test_${crypto.randomBytes(12).toString('hex')}`;
  const webhookSecret = `whsec_${crypto.randomBytes(16).toString('hex')}`;
  const stub = useResource('Stripe stub', () => new StripeStub(secretKey, webhookSecret).start(), (s) => s.stop());
  useEnvVars(() => ({ PAYMENTS_PROVIDER: 'stripe', STRIPE_SECRET_KEY: secretKey, STRIPE_WEBHOOK_SECRET: webhookSecret, STRIPE_API_BASE: stub.baseUrl, STRIPE_TIMEOUT_MS: '1000' }));
  beforeEach(() => {
    stub.webhookUrl = webhookUrl(); // read once every before() ran (the API's address)
    stub.outcome = 'succeeded';
    stub.webhookFirst = false;
    stub.cardOnFile = true;
  });
  afterEach(() => {
    if (stub.problems.length) throw new Error(`Stripe stub saw wire problems:\n${stub.problems.join('\n')}`);
  });
  return stub;
}
