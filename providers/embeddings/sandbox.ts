/**
 * The sandbox embeddings adapter (the default; docs/knowledge.md "Retrieval"): lexical only. It produces no vectors,
 * so chunks are stored without embeddings and retrieval is Postgres full-text search ranked by `ts_rank` — the same
 * answers offline, in tests and on a laptop, with nothing to download.
 */
import { EmbeddingsError, type EmbeddingsProvider } from './index';

/** Produces no vectors (module docstring). */
export class SandboxEmbeddings implements EmbeddingsProvider {
  readonly name = 'sandbox';
  readonly model = null;

  /** @throws EmbeddingsError `no_vectors`, always: callers check `model` first */
  async embed(): Promise<number[][]> {
    throw new EmbeddingsError('no_vectors', 'The sandbox embeddings provider is lexical only and produces no vectors');
  }
}
