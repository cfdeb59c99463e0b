/**
 * Delete handlers of agents, knowledge sources, playbooks and numbers (docs/api-notes.md "Deletes"; the spec's
 * Agents, Knowledge, Playbooks and Numbers groups list no delete: these are additions within v1). The rules and the
 * transactions are in services/deletes.ts; each answers the deleted resource, emits its event, and the audit
 * middleware records the request. Refusals are 409 with a stable code; a deleted resource answers 404 afterwards.
 */
import type { Handler } from '../context';
import { ApiError, notFound } from '../../domain/errors';
import { orgOf } from '../http';
import { setAuditResource } from '../middleware/audit';
import { param } from './agents';
import { etag, expectedVersion, requireAgent, versionConflict } from '../agents/http';
import { removeKnowledgeRefreshSchedule } from '../../services/knowledge/refreshSchedule';
import { deleteAgent as archive, deleteKnowledgeSource as dropSource, deletePlaybook as dropPlaybook, releaseNumber as release, ProviderReleaseUnknownError } from '../../services/deletes';
import { createTelephony } from '../../providers/telephony';
import type { AgentDeletion, KnowledgeSourceDeletion, PlaybookDeletion, ReleasedNumber } from '../../schemas/types/deletes';

/**
 * DELETE /agents/{id} (deleteAgent, agents:write): archives the agent — its numbers are unassigned and its
 * publishable keys revoked; its versions, conversations and analyses stay readable (Observe, audit). Afterwards
 * `GET /agents/{id}` and every write answer 404 `agent_not_found`, and the list leaves it out. 409
 * `campaign_running` (with `campaignIds`) while one of its campaigns runs or is paused.
 */
export const deleteAgent: Handler = async (ctx, { db }) => {
  const out = await archive(db, orgOf(ctx), param(ctx, 'id'));
  if (out.kind === 'not_found') throw notFound('Agent', 'agent_not_found');
  if (out.kind === 'campaign_running') {
    throw new ApiError(409, 'campaign_running', `The agent dials for campaign ${out.campaignIds.join(', ')}; cancel it (or let it finish) before deleting the agent`, { extra: { campaignIds: out.campaignIds } });
  }
  const data: AgentDeletion = { id: out.agent.id, deleted: true, archivedAt: out.archivedAt, unassignedNumberIds: out.unassignedNumberIds, revokedPublishableKeyIds: out.revokedPublishableKeyIds };
  return { data };
};

/**
 * DELETE /agents/{agentId}/knowledge/sources/{id} (deleteKnowledgeSource, knowledge:write): the source leaves the
 * draft (the next publish leaves it out); a published version that lists it keeps answering from its chunks.
 * 404 `agent_not_found` / `knowledge_source_not_found`; 409 `source_ingesting` while it is pending or processing.
 */
export const deleteKnowledgeSource: Handler = async (ctx, { db, temporal }) => {
  const orgId = orgOf(ctx);
  const agentId = param(ctx, 'agentId');
  setAuditResource(ctx, 'knowledge_source', param(ctx, 'id'));
  await requireAgent(db, orgId, agentId);
  const out = await dropSource(db, orgId, agentId, param(ctx, 'id'));
  if (out.kind === 'not_found') throw notFound('Knowledge source', 'knowledge_source_not_found');
  if (out.kind === 'ingesting') throw new ApiError(409, 'source_ingesting', `The source is ${out.status}; delete it once its ingestion is ready or failed`);
  // Its refresh schedule goes with it; when Temporal cannot be reached now, the schedule's next run finds the
  // source deleted and removes itself (workflows/knowledgeRefresh.ts).
  if (temporal) await removeKnowledgeRefreshSchedule(temporal.client, out.source.id).catch(() => false);
  const data: KnowledgeSourceDeletion = { id: out.source.id, agentId, deleted: true, deletedAt: out.deletedAt, chunksKept: out.chunksKept };
  return { data };
};

/**
 * DELETE /agents/{agentId}/playbooks/{id} (deletePlaybook, playbooks:write): a draft edit (If-Match honoured when
 * sent; the new draft version is the ETag). Published versions keep their copy. 404 `agent_not_found` /
 * `playbook_not_found`; 409 `version_conflict` for a stale If-Match.
 */
export const deletePlaybook: Handler = async (ctx, { db }) => {
  const orgId = orgOf(ctx);
  const agentId = param(ctx, 'agentId');
  const expected = expectedVersion(ctx, false);
  const out = await dropPlaybook(db, orgId, agentId, param(ctx, 'id'), expected);
  if (out.kind === 'not_found') throw notFound('Agent', 'agent_not_found');
  if (out.kind === 'playbook_not_found') throw notFound('Playbook', 'playbook_not_found');
  if (out.kind === 'version_conflict') throw versionConflict(out.agent, expected);
  const data: PlaybookDeletion = { id: out.playbook.id, agentId, name: out.playbook.name, deleted: true, draftVersion: out.version };
  return { data, headers: etag(out.version) };
};

/**
 * DELETE /numbers/{id} (releaseNumber, numbers:write): releases a purchased number at the telephony provider (once:
 * docs/operations.md "Provider calls happen once") or lets a reservation go. 404 `number_not_found`; 409
 * `number_assigned` while an agent answers it (unassign it first); 409 `provider_outcome_unknown` when an earlier
 * attempt's outcome cannot be told.
 */
export const releaseNumber: Handler = async (ctx, deps) => {
  const telephony = createTelephony(deps);
  let out;
  try {
    out = await release({ db: deps.db, telephony }, orgOf(ctx), param(ctx, 'id'));
  } catch (err) {
    if (err instanceof ProviderReleaseUnknownError) throw new ApiError(409, 'provider_outcome_unknown', `${err.message}; an operator settles it before it can be released again`);
    throw err;
  }
  if (out.kind === 'not_found') throw notFound('Number', 'number_not_found');
  if (out.kind === 'assigned') {
    throw new ApiError(409, 'number_assigned', `The number is assigned to agent ${out.number.agentId}; unassign it (POST /numbers/{id}/assign with agentId null) before releasing it`);
  }
  const data: ReleasedNumber = { id: out.number.id, e164: out.number.e164, status: 'released', provider: out.purchased ? telephony.provider : null, providerNumberId: out.providerNumberId };
  return { data };
};

/** Handlers of this area by operationId. */
export const handlers = { deleteAgent, deleteKnowledgeSource, deletePlaybook, releaseNumber };

/** Schemas of this area's operations. */
export const routeSchemas = {
  deleteAgent: { responseSchema: 'AgentDeletion' },
  deleteKnowledgeSource: { responseSchema: 'KnowledgeSourceDeletion' },
  deletePlaybook: { responseSchema: 'PlaybookDeletion' },
  releaseNumber: { responseSchema: 'ReleasedNumber' },
};
