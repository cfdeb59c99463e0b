/**
 * Guardrails and caller verification handlers (spec Guardrails rows): GET answers the draft's settings
 * (defaults before the first PUT), PUT replaces them as an edit of the draft (bumps its version;
 * honours `If-Match` when sent).
 */
import type { Handler } from '../context';
import { validationError, type FieldError } from '../../domain/errors';
import { validateBody } from '../../domain/validation';
import { setAgentFields } from '../../db/repositories/agents';
import { skillsByName } from '../../db/repositories/agentSkills';
import type { CallerVerification, Guardrails } from '../../schemas/types/agents';
import { effectiveCallerVerification, effectiveGuardrails } from '../../domain/agents/compile';
import { etag, requireAgent, runDraftEdit } from '../agents/http';
import { param } from './agents';
import { orgOf } from '../http';

/** GET /agents/{agentId}/guardrails */
export const getGuardrails: Handler = async (ctx, { db }) => {
  const agent = await requireAgent(db, orgOf(ctx), param(ctx, 'agentId'));
  return { data: effectiveGuardrails(agent.guardrails), headers: etag(agent.version) };
};

/** PUT /agents/{agentId}/guardrails: replaces the guardrails (400 naming fields). */
export const putGuardrails: Handler = async (ctx, { db }) => {
  const orgId = orgOf(ctx);
  const agentId = param(ctx, 'agentId');
  const body = validateBody<Guardrails>('Guardrails', ctx.request.body);
  const out = await runDraftEdit(ctx, db, agentId, (trx) => setAgentFields(trx, orgId, agentId, { guardrails: body }));
  return { data: body, headers: etag(out.version) };
};

/** GET /agents/{agentId}/caller-verification */
export const getCallerVerification: Handler = async (ctx, { db }) => {
  const agent = await requireAgent(db, orgOf(ctx), param(ctx, 'agentId'));
  return { data: effectiveCallerVerification(agent.callerVerification), headers: etag(agent.version) };
};

/**
 * PUT /agents/{agentId}/caller-verification: replaces it. `method` is required when enabled and every
 * name in `requiredForSkills` must be a skill of the agent (400 naming the field).
 */
export const putCallerVerification: Handler = async (ctx, { db }) => {
  const orgId = orgOf(ctx);
  const agentId = param(ctx, 'agentId');
  const body = validateBody<CallerVerification>('CallerVerification', ctx.request.body);
  const out = await runDraftEdit(ctx, db, agentId, async (trx) => {
    const errors: FieldError[] = [];
    if (body.enabled && !body.method) errors.push({ field: 'method', message: 'is required when caller verification is enabled' });
    const skills = await skillsByName(trx, orgId, agentId);
    for (const name of body.requiredForSkills) {
      if (!skills.has(name)) errors.push({ field: `requiredForSkills[${name}]`, message: `names no skill of this agent` });
    }
    if (errors.length) throw validationError(errors);
    await setAgentFields(trx, orgId, agentId, { callerVerification: body });
  });
  return { data: body, headers: etag(out.version) };
};

/** Handlers of this area by operationId. */
export const handlers = { getGuardrails, putGuardrails, getCallerVerification, putCallerVerification };

/** Schemas of this area's operations. */
export const routeSchemas = {
  getGuardrails: { responseSchema: 'Guardrails' },
  putGuardrails: { requestSchema: 'Guardrails', responseSchema: 'Guardrails' },
  getCallerVerification: { responseSchema: 'CallerVerification' },
  putCallerVerification: { requestSchema: 'CallerVerification', responseSchema: 'CallerVerification' },
};
