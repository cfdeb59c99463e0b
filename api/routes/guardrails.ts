/**
 * Guardrails and caller verification handlers (spec Guardrails rows): GET answers the draft's settings
 * (defaults before the first PUT), PUT replaces them as an edit of the draft (bumps its version;
 * honours `If-Match` when sent).
 */
import type { Handler } from '../context';
import { validationError, type FieldError } from '../../domain/errors';
import { validateBody } from '../../domain/validation';
import type { Knex } from 'knex';
import { setAgentFields, type AgentFields, type AgentRecord } from '../../db/repositories/agents';
import { skillsByName } from '../../db/repositories/agentSkills';
import type { CallerVerification } from '../../schemas/types/agents';
import { effectiveCallerVerification, effectiveGuardrails } from '../../domain/agents/compile';
import { etag, requireAgent, runDraftEdit } from '../agents/http';
import { param } from './agents';
import { orgOf } from '../http';

/** A JSON part of the agent draft that has its own GET and PUT. */
type DraftPart = 'guardrails' | 'callerVerification' | 'widget';

/**
 * GET and PUT of one part of the agent draft (guardrails, caller verification, widget settings; spec
 * "Guardrails" and "Widget" rows). GET answers `effective(stored)` (defaults before the first PUT) with the
 * draft version as ETag; PUT validates the body against the JSON Schema `schema` (400 `validation_error`
 * naming fields), runs `check` (which may throw 400 too) and stores it as an edit of the draft (bumps its
 * version, honours `If-Match`; 404 `agent_not_found`, 409 `version_conflict`).
 */
export function draftPartHandlers<K extends DraftPart>(
  part: K,
  schema: string,
  effective: (stored: AgentRecord[K]) => unknown,
  check?: (trx: Knex.Transaction, orgId: string, agentId: string, body: NonNullable<AgentFields[K]>) => Promise<void>,
): { get: Handler; put: Handler } {
  return {
    get: async (ctx, { db }) => {
      const agent = await requireAgent(db, orgOf(ctx), param(ctx, 'agentId'));
      return { data: effective(agent[part]), headers: etag(agent.version) };
    },
    put: async (ctx, { db }) => {
      const orgId = orgOf(ctx);
      const agentId = param(ctx, 'agentId');
      const body = validateBody<NonNullable<AgentFields[K]>>(schema, ctx.request.body);
      const out = await runDraftEdit(ctx, db, agentId, async (trx) => {
        await check?.(trx, orgId, agentId, body);
        await setAgentFields(trx, orgId, agentId, { [part]: body } as AgentFields);
      });
      return { data: body, headers: etag(out.version) };
    },
  };
}

const guardrails = draftPartHandlers('guardrails', 'Guardrails', effectiveGuardrails);

/** GET /agents/{agentId}/guardrails */
export const getGuardrails: Handler = guardrails.get;

/** PUT /agents/{agentId}/guardrails: replaces the guardrails (400 naming fields). */
export const putGuardrails: Handler = guardrails.put;

/**
 * Caller verification: `method` is required when enabled and every name in `requiredForSkills` must be
 * a skill of the agent (400 naming the field).
 */
const callerVerification = draftPartHandlers('callerVerification', 'CallerVerification', effectiveCallerVerification, async (trx, orgId, agentId, body: CallerVerification) => {
  const errors: FieldError[] = [];
  if (body.enabled && !body.method) errors.push({ field: 'method', message: 'is required when caller verification is enabled' });
  const skills = await skillsByName(trx, orgId, agentId);
  for (const name of body.requiredForSkills) {
    if (!skills.has(name)) errors.push({ field: `requiredForSkills[${name}]`, message: `names no skill of this agent` });
  }
  if (errors.length) throw validationError(errors);
});

/** GET /agents/{agentId}/caller-verification */
export const getCallerVerification: Handler = callerVerification.get;

/** PUT /agents/{agentId}/caller-verification: replaces it (checks as above). */
export const putCallerVerification: Handler = callerVerification.put;

/** Handlers of this area by operationId. */
export const handlers = { getGuardrails, putGuardrails, getCallerVerification, putCallerVerification };

/** Schemas of this area's operations. */
export const routeSchemas = {
  getGuardrails: { responseSchema: 'Guardrails' },
  putGuardrails: { requestSchema: 'Guardrails', responseSchema: 'Guardrails' },
  getCallerVerification: { responseSchema: 'CallerVerification' },
  putCallerVerification: { requestSchema: 'CallerVerification', responseSchema: 'CallerVerification' },
};
