/**
 * Test handlers (spec Test row, "Agent lifecycle" rules 1-2): `POST /agents/{agentId}/talk-token` issues
 * a short-lived signed token bound to the published version; for an agent never published it answers
 * 409 `no_published_version` unless `draftMode: true`, which binds the token to the current draft
 * version instead. `simulate` runs a test conversation as workflow `agent-simulation/{id}` and answers 202
 * with the simulation to poll at `GET /agents/{agentId}/simulations/{id}`.
 */
import crypto from 'node:crypto';
import type { Handler } from '../context';
import { ApiError, notFound, temporalUnavailable, validationError } from '../../domain/errors';
import { validateBody } from '../../domain/validation';
import { talkTokenSecret } from '../../db/repositories/agentVersions';
import type { TalkToken, TalkTokenRequest } from '../../schemas/types/agents';
import { requireAgent } from '../agents/http';
import { signTalkToken } from '../agents/talkToken';
import { param } from './agents';
import { orgOf, requireTemporal } from '../http';
import { variableErrors } from './chat';
import { allMessages } from '../../db/repositories/conversations';
import { messagesFor } from '../conversationView';
import { createSimulation, failSimulation, getSimulation, type SimulationRecord } from '../../db/repositories/simulations';
import { simulationTurns } from '../../domain/conversations/expectations';
import { startWorkflow, workflowIds } from '../../temporal.config';
import type { Simulation, SimulationRequest } from '../../schemas/types/chat';
import { missingStubErrors } from '../../domain/conversations/skillStubs';
import { targetSkills } from '../../services/evals/run';

/** Default talk-token lifetime in seconds. */
export const DEFAULT_TALK_TOKEN_TTL_SECONDS = 300;

/** POST /agents/{agentId}/talk-token `{draftMode?, ttlSeconds?, channel?}` → TalkToken (201). */
export const createTalkToken: Handler = async (ctx, { db }) => {
  const orgId = orgOf(ctx);
  const body = validateBody<TalkTokenRequest>('TalkTokenRequest', ctx.request.body ?? {});
  const agent = await requireAgent(db, orgId, param(ctx, 'agentId'));
  const draftMode = body.draftMode === true;
  if (!draftMode && !agent.publishedVersionId) {
    throw new ApiError(409, 'no_published_version', 'The agent has never been published; publish it, or ask for a draft-mode token with draftMode: true');
  }
  const channel = body.channel ?? 'voice';
  const exp = Math.floor(Date.now() / 1000) + (body.ttlSeconds ?? DEFAULT_TALK_TOKEN_TTL_SECONDS);
  const token = signTalkToken(
    {
      v: 1,
      org: orgId,
      agt: agent.id,
      ver: draftMode ? null : agent.publishedVersionId,
      dv: draftMode ? agent.version : null,
      ch: channel,
      exp,
      jti: crypto.randomUUID(),
    },
    await talkTokenSecret(db, orgId),
  );
  const data: TalkToken = {
    token,
    agentId: agent.id,
    versionId: draftMode ? null : agent.publishedVersionId,
    draftVersion: draftMode ? agent.version : null,
    mode: draftMode ? 'draft' : 'published',
    channel,
    expiresAt: new Date(exp * 1000).toISOString(),
  };
  return { data, status: 201, headers: { 'Cache-Control': 'no-store' } };
};

/**
 * POST /agents/{agentId}/simulate (simulateAgent, agents:write) `SimulationRequest` → 202 `Simulation`
 * (status `running`, `Location` of the result). Exactly one of `script` or `caller`; 404
 * `agent_not_found`; 409 `no_published_version` unless `draftMode: true`; 503 without Temporal (nothing
 * stored); 400 `validation_error` naming `skillStubs.<skill>` for each skill that would reach a real endpoint
 * without a stub (nothing started). The workflow `agent-simulation/{id}` runs one activity per caller turn, its
 * skills on the stubs.
 */
export const simulateAgent: Handler = async (ctx, deps) => {
  const orgId = orgOf(ctx);
  const body = validateBody<SimulationRequest>('SimulationRequest', ctx.request.body);
  if (!body.script === !body.caller) throw validationError([{ field: body.script ? 'caller' : 'script', message: 'send exactly one of script (caller turns) or caller (a simulated caller)' }]);
  body.script?.forEach((turn, i) => {
    if (!turn.trim() || turn.length > 10_000) throw validationError([{ field: `script[${i}]`, message: 'must be 1 to 10000 characters of text' }]);
  });
  const verrors = variableErrors(body.variables);
  if (verrors.length) throw validationError(verrors);
  const agent = await requireAgent(deps.db, orgId, param(ctx, 'agentId'));
  if (body.draftMode !== true && !agent.publishedVersionId) {
    throw new ApiError(409, 'no_published_version', 'The agent has never been published; publish it, or simulate its draft with draftMode: true');
  }
  // A simulation never calls a real skill endpoint (docs/evals.md "Skill stubs"): each skill that would needs a stub.
  const skills = await targetSkills(deps.db, orgId, agent.id, body.draftMode === true ? { kind: 'draft' } : { kind: 'version', versionId: agent.publishedVersionId! });
  const missing = missingStubErrors(skills ?? [], body.skillStubs);
  if (missing.length) throw validationError(missing, `Simulations never call real skills: give skillStubs for ${missing.map((m) => m.field.slice('skillStubs.'.length)).join(', ')}; nothing was started`);
  const temporal = requireTemporal(deps);
  const sim = await createSimulation(deps.db, orgId, agent.id, body);
  try {
    await startWorkflow(temporal, 'agentSimulation', {
      workflowId: workflowIds.agentSimulation(sim.id),
      args: [{ orgId, simulationId: sim.id, turns: simulationTurns(body) }],
      orgId,
      resourceId: sim.id,
    });
  } catch (err) {
    await failSimulation(deps.db, orgId, sim.id, 'workflow_not_started');
    ctx.state.log.error({ err, orgId, simulationId: sim.id }, 'starting agent-simulation workflow failed');
    throw temporalUnavailable('The simulation could not be started; send it again');
  }
  const data: Simulation = { ...withoutRequest(sim), transcript: [] };
  return { data, status: 202, headers: { Location: `${ctx.path.replace(/\/simulate$/, '')}/simulations/${sim.id}` } };
};

function withoutRequest(s: SimulationRecord): Omit<Simulation, 'transcript'> {
  const { request: _request, ...rest } = s;
  return rest;
}

/** GET /agents/{agentId}/simulations/{id} (getSimulation, agents:read) → the simulation; its transcript once started. 404 `simulation_not_found`. */
export const getSimulationHandler: Handler = async (ctx, { db }) => {
  const orgId = orgOf(ctx);
  const sim = await getSimulation(db, orgId, param(ctx, 'id'), param(ctx, 'agentId'));
  if (!sim) throw notFound('Simulation', 'simulation_not_found');
  // Tool exchanges are receipt content: only with calls:read (spec "Scope rules" 1; api/conversationView.ts).
  const data: Simulation = { ...withoutRequest(sim), transcript: sim.conversationId ? messagesFor(ctx, await allMessages(db, orgId, sim.conversationId)) : [] };
  return { data };
};

/** Handlers of this area by operationId. */
export const handlers = { createTalkToken, simulateAgent, getSimulation: getSimulationHandler };

/** Schemas of this area's operations. */
export const routeSchemas = {
  createTalkToken: { requestSchema: 'TalkTokenRequest', responseSchema: 'TalkToken' },
  simulateAgent: { requestSchema: 'SimulationRequest', responseSchema: 'Simulation' },
  getSimulation: { responseSchema: 'Simulation' },
};
