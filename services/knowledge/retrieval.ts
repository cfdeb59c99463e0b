/**
 * Hybrid knowledge retrieval (docs/knowledge.md "Retrieval"): what a conversation turn and the knowledge preview
 * read from an agent's knowledge.
 *
 * - Lexical: Postgres full-text search (db/repositories/knowledge.ts `searchChunks`, each chunk's own language),
 *   one list per recent user turn, all ranked in one statement (`rankChunkLists`) — the current one and up to two before it (domain/knowledge/fusion.ts
 *   `retrievalTurns`), weighted 1, ½, ¼.
 * - Semantic, when the organization has vectors (an active embeddings model) and the provider can embed the query
 *   with that model: the turns are embedded in one request, combined with the same weights into one query vector,
 *   and the nearest chunks by cosine similarity (at least MIN_SIMILARITY) form one more list, of weight 1 — by
 *   pgvector, or exactly without it (`cube` up to 100 dimensions, in this process above: ./exactVectors.ts).
 * - The lists are fused by reciprocal rank fusion (k = 60); the hit's `score` is the fused score normalised to 0..1.
 *   With a single list — one turn and no vectors — nothing is fused: the hits are full-text search's, ranked and
 *   scored by `ts_rank` exactly as before.
 * A failure of the embeddings provider costs the semantic list only (logged), never the turn.
 * With `indexes` (the API process's, composed in api/app.ts), the full-text lists and the hits' text come from the
 * in-process index of the source set (./lexicalIndex.ts), the same lists Postgres would give, without a statement
 * once it is built; without them, or when it declines, Postgres ranks as above.
 */
import type { Db } from '../../db';
import { chunksByIds, rankChunkLists, searchChunks, type RankedChunks } from '../../db/repositories/knowledge';
import { getEmbeddingState } from '../../db/repositories/knowledgeEmbeddings';
import { reciprocalRankFusion, retrievalTurns, turnWeight, weightedQueryVector, type RankedList } from '../../domain/knowledge/fusion';
import { createEmbeddings, type EmbeddingsProvider } from '../../providers/embeddings';
import type { KnowledgePreviewHit } from '../../schemas/types/knowledge';
import { nearestChunkVectors } from './exactVectors';
import type { KnowledgeCorpus, KnowledgeIndexes } from './lexicalIndex';

/** Chunks each ranked list contributes before fusion. */
export const CANDIDATES_PER_LIST = 50;
/**
 * Cosine similarity below which a chunk is not a semantic match (unrelated passages of OpenAI's text-embedding-3
 * models score about 0.0–0.2 against a question; answers about 0.35 and above).
 */
export const MIN_SIMILARITY = 0.25;

/** What retrieval needs. */
export interface RetrievalDeps {
  db: Db;
  /** Default: the configured provider (providers/embeddings `createEmbeddings`), composed once per process. */
  embeddings?: EmbeddingsProvider;
  log?: { warn: (obj: object, msg: string) => void };
  /** The in-process full-text indexes (./lexicalIndex.ts); absent: Postgres ranks every list. */
  indexes?: KnowledgeIndexes;
}

/** The query of a retrieval: what was just said and the person's earlier messages. */
export interface RetrievalQuery {
  text: string;
  /** The conversation's earlier user messages, oldest first (only the last two are read). */
  earlierUserTurns?: readonly string[];
}

let configured: EmbeddingsProvider | undefined;

/** The process's configured embeddings provider (created from the environment on first use). */
export function configuredEmbeddings(): EmbeddingsProvider {
  return (configured ??= createEmbeddings());
}

/** How one retrieval was made (benchmarks and logs). */
export interface RetrievalTrace {
  mode: 'full_text' | 'hybrid';
  turns: number;
}

/**
 * The agent's best chunks for `query` (module docstring).
 * @param limit 1..50
 * @param sourceIds only chunks of these sources; all when omitted
 * @returns best first
 */
