/**
 * Knowledge chunk vectors and the organization's embeddings model (docs/knowledge.md "Retrieval"; migration
 * 20261127000600_knowledge_hybrid.ts). Each vector row keeps its model id; retrieval reads the rows of the
 * organization's `active_model` only, so a re-embedding (workflow `knowledge-reembed/{orgId}`) writes the new model's
 * rows beside the old ones and switches when every chunk has one.
 *
 * Nearest chunks by cosine similarity, by the best store the database has (detected once per process from the
 * table's columns, which the migration created according to the extensions it could install):
 * - `pgvector`: the HNSW index of the vector's dimension (`<=>`, cosine distance; pgvector README "HNSW"), planned
 *   for the agent's own row count (custom plan); tested on PGlite's pgvector (test/db/pgvector.test.ts);
 * - `cube`: exact, for vectors of at most 100 dimensions — C `cube_distance` over the generated cube column;
 * - `cube_blocks`: exact, for vectors of more than 100 dimensions where the migration 20261127000900 could add the
 *   generated `embedding_blocks` (the vector cut into cubes of ≤ 100 coordinates) and `embedding_sumsq` (|v|²): the
 *   dot product is (|v|² + |q|² − Σ_i cube_distance(v_i, q_i)²) / 2, one C call per block;
 * - `array`: exact, for any dimension — the dot product of the unit `real[]` vectors summed in SQL (slowest: one SQL
 *   row per coordinate; only where `cube` cannot be installed). Figures: docs/benchmarks.md "Knowledge retrieval".
 * Retrieval searches vectors of more than 100 dimensions without pgvector in its own process instead
 * (services/knowledge/exactVectors.ts, reading them with `vectorSetMembers` and `vectorsOfChunks`); `cube_blocks` and
 * `array` serve the sets too large to hold there.
 */
import type { Knex } from 'knex';
import type { Db } from '../index';

type Conn = Db | Knex.Transaction;

/** How vectors are searched (module docstring). */
export type VectorStore = 'pgvector' | 'cube' | 'cube_blocks' | 'array';

/** Largest dimension the `cube` extension takes (its CUBE_MAX_DIM). */
export const CUBE_MAX_DIMS = 100;

/** Coordinates per block of the `cube_blocks` store (migration 20261127000900 `knowledge_cube_blocks`). */
export const CUBE_BLOCK_DIMS = 100;

interface VectorColumns {
  cube: boolean;
  blocks: boolean;
  pgvector: boolean;
  iterative: boolean;
}

const storeCache = new WeakMap<object, Promise<VectorColumns>>();
const indexed = new WeakMap<object, Set<number>>();

/** Which generated vector columns exist, and whether pgvector has iterative index scans (≥ 0.8); cached per connection pool. */
function vectorColumns(db: Conn): Promise<VectorColumns> {
  const key = ((db as any).client ?? db) as object;
  let p = storeCache.get(key);
  if (!p) {
    p = db
      .raw(
        `SELECT column_name, (SELECT extversion FROM pg_extension WHERE extname = 'vector') AS pgvector_version
           FROM information_schema.columns WHERE table_name = 'knowledge_chunk_embeddings' AND table_schema = current_schema()`,
      )
      .then((r: any) => {
        const rows = r.rows as { column_name: string; pgvector_version: string | null }[];
        const names = new Set(rows.map((x) => x.column_name));
        const [major, minor] = (rows[0]?.pgvector_version ?? '0.0').split('.').map(Number);
        return { cube: names.has('embedding_cube'), blocks: names.has('embedding_blocks'), pgvector: names.has('embedding_vector'), iterative: major > 0 || minor >= 8 };
      });
    storeCache.set(key, p);
    p.catch(() => storeCache.delete(key));
  }
  return p;
}

