/**
 * Hybrid knowledge retrieval (docs/knowledge.md "Retrieval", "Languages"):
 *
 * - Each source and chunk records its text-search configuration (`english`, `spanish`, … `simple`); the chunk's
 *   `tsv` is rebuilt from it through `knowledge_tsvector(config, content)`, an IMMUTABLE wrapper of `to_tsvector`
 *   (a generated column needs an immutable expression; the configuration is kept as text, not `regconfig`, because
 *   pg_upgrade refuses user tables holding reg* OIDs other than regclass/regrole/regtype).
 * - `knowledge_chunk_embeddings`: one vector per chunk and model id (a re-embedding writes the new model's rows
 *   beside the old ones, which serve until it completes). The vector is a `real[]` (unit length, so cosine = dot
 *   product). When the `cube` contrib extension can be created (trusted since PostgreSQL 13), vectors of at most 100
 *   dimensions (cube's limit) also get a generated `cube`, whose C `cube_distance` ranks exactly (for unit vectors
 *   |a − b|² = 2 − 2·cos). When pgvector is installed, a generated `vector` column is added; its HNSW indexes
 *   (one per dimension, partial) are created when vectors of a dimension are first written
 *   (db/repositories/knowledgeEmbeddings.ts `ensureVectorIndex`). Run on PGlite's pgvector by test/db/pgvector.test.ts.
 * - `knowledge_embedding_state`: per organization, the model whose vectors retrieval reads and the re-embedding in
 *   progress (workflow `knowledge-reembed/{orgId}`).
 */
import type { Knex } from 'knex';
import { timestampsNow } from '../migrationHelpers';

const CONFIGS = `'english', 'spanish', 'french', 'german', 'portuguese', 'italian', 'dutch', 'simple'`;

/** Creates `extension` when the server offers it and we may; false otherwise (the transaction stays usable). */
async function tryExtension(knex: Knex, extension: string): Promise<boolean> {
  const offered = await knex.raw(`SELECT installed_version FROM pg_available_extensions WHERE name = ?`, [extension]);
  if (!offered.rows.length) return false;
  if (offered.rows[0].installed_version) return true;
  await knex.raw('SAVEPOINT knowledge_ext');
  try {
    await knex.raw(`CREATE EXTENSION IF NOT EXISTS ${extension}`);
    await knex.raw('RELEASE SAVEPOINT knowledge_ext');
    return true;
  } catch {
    await knex.raw('ROLLBACK TO SAVEPOINT knowledge_ext');
    return false;
  }
}

export async function up(knex: Knex): Promise<void> {
  await knex.raw(`CREATE FUNCTION knowledge_tsvector(config text, body text) RETURNS tsvector
    LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$ SELECT pg_catalog.to_tsvector(config::pg_catalog.regconfig, body) $$`);
  await knex.raw(`ALTER TABLE knowledge_sources ADD COLUMN text_search_config text NOT NULL DEFAULT 'english'
    CONSTRAINT knowledge_sources_text_search_config_check CHECK (text_search_config IN (${CONFIGS}))`);
  await knex.raw(`ALTER TABLE knowledge_chunks ADD COLUMN text_search_config text NOT NULL DEFAULT 'english'
    CONSTRAINT knowledge_chunks_text_search_config_check CHECK (text_search_config IN (${CONFIGS}))`);
  await knex.raw('ALTER TABLE knowledge_chunks DROP COLUMN tsv');
  await knex.raw(`ALTER TABLE knowledge_chunks ADD COLUMN tsv tsvector GENERATED ALWAYS AS (knowledge_tsvector(text_search_config, content)) STORED`);
  await knex.raw('CREATE INDEX knowledge_chunks_tsv_idx ON knowledge_chunks USING GIN (tsv)');

  await knex.schema.createTable('knowledge_chunk_embeddings', (t) => {
    t.text('chunk_id').notNullable().references('knowledge_chunks.id').onDelete('CASCADE');
    t.text('org_id').notNullable().references('organizations.id').onDelete('CASCADE');
    t.text('agent_id').notNullable();
    t.text('source_id').notNullable();
    t.text('model').notNullable(); // model id (providers/embeddings: `model` or `model@dimensions`)
    t.integer('dims').notNullable();
    t.specificType('embedding', 'real[]').notNullable(); // unit length
    timestampsNow(t, knex, 'created_at');
    t.primary(['chunk_id', 'model']);
    t.index(['org_id', 'agent_id', 'model']);
  });
  await knex.raw(`ALTER TABLE knowledge_chunk_embeddings ADD CONSTRAINT knowledge_chunk_embeddings_dims_check CHECK (dims = cardinality(embedding) AND dims > 0)`);
  if (await tryExtension(knex, 'cube')) {
    await knex.raw(`ALTER TABLE knowledge_chunk_embeddings ADD COLUMN embedding_cube cube
      GENERATED ALWAYS AS (CASE WHEN dims <= 100 THEN cube(embedding::float8[]) END) STORED`);
  }
  if (await tryExtension(knex, 'vector')) {
    await knex.raw(`ALTER TABLE knowledge_chunk_embeddings ADD COLUMN embedding_vector vector GENERATED ALWAYS AS (embedding::vector) STORED`);
  }

  await knex.schema.createTable('knowledge_embedding_state', (t) => {
    t.text('org_id').primary().references('organizations.id').onDelete('CASCADE');
    t.text('active_model'); // the model retrieval reads; null: none yet
    t.text('target_model'); // the model being written by a re-embedding; null: none running
    t.integer('total').notNullable().defaultTo(0);
    t.integer('done').notNullable().defaultTo(0);
    timestampsNow(t, knex, 'updated_at');
    t.timestamp('completed_at', { useTz: true });
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTableIfExists('knowledge_embedding_state');
  await knex.schema.dropTableIfExists('knowledge_chunk_embeddings');
  await knex.raw('ALTER TABLE knowledge_chunks DROP COLUMN tsv');
  await knex.raw(`ALTER TABLE knowledge_chunks ADD COLUMN tsv tsvector GENERATED ALWAYS AS (to_tsvector('english'::regconfig, content)) STORED`);
  await knex.raw('CREATE INDEX knowledge_chunks_tsv_idx ON knowledge_chunks USING GIN (tsv)');
  await knex.raw('ALTER TABLE knowledge_chunks DROP COLUMN text_search_config');
  await knex.raw('ALTER TABLE knowledge_sources DROP COLUMN text_search_config');
  await knex.raw('DROP FUNCTION knowledge_tsvector(text, text)');
}
