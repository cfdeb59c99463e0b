/**
 * Re-embedding activities (workflow `knowledge-reembed/{orgId}`, workflows/knowledgeReembed.ts; docs/knowledge.md
 * "Changing the embeddings model"): begin (record the target model and the progress so far), embed one batch of the
 * organization's chunks that have no vector of the target model, and complete (switch retrieval to the new vectors
 * and delete the old ones). Each is idempotent: a retried batch finds the chunks it already embedded done.
 */
import { ApplicationFailure } from '@temporalio/common';
import { addReembedProgress, beginReembed, chunksWithoutVector, completeReembed, ensureVectorIndex, insertChunkVectors } from '../db/repositories/knowledgeEmbeddings';
import { EmbeddingsError, type EmbeddingsProvider } from '../providers/embeddings';
import { configuredEmbeddings } from '../services/knowledge/retrieval';
import type { ActivityDeps } from './index';

/** Chunks embedded per batch activity. */
export const REEMBED_BATCH = 256;

/** Progress of a re-embedding. */
export interface ReembedProgress {
  model: string | null;
  total: number;
  done: number;
}

/**
 * Builds the re-embedding activities.
 * @param opts.embeddings the provider (default: the configured one)
 */
export function createKnowledgeReembedActivities(deps: ActivityDeps, opts: { embeddings?: EmbeddingsProvider } = {}) {
  const { db } = deps;
  // Composed when the worker starts, so a misconfigured EMBEDDINGS_PROVIDER stops it with one line.
  const configured = opts.embeddings ?? configuredEmbeddings();
  const provider = () => configured;

  return {
    /** Records the configured model as the target. @returns the model (null: the provider makes no vectors) and the progress so far */
    async beginKnowledgeReembed(ref: { orgId: string }): Promise<ReembedProgress> {
      const model = provider().model;
      if (!model) return { model: null, total: 0, done: 0 };
      return { model, ...(await beginReembed(db, ref.orgId, model)) };
    },

    /**
     * Embeds up to REEMBED_BATCH chunks without a vector of `model`.
     * @returns the progress after the batch and whether chunks remain
     * @throws non-retryable ApplicationFailure `embeddings_model_changed` when the configured model is no longer `model`;
     *   `embeddings_refused` when the provider refuses for good; retryable otherwise
     */
    async embedKnowledgeBatch(ref: { orgId: string; model: string }): Promise<ReembedProgress & { remaining: boolean }> {
      const p = provider();
      if (p.model !== ref.model) throw ApplicationFailure.create({ type: 'embeddings_model_changed', message: `the configured embeddings model is now ${p.model ?? 'none'}`, nonRetryable: true });
      const chunks = await chunksWithoutVector(db, ref.orgId, ref.model, REEMBED_BATCH);
      if (!chunks.length) return { model: ref.model, ...(await addReembedProgress(db, ref.orgId, 0)), remaining: false };
      let vectors: number[][];
      try {
        vectors = await p.embed(chunks.map((c) => c.content));
      } catch (err) {
        const permanent = err instanceof EmbeddingsError && !err.retryable;
        throw ApplicationFailure.create({ type: permanent ? 'embeddings_refused' : 'embeddings_unavailable', message: err instanceof Error ? err.message : String(err), nonRetryable: permanent });
      }
      if (vectors[0]) await ensureVectorIndex(db, vectors[0].length);
      await insertChunkVectors(db, ref.orgId, ref.model, chunks.map((c, i) => ({ chunkId: c.id, agentId: c.agentId, sourceId: c.sourceId, vector: vectors[i] })));
      const progress = await addReembedProgress(db, ref.orgId, chunks.length);
      return { model: ref.model, ...progress, remaining: chunks.length === REEMBED_BATCH };
    },

    /** Makes `model` the organization's active model and deletes the other models' vectors (one transaction). */
    async completeKnowledgeReembed(ref: { orgId: string; model: string }): Promise<void> {
      await completeReembed(db, ref.orgId, ref.model);
    },
  };
}

/** The activity functions' types, for `proxyActivities` in the workflow. */
export type KnowledgeReembedActivities = ReturnType<typeof createKnowledgeReembedActivities>;
