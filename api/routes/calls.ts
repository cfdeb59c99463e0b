/**
 * Phone call handlers (docs/api-notes.md "Calls on demand"; spec "Outbound" and "Observe", payloads "not
 * shown"): `POST /calls` places one outbound call answered by an agent (Vapi `POST /call`, Retell
 * `create-phone-call`, Bland `POST /calls`); `GET /calls` and `GET /calls/{id}` read every call of the
 * organization — inbound, campaign and on demand.
 */
import type { Handler } from '../context';
import { notFound, validationError } from '../../domain/errors';
import { validateBody } from '../../domain/validation';
import { orgOf, pageParams, paged } from '../http';
import { variableErrors } from './chat';
import { getCall, listCalls, type CallFilter } from '../../db/repositories/calls';
import { placeCall } from '../../services/voice/placeCall';
import type { Call, CallCreate } from '../../schemas/types/calls';

const DIRECTIONS = ['inbound', 'outbound'] as const;
const STATUSES: Call['status'][] = ['queued', 'ringing', 'answered', 'completed', 'failed'];
const ISO_INSTANT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2})$/;

/**
 * POST /calls (createCall, outbound:write; `Idempotency-Key` required: a replay answers the first
 * response and places no second call) `{agentId, from, to, mode?, timeZone?, variables?, metadata?}` →
 * 202 with the call (`queued`), dialed by workflow `voice-call/{callId}`. Refusals (nothing stored,
 * nothing dialed) name their field: 400 `validation_error`; 404 `agent_not_found` (`agentId`),
 * `number_not_found` (`from`); 409 `no_published_version` (`agentId`), `recipient_opted_out`,
 * `recipient_do_not_call`, `outside_calling_window` with `nextAllowedAt` (`to`); 422 `recipient_not_us`
 * (`to`); 503 `temporal_unavailable`.
 */
export const createCall: Handler = async (ctx, deps) => {
  const body = validateBody<CallCreate>('CallCreate', ctx.request.body);
  const errors = variableErrors(body.variables);
  if (errors.length) throw validationError(errors);
  const orgId = orgOf(ctx);
  const call = await placeCall(deps.db, deps.temporal, orgId, body, { inTransaction: (trx, data) => ctx.state.idempotency?.complete(trx, 202, data) ?? Promise.resolve() });
  ctx.state.log.info({ orgId, callId: call.id, agentId: call.agentId }, 'call placed');
  return { data: call, status: 202 };
};

/** GET /calls/{id} (getCall, calls:read) → the call. 404 `call_not_found` (also another organization's). */
export const getCallHandler: Handler = async (ctx, { db }) => {
  const call = await getCall(db, orgOf(ctx), ctx.params.id);
  if (!call) throw notFound('Call', 'call_not_found');
  return { data: call };
};

/** One query parameter's value (the first when repeated), or undefined. */
function queryValue(v: string | string[] | undefined): string | undefined {
  return Array.isArray(v) ? v[0] : v;
}

/** An ISO 8601 instant of the query, or a 400 naming the parameter. */
function instantParam(name: string, v: string | undefined): Date | undefined {
  if (v === undefined) return undefined;
  const t = Date.parse(v);
  if (!ISO_INSTANT.test(v) || Number.isNaN(t)) throw validationError([{ field: name, message: 'must be an ISO 8601 date-time with a zone, e.g. 2026-06-01T00:00:00Z' }]);
  return new Date(t);
}

/**
 * GET /calls (listCalls, calls:read) `?direction=&agentId=&status=&from=&to=&limit=&cursor=` → a page of
 * calls, newest first; `from`/`to` bound the creation time (`from` ≤ createdAt < `to`, ISO 8601). 400
 * `validation_error` naming the parameter; 400 `invalid_cursor`.
 */
export const listCallsHandler: Handler = async (ctx, { db }) => {
  const page = pageParams(ctx);
  const q = ctx.query as Record<string, string | string[] | undefined>;
  const filter: CallFilter = {};
  const direction = queryValue(q.direction);
  if (direction !== undefined) {
    if (!(DIRECTIONS as readonly string[]).includes(direction)) throw validationError([{ field: 'direction', message: `must be one of: ${DIRECTIONS.join(', ')}` }]);
    filter.direction = direction as CallFilter['direction'];
  }
  const status = queryValue(q.status);
  if (status !== undefined) {
    if (!(STATUSES as string[]).includes(status)) throw validationError([{ field: 'status', message: `must be one of: ${STATUSES.join(', ')}` }]);
    filter.status = status as Call['status'];
  }
  const agentId = queryValue(q.agentId);
  if (agentId !== undefined) {
    if (!/^agt_[A-Za-z0-9]{1,64}$/.test(agentId)) throw validationError([{ field: 'agentId', message: 'must be an agent id (agt_…)' }]);
    filter.agentId = agentId;
  }
  filter.since = instantParam('from', queryValue(q.from));
  filter.until = instantParam('to', queryValue(q.to));
  if (filter.since && filter.until && filter.since >= filter.until) throw validationError([{ field: 'to', message: 'must be later than from' }]);
  return { data: await paged(() => listCalls(db, orgOf(ctx), filter, page)) };
};

/** Handlers of this area by operationId (api/routes/index.ts). */
export const handlers = {
  createCall,
  getCall: getCallHandler,
  listCalls: listCallsHandler,
};

/** Schemas of this area's operations. */
export const routeSchemas = {
  createCall: { requestSchema: 'CallCreate', responseSchema: 'Call' },
  getCall: { responseSchema: 'Call' },
  listCalls: { responseSchema: 'CallPage' },
};