/** The store that serves vectors of `dims` dimensions in this database (module docstring). */
export async function vectorStore(db: Conn, dims: number): Promise<VectorStore> {
  const cols = await vectorColumns(db);
  if (cols.pgvector) return 'pgvector';
  if (cols.cube && dims <= CUBE_MAX_DIMS) return 'cube';
  if (cols.blocks) return 'cube_blocks';
  return 'array';
}

/** Most dimensions pgvector's HNSW index takes for `vector` (pgvector README "HNSW"). */
export const HNSW_MAX_DIMS = 2000;

/**
 * Creates the HNSW index of `dims`-dimension vectors when pgvector is installed (an expression index on
 * `embedding_vector::vector(dims)`, partial on `dims`, cosine operator class; pgvector README "Indexing" shows the
 * pattern for columns of several dimensions). Idempotent and best effort: without the index (vectors longer than
 * HNSW_MAX_DIMS, or no right to create it) the same queries scan exactly with pgvector's `<=>`.
 * @returns whether the index exists (as far as this process knows)
 */
export async function ensureVectorIndex(db: Db, dims: number): Promise<boolean> {
  if (!(await vectorColumns(db)).pgvector) return false;
  const d = Math.trunc(dims);
  if (!(d > 0 && d <= HNSW_MAX_DIMS)) return false;
  // Once per process and dimension: CREATE INDEX takes a lock that blocks writes, even when the index exists.
  const done = (indexed.get(db) ?? indexed.set(db, new Set()).get(db))!;
  if (done.has(d)) return true;
  done.add(d);
  try {
    await db.raw(
      `CREATE INDEX IF NOT EXISTS knowledge_chunk_embeddings_hnsw_${d} ON knowledge_chunk_embeddings
         USING hnsw ((embedding_vector::vector(${d})) vector_cosine_ops) WHERE dims = ${d}`,
    );
    return true;
  } catch {
    done.delete(d);
    return false;
  }
}

/** Largest `hnsw.ef_search` pgvector accepts (its GUC range is 1..1000; pgvector README "Query Options"). */
export const HNSW_MAX_EF_SEARCH = 1000;

/**
 * The HNSW candidate list size for a search of `limit` rows: twice the limit, at least pgvector's default 40, at most
 * {@link HNSW_MAX_EF_SEARCH} (setting more is an error). With iterative scans a limit above it is still filled: the
 * scan continues past the first ef_search candidates (pgvector 0.8 "Iterative Index Scans").
 */
export function hnswEfSearch(limit: number): number {
  return Math.min(HNSW_MAX_EF_SEARCH, Math.max(40, Math.trunc(limit) * 2));
}

/** One chunk's vector to store. */
export interface ChunkVector {
  chunkId: string;
  agentId: string;
  sourceId: string;
  vector: readonly number[];
}

/** Stores vectors of `model` (a vector already stored for that chunk and model is kept). */
export async function insertChunkVectors(db: Conn, orgId: string, model: string, vectors: readonly ChunkVector[]): Promise<void> {
  const rows = vectors.map((v) => ({
    chunk_id: v.chunkId,
    org_id: orgId,
    agent_id: v.agentId,
    source_id: v.sourceId,
    model,
    dims: v.vector.length,
    embedding: db.raw('?::real[]', [v.vector as number[]]),
  }));
  for (let i = 0; i < rows.length; i += 500) {
    await db('knowledge_chunk_embeddings').insert(rows.slice(i, i + 500)).onConflict(['chunk_id', 'model']).ignore();
  }
}

/** The organization's embeddings state: the model retrieval reads and the re-embedding in progress. */
export interface EmbeddingState {
  activeModel: string | null;
  targetModel: string | null;
  total: number;
  done: number;
  completedAt: Date | null;
}

/** The organization's embeddings state (all nulls and zeros when it has none yet). */
export async function getEmbeddingState(db: Conn, orgId: string): Promise<EmbeddingState> {
  const r = await db('knowledge_embedding_state').where({ org_id: orgId }).first();
  return { activeModel: r?.active_model ?? null, targetModel: r?.target_model ?? null, total: r?.total ?? 0, done: r?.done ?? 0, completedAt: r?.completed_at ?? null };
}

