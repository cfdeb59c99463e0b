/**
 * Keeps every organization's knowledge vectors on the configured embeddings model (docs/knowledge.md "Changing the
 * embeddings model"): an organization whose active model differs, or with chunks lacking a vector of the model
 * (indexed before embeddings were configured), gets the workflow `knowledge-reembed/{orgId}` — started with
 * USE_EXISTING, so a running one is joined, and several processes may reconcile at once.
 */
import type { Client } from '@temporalio/client';
import type { Db } from '../../db';
import { organizationsNeedingModel } from '../../db/repositories/knowledgeEmbeddings';
import type { EmbeddingsProvider } from '../../providers/embeddings';
import { startWorkflow, workflowIds } from '../../temporal.config';
import { configuredEmbeddings } from './retrieval';

/**
 * Starts the re-embedding of every organization not on the configured model.
 * @returns the organizations whose workflow was started or joined (none when the provider makes no vectors)
 */
export async function startKnowledgeReembeds(deps: { db: Db; temporal: { client: Client; taskQueue: string }; embeddings?: EmbeddingsProvider }): Promise<string[]> {
  const model = (deps.embeddings ?? configuredEmbeddings()).model;
  if (!model) return [];
  const orgs = await organizationsNeedingModel(deps.db, model);
  for (const orgId of orgs) {
    await startWorkflow(deps.temporal, 'knowledgeReembedWorkflow', {
      workflowId: workflowIds.knowledgeReembed(orgId),
      args: [{ orgId }],
      orgId,
      workflowIdConflictPolicy: 'USE_EXISTING',
    });
  }
  return orgs;
}
