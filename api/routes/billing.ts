/**
 * Billing handlers (spec "Billing": `GET /billing/wallet`, `POST /billing/wallet/topup`,
 * `GET /billing/usage`, `GET /billing/invoices`; scopes billing:read / billing:write; payloads "not
 * shown", decided in the docs/api-notes.md "Billing" notes). Amounts are US cents; months are UTC.
 */
import type { Handler, AppContext } from '../context';
import { ApiError, validationError } from '../../domain/errors';
import { validateBody } from '../../domain/validation';
import { autoRechargeProblems, topUpAmountProblem, WALLET_CURRENCY } from '../../domain/billing/wallet';
import { periodOf, previousPeriod } from '../../domain/billing/periods';
import { closedInvoicesBefore, getClosedInvoice, getWallet, openInvoice, setAutoRecharge, type LedgerEntry, type WalletRecord } from '../../db/repositories/billing';
import { pageUsage, usageByDay, type UsageEntry, type UsageFilter } from '../../db/repositories/usage';
import { createPayments, PaymentError, PaymentWebhookSignatureError } from '../../providers/payments';
import { applyPaymentWebhook, chargeTopUp, creditTopUp } from '../../services/billing/payments';
import { encodeCursor } from '../../db/pagination';
import { decodeCursorOr400, orgOf, pageParams, paged } from '../http';
import type { Invoice, LedgerEntryView, PaymentWebhookResult, UsageEntryView, Wallet, WalletAutoRechargeRequest, WalletTopUpRequest, WalletTopUpResult } from '../../schemas/types/billing';

/** Longest range of `GET /billing/usage?groupBy=day`, days. */
export const USAGE_GROUP_MAX_DAYS = 366;

const ISO = /^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d{1,6})?)?(Z|[+-]\d{2}:\d{2}))?$/;

function one(ctx: AppContext, name: string): string | undefined {
  const v = ctx.query[name];
  return (Array.isArray(v) ? v[0] : v) || undefined;
}

/** An ISO 8601 date or date-time query parameter. @throws ApiError 400 naming it */
function instantParam(ctx: AppContext, name: string): Date | undefined {
  const raw = one(ctx, name);
  if (raw === undefined) return undefined;
  const t = ISO.test(raw) ? Date.parse(raw) : NaN;
  if (Number.isNaN(t)) throw validationError([{ field: name, message: 'must be an ISO 8601 date or date-time, e.g. 2026-11-01 or 2026-11-01T00:00:00Z' }]);
  return new Date(t);
}

/** The wallet as the API shows it. */
function walletView(w: WalletRecord): Wallet {
  return { balanceCents: w.balanceCents, currency: w.currency, lowBalanceThresholdCents: w.lowBalanceThresholdCents, low: w.balanceCents < w.lowBalanceThresholdCents, updatedAt: w.updatedAt, autoRecharge: w.autoRecharge };
}

function ledgerView(e: LedgerEntry): LedgerEntryView {
  return { id: e.id, kind: e.kind, amountCents: e.amountCents, balanceAfterCents: e.balanceAfterCents, usageEntryId: e.usageEntryId, paymentId: e.paymentId, description: e.description, createdAt: e.createdAt };
}

function usageView(u: UsageEntry): UsageEntryView {
  return { id: u.id, kind: u.kind, quantity: u.quantity, unitPriceCents: u.unitPriceCents, amountCents: u.amountCents, resourceId: u.resourceId, createdAt: u.createdAt };
}

/** GET /billing/wallet (getWallet, billing:read): balance (sum of the ledger), currency, low-balance threshold. */
export const getWalletHandler: Handler = async (ctx, { db }) => ({ data: walletView(await getWallet(db, orgOf(ctx))) });

/**
 * PUT /billing/wallet/auto-recharge (setWalletAutoRecharge, billing:write; an addition to the spec, docs/api-notes.md
 * "Billing": auto-recharge): saves `{enabled, thresholdCents, amountCents}` (cents; with `enabled`, threshold
 * 0..1,000,000 and amount 500..1,000,000 required) and clears a reason a decline turned it off for → the wallet.
 * @throws ApiError 400 `validation_error` naming each field wrong
 */
