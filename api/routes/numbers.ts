/**
 * Numbers handlers (spec "Numbers": `GET /numbers/search`, `POST /numbers/reserve`,
 * `POST /numbers/purchase`, `POST /numbers/{id}/assign`; payloads "not shown", decided in docs/sms.md
 * "Numbers, consent and sending"). The inventory is the telephony provider's (the sandbox by default: US numbers by area
 * code, deterministic). A purchase records one usage entry, and reaches the provider once (docs/operations.md
 * "Provider calls happen once": its intent is recorded before the order, a retry looks the order up).
 */
import type { Handler } from '../context';
import { ApiError, notFound, validationError } from '../../domain/errors';
import { validateBody } from '../../domain/validation';
import { encodeCursor } from '../../db/pagination';
import { assignNumber, heldNumbers, listOwnedNumbers, NumberUnavailableError, purchaseReserved, reserveNumber } from '../../db/repositories/numbers';
import { FEES } from '../../db/repositories/usage';
import { recordUsage } from '../../services/billing/usage';
import { logProviderRequest } from '../../db/repositories/smsProviderEvents';
import { createTelephony, type TelephonyAdapter } from '../../providers/telephony';
import { performOnce, type FaultHook } from '../../services/effects';
import { resolveIntent } from '../../db/repositories/providerIntents';
import { areaCodeInfo, areaCodeOf } from '../../domain/sms/nanp';
import { decodeCursorOr400, e164Param, listHandler, orgOf, pageParams, requireOwned } from '../http';
import type { AvailableNumber, NumberAssignRequest, NumberPurchaseRequest, NumberReserveRequest, PhoneNumber } from '../../schemas/types/numbers';
import type { AppDeps } from '../context';


/**
 * GET /numbers/search?areaCode=415 (searchNumbers, numbers:read): numbers available in a US area code,
 * ascending, without those anyone holds. `areaCode` is required (400 otherwise); paginated.
 */
export const searchNumbers: Handler = async (ctx, deps) => {
  const raw = ctx.query.areaCode;
  const areaCode = Array.isArray(raw) ? raw[0] : raw;
  if (!areaCode || !/^\d{3}$/.test(areaCode) || !areaCodeInfo(areaCode)) {
    throw validationError([{ field: 'areaCode', message: 'must be a US area code of three digits, e.g. 415' }]);
  }
  const { limit, cursor } = pageParams(ctx);
  const after = cursor ? String(decodeCursorOr400('e164', cursor, /^\+[1-9]\d{1,14}$/)) : '';
  const offered = await createTelephony(deps).searchNumbers(orgOf(ctx), areaCode, limit);
  const held = await heldNumbers(deps.db, offered.map((n) => n.e164));
  const free = offered.filter((n) => !held.has(n.e164) && n.e164 > after);
  const items: AvailableNumber[] = free.slice(0, limit);
  const hasMore = free.length > limit;
  return { data: { items, hasMore, nextCursor: hasMore ? encodeCursor('e164', items[items.length - 1].e164) : null } };
};

/** The number if the provider offers it (it is in its area code's inventory). @throws 422 number_not_offered */
async function offeredOr422(deps: AppDeps, orgId: string, e164: string): Promise<void> {
  const code = areaCodeOf(e164);
  const offered = code && areaCodeInfo(code) ? await createTelephony(deps).searchNumbers(orgId, code, 200) : [];
  if (!offered.some((n) => n.e164 === e164)) throw new ApiError(422, 'number_not_offered', `${e164} is not offered by the provider; pick one from GET /numbers/search`);
}

async function reserve(deps: AppDeps, orgId: string, e164: string): Promise<PhoneNumber> {
  await offeredOr422(deps, orgId, e164);
  try {
    return await reserveNumber(deps.db, orgId, e164);
  } catch (err) {
    if (err instanceof NumberUnavailableError) throw new ApiError(409, 'number_unavailable', `${e164} is reserved or owned by someone else`);
    throw err;
  }
}

/** POST /numbers/reserve (reserveNumber, numbers:write): holds a number for 15 minutes. 409 `number_unavailable`, 422 `number_not_offered`. */
export const reserveNumberHandler: Handler = async (ctx, deps) => {
  const body = validateBody<NumberReserveRequest>('NumberReserveRequest', ctx.request.body);
  const e164 = e164Param(body.e164);
  return { data: await reserve(deps, orgOf(ctx), e164) };
};

/**
 * Buys a reserved number once (docs/operations.md "Provider calls happen once"): records the order's intent with our
 * number id as its client reference, orders, then marks the number purchased with its usage entry and
 * the resolved intent in one transaction. A repeated call (the client retrying after a crash) finds the
 * intent and looks the order up instead of buying again. `faults` are test-only crash points.
 * @returns the number and whether it was bought now, or undefined when the reservation is not the organization's
 * @throws ApiError 409 `provider_outcome_unknown` when the provider cannot tell whether an earlier order went through
 */
