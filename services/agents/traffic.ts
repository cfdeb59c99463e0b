/**
 * Traffic splits as a service (docs/api-notes.md "Traffic splits"): reads and sets an agent's split of new
 * conversations over its published versions, resets it when a publish or a rollback changes the live version
 * (`traffic.updated`), and picks the version of a new conversation on every channel — chat sessions, the widget,
 * `/chat/completions` and `/responses` addressed to the agent, SMS, inbound and outbound calls — through
 * {@link pickAgentVersion} (or {@link pickFromTraffic} on a split read with its agent), the one pick. An explicit pin (a talk token, `@vN`, draft mode)
 * never comes here.
 */
import type { Knex } from 'knex';
import type { Db } from '../../db';
import type { Conn } from '../../db/repositories/agents';
import { agentTraffic, deleteSplit, publishedVersionIds, upsertSplit } from '../../db/repositories/traffic';
import { defaultSplit, pickVersion, splitErrors, type TrafficSplitRule } from '../../domain/agents/traffic';
import { ApiError, notFound, validationError } from '../../domain/errors';
import { emitEvent } from '../../events/emit';
import type { TrafficSplit, TrafficSplitUpdate } from '../../schemas/types/versions';

/** 409 `no_published_version` (spec "Errors"): a split needs a published version. */
function noPublishedVersion(): ApiError {
  return new ApiError(409, 'no_published_version', 'The agent has never been published; publish it before reading or setting its traffic split');
}

/**
 * The agent's split as the API shows it: the stored one, or the default (100 % on the live version).
 * @throws ApiError 404 `agent_not_found`, 409 `no_published_version`
 */
export async function getTrafficSplit(db: Db, orgId: string, agentId: string): Promise<TrafficSplit> {
  const t = await agentTraffic(db, orgId, agentId);
  if (!t) throw notFound('Agent', 'agent_not_found');
  if (!t.publishedVersionId) throw noPublishedVersion();
  const rule = t.stored?.rule ?? defaultSplit(t.publishedVersionId);
  return { agentId, splits: rule.splits, stickiness: rule.stickiness, publishedVersionId: t.publishedVersionId, custom: !!t.stored, updatedAt: t.stored?.updatedAt ?? null };
}

/**
 * Sets the agent's split (`PUT /agents/{id}/traffic`) and emits `traffic.updated` (reason `put`) in one
 * transaction, under the agent's row lock — the lock a publish and a rollback take, so a split never names a
 * version list that a concurrent publish has just reset.
 * @param updatedBy the credential id that set it
 * @throws ApiError 404 `agent_not_found`, or `version_not_found` naming `splits.<i>.versionId` (no version of this
 *   agent); 409 `no_published_version`; 400 `validation_error` naming `splits.<i>.percent`, `splits.<i>.versionId`
 *   (a duplicate) or `splits` (domain/agents/traffic.ts splitErrors)
 */
export async function setTrafficSplit(db: Db, orgId: string, agentId: string, body: TrafficSplitUpdate, updatedBy: string | null): Promise<TrafficSplit> {
  return db.transaction(async (trx) => {
    const t = await agentTraffic(trx, orgId, agentId, { lock: true });
    if (!t) throw notFound('Agent', 'agent_not_found');
    if (!t.publishedVersionId) throw noPublishedVersion();
    const versionIds = await publishedVersionIds(trx, orgId, agentId);
    // An id that is no version of this agent answers 404 like any id outside the caller's reach (DESIGN.md "Tenancy").
    const unknown = body.splits.findIndex((s) => !versionIds.has(s.versionId));
    if (unknown >= 0) {
      throw new ApiError(404, 'version_not_found', `Version ${body.splits[unknown].versionId} is not a version of this agent`, {
        errors: [{ field: `splits.${unknown}.versionId`, message: 'is not a version of this agent' }],
      });
    }
    const errors = splitErrors(body.splits, versionIds);
    if (errors.length) throw validationError(errors);
    const rule: TrafficSplitRule = { splits: body.splits.map((s) => ({ versionId: s.versionId, percent: s.percent })), stickiness: body.stickiness ?? 'counterpart' };
    const updatedAt = await upsertSplit(trx, orgId, agentId, rule, updatedBy);
    await emitEvent(trx, orgId, 'traffic.updated', { agentId, ...rule, reason: 'put', updatedAt });
    return { agentId, ...rule, publishedVersionId: t.publishedVersionId, custom: true, updatedAt };
  });
}

/**
 * Resets the split to 100 % on the new live version after a publish or a rollback, in the transaction that made
 * the change: deletes the stored split and, when there was one, emits `traffic.updated` with the reset split. An
 * agent on the default split emits nothing (its `agent.published` / `agent.rolled_back` says it all).
 * @param liveVersionId the version now published
 */
export async function resetTrafficSplit(trx: Knex.Transaction, orgId: string, agentId: string, liveVersionId: string, reason: 'published' | 'rolled_back'): Promise<void> {
  if (!(await deleteSplit(trx, orgId, agentId))) return;
  await emitEvent(trx, orgId, 'traffic.updated', { agentId, ...defaultSplit(liveVersionId), reason, updatedAt: new Date().toISOString() });
}

/** The version a new conversation runs on and the split it was picked from. */
export interface PickedVersion {
  versionId: string;
  split: TrafficSplitRule;
}

/**
 * Picks the published version of a new conversation of an agent with no explicit pin: the stored split (or 100 %
 * on the live version), by the stickiness key (domain/agents/traffic.ts pickVersion).
 * @param key the stickiness key: the caller's or callee's number, the texter's number, the widget visitor id, the
 *   chat customer id (`customerId`, `/chat/completions` `user`); null or absent: a random pick
 * @returns null when the agent does not exist or was never published
 */
export async function pickAgentVersion(conn: Conn, orgId: string, agentId: string, key?: string | null): Promise<PickedVersion | null> {
  return pickFromTraffic(await agentTraffic(conn, orgId, agentId), agentId, key);
}

/**
 * {@link pickAgentVersion} on an agent's traffic already read (db/repositories/traffic.ts `liveAgentTraffic`: a
 * conversation's start reads the agent and its split in one statement).
 * @returns null when there is no agent or it was never published
 */
export function pickFromTraffic(t: { publishedVersionId: string | null; stored: { rule: TrafficSplitRule } | null } | undefined, agentId: string, key?: string | null): PickedVersion | null {
  if (!t?.publishedVersionId) return null;
  const split = t.stored?.rule ?? defaultSplit(t.publishedVersionId);
  return { versionId: pickVersion(split, agentId, key), split };
}
