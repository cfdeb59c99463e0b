/**
 * HTTP helpers of the agents area: `If-Match` parsing (RFC 9110 §13.1.1 with
 * the draft version as the entity tag), repository outcomes → problem details.
 */
import type { AppContext, Handler } from '../context';
import { orgOf, pageParams, paged } from '../http';
import type { Page } from '../../db/pagination';
import { ApiError, notFound } from '../../domain/errors';
import type { Knex } from 'knex';
import { DuplicateNameError, editDraft, getAgent, type AgentRecord, type DraftHead } from '../../db/repositories/agents';
import type { Db } from '../../db';
import { toAgentView } from './present';

/**
 * The draft version named by `If-Match` (`"3"`, `3`, `W/"3"`; `*` means any version → null).
 * @param required when true, a missing header is 428 `precondition_required`
 * @returns the expected version, null for `*` or (when not required) an absent header
 * @throws ApiError 428 when required and missing; 400 `invalid_if_match` when it names no version
 */
export function expectedVersion(ctx: AppContext, required: boolean): number | null {
  const raw = ctx.get('if-match').trim();
  if (!raw) {
    if (required) throw new ApiError(428, 'precondition_required', 'Send If-Match with the agent version you edited (its ETag), e.g. If-Match: "3"');
    return null;
  }
  if (raw === '*') return null;
  const m = /^(?:W\/)?"?(\d{1,9})"?$/.exec(raw);
  if (!m) throw new ApiError(400, 'invalid_if_match', 'If-Match must be the agent version as an entity tag, e.g. "3"', { errors: [{ field: 'If-Match', message: 'must be a version such as "3"' }] });
  return Number(m[1]);
}

/** `ETag` header value of a draft version. */
export function etag(version: number): Record<string, string> {
  return { ETag: `"${version}"` };
}

/** 409 `version_conflict` carrying the current agent and version (spec "Errors": optimistic concurrency). */
export function versionConflict(agent: AgentRecord, expected: number | null): ApiError {
  return new ApiError(409, 'version_conflict', `The agent is at version ${agent.version}${expected !== null ? `, not ${expected}` : ''}; refetch, re-apply your edits and retry with If-Match: "${agent.version}"`, {
    extra: { current: toAgentView(agent), version: agent.version },
    headers: etag(agent.version),
  });
}

/** Maps DuplicateNameError to 409 `duplicate_name`; rethrows anything else. */
export function rethrowDuplicate(err: unknown): never {
  if (err instanceof DuplicateNameError) {
    throw new ApiError(409, 'duplicate_name', `A${err.entity === 'agent' ? 'n' : ''} ${err.entity} named "${err.takenName}" already exists`, {
      errors: [{ field: 'name', message: 'is already used' }],
    });
  }
  throw err;
}

/** The agent or 404 `agent_not_found` (also for another organization's agent). */
export async function requireAgent(db: Db, orgId: string, agentId: string): Promise<AgentRecord> {
  const agent = await getAgent(db, orgId, agentId);
  if (!agent) throw notFound('Agent', 'agent_not_found');
  return agent;
}

/**
 * Runs an edit of a part of the draft (skill, playbook, guardrails, voice) in one transaction that bumps
 * the agent's draft version; `If-Match` is honoured when sent. Maps outcomes to 404 `agent_not_found`,
 * 409 `version_conflict` and 409 `duplicate_name`.
 * @returns the edit's result and the new draft version
 */
export async function runDraftEdit<T>(
  ctx: AppContext,
  db: Db,
  agentId: string,
  edit: (trx: Knex.Transaction, head: DraftHead) => Promise<T>,
): Promise<{ result: T; version: number }> {
  const expected = expectedVersion(ctx, false);
  let out;
  try {
    out = await editDraft(db, orgOf(ctx), agentId, edit, expected);
  } catch (err) {
    rethrowDuplicate(err);
  }
  if (out.kind === 'not_found') throw notFound('Agent', 'agent_not_found');
  if (out.kind === 'version_conflict') throw versionConflict(out.agent, expected);
  return out;
}

/**
 * A handler answering one page of a list under `/agents/{agentId}` (skills, playbooks): 404
 * `agent_not_found` for an agent of no or another organization, then the page (`?limit=`, `?cursor=`;
 * 400 naming `limit`, 400 `invalid_cursor`).
 */
export function agentListHandler<R>(list: (db: Db, orgId: string, agentId: string, page: { limit: number; cursor?: string }) => Promise<Page<R>>): Handler {
  return async (ctx, { db }) => {
    const orgId = orgOf(ctx);
    const agentId = String(ctx.params.agentId);
    await requireAgent(db, orgId, agentId);
    return { data: await paged(() => list(db, orgId, agentId, pageParams(ctx))) };
  };
}