/** Makes `model` the organization's active model when it has none (its first vectors). */
export async function adoptModelIfNone(db: Conn, orgId: string, model: string): Promise<void> {
  await db.raw(
    `INSERT INTO knowledge_embedding_state (org_id, active_model) VALUES (?, ?)
     ON CONFLICT (org_id) DO UPDATE SET active_model = ?, updated_at = now() WHERE knowledge_embedding_state.active_model IS NULL`,
    [orgId, model, model],
  );
}

/**
 * Organizations whose retrieval is not on `model` yet: an active model other than `model`, or chunks without a
 * vector of `model` (sources indexed before embeddings were configured, or when the provider refused).
 */
export async function organizationsNeedingModel(db: Conn, model: string): Promise<string[]> {
  const res = await db.raw(
    `SELECT org_id FROM knowledge_embedding_state s
       WHERE s.active_model IS DISTINCT FROM ? AND EXISTS (SELECT 1 FROM knowledge_chunks c WHERE c.org_id = s.org_id)
     UNION
     SELECT DISTINCT c.org_id FROM knowledge_chunks c
      WHERE NOT EXISTS (SELECT 1 FROM knowledge_chunk_embeddings e WHERE e.chunk_id = c.id AND e.model = ?)`,
    [model, model],
  );
  return (res.rows as { org_id: string }[]).map((r) => r.org_id);
}

/**
 * Starts (or resumes) a re-embedding to `model`: records it as the target with the organization's chunk count and
 * how many already have a vector of `model`.
 */
export async function beginReembed(db: Conn, orgId: string, model: string): Promise<{ total: number; done: number }> {
  const res = await db.raw(
    `SELECT count(*)::int AS total,
            count(*) FILTER (WHERE EXISTS (SELECT 1 FROM knowledge_chunk_embeddings e WHERE e.chunk_id = c.id AND e.model = ?))::int AS done
       FROM knowledge_chunks c WHERE c.org_id = ?`,
    [model, orgId],
  );
  const { total, done } = res.rows[0] as { total: number; done: number };
  await db.raw(
    `INSERT INTO knowledge_embedding_state (org_id, target_model, total, done) VALUES (?, ?, ?, ?)
     ON CONFLICT (org_id) DO UPDATE SET target_model = excluded.target_model, total = excluded.total, done = excluded.done, updated_at = now()`,
    [orgId, model, total, done],
  );
  return { total, done };
}

/** Up to `limit` chunks of the organization without a vector of `model`, in id order. */
export async function chunksWithoutVector(db: Conn, orgId: string, model: string, limit: number): Promise<{ id: string; agentId: string; sourceId: string; content: string }[]> {
  const res = await db.raw(
    `SELECT c.id, c.agent_id, c.source_id, c.content FROM knowledge_chunks c
      WHERE c.org_id = ? AND NOT EXISTS (SELECT 1 FROM knowledge_chunk_embeddings e WHERE e.chunk_id = c.id AND e.model = ?)
      ORDER BY c.id LIMIT ?`,
    [orgId, model, limit],
  );
  return (res.rows as any[]).map((r) => ({ id: r.id, agentId: r.agent_id, sourceId: r.source_id, content: r.content }));
}

/** Adds `n` to the re-embedding's progress. @returns the progress after it */
export async function addReembedProgress(db: Conn, orgId: string, n: number): Promise<{ total: number; done: number }> {
  const [r] = await db('knowledge_embedding_state')
    .where({ org_id: orgId })
    .update({ done: db.raw('LEAST(done + ?, total)', [n]), updated_at: db.fn.now() })
    .returning(['total', 'done']);
  return { total: r?.total ?? 0, done: r?.done ?? 0 };
}

