/**
 * The pgvector path of knowledge retrieval (docs/knowledge.md "Vector storage"), run for real on PGlite's pgvector
 * (test/db/pglite.ts): the migration's generated `vector` column, the per-dimension partial HNSW index
 * (`ensureVectorIndex`), `insertChunkVectors`, `nearestChunks` with pgvector ≥ 0.8 iterative scans, and the
 * re-embedding switch between models of different dimensions.
 */
import { expect } from 'chai';
import type { Knex } from 'knex';
import type { Db } from '../../db';
import { createAgent } from '../../db/repositories/agents';
import { createSource, indexChunks, markProcessing } from '../../db/repositories/knowledge';
import {
  adoptModelIfNone,
  beginReembed,
  completeReembed,
  ensureVectorIndex,
  getEmbeddingState,
  insertChunkVectors,
  nearestChunks,
  vectorStore,
  type ChunkVector,
} from '../../db/repositories/knowledgeEmbeddings';
import { createOrganization } from '../../db/repositories/organizations';
import { startPgliteVector, type PgliteVectorServer } from './pglite';
import { seededRandom } from '../helpers/random';

/** `v` scaled to unit length, its coordinates rounded to `real` (float32) as they are stored. */
function unit(v: readonly number[]): number[] {
  const n = Math.hypot(...v);
  return v.map((x) => Math.fround(x / n));
}

/** A standard normal deviate (Box–Muller). */
function gauss(rand: () => number): number {
  return Math.sqrt(-2 * Math.log(1 - rand())) * Math.cos(2 * Math.PI * rand());
}

/**
 * Seeded random unit vectors shaped like text embeddings: `topics` random directions, each vector one of them plus
 * isotropic noise of about the same length (so neighbours within a topic still differ widely). Uniformly random
 * vectors in 1,536 dimensions are all nearly orthogonal — the worst case of any graph index, which real embeddings
 * are not (measured on PGlite: recall@10 0.61 at pgvector's default ef_search 40, 0.88 at 100, 0.985 at 200).
 */
function embeddingLike(seed: number, dims: number, topics = 50): () => number[] {
  const rand = seededRandom(seed);
  const centres = Array.from({ length: topics }, () => unit(Array.from({ length: dims }, () => gauss(rand))));
  const spread = 1 / Math.sqrt(dims);
  return () => {
    const c = centres[Math.floor(rand() * topics)];
    return unit(c.map((x) => x + spread * gauss(rand)));
  };
}

function cosine(a: readonly number[], b: readonly number[]): number {
  let dot = 0;
  let na = 0;
  let nb = 0;
  for (let i = 0; i < a.length; i++) {
    dot += a[i] * b[i];
    na += a[i] * a[i];
    nb += b[i] * b[i];
  }
  return dot / Math.sqrt(na * nb);
}

/** An agent with `n` chunks (no vectors yet); their ids in ordinal order. */
async function agentWithChunks(db: Db, orgId: string, n: number): Promise<{ agentId: string; sourceId: string; chunkIds: string[] }> {
  const agentId = (await createAgent(db, orgId, { name: `pgvector ${n}` })).id;
  const source = await createSource(db, orgId, { agentId, kind: 'text', name: 'vectors' }, async () => undefined);
  await markProcessing(db, orgId, source.id);
  await indexChunks(db, orgId, source.id, Array.from({ length: n }, (_, ordinal) => ({ ordinal, content: `chunk ${ordinal}` })));
  const rows = await db('knowledge_chunks').where({ org_id: orgId, source_id: source.id }).orderBy('ordinal').select('id');
  return { agentId, sourceId: source.id, chunkIds: rows.map((r) => r.id as string) };
}

/** The plan of a `nearestChunks` statement for its values, under the session settings it ran with (`SET LOCAL …`). */
async function explain(db: Db, statement: { sql: string; bindings: readonly unknown[] }, settings: string[]): Promise<string> {
  return db.transaction(async (trx: Knex.Transaction) => {
    for (const s of settings) await trx.raw(s);
    const res = await trx.raw(`EXPLAIN ${statement.sql.replace(/\$\d+/g, '?')}`, statement.bindings as Knex.RawBinding[]);
    return (res.rows as { 'QUERY PLAN': string }[]).map((r) => r['QUERY PLAN']).join('\n');
  });
}

