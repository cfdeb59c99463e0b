/**
 * Escalation destinations and teammates' presence (spec group "Support": escalation_destinations:read/write
 * and presence:write; paths not shown, decided in docs/api-notes.md
 * "Variables, escalation, onboarding, meta and settings"). A destination is where a conversation is handed to a person — a phone number, a SIP URI, an
 * e-mail address or a webhook endpoint — with opening hours in a time zone; `transfer_call` skills and the
 * after-hours setting of a number target one by id. The escalation endpoints themselves stay reserved (403).
 */
import type { Handler } from '../context';
import { ApiError, notFound, validationError, type FieldError } from '../../domain/errors';
import { listHandler, orgOf } from '../http';
import { setAuditResource } from '../middleware/audit';
import { addressErrors } from '../../domain/settings/escalation';
import { hoursErrors } from '../../domain/settings/hours';
import { webhookUrlProblem } from '../../domain/webhooks/urlPolicy';
import { loadWebhookSettings } from '../../domain/webhooks/settings';
import { DuplicateRowError } from '../../db/repositories/orgTable';
import { destinationUsers, destinations, listPresence as listPresenceRows, upsertPresence, withPresence } from '../../db/repositories/escalationDestinations';
// Conversations read the destinations through a short per-process cache (services/conversations/escalation.ts).
import { forgetEscalationDestinations } from '../../services/conversations/escalation';
import type { EscalationDestination, EscalationDestinationCreate, EscalationDestinationKind, EscalationDestinationUpdate, PresenceUpdate } from '../../schemas/types/settings';

const urlProblem = (url: string) => webhookUrlProblem(url, loadWebhookSettings());

/**
 * Checks beyond the schema: address against kind, time zone, hours (the route's `bodyChecks` when the schema
 * refuses the body, and the handlers' own check when it accepts it). Only fields of the right type are checked.
 */
function destinationChecks(b: Record<string, any>): FieldError[] {
  const errors: FieldError[] = [];
  if (typeof b.kind === 'string' && typeof b.address === 'string' && ['phone', 'sip', 'email', 'webhook'].includes(b.kind)) errors.push(...addressErrors(b.kind as EscalationDestinationKind, b.address, urlProblem));
  const hours = Array.isArray(b.hours) && b.hours.every((h: any) => h && typeof h.open === 'string' && typeof h.close === 'string') ? b.hours : null;
  errors.push(...hoursErrors(typeof b.timeZone === 'string' ? b.timeZone : undefined, hours));
  return errors;
}

function nameTaken(): ApiError {
  return new ApiError(409, 'destination_name_taken', 'An escalation destination with this name exists already', { errors: [{ field: 'name', message: 'is taken' }] });
}

async function orDuplicate<T>(run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (err) {
    if (err instanceof DuplicateRowError) throw nameTaken();
    throw err;
  }
}

const missing = (id: string) => notFound(`Escalation destination ${id}`, 'escalation_destination_not_found');

function columns(b: EscalationDestinationUpdate): Record<string, unknown> {
  const c: Record<string, unknown> = {};
  if (b.name !== undefined) c.name = b.name;
  if (b.kind !== undefined) c.kind = b.kind;
  if (b.address !== undefined) c.address = b.address;
  if (b.timeZone !== undefined) c.time_zone = b.timeZone;
  if (b.hours !== undefined) c.hours = b.hours === null ? null : JSON.stringify(b.hours);
  if (b.teammate !== undefined) c.teammate = b.teammate?.toLowerCase() ?? null;
  return c;
}

/** GET /escalation-destinations: oldest first, each with `openNow` and its teammate's presence. */
export const listEscalationDestinations: Handler = async (ctx, deps) => {
  const page = (await listHandler(destinations.list)(ctx, deps)).data as { items: EscalationDestination[] };
  return { data: { ...page, items: await withPresence(deps.db, orgOf(ctx), page.items) } };
};

/** POST /escalation-destinations: 201. @throws 400 naming `address`, `timeZone`, `hours[i].close`; 409 `destination_name_taken` */
export const createEscalationDestination: Handler = async (ctx, { db }) => {
  const body = ctx.request.body as unknown as EscalationDestinationCreate;
  const errors = destinationChecks(body);
  if (errors.length) throw validationError(errors);
  const d = await orDuplicate(() => destinations.insert(db, orgOf(ctx), columns({ hours: null, teammate: null, ...body })));
  forgetEscalationDestinations(orgOf(ctx));
  setAuditResource(ctx, 'escalation_destination', d.id);
  return { data: (await withPresence(db, orgOf(ctx), [d]))[0], status: 201 };
};