/**
 * Ends a re-embedding: `model` becomes the active model and the vectors of other models are deleted, in one
 * transaction (retrieval switches from the old vectors to the new ones at once).
 */
export async function completeReembed(db: Db, orgId: string, model: string): Promise<void> {
  await db.transaction(async (trx) => {
    await trx('knowledge_embedding_state')
      .where({ org_id: orgId })
      .update({ active_model: model, target_model: null, done: trx.raw('total'), completed_at: trx.fn.now(), updated_at: trx.fn.now() });
    await trx('knowledge_chunk_embeddings').where({ org_id: orgId }).whereNot({ model }).delete();
  });
}

/** A chunk near the query vector, with its cosine similarity (-1..1). */
export interface VectorHit {
  chunkId: string;
  similarity: number;
}

/** What narrows a nearest-vector search. */
export interface VectorSearchOptions {
  /** Chunks below this cosine similarity (-1..1) are left out. */
  minSimilarity?: number;
  /** Only chunks of these sources; all when omitted (none when empty). */
  sourceIds?: readonly string[];
}

/**
 * A search for the agent's chunks nearest `vector` among the vectors of `model`, at most `limit`, most similar first:
 * `nearestChunks` here, and services/knowledge/exactVectors.ts `nearestChunkVectors`, which answers the same in
 * process where Postgres has no fast kernel. @param vector of the model's dimension
 */
export type VectorSearch = (db: Db, orgId: string, agentId: string, model: string, vector: readonly number[], limit: number, opts?: VectorSearchOptions) => Promise<VectorHit[]>;

/**
 * The agent's chunks nearest `vector` among the vectors of `model`, most similar first (module docstring for how;
 * {@link VectorSearch}). @param vector unit length, of the model's dimension
 */