export const setWalletAutoRecharge: Handler = async (ctx, { db }) => {
  const orgId = orgOf(ctx);
  const raw = (ctx.request.body ?? {}) as Record<string, unknown>;
  const problems = autoRechargeProblems(typeof raw === 'object' && raw && !Array.isArray(raw) ? raw : {});
  if (problems.length) throw validationError(problems);
  const body = validateBody<WalletAutoRechargeRequest>('WalletAutoRechargeRequest', raw);
  const wallet = await db.transaction(async (trx) => {
    await setAutoRecharge(trx, orgId, { enabled: body.enabled, thresholdCents: body.thresholdCents ?? null, amountCents: body.amountCents ?? null });
    return getWallet(trx, orgId);
  });
  return { data: walletView(wallet) };
};

/**
 * POST /billing/wallet/topup (topUpWallet, billing:write; `Idempotency-Key` required): charges
 * `amountCents` (500..1,000,000) through the payments provider (services/billing/payments.ts). A payment that
 * succeeded is credited to the ledger once per payment, in the same transaction as the stored idempotent
 * response → 201 `{entry, wallet, payment}`; one still processing at the provider → 202 with `entry: null`
 * (its webhook credits it).
 * @throws ApiError 400 naming `amountCents`; 402 `payment_declined` (nothing credited; `declineCode`); 502
 *   `payment_unavailable`
 */
export const topUpWallet: Handler = async (ctx, deps) => {
  const orgId = orgOf(ctx);
  const body = validateBody<WalletTopUpRequest>('WalletTopUpRequest', ctx.request.body);
  const problem = topUpAmountProblem(body.amountCents);
  if (problem) throw validationError([{ field: 'amountCents', message: problem }]);
  const claim = ctx.state.idempotency!;
  let payment;
  try {
    payment = await chargeTopUp(deps.db, orgId, { amountCents: body.amountCents, idempotencyKey: claim.key, description: body.description });
  } catch (err) {
    if (err instanceof PaymentError && err.code !== 'provider_unavailable') {
      throw new ApiError(402, 'payment_declined', err.message, { errors: [{ field: 'amountCents', message: `was declined (${err.code})` }], extra: { declineCode: err.code } });
    }
    if (err instanceof PaymentError) throw new ApiError(502, 'payment_unavailable', err.message);
    throw err;
  }
  const status = payment.status === 'succeeded' ? 201 : 202;
  const data = await deps.db.transaction(async (trx) => {
    const credit = payment.status === 'succeeded' ? await creditTopUp(trx, orgId, { paymentId: payment.paymentId, amountCents: payment.amountCents, description: body.description }) : null;
    const result: WalletTopUpResult = { entry: credit ? ledgerView(credit.entry) : null, wallet: walletView(await getWallet(trx, orgId)), payment: { id: payment.paymentId, status: payment.status } };
    await claim.complete(trx, status, result);
    return result;
  });
  return { data, status };
};

/**
 * POST /billing/provider-webhooks/{provider} (receivePaymentProviderWebhook, no API key): the payments
 * provider's signed webhook (Stripe: `Stripe-Signature`, checked by `stripe.webhooks.constructEvent` over the
 * raw body). Applied once per event id → `{received: true, duplicate}`.
 * @throws ApiError 404 naming `provider` when it is not the configured one; 400 `invalid_signature` (nothing
 *   recorded); 502 `payment_unavailable` when a look-up at the provider failed (the provider re-delivers)
 */
export const receivePaymentProviderWebhook: Handler = async (ctx, { db }) => {
  const payments = createPayments();
  if (ctx.params.provider !== payments.provider) {
    throw new ApiError(404, 'not_found', `This deployment takes payment webhooks from ${payments.provider} only`, { errors: [{ field: 'provider', message: `must be ${payments.provider}` }] });
  }
  const raw = (ctx.request as unknown as { rawBody?: string }).rawBody ?? '';
  try {
    const outcome = await applyPaymentWebhook(db, raw, ctx.headers, payments);
    const data: PaymentWebhookResult = { received: true, duplicate: outcome.duplicate, recorded: outcome.recorded };
    return { data };
  } catch (err) {
    if (err instanceof PaymentWebhookSignatureError) throw new ApiError(400, 'invalid_signature', err.message, { errors: [{ field: 'Stripe-Signature', message: 'does not verify' }] });
    if (err instanceof PaymentError) throw new ApiError(502, 'payment_unavailable', err.message);
    throw err;
  }
};