/** The generic plan of a statement (parameters unknown; PostgreSQL 16+ `EXPLAIN (GENERIC_PLAN)`). */
async function genericPlan(db: Db, statement: { sql: string }): Promise<string> {
  const res = await db.raw(`EXPLAIN (GENERIC_PLAN) ${statement.sql}`);
  return (res.rows as { 'QUERY PLAN': string }[]).map((r) => r['QUERY PLAN']).join('\n');
}

describe('pgvector retrieval path on PGlite (db/repositories/knowledgeEmbeddings.ts)', function () {
  this.timeout(300_000);
  const DIMS = 1536;
  const N = 2000;
  const MODEL = `text-embedding-3-small@${DIMS}`;
  let server: PgliteVectorServer;
  let db: Db;
  let orgId: string;
  let agent: { agentId: string; sourceId: string; chunkIds: string[] };
  let vectors: number[][];
  let other: { agentId: string; sourceId: string; chunkIds: string[] };
  let otherVectors: number[][];
  const statements: { sql: string; bindings: readonly unknown[] }[] = [];

  before(async () => {
    server = await startPgliteVector();
    db = server.db;
    db.on('query', (q: { sql: string; bindings?: readonly unknown[] }) => statements.push({ sql: q.sql, bindings: q.bindings ?? [] }));
    orgId = (await createOrganization(db, 'pgvector org')).id;
    agent = await agentWithChunks(db, orgId, N);
    const next = embeddingLike(1, DIMS);
    vectors = agent.chunkIds.map(() => next());
    const toInsert: ChunkVector[] = agent.chunkIds.map((chunkId, i) => ({ chunkId, agentId: agent.agentId, sourceId: agent.sourceId, vector: vectors[i] }));
    await insertChunkVectors(db, orgId, MODEL, toInsert);
    await adoptModelIfNone(db, orgId, MODEL);
    // Another agent of the organization and another organization share the index and its topics: many of the index's
    // nearest vectors are theirs, which the tenant filters drop after the scan (what iterative scans are for).
    other = await agentWithChunks(db, orgId, 500);
    otherVectors = other.chunkIds.map(() => next());
    await insertChunkVectors(db, orgId, MODEL, other.chunkIds.map((chunkId, i) => ({ chunkId, agentId: other.agentId, sourceId: other.sourceId, vector: otherVectors[i] })));
    const otherOrg = (await createOrganization(db, 'pgvector other org')).id;
    const foreign = await agentWithChunks(db, otherOrg, 500);
    await insertChunkVectors(db, otherOrg, MODEL, foreign.chunkIds.map((chunkId) => ({ chunkId, agentId: foreign.agentId, sourceId: foreign.sourceId, vector: next() })));
    await db.raw('ANALYZE knowledge_chunk_embeddings');
  });
  after(async () => {
    await server?.close();
  });

  it('adds the generated vector column when pgvector is installed, and searches with it (store pgvector, iterative scans)', async () => {
    expect(server.pgvectorVersion).to.match(/^0\.(8|9)\.|^[1-9]\./);
    const cols = await db.raw(
      `SELECT column_name, data_type, udt_name, is_generated, generation_expression FROM information_schema.columns
        WHERE table_name = 'knowledge_chunk_embeddings' AND column_name IN ('embedding_vector', 'embedding_cube', 'embedding_blocks')`,
    );
    const byName = Object.fromEntries((cols.rows as any[]).map((r) => [r.column_name, r]));
    expect(byName.embedding_vector).to.include({ udt_name: 'vector', is_generated: 'ALWAYS' });
    expect(byName.embedding_vector.generation_expression).to.contain('embedding');
    // With pgvector, migration 20261127000900 adds no cube blocks: the vector column serves every dimension.
    expect(byName).not.to.have.property('embedding_blocks');
    expect(await vectorStore(db, DIMS)).to.equal('pgvector');
    expect(await vectorStore(db, 96)).to.equal('pgvector');
    const stored = await db('knowledge_chunk_embeddings').where({ chunk_id: agent.chunkIds[0], model: MODEL }).first(db.raw('vector_dims(embedding_vector) AS d'), 'dims');
    expect(stored).to.deep.equal({ d: DIMS, dims: DIMS });
  });

  it('creates the partial HNSW index of a dimension once; a large agent is searched through it, a small one exactly through the tenant btree', async () => {
    expect(await ensureVectorIndex(db, DIMS)).to.equal(true);
    expect(await ensureVectorIndex(db, DIMS)).to.equal(true);
    const idx = await db.raw(`SELECT indexdef FROM pg_indexes WHERE tablename = 'knowledge_chunk_embeddings' AND indexname = ?`, [`knowledge_chunk_embeddings_hnsw_${DIMS}`]);
    expect(idx.rows).to.have.length(1);
    expect(idx.rows[0].indexdef).to.match(/USING hnsw/).and.match(/vector_cosine_ops/).and.match(new RegExp(`WHERE \\(dims = ${DIMS}\\)`));

    statements.length = 0;
    const hits = await nearestChunks(db, orgId, agent.agentId, MODEL, vectors[7], 10);
    expect(hits[0].chunkId).to.equal(agent.chunkIds[7]);
    const settings = statements.filter((s) => /^SET LOCAL /.test(s.sql)).map((s) => s.sql);
    expect(settings).to.include.members(['SET LOCAL plan_cache_mode = force_custom_plan', 'SET LOCAL hnsw.iterative_scan = strict_order']);
    const query = statements.find((s) => /ORDER BY embedding_vector/.test(s.sql))!;
    const plan = await explain(db, query, settings);
    expect(plan, plan).to.contain(`Index Scan using knowledge_chunk_embeddings_hnsw_${DIMS}`);
    // Why the custom plan: the pool's sessions default to generic plans (as production's), and the generic plan of
    // this statement takes the agent for an average tenant and sorts its rows through the btree instead.
    expect(server.planCacheMode).to.equal('force_generic_plan');
    expect(await genericPlan(db, query)).not.to.contain('hnsw');

    // A small agent (500 of the index's 3,000 vectors) is read through the tenant btree and sorted exactly.
    statements.length = 0;
    const small = await nearestChunks(db, orgId, other.agentId, MODEL, otherVectors[3], 10);
    expect(small[0].chunkId).to.equal(other.chunkIds[3]);
    const exact = otherVectors.map((v, i) => ({ id: other.chunkIds[i], sim: cosine(v, otherVectors[3]) })).sort((a, b) => b.sim - a.sim);
    expect(small.map((h) => h.chunkId)).to.deep.equal(exact.slice(0, 10).map((e) => e.id));
    const smallPlan = await explain(db, statements.find((s) => /ORDER BY embedding_vector/.test(s.sql))!, statements.filter((s) => /^SET LOCAL /.test(s.sql)).map((s) => s.sql));
    expect(smallPlan, smallPlan).to.contain('knowledge_chunk_embeddings_org_id_agent_id_model_index').and.not.contain('hnsw');
  });

  it('finds a stored vector first, exactly, and ranks the rest as brute force does (recall@10 >= 0.9, only the agent\'s chunks)', async () => {
    await ensureVectorIndex(db, DIMS);
    const own = new Set(agent.chunkIds);
    for (const i of [0, 123, 1999]) {
      const hits = await nearestChunks(db, orgId, agent.agentId, MODEL, vectors[i], 10);
      expect(hits[0].chunkId).to.equal(agent.chunkIds[i]);
      expect(hits[0].similarity).to.be.closeTo(1, 1e-5);
    }
    const queries = embeddingLike(1, DIMS); // the same topics, other draws
    for (let i = 0; i < 500; i++) queries();
    let found = 0;
    const QUERIES = 20;
    for (let q = 0; q < QUERIES; q++) {
      const query = queries();
      const exact = vectors
        .map((v, i) => ({ id: agent.chunkIds[i], sim: cosine(v, query) }))
        .sort((a, b) => b.sim - a.sim)
        .slice(0, 10);
      const hits = await nearestChunks(db, orgId, agent.agentId, MODEL, query, 10);
      expect(hits).to.have.length(10);
      for (const h of hits) expect(own.has(h.chunkId), 'a chunk of another agent or organization').to.equal(true);
      // Most similar first, with the similarity brute force gives that chunk.
      for (let k = 1; k < hits.length; k++) expect(hits[k - 1].similarity).to.be.at.least(hits[k].similarity);
      const byId = new Map(vectors.map((v, i) => [agent.chunkIds[i], v]));
      for (const h of hits) expect(h.similarity).to.be.closeTo(cosine(byId.get(h.chunkId)!, query), 1e-5);
      const truth = new Set(exact.map((e) => e.id));
      found += hits.filter((h) => truth.has(h.chunkId)).length;
    }
    expect(found / (QUERIES * 10)).to.be.at.least(0.9);
  });

  it('keeps the search valid for large limits and source filters (hnsw.ef_search stays within pgvector\'s 1..1000)', async () => {
    const hits = await nearestChunks(db, orgId, agent.agentId, MODEL, vectors[5], 600);
    expect(hits).to.have.length(600);
    expect(hits[0].chunkId).to.equal(agent.chunkIds[5]);
    const filtered = await nearestChunks(db, orgId, agent.agentId, MODEL, vectors[5], 5, { sourceIds: [agent.sourceId] });
    expect(filtered[0].chunkId).to.equal(agent.chunkIds[5]);
    expect(await nearestChunks(db, orgId, agent.agentId, MODEL, vectors[5], 5, { sourceIds: ['src_none'] })).to.deep.equal([]);
  });

  it('switches a re-embedding to a model of another dimension at once, through that dimension\'s own HNSW index', async () => {
    const NEW_DIMS = 256;
    const NEW_MODEL = `text-embedding-3-small@${NEW_DIMS}`;
    const begun = await beginReembed(db, orgId, NEW_MODEL);
    expect(begun).to.deep.equal({ total: N + 500, done: 0 });
    const chunks = await db('knowledge_chunks').where({ org_id: orgId }).select('id', 'agent_id', 'source_id');
    const next = embeddingLike(3, NEW_DIMS);
    const fresh = new Map<string, number[]>(chunks.map((c) => [c.id as string, next()]));
    await insertChunkVectors(db, orgId, NEW_MODEL, chunks.map((c) => ({ chunkId: c.id, agentId: c.agent_id, sourceId: c.source_id, vector: fresh.get(c.id)! })));
    expect(await ensureVectorIndex(db, NEW_DIMS)).to.equal(true);
    // Statistics as autovacuum leaves them after a re-embedding's writes (with none, the planner takes the agent's
    // rows for one and sorts them exactly instead of using the index — correct, only slower at scale).
    await db.raw('ANALYZE knowledge_chunk_embeddings');
    // Until the switch, retrieval reads the old model's vectors, which are still there.
    expect((await getEmbeddingState(db, orgId)).activeModel).to.equal(MODEL);
    expect((await nearestChunks(db, orgId, agent.agentId, MODEL, vectors[9], 1))[0].chunkId).to.equal(agent.chunkIds[9]);

    await completeReembed(db, orgId, NEW_MODEL);
    expect(await getEmbeddingState(db, orgId)).to.include({ activeModel: NEW_MODEL, targetModel: null });
    expect(await nearestChunks(db, orgId, agent.agentId, MODEL, vectors[9], 1)).to.deep.equal([]);
    statements.length = 0;
    const hits = await nearestChunks(db, orgId, agent.agentId, NEW_MODEL, fresh.get(agent.chunkIds[9])!, 3);
    expect(hits[0]).to.include({ chunkId: agent.chunkIds[9] });
    expect(hits[0].similarity).to.be.closeTo(1, 1e-5);
    const settings = statements.filter((s) => /^SET LOCAL /.test(s.sql)).map((s) => s.sql);
    const plan = await explain(db, statements.find((s) => /ORDER BY embedding_vector/.test(s.sql))!, settings);
    expect(plan, plan).to.contain(`Index Scan using knowledge_chunk_embeddings_hnsw_${NEW_DIMS}`);
    // The other organization's vectors of the old model are its own: untouched.
    expect(Number((await db('knowledge_chunk_embeddings').whereNot({ org_id: orgId }).count({ n: '*' }))[0].n)).to.equal(500);
  });
});