export async function retrieveKnowledge(
  deps: RetrievalDeps,
  orgId: string,
  agentId: string,
  query: RetrievalQuery,
  limit: number,
  sourceIds?: readonly string[],
  trace?: (t: RetrievalTrace) => void,
): Promise<KnowledgePreviewHit[]> {
  if (sourceIds && sourceIds.length === 0) return [];
  const turns = retrievalTurns(query.text, query.earlierUserTurns ?? []);
  const embeddings = deps.embeddings ?? configuredEmbeddings();
  const corpus = deps.indexes && sourceIds ? await deps.indexes.corpus(deps.db, orgId, sourceIds) : null;
  const hitsOf = async (ids: readonly string[], scores: ReadonlyMap<string, number>) => corpus?.hits(ids, scores) ?? chunksByIds(deps.db, orgId, ids, scores);
  if (turns.length === 1 && !embeddings.model) {
    trace?.({ mode: 'full_text', turns: 1 });
    const indexed = corpus && (await rankInProcess(deps, corpus, agentId, turns, limit));
    if (!indexed) return searchChunks(deps.db, orgId, agentId, query.text, limit, sourceIds);
    return hitsOf(indexed[0].map((h) => h.chunkId), new Map(indexed[0].map((h) => [h.chunkId, h.score])));
  }
  // The lists are independent: the semantic one (an embeddings request, then the vector search) runs beside the
  // lexical ones, ranked in process or in one statement (ids only; the text is read for the fused hits alone).
  const [vectorHits, lexical] = await Promise.all([
    embeddings.model ? semanticList(deps, embeddings, orgId, agentId, turns, sourceIds) : null,
    (corpus ? rankInProcess(deps, corpus, agentId, turns, CANDIDATES_PER_LIST) : Promise.resolve(null)).then((l) => l ?? rankChunkLists(deps.db, orgId, agentId, turns, CANDIDATES_PER_LIST, sourceIds)),
  ]);
  if (turns.length === 1 && !vectorHits) {
    // No vectors after all (none stored, or the query could not be embedded): full-text search's own ranking and scores.
    trace?.({ mode: 'full_text', turns: 1 });
    const top = lexical[0].slice(0, limit);
    return hitsOf(top.map((h) => h.chunkId), new Map(top.map((h) => [h.chunkId, h.score])));
  }
  const lists: RankedList[] = lexical.map((hits, i) => ({ ids: hits.map((h) => h.chunkId), weight: turnWeight(i) }));
  if (vectorHits) lists.push({ ids: vectorHits, weight: 1 });
  trace?.({ mode: vectorHits ? 'hybrid' : 'full_text', turns: turns.length });
  const fused = reciprocalRankFusion(lists).slice(0, limit);
  return hitsOf(fused.map((f) => f.id), new Map(fused.map((f) => [f.id, Number(f.score.toFixed(6))])));
}

/** The full-text lists of `turns` from the in-process index (./lexicalIndex.ts), or null where it declines. */
async function rankInProcess(deps: RetrievalDeps, corpus: KnowledgeCorpus, agentId: string, turns: readonly string[], limit: number): Promise<RankedChunks[] | null> {
  const configs = corpus.configsOf(agentId);
  if (!configs.length) return turns.map(() => []);
  return corpus.rank(agentId, await deps.indexes!.lexemesOf(deps.db, configs, turns), limit);
}

/** Chunk ids nearest the turns' weighted query vector, or null when the organization has no vectors or embedding failed. */
async function semanticList(
  deps: RetrievalDeps,
  embeddings: EmbeddingsProvider,
  orgId: string,
  agentId: string,
  turns: readonly string[],
  sourceIds?: readonly string[],
): Promise<string[] | null> {
  const { activeModel } = await getEmbeddingState(deps.db, orgId);
  if (!activeModel) return null;
  let vectors: number[][];
  try {
    // While a re-embedding runs, queries are embedded with the model of the vectors that serve.
    vectors = await embeddings.embed(turns, { model: activeModel });
  } catch (err) {
    deps.log?.warn({ err, orgId, model: activeModel }, 'query embedding failed; retrieving by full-text search only');
    return null;
  }
  const hits = await nearestChunkVectors(deps.db, orgId, agentId, activeModel, weightedQueryVector(vectors), CANDIDATES_PER_LIST, { minSimilarity: MIN_SIMILARITY, sourceIds });
  return hits.map((h) => h.chunkId);
}