/** Filters `kind`, `from`, `to` of a usage request. @throws ApiError 400 naming the field */
function usageFilter(ctx: AppContext): UsageFilter {
  const kind = one(ctx, 'kind');
  if (kind !== undefined && !/^[a-z0-9_]{1,64}$/.test(kind)) throw validationError([{ field: 'kind', message: 'must be a usage kind, e.g. conversation_message' }]);
  const from = instantParam(ctx, 'from');
  const to = instantParam(ctx, 'to');
  if (from && to && from >= to) throw validationError([{ field: 'to', message: 'must be after from' }]);
  return { kind, from, to };
}

/**
 * GET /billing/usage (listUsage, billing:read): usage entries newest first, filtered by `kind` and the
 * range `[from, to)`, cursor-paginated. With `groupBy=day`: quantity, amount and entry count per UTC
 * day and kind over the range (default the last 30 days; at most 366 days), in one page.
 * @throws ApiError 400 naming `groupBy`, `kind`, `from`, `to`, `limit`; 400 `invalid_cursor`
 */
export const listUsageHandler: Handler = async (ctx, { db }) => {
  const orgId = orgOf(ctx);
  const groupBy = one(ctx, 'groupBy');
  if (groupBy !== undefined && groupBy !== 'day') throw validationError([{ field: 'groupBy', message: 'must be day' }]);
  const filter = usageFilter(ctx);
  if (groupBy === 'day') {
    const to = filter.to ?? new Date();
    const from = filter.from ?? new Date(to.getTime() - 30 * 86_400_000);
    if (to.getTime() - from.getTime() > USAGE_GROUP_MAX_DAYS * 86_400_000) throw validationError([{ field: 'from', message: `the range may span at most ${USAGE_GROUP_MAX_DAYS} days` }]);
    return { data: { items: await usageByDay(db, orgId, { ...filter, from, to }), nextCursor: null, hasMore: false } };
  }
  const page = pageParams(ctx);
  const res = await paged(() => pageUsage(db, orgId, filter, page));
  return { data: { ...res, items: res.items.map(usageView) } };
};

/**
 * GET /billing/invoices (listInvoices, billing:read): one invoice per UTC month, newest first, keyset on
 * the period. The open ones, computed from usage, come first: the current month, and the previous month
 * (when it had usage) until the `billing-month` workflow closes it. Closed invoices follow.
 * @throws ApiError 400 `invalid_cursor`, 400 naming `limit`
 */
export const listInvoices: Handler = async (ctx, { db }) => {
  const orgId = orgOf(ctx);
  const { limit, cursor } = pageParams(ctx);
  const before = cursor ? (decodeCursorOr400('invoice.period', cursor, /^\d{4}-\d{2}$/) as string) : undefined;
  const current = periodOf(Date.now());
  const previous = previousPeriod(current);
  const open: Invoice[] = [];
  for (const period of [current, previous]) {
    if ((before && period >= before) || (await getClosedInvoice(db, orgId, period))) continue; // a closed invoice wins
    const inv = await openInvoice(db, orgId, period);
    if (period === current || inv.lines.length) open.push(inv);
  }
  const closed = await closedInvoicesBefore(db, orgId, before, limit + 1);
  const all = [...open, ...closed].sort((a, b) => (a.period < b.period ? 1 : -1));
  const items = all.slice(0, limit);
  const hasMore = all.length > limit;
  return { data: { items, hasMore, nextCursor: hasMore ? encodeCursor('invoice.period', items[items.length - 1].period) : null } };
};

/** Handlers of this area by operationId (api/routes/index.ts). */
export const handlers = {
  getWallet: getWalletHandler,
  setWalletAutoRecharge,
  topUpWallet,
  receivePaymentProviderWebhook,
  listUsage: listUsageHandler,
  listInvoices,
};

/** Schemas of this area's operations. */
export const routeSchemas = {
  getWallet: { responseSchema: 'Wallet' },
  topUpWallet: { requestSchema: 'WalletTopUpRequest', responseSchema: 'WalletTopUpResult' },
  setWalletAutoRecharge: { requestSchema: 'WalletAutoRechargeRequest', responseSchema: 'Wallet' },
  receivePaymentProviderWebhook: { responseSchema: 'PaymentWebhookResult' },
  listUsage: { responseSchema: 'UsagePage' },
  listInvoices: { responseSchema: 'InvoicePage' },
};