export async function nearestChunks(db: Conn, orgId: string, agentId: string, model: string, vector: readonly number[], limit: number, opts: VectorSearchOptions = {}): Promise<VectorHit[]> {
  if (opts.sourceIds && opts.sourceIds.length === 0) return [];
  const dims = Math.trunc(vector.length);
  const store = await vectorStore(db, dims);
  // The dimension is written into the SQL, not bound, so the planner can match the partial HNSW index of it.
  const filter = `org_id = ? AND agent_id = ? AND model = ? AND dims = ${dims}${opts.sourceIds ? ' AND source_id = ANY(?)' : ''}`;
  const filterArgs: unknown[] = [orgId, agentId, model, ...(opts.sourceIds ? [[...opts.sourceIds]] : [])];
  const v = vector as number[];
  let sql: string;
  let args: unknown[];
  if (store === 'pgvector') {
    const d = dims;
    sql = `SELECT chunk_id, 1 - (embedding_vector::vector(${d}) <=> ?::vector(${d})) AS sim FROM knowledge_chunk_embeddings
            WHERE ${filter} ORDER BY embedding_vector::vector(${d}) <=> ?::vector(${d}) LIMIT ?`;
    const literal = `[${v.join(',')}]`;
    args = [literal, ...filterArgs, literal, limit];
  } else if (store === 'cube') {
    // For unit vectors cosine = 1 − |a − b|² / 2, so ordering by cube_distance is ordering by cosine.
    sql = `WITH q AS MATERIALIZED (SELECT cube(?::float8[]) AS c)
           SELECT chunk_id, 1 - (cube_distance(embedding_cube, q.c) ^ 2) / 2 AS sim FROM knowledge_chunk_embeddings, q
            WHERE ${filter} ORDER BY cube_distance(embedding_cube, q.c) LIMIT ?`;
    args = [v, ...filterArgs, limit];
  } else if (store === 'cube_blocks') {
    // a·q = (|a|² + |q|² − Σ_i |a_i − q_i|²) / 2 over the blocks a_i, q_i of ≤ 100 coordinates (migration
    // 20261127000900), with |a|² and the blocks of the stored `real` coordinates: the exact dot product, divided by
    // |a|·|q| — the cosine of the stored vector, whose length after rounding to `real` is 1 only to ~1e-7.
    // The subquery (kept by OFFSET 0) detoasts each row's blocks once; the outer expression then reads every block
    // from that copy instead of fetching the out-of-line array again per block.
    const blocks: number[][] = [];
    for (let i = 0; i < dims; i += CUBE_BLOCK_DIMS) blocks.push(v.slice(i, i + CUBE_BLOCK_DIMS));
    const qSumSq = blocks.flat().reduce((s, x) => s + x * x, 0);
    const distances = blocks.map((_, i) => `cube_distance(e.b[${i + 1}], cube(?::float8[])) ^ 2`).join(' + ');
    // A zero vector (a text the model gave no direction) has no cosine: 0, as the dot product of the `array` store.
    sql = `SELECT chunk_id, COALESCE((e.sumsq + ?::float8 - (${distances})) / NULLIF(2 * sqrt(e.sumsq) * ?::float8, 0), 0) AS sim
             FROM (SELECT chunk_id, embedding_sumsq AS sumsq, embedding_blocks || '{}'::cube[] AS b FROM knowledge_chunk_embeddings
                    WHERE ${filter} OFFSET 0) e
            ORDER BY sim DESC LIMIT ?`;
    args = [qSumSq, ...blocks, Math.sqrt(qSumSq), ...filterArgs, limit];
  } else {
    sql = `SELECT chunk_id, (SELECT sum(a * b) FROM unnest(embedding, ?::real[]) AS t(a, b)) AS sim FROM knowledge_chunk_embeddings
            WHERE ${filter} ORDER BY sim DESC NULLS LAST LIMIT ?`;
    args = [v, ...filterArgs, limit];
  }
  const iterative = store === 'pgvector' && (await vectorColumns(db)).iterative;
  const res =
    store === 'pgvector'
      ? await (db as Db).transaction(async (trx) => {
          // Planned for this agent's values: a generic plan (the pool's default plan_cache_mode, db/index.ts
          // planCacheMode) estimates an agent's rows as an average tenant's — a few — and so always sorts them by
          // distance through the tenant btree, never using the HNSW index, even for an agent of 100,000 chunks.
          // A custom plan uses the agent's statistics: exact sort for a small agent, HNSW for a large one.
          await trx.raw(`SET LOCAL plan_cache_mode = force_custom_plan`);
          // Vectors over ~500 dimensions are stored out of line (TOAST), which a sequential or bitmap heap scan's cost
          // leaves out (pgvector README "Troubleshooting": "SET LOCAL enable_seqscan = off"): the planner then
          // prefers reading every row of an agent of 20,000 1,536-dimension vectors to the HNSW index (measured on
          // PGlite: a 222 ms sequential scan). Left: a btree scan of the agent's rows, each fetched from the heap, then
          // sorted — what an agent of a few hundred rows still gets, exactly — or the HNSW index. That btree cost
          // still leaves out decompressing vectors kept inline (compressible, e.g. sparse ones): docs/benchmarks.md
          // "Knowledge retrieval", pgvector on PGlite.
          await trx.raw(`SET LOCAL enable_seqscan = off`);
          await trx.raw(`SET LOCAL enable_bitmapscan = off`);
          if (iterative) {
            // HNSW returns the ef_search nearest of every tenant before the WHERE filters them: iterative scans
            // (pgvector 0.8 "Iterative Index Scans") keep reading the index until `limit` rows of this agent are found.
            await trx.raw(`SET LOCAL hnsw.iterative_scan = strict_order`);
            await trx.raw(`SET LOCAL hnsw.ef_search = ${hnswEfSearch(limit)}`);
          }
          return trx.raw(sql, args as any[]);
        })
      : await db.raw(sql, args as any[]);
  const min = opts.minSimilarity ?? -1;
  return (res.rows as { chunk_id: string; sim: string | number }[])
    .map((r) => ({ chunkId: r.chunk_id, similarity: Number(r.sim) }))
    .filter((h) => h.similarity >= min);
}