/** GET /escalation-destinations/{id}. @throws 404 `escalation_destination_not_found` */
export const getEscalationDestination: Handler = async (ctx, { db }) => {
  const d = await destinations.get(db, orgOf(ctx), ctx.params.id);
  if (!d) throw missing(ctx.params.id);
  return { data: (await withPresence(db, orgOf(ctx), [d]))[0] };
};

/** PATCH /escalation-destinations/{id}: the address is checked against the resulting kind. */
export const updateEscalationDestination: Handler = async (ctx, { db }) => {
  const orgId = orgOf(ctx);
  const body = ctx.request.body as unknown as EscalationDestinationUpdate;
  const current = await destinations.get(db, orgId, ctx.params.id);
  if (!current) throw missing(ctx.params.id);
  const errors = destinationChecks({ ...body, kind: body.kind ?? current.kind, address: body.address ?? current.address });
  if (errors.length) throw validationError(errors);
  const d = await orDuplicate(() => destinations.update(db, orgId, current.id, columns(body)));
  forgetEscalationDestinations(orgId);
  if (!d) throw missing(ctx.params.id);
  return { data: (await withPresence(db, orgId, [d]))[0] };
};

/**
 * DELETE /escalation-destinations/{id}: refused while a skill of an agent draft or a number's after-hours
 * setting targets it. @throws 404; 409 `destination_in_use`
 */
export const deleteEscalationDestination: Handler = async (ctx, { db }) => {
  const orgId = orgOf(ctx);
  const current = await destinations.get(db, orgId, ctx.params.id);
  if (!current) throw missing(ctx.params.id);
  const users = await destinationUsers(db, orgId, current.id);
  if (users.length) throw new ApiError(409, 'destination_in_use', `Escalation destination ${current.id} is targeted by ${users.join(', ')}; change those first`, { extra: { usedBy: users } });
  await destinations.remove(db, orgId, current.id);
  forgetEscalationDestinations(orgId);
  return { data: { id: current.id, deleted: true } };
};

/** GET /presence (escalation_destinations:read): teammates' presence, oldest first. */
export const listPresence: Handler = listHandler(listPresenceRows);

/**
 * PUT /presence/{teammate} (presence:write): sets a teammate's presence; `{teammate}` is their e-mail.
 * @throws 400 naming `teammate` (not an e-mail) or `until` (not in the future)
 */
export const setPresence: Handler = async (ctx, { db }) => {
  const teammate = String(ctx.params.teammate ?? '').trim().toLowerCase();
  const errors: FieldError[] = [];
  if (!/^[^\s@]{1,64}@[a-z0-9-]+(\.[a-z0-9-]+)+$/.test(teammate) || teammate.length > 254) errors.push({ field: 'teammate', message: 'must be an e-mail address' });
  const body = ctx.request.body as unknown as PresenceUpdate;
  if (body.until && Date.parse(body.until) <= Date.now()) errors.push({ field: 'until', message: 'must be in the future' });
  if (errors.length) throw validationError(errors);
  const p = await upsertPresence(db, orgOf(ctx), teammate, { status: body.status, note: body.note ?? null, until: body.until ?? null });
  setAuditResource(ctx, 'presence', p.id);
  return { data: p };
};

/** Handlers of this area by operationId. */
export const handlers = {
  listEscalationDestinations,
  createEscalationDestination,
  getEscalationDestination,
  updateEscalationDestination,
  deleteEscalationDestination,
  listPresence,
  setPresence,
};

/** Schemas of this area's operations (merged into the route table). */
export const routeSchemas = {
  listEscalationDestinations: { responseSchema: 'EscalationDestinationList' },
  createEscalationDestination: { requestSchema: 'EscalationDestinationCreate', responseSchema: 'EscalationDestination', bodyChecks: destinationChecks },
  getEscalationDestination: { responseSchema: 'EscalationDestination' },
  updateEscalationDestination: { requestSchema: 'EscalationDestinationUpdate', responseSchema: 'EscalationDestination', bodyChecks: destinationChecks },
  listPresence: { responseSchema: 'PresenceList' },
  setPresence: { requestSchema: 'PresenceUpdate', responseSchema: 'Presence' },
};