export async function purchaseNumberOnce(
  deps: AppDeps,
  orgId: string,
  numberId: string,
  opts: { telephony?: TelephonyAdapter; faults?: FaultHook } = {},
): Promise<{ number: PhoneNumber; purchasedNow: boolean } | undefined> {
  const telephony = opts.telephony ?? createTelephony(deps);
  // The reservation's row stays locked while the provider is asked, so two purchases of one number never
  // race; the intent is written on another connection of the pool and committed before the order.
  const out = await purchaseReserved(deps.db, orgId, numberId, async (trx, n) => {
    const effect = await performOnce(deps.db, orgId, {
      kind: 'number_purchase',
      reference: n.id,
      subjectId: n.id,
      provider: telephony.provider,
      request: { e164: n.e164 },
      perform: () => telephony.purchaseNumber(orgId, n.e164, n.id),
      lookup: () => telephony.findNumberOrder(orgId, n.id),
      fault: opts.faults,
    });
    if (effect.state === 'unknown') {
      throw new ApiError(409, 'provider_outcome_unknown', `The provider cannot tell whether ${n.e164} was bought (intent ${effect.intent.id}); an operator settles it before it can be purchased again`);
    }
    await resolveIntent(trx, orgId, effect.intent.id, effect.result);
    await logProviderRequest(trx, orgId, telephony.provider, 'purchaseNumber.result', { numberId: n.id, providerNumberId: effect.result.providerNumberId });
    await recordUsage(trx, orgId, { kind: FEES.numberPurchase.kind, amountCents: FEES.numberPurchase.amountCents, dedupeKey: `${FEES.numberPurchase.kind}:${n.id}`, details: { numberId: n.id, e164: n.e164 } });
  });
  if (out?.purchasedNow) await opts.faults?.('after_record', 'number_purchase', numberId);
  return out;
}

/**
 * POST /numbers/purchase (purchaseNumber, numbers:write): buys a reserved number (`id`) or a number
 * straight from the search (`e164`). Records usage `phone_number_purchase` once per number; purchasing
 * an owned number again answers it unchanged. 409 `provider_outcome_unknown` when an earlier attempt's
 * order cannot be confirmed or ruled out by the provider.
 */
export const purchaseNumber: Handler = async (ctx, deps) => {
  const orgId = orgOf(ctx);
  const body = validateBody<NumberPurchaseRequest>('NumberPurchaseRequest', ctx.request.body);
  if ((body.id === undefined) === (body.e164 === undefined)) {
    throw validationError([{ field: body.id === undefined ? 'id' : 'e164', message: 'give exactly one of id (a reservation) or e164' }]);
  }
  const id = body.id ?? (await reserve(deps, orgId, e164Param(body.e164))).id;
  const out = await purchaseNumberOnce(deps, orgId, id);
  if (!out) throw notFound('Number reservation', 'number_not_found');
  return { data: out.number };
};

/**
 * POST /numbers/{id}/assign (assignNumber, numbers:write): points the number at an agent (`agentId`, or null to
 * unassign). 404 `agent_not_found` naming `agentId` for an agent that is not the organization's; 404
 * `number_not_found` for a number that is not.
 */
export const assignNumberHandler: Handler = async (ctx, { db }) => {
  const body = validateBody<NumberAssignRequest>('NumberAssignRequest', ctx.request.body);
  if (body.agentId !== null && !/^agt_[A-Za-z0-9]{8,40}$/.test(body.agentId)) throw validationError([{ field: 'agentId', message: 'must be an agent id (agt_…) or null' }]);
  await requireOwned(db, orgOf(ctx), [{ field: 'agentId', kind: 'agent', id: body.agentId }]);
  const n = await assignNumber(db, orgOf(ctx), ctx.params.id, body.agentId);
  if (!n) throw notFound('Number', 'number_not_found');
  return { data: n };
};

/** GET /numbers (listNumbers, numbers:read): the organization's purchased numbers. */
export const listNumbers: Handler = listHandler(listOwnedNumbers);

/** Handlers of this area by operationId (api/routes/index.ts). */
export const handlers = {
  searchNumbers,
  reserveNumber: reserveNumberHandler,
  purchaseNumber,
  assignNumber: assignNumberHandler,
  listNumbers,
};

/** Schemas of this area's operations. */
export const routeSchemas = {
  searchNumbers: { responseSchema: 'AvailableNumberPage' },
  reserveNumber: { requestSchema: 'NumberReserveRequest', responseSchema: 'PhoneNumber' },
  purchaseNumber: { requestSchema: 'NumberPurchaseRequest', responseSchema: 'PhoneNumber' },
  assignNumber: { requestSchema: 'NumberAssignRequest', responseSchema: 'PhoneNumber' },
  listNumbers: { responseSchema: 'PhoneNumberPage' },
};
