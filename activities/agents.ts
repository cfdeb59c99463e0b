/**
 * Agent activities (DESIGN.md "activities/"): the publish compile step. Idempotent: the publish is keyed
 * by (agent, Idempotency-Key) in one DB transaction, so a retried activity replays the version it
 * created instead of publishing twice.
 */
import type { ActivityDeps } from './index';
import { compileDraft, snapshotChecksum } from '../domain/agents/compile';
import { emitEvent } from '../events/emit';
import { resetTrafficSplit } from '../services/agents/traffic';
import { publishDraft, type PublishInput, type PublishOutcome } from '../db/repositories/agentVersions';

/** Input of the publish activity and workflow. */
export type AgentPublishInput = PublishInput;
/** What a publish ends in (db/repositories/agentVersions.ts). */
export type { PublishOutcome };

/**
 * Builds the agent activities. With `config`, a publish also checks `model` and `fallbackModel` against the
 * deployment's LLM_MODELS (docs/api-notes.md "Agents": model settings; the allowlist may have changed since the save).
 */
export function createAgentActivities(deps: Pick<ActivityDeps, 'db'> & { config?: Pick<ActivityDeps['config'], 'llmModel' | 'llmModels'> }) {
  const models = deps.config ? { default: deps.config.llmModel, allowed: deps.config.llmModels } : undefined;
  return {
    /**
     * Resolves the draft into one snapshot, validates it and, when valid, stamps number, publisher and
     * note and makes it the published version, all in one transaction (spec "Agent lifecycle").
     * Validation failures are a result (`kind: 'invalid'`), not an error, so they are not retried.
     */
    async compileAndPublishAgent(input: AgentPublishInput): Promise<PublishOutcome> {
      return publishDraft(
        deps.db,
        input,
        (bundle) => {
          const r = compileDraft(models ? { ...bundle, models } : bundle);
          return { snapshot: r.snapshot, checksum: snapshotChecksum(r.snapshot), errors: r.errors };
        },
        async (trx, version) => {
          await emitEvent(trx, input.orgId, 'agent.published', { agentId: version.agentId, versionId: version.id, version: version.number, publishedAt: version.createdAt });
          // A publish resets the traffic split to 100 % on the new version (docs/api-notes.md "Traffic splits").
          await resetTrafficSplit(trx, input.orgId, version.agentId, version.id, 'published');
        },
      );
    },
  };
}

/** Agent activity functions, for `proxyActivities<AgentActivities>()`. */
export type AgentActivities = ReturnType<typeof createAgentActivities>;
