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
import type { CallerVerification } from '../../schemas/types/guardrails';
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
  keep?: (body: NonNullable<AgentFields[K]>, stored: AgentRecord[K]) => NonNullable<AgentFields[K]>,
): { get: Handler; put: Handler } {
  return {
    get: async (ctx, { db }) => {
      const agent = await requireAgent(db, orgOf(ctx), param(ctx, 'agentId'));
      return { data: effective(agent[part]), headers: etag(agent.version) };
    },
    put: async (ctx, { db }) => {
      const orgId = orgOf(ctx);
      const agentId = param(ctx, 'agentId');
      let body = validateBody<NonNullable<AgentFields[K]>>(schema, ctx.request.body);
      const out = await runDraftEdit(ctx, db, agentId, async (trx, head) => {
        await check?.(trx, orgId, agentId, body);
        if (keep) body = keep(body, head[part as keyof typeof head] as AgentRecord[K]);
        await setAgentFields(trx, orgId, agentId, { [part]: body } as AgentFields);
      });
      return { data: keep ? effective(body as AgentRecord[K]) : body, headers: etag(out.version) };
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
 * a skill of the agent (400 naming the field). A PUT without `required` keeps the stored one (agents stored
 * before the field existed keep `always`; docs/api-notes.md "Caller verification"); the answer is the effective
 * configuration.
 */
const callerVerification = draftPartHandlers(
  'callerVerification',
  'CallerVerification',
  effectiveCallerVerification,
  async (trx, orgId, agentId, body: CallerVerification) => {
    const errors: FieldError[] = [];
    if (body.enabled && !body.method) errors.push({ field: 'method', message: 'is required when caller verification is enabled' });
    const skills = await skillsByName(trx, orgId, agentId);
    for (const name of body.requiredForSkills) {
      if (!skills.has(name)) errors.push({ field: `requiredForSkills[${name}]`, message: `names no skill of this agent` });
    }
    if (errors.length) throw validationError(errors);
  },
  (body, stored) => (body.required === undefined && stored?.required ? { ...body, required: stored.required } : body),
);

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
