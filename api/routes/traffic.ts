/**
 * Traffic split handlers (docs/api-notes.md "Traffic splits"): `GET /agents/{id}/traffic` (agents:read) and
 * `PUT /agents/{id}/traffic` (agents:write) — the split of new conversations over the agent's published versions.
 * The rules live in domain/agents/traffic.ts, the reads and writes in services/agents/traffic.ts.
 */
import type { Handler } from '../context';
import { orgOf } from '../http';
import { splitShapeErrors } from '../../domain/agents/traffic';
import { getTrafficSplit, setTrafficSplit } from '../../services/agents/traffic';
import type { TrafficSplitUpdate } from '../../schemas/types/versions';

/** Path parameter `id`. */
function agentIdOf(ctx: Parameters<Handler>[0]): string {
  return String((ctx as unknown as { params: Record<string, string> }).params.id);
}

/**
 * GET /agents/{id}/traffic (getAgentTraffic): the split; the default is 100 % on the live version (`custom: false`).
 * 404 `agent_not_found`; 409 `no_published_version` before the first publish.
 */
export const getAgentTraffic: Handler = async (ctx, { db }) => ({ data: await getTrafficSplit(db, orgOf(ctx), agentIdOf(ctx)) });

/**
 * PUT /agents/{id}/traffic (setAgentTraffic) `{splits: [{versionId, percent}], stickiness?}`: replaces the split
 * until the next publish or rollback, and emits `traffic.updated`. 400 `validation_error` naming
 * `splits.<i>.percent`, `splits.<i>.versionId` (a duplicate) or `splits` (the percents do not sum to 100);
 * 404 `agent_not_found`, or `version_not_found` naming `splits.<i>.versionId` (not a version of this agent); 409
 * `no_published_version`.
 */
export const setAgentTraffic: Handler = async (ctx, { db }) => {
  const body = ctx.request.body as unknown as TrafficSplitUpdate;
  return { data: await setTrafficSplit(db, orgOf(ctx), agentIdOf(ctx), body, ctx.state.auth?.keyId ?? null) };
};

/** Handlers of this area by operationId. */
export const handlers = { getAgentTraffic, setAgentTraffic };

/** Schemas of this area's operations. */
export const routeSchemas = {
  getAgentTraffic: { responseSchema: 'TrafficSplit' },
  setAgentTraffic: { requestSchema: 'TrafficSplitUpdate', responseSchema: 'TrafficSplit', bodyChecks: (body: Record<string, any>) => splitShapeErrors(body) },
};
