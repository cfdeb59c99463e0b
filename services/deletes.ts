/**
 * Deletes of agents, knowledge sources, playbooks and numbers (docs/api-notes.md "Deletes"). Each is one
 * transaction that makes the change and emits its event (`agent.deleted`, `knowledge.source.deleted`,
 * `playbook.deleted`, `number.released`); the audit middleware records the request beside it. Nothing a
 * conversation, a published version or the audit log points at is removed:
 * - an agent is archived (writes answer 404, its conversations, versions and analyses stay readable);
 * - a knowledge source leaves the draft, and keeps its chunks while a published version lists it;
 * - a playbook leaves the draft; published versions hold their own copy in their snapshots;
 * - a number is released at the provider once (`performOnce`: the intent is recorded before the request).
 */
import type { Db } from '../db';
import { archiveAgent, editDraft, type AgentArchiveOutcome } from '../db/repositories/agents';
import { deleteSource, type SourceDeletion } from '../db/repositories/knowledge';
import { deletePlaybookRow } from '../db/repositories/agentPlaybooks';
import { releaseHeldNumber, type NumberRelease } from '../db/repositories/numbers';
import { resolveIntent } from '../db/repositories/providerIntents';
import { logProviderRequest } from '../db/repositories/smsProviderEvents';
import { emitEvent } from '../events/emit';
import type { TelephonyAdapter } from '../providers/telephony';
import type { Playbook } from '../schemas/types/playbooks';
import { performOnce, type FaultHook } from './effects';

/**
 * Deletes (archives) an agent and emits `agent.deleted` (db/repositories/agents.ts `archiveAgent`).
 * @returns `not_found` (also an archived or another organization's agent), `campaign_running` with the campaign ids, or `archived`
 */
export async function deleteAgent(db: Db, orgId: string, agentId: string): Promise<AgentArchiveOutcome> {
  return archiveAgent(db, orgId, agentId, (trx, out) =>
    emitEvent(trx, orgId, 'agent.deleted', {
      agentId,
      name: out.agent.name,
      unassignedNumberIds: out.unassignedNumberIds,
      revokedPublishableKeyIds: out.revokedPublishableKeyIds,
      archivedAt: out.archivedAt,
    }),
  );
}

/**
 * Deletes a `ready` or `failed` knowledge source of an agent and emits `knowledge.source.deleted`.
 * @returns `not_found`, `ingesting` (pending or processing: refused) or `deleted`
 */
export async function deleteKnowledgeSource(db: Db, orgId: string, agentId: string, sourceId: string): Promise<SourceDeletion> {
  return deleteSource(db, orgId, agentId, sourceId, (trx, d) =>
    emitEvent(trx, orgId, 'knowledge.source.deleted', {
      agentId,
      sourceId,
      status: d.source.status,
      chunkCount: d.source.chunkCount,
      chunksKept: d.chunksKept,
      deletedAt: d.deletedAt,
    }),
  );
}

/** What deleting a playbook found. */
export type PlaybookDeletion =
  | { kind: 'not_found' }
  | { kind: 'playbook_not_found' }
  | { kind: 'version_conflict'; agent: Extract<Awaited<ReturnType<typeof editDraft>>, { kind: 'version_conflict' }>['agent'] }
  | { kind: 'deleted'; playbook: Playbook; version: number };

/**
 * Deletes a playbook from the agent's draft (one draft edit: the draft version goes up) and emits `playbook.deleted`.
 * @param expectedVersion the draft version `If-Match` named, or null for any
 */
export async function deletePlaybook(db: Db, orgId: string, agentId: string, playbookId: string, expectedVersion: number | null): Promise<PlaybookDeletion> {
  let out;
  try {
    out = await editDraft(
      db,
      orgId,
      agentId,
      async (trx, head) => {
        const p = await deletePlaybookRow(trx, orgId, agentId, playbookId);
        // Thrown so the draft edit (its version bump) is rolled back: nothing changed.
        if (!p) throw new PlaybookMissing();
        await emitEvent(trx, orgId, 'playbook.deleted', { agentId, playbookId, name: p.name, draftVersion: head.version, deletedAt: new Date().toISOString() });
        return p;
      },
      expectedVersion,
    );
  } catch (err) {
    if (err instanceof PlaybookMissing) return { kind: 'playbook_not_found' };
    throw err;
  }
  if (out.kind !== 'ok') return out;
  return { kind: 'deleted', playbook: out.result, version: out.version };
}

class PlaybookMissing extends Error {}

/**
 * Releases a number the organization holds and emits `number.released`. A purchased number is released at the
 * provider once (docs/operations.md "Provider calls happen once"): the `number_release` intent (reference: our
 * number id) is recorded before the request, and a retry after a crash finds it done instead of asking again.
 * @returns `not_found`, `assigned` (refused: unassign it first) or `released`
 * @throws ProviderReleaseUnknownError when an earlier attempt's outcome cannot be told; the provider's error when it refuses
 */
export async function releaseNumber(
  deps: { db: Db; telephony: TelephonyAdapter; faults?: FaultHook },
  orgId: string,
  numberId: string,
): Promise<NumberRelease> {
  const { db, telephony } = deps;
  return releaseHeldNumber(
    db,
    orgId,
    numberId,
    async (trx, n, providerNumberId) => {
      const effect = await performOnce(db, orgId, {
        kind: 'number_release',
        reference: n.id,
        subjectId: n.id,
        provider: telephony.provider,
        request: { e164: n.e164, providerNumberId },
        perform: async () => {
          if (providerNumberId && telephony.releaseNumber) await telephony.releaseNumber(orgId, providerNumberId);
          return { providerNumberId };
        },
        // Releasing again is harmless (the provider answers that the number is gone): nothing to look up.
        lookup: async () => ({ absent: true }),
        fault: deps.faults,
      });
      if (effect.state === 'unknown') throw new ProviderReleaseUnknownError(n.e164, effect.intent.id);
      await resolveIntent(trx, orgId, effect.intent.id, effect.result);
      await logProviderRequest(trx, orgId, telephony.provider, 'releaseNumber.result', { numberId: n.id, providerNumberId });
    },
    (trx, n, { purchased, providerNumberId }) =>
      emitEvent(trx, orgId, 'number.released', {
        numberId: n.id,
        e164: n.e164,
        provider: purchased ? telephony.provider : null,
        providerNumberId,
        releasedAt: new Date().toISOString(),
      }),
  );
}

/** An earlier release attempt may have reached the provider and it cannot tell (an operator settles the intent). */
export class ProviderReleaseUnknownError extends Error {
  constructor(readonly e164: string, readonly intentId: string) {
    super(`The provider cannot tell whether ${e164} was released (intent ${intentId})`);
    this.name = 'ProviderReleaseUnknownError';
  }
}