/**
 * What identifies the set of an agent's vectors of one model and dimension: their count and the sum of a 64-bit hash
 * of their chunk ids. A vector row is never updated (insertChunkVectors keeps the stored one; rows are only
 * deleted), so the same set of chunk ids means the same vectors — services/knowledge/exactVectors.ts compares it to
 * the vectors it holds before every search.
 */
export async function vectorSetFingerprint(db: Conn, orgId: string, agentId: string, model: string, dims: number): Promise<string> {
  const res = await db.raw(
    `SELECT count(*)::text || ':' || coalesce(sum(hashtextextended(chunk_id, 0)), 0)::text AS fp
       FROM knowledge_chunk_embeddings WHERE org_id = ? AND agent_id = ? AND model = ? AND dims = ?`,
    [orgId, agentId, model, Math.trunc(dims)],
  );
  return res.rows[0].fp as string;
}

/** The chunk ids (with their sources) of an agent's vectors of one model and dimension, and their fingerprint, read in one snapshot. */
export async function vectorSetMembers(
  db: Conn,
  orgId: string,
  agentId: string,
  model: string,
  dims: number,
): Promise<{ fingerprint: string; members: { chunkId: string; sourceId: string }[] }> {
  const res = await db.raw(
    `SELECT chunk_id, source_id, count(*) OVER ()::text || ':' || sum(hashtextextended(chunk_id, 0)) OVER ()::text AS fp
       FROM knowledge_chunk_embeddings WHERE org_id = ? AND agent_id = ? AND model = ? AND dims = ?`,
    [orgId, agentId, model, Math.trunc(dims)],
  );
  const rows = res.rows as { chunk_id: string; source_id: string; fp: string }[];
  return { fingerprint: rows[0]?.fp ?? '0:0', members: rows.map((r) => ({ chunkId: r.chunk_id, sourceId: r.source_id })) };
}

/**
 * The stored vectors of `model` for these chunks of the organization, as `real` values (float32). Read in the binary
 * array format (`array_send`: a 20-byte header for one dimension, then per element a 4-byte length and an IEEE 754
 * big-endian float4; PostgreSQL src/backend/utils/adt/arrayfuncs.c `array_send`) — a tenth of the cost of parsing
 * the text form of thousands of floats.
 */
export async function vectorsOfChunks(db: Conn, orgId: string, model: string, chunkIds: readonly string[]): Promise<Map<string, Float32Array>> {
  const out = new Map<string, Float32Array>();
  for (let i = 0; i < chunkIds.length; i += 1000) {
    const res = await db.raw(`SELECT chunk_id, array_send(embedding) AS bin FROM knowledge_chunk_embeddings WHERE org_id = ? AND model = ? AND chunk_id = ANY(?)`, [
      orgId,
      model,
      chunkIds.slice(i, i + 1000) as string[],
    ]);
    for (const r of res.rows as { chunk_id: string; bin: Buffer }[]) {
      const buf = r.bin;
      const ndim = buf.readInt32BE(0);
      const n = ndim === 1 ? buf.readInt32BE(12) : 0;
      const v = new Float32Array(n);
      for (let j = 0, at = 20; j < n; j++, at += 8) v[j] = buf.readFloatBE(at + 4);
      out.set(r.chunk_id, v);
    }
  }
  return out;
}

/** The agent's language (BCP 47), or undefined when the agent does not exist in the organization. */
export async function agentLanguage(db: Conn, orgId: string, agentId: string): Promise<string | undefined> {
  const r = await db('agents').where({ org_id: orgId, id: agentId }).first('language');
  return r?.language;
}
