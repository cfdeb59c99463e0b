/**
 * Exact vector search beyond `cube`'s 100 dimensions on the embedded default (docs/knowledge.md "Vector storage";
 * db/repositories/knowledgeEmbeddings.ts `nearestChunks`, store `cube_blocks`).
 *
 * Where the `cube` extension is installed and pgvector is not, each vector of more than 100 dimensions also gets:
 * - `embedding_blocks cube[]`: the vector cut into consecutive blocks of at most 100 coordinates (CUBE_MAX_DIM), one
 *   point cube each (`knowledge_cube_blocks`). For two vectors a, q cut alike, Σ_i cube_distance(a_i, q_i)² =
 *   |a − q|² = |a|² + |q|² − 2 a·q, so the dot product is computed by C `cube_distance` (cube contrib module), one
 *   call per block, instead of one SQL row per coordinate.
 * - `embedding_sumsq float8`: |a|² of the stored `real` coordinates, so a·q = (|a|² + |q|² − Σ d_i²) / 2 is the exact
 *   dot product of the stored vector (not assuming unit length after rounding to `real`).
 * The blocks are stored uncompressed out of line (`STORAGE EXTERNAL`): float coordinates barely compress, and
 * decompressing them on every search costs more than reading them (measured: 1,536 dimensions × 10,000 vectors,
 * pglz 330 ms against 200 ms per scan).
 * With pgvector, nothing changes: its `vector` column and HNSW index serve every dimension.
 */
import type { Knex } from 'knex';

/** Whether `column` exists on knowledge_chunk_embeddings. */
async function hasColumn(knex: Knex, column: string): Promise<boolean> {
  const r = await knex.raw(
    `SELECT 1 FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = 'knowledge_chunk_embeddings' AND column_name = ?`,
    [column],
  );
  return r.rows.length > 0;
}

export async function up(knex: Knex): Promise<void> {
  if (!(await hasColumn(knex, 'embedding_cube')) || (await hasColumn(knex, 'embedding_vector'))) return;
  await knex.raw(`CREATE FUNCTION knowledge_cube_blocks(v real[]) RETURNS cube[] LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
    SELECT array_agg(cube(v[i:least(i + 99, cardinality(v))]::float8[]) ORDER BY i) FROM generate_series(1, cardinality(v), 100) AS i $$`);
  await knex.raw(`CREATE FUNCTION knowledge_sumsq(v real[]) RETURNS float8 LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
    SELECT sum(x::float8 * x::float8) FROM unnest(v) AS x $$`);
  await knex.raw(`ALTER TABLE knowledge_chunk_embeddings
    ADD COLUMN embedding_blocks cube[] GENERATED ALWAYS AS (CASE WHEN dims > 100 THEN knowledge_cube_blocks(embedding) END) STORED,
    ADD COLUMN embedding_sumsq float8 GENERATED ALWAYS AS (CASE WHEN dims > 100 THEN knowledge_sumsq(embedding) END) STORED`);
  await knex.raw(`ALTER TABLE knowledge_chunk_embeddings ALTER COLUMN embedding_blocks SET STORAGE EXTERNAL`);
  // Rows written before this migration: rewrite their blocks under the new storage (generated columns are recomputed).
  await knex.raw(`UPDATE knowledge_chunk_embeddings SET embedding = embedding WHERE dims > 100`);
}

export async function down(knex: Knex): Promise<void> {
  if (!(await hasColumn(knex, 'embedding_blocks'))) return;
  await knex.raw(`ALTER TABLE knowledge_chunk_embeddings DROP COLUMN embedding_blocks, DROP COLUMN embedding_sumsq`);
  await knex.raw(`DROP FUNCTION knowledge_cube_blocks(real[])`);
  await knex.raw(`DROP FUNCTION knowledge_sumsq(real[])`);
}
