/**
 * Organization variables (spec group "Variables", paths not shown; docs/api-notes.md
 * "Variables, escalation, onboarding, meta and settings"): name, value and secret flag, referenced from agent drafts as
 * `{{vars.<name>}}` and resolved at publish. Scopes: agents:read to read, agents:write to change (they are
 * part of the agents' configuration). A secret's value is write-only: sealed at rest (AES-256-GCM,
 * WEBHOOK_SECRET_KEY), never returned, never copied into a version or a diff.
 */
import type { Handler } from '../context';
import { ApiError, notFound } from '../../domain/errors';
import { listHandler, orgOf } from '../http';
import { setAuditResource } from '../middleware/audit';
import { sealSecret } from '../../domain/webhooks/signing';
import { loadWebhookSettings } from '../../domain/webhooks/settings';
import { DuplicateRowError } from '../../db/repositories/orgTable';
import { revisionBump, valueColumns, variableUsers, variables } from '../../db/repositories/variables';
import type { VariableCreate, VariableUpdate } from '../../schemas/types/settings';

const seal = (plain: string) => sealSecret(plain, loadWebhookSettings().secretKey);

function nameTaken(name: string): ApiError {
  return new ApiError(409, 'variable_name_taken', `A variable named "${name}" exists already`, { errors: [{ field: 'name', message: 'is taken' }] });
}

async function orDuplicate<T>(name: string | undefined, run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (err) {
    if (err instanceof DuplicateRowError) throw nameTaken(name ?? '');
    throw err;
  }
}

const missing = (id: string) => notFound(`Variable ${id}`, 'variable_not_found');

/** GET /variables: the organization's variables, oldest first (secret values never). */
export const listVariables: Handler = listHandler(variables.list);

/** POST /variables: 201 with the variable. @throws 409 `variable_name_taken` naming `name` */
export const createVariable: Handler = async (ctx, { db }) => {
  const body = ctx.request.body as unknown as VariableCreate;
  const secret = body.secret === true;
  const v = await orDuplicate(body.name, () =>
    variables.insert(db, orgOf(ctx), { name: body.name, description: body.description ?? null, secret, ...valueColumns(secret, body.value, seal) }),
  );
  setAuditResource(ctx, 'variable', v.id);
  return { data: v, status: 201, ...(secret ? { message: 'The value is stored sealed and is never shown again' } : {}) };
};

/** GET /variables/{id}. @throws 404 `variable_not_found` (also another organization's) */
export const getVariable: Handler = async (ctx, { db }) => {
  const v = await variables.get(db, orgOf(ctx), ctx.params.id);
  if (!v) throw missing(ctx.params.id);
  return { data: v };
};

/** PATCH /variables/{id}: description and/or value (a new value bumps `revision`). @throws 404 `variable_not_found` */
export const updateVariable: Handler = async (ctx, { db }) => {
  const orgId = orgOf(ctx);
  const body = ctx.request.body as unknown as VariableUpdate;
  const current = await variables.get(db, orgId, ctx.params.id);
  if (!current) throw missing(ctx.params.id);
  const set: Record<string, unknown> = {};
  if (body.description !== undefined) set.description = body.description;
  if (body.value !== undefined) Object.assign(set, valueColumns(current.secret, body.value, seal), { revision: revisionBump(db) });
  const v = await variables.update(db, orgId, current.id, set);
  if (!v) throw missing(ctx.params.id);
  setAuditResource(ctx, 'variable', v.id);
  return { data: v };
};

/**
 * DELETE /variables/{id}: refused while an agent draft or a published version refers to it.
 * @throws 404 `variable_not_found`; 409 `variable_in_use` naming the agents
 */
export const deleteVariable: Handler = async (ctx, { db }) => {
  const orgId = orgOf(ctx);
  const current = await variables.get(db, orgId, ctx.params.id);
  if (!current) throw missing(ctx.params.id);
  const users = await variableUsers(db, orgId, current.name);
  if (users.length) {
    throw new ApiError(409, 'variable_in_use', `Variable "${current.name}" is referenced by agent(s) ${users.join(', ')}; remove the references and publish first`, { extra: { agentIds: users } });
  }
  await variables.remove(db, orgId, current.id);
  setAuditResource(ctx, 'variable', current.id);
  return { data: { id: current.id, deleted: true } };
};

/** Handlers of this area by operationId. */
export const handlers = { listVariables, createVariable, getVariable, updateVariable, deleteVariable };

/** Schemas of this area's operations (merged into the route table). */
export const routeSchemas = {
  listVariables: { responseSchema: 'VariableList' },
  createVariable: { requestSchema: 'VariableCreate', responseSchema: 'Variable' },
  getVariable: { responseSchema: 'Variable' },
  updateVariable: { requestSchema: 'VariableUpdate', responseSchema: 'Variable' },
};
