/**
 * Hybrid knowledge retrieval measured on the labelled set (test/fixtures/retrieval): real Postgres, the embeddings
 * provider through its interface — the OpenAI-compatible adapter against the loopback double of
 * test/helpers/embeddings.ts, or any OpenAI-compatible endpoint when EMBEDDINGS_BASE_URL is set.
 */
import { expect } from 'chai';
import { createOrganization } from '../../../db/repositories/organizations';
import { createAgent } from '../../../db/repositories/agents';
import { createSource, indexChunks, markProcessing, searchChunks } from '../../../db/repositories/knowledge';
import { getEmbeddingState, nearestChunks, vectorStore } from '../../../db/repositories/knowledgeEmbeddings';
import { createEmbeddings, type EmbeddingsProvider } from '../../../providers/embeddings';
import { holdAgentVectors, nearestChunkVectors } from '../../../services/knowledge/exactVectors';
import { retrieveKnowledge, type RetrievalTrace } from '../../../services/knowledge/retrieval';
import { conceptEmbedding, startEmbeddingsStub } from '../../helpers/embeddings';
import type { OpenAiStub } from '../../helpers/llm';
import { useMigratedDb } from '../../helpers/postgres';
import { formatScores, loadRetrievalSet, scoreRetrieval, seedRetrievalSet, type SeededKnowledgeBase } from '../../helpers/retrievalEval';
import { seededRandom } from '../../helpers/random';

/** Floors of the hybrid ranking on the set with the loopback double (a real model is measured by the bench). */
const HYBRID_RECALL_AT_3_FLOOR = 0.8;
const HYBRID_MRR_FLOOR = 0.7;

describe('hybrid knowledge retrieval on the labelled set', function () {
  this.timeout(120_000);
  const db = useMigratedDb('retrieval_set');
  let stub: OpenAiStub | undefined;
  let embeddings: EmbeddingsProvider;
  let orgId: string;
  let seeded: SeededKnowledgeBase[];

  before(async () => {
    if (!process.env.EMBEDDINGS_BASE_URL) stub = await startEmbeddingsStub();
    embeddings = createEmbeddings({
      EMBEDDINGS_PROVIDER: 'openai',
      EMBEDDINGS_BASE_URL: process.env.EMBEDDINGS_BASE_URL ?? stub!.baseUrl,
      EMBEDDINGS_API_KEY: process.env.EMBEDDINGS_API_KEY ?? 'test-key',
      EMBEDDINGS_MODEL: process.env.EMBEDDINGS_MODEL ?? 'concept-double',
      EMBEDDINGS_DIMENSIONS: process.env.EMBEDDINGS_DIMENSIONS,
    });
    orgId = (await createOrganization(db(), 'Retrieval set')).id;
    seeded = await seedRetrievalSet(db(), orgId, loadRetrievalSet(), embeddings);
  });
  after(async () => stub?.close());

  it('ships at least 60 labelled questions over 3 knowledge bases in English and Spanish', () => {
    const kbs = loadRetrievalSet();
    expect(kbs).to.have.length.of.at.least(3);
    expect(kbs.reduce((n, kb) => n + kb.questions.length, 0)).to.be.at.least(60);
    expect([...new Set(kbs.map((kb) => kb.language))]).to.include.members(['english', 'spanish']);
    for (const kb of kbs) for (const q of kb.questions) expect(kb.chunks, `${kb.id}: ${q.q}`).to.have.property(q.answer);
  });

  it('indexes each knowledge base with the text-search configuration of its language', async () => {
    for (const s of seeded) {
      expect(s.textSearchConfig, s.kb.id).to.equal(s.kb.language);
      const configs = await db()('knowledge_chunks').where({ org_id: orgId, agent_id: s.agentId }).distinct('text_search_config');
      expect(configs.map((c: any) => c.text_search_config)).to.deep.equal([s.kb.language]);
    }
  });

  it('ranks the answering chunk better with hybrid retrieval than with full-text search alone, above a floor', async () => {
    const rows = {
      'full-text, last message': await scoreRetrieval(db(), orgId, seeded, 'full_text_last'),
      'full-text, recent turns': await scoreRetrieval(db(), orgId, seeded, 'full_text'),
      [`hybrid (${embeddings.model})`]: await scoreRetrieval(db(), orgId, seeded, 'hybrid', embeddings),
    };
    console.log(`      ${formatScores(rows).split('\n').join('\n      ')}`);
    const [last, turns, hybrid] = Object.values(rows);
    expect(hybrid.recallAt1).to.be.at.least(last.recallAt1);
    expect(hybrid.recallAt3).to.be.at.least(last.recallAt3);
    expect(hybrid.mrr).to.be.at.least(last.mrr);
    expect(hybrid.mrr).to.be.at.least(turns.mrr);
    expect(hybrid.recallAt3).to.be.at.least(HYBRID_RECALL_AT_3_FLOOR);
    expect(hybrid.mrr).to.be.at.least(HYBRID_MRR_FLOOR);
  });

  it('brings the opening hours into the top 3 for "What are your hours?", which full-text search alone misses for a page mentioning "24 hours"', async () => {
    const clinic = seeded.find((s) => s.kb.id === 'clinic-en')!;
    const opening = clinic.chunkIds.get('opening');
    const lexical = await searchChunks(db(), orgId, clinic.agentId, 'What are your hours?', 10);
    expect(lexical[0].chunkId).to.equal(clinic.chunkIds.get('services'));
    expect(lexical.map((h) => h.chunkId)).not.to.include(opening);
    const hybrid = await retrieveKnowledge({ db: db(), embeddings }, orgId, clinic.agentId, { text: 'What are your hours?' }, 3);
    expect(hybrid.map((h) => h.chunkId)).to.include(opening);
  });

  it('reads the earlier user turns: "How much is it?" after asking about whitening finds the whitening price', async () => {
    const clinic = seeded.find((s) => s.kb.id === 'clinic-en')!;
    const [best] = await retrieveKnowledge({ db: db(), embeddings }, orgId, clinic.agentId, { text: 'How much is it?', earlierUserTurns: ["I'd like whiter teeth, do you do bleaching?"] }, 3);
    expect(best.chunkId).to.equal(clinic.chunkIds.get('whitening'));
  });

  it('keeps the ts_rank-only path, with its scores, when the embeddings provider makes no vectors', async () => {
    const clinic = seeded.find((s) => s.kb.id === 'clinic-en')!;
    const lexical: EmbeddingsProvider = createEmbeddings({ EMBEDDINGS_PROVIDER: 'sandbox' });
    const hits = await retrieveKnowledge({ db: db(), embeddings: lexical }, orgId, clinic.agentId, { text: 'Do you accept credit cards?' }, 5);
    expect(hits).to.deep.equal(await searchChunks(db(), orgId, clinic.agentId, 'Do you accept credit cards?', 5));
    expect(hits[0].chunkId).to.equal(clinic.chunkIds.get('payment'));
  });

  it('records the model of the organization\'s vectors and searches them by exact cosine on the embedded default', async () => {
    expect((await getEmbeddingState(db(), orgId)).activeModel).to.equal(embeddings.model);
    const dims = (await db()('knowledge_chunk_embeddings').where({ org_id: orgId }).first('dims')).dims;
    expect(await vectorStore(db(), dims)).to.be.oneOf(['cube', 'array', 'pgvector']);
  });

  describe('exact vector search beyond cube\'s 100 dimensions', () => {
    const DIMS = 256;
    const CHUNKS = 2_000;
    const model = `random@${DIMS}`;
    let agentId: string;
    let sourceIds: string[];
    /** Each chunk's vector as stored (`real`), with its source. */
    const stored = new Map<string, { sourceId: string; v: number[] }>();

    const rand = seededRandom(20261127);
    /** A random unit vector (Box–Muller normals, so directions are uniform). */
    const randomUnit = (): number[] => {
      const v = Array.from({ length: DIMS }, () => Math.sqrt(-2 * Math.log(1 - rand())) * Math.cos(2 * Math.PI * rand()));
      const n = Math.hypot(...v);
      return v.map((x) => x / n);
    };
    /** Brute-force cosine top-k over the stored vectors, in float64. */
    const exactTopK = (q: number[], k: number, only?: readonly string[]) =>
      [...stored.entries()]
        .filter(([, c]) => !only || only.includes(c.sourceId))
        .map(([id, c]) => {
          let dot = 0;
          let vv = 0;
          for (let j = 0; j < DIMS; j++) {
            dot += c.v[j] * q[j];
            vv += c.v[j] * c.v[j];
          }
          return { chunkId: id, similarity: dot / Math.sqrt(vv) / Math.hypot(...q) };
        })
        .sort((a, b) => b.similarity - a.similarity)
        .slice(0, k);

    before(async () => {
      agentId = (await createAgent(db(), orgId, { name: 'Random vectors' })).id;
      sourceIds = [];
      for (let s = 0; s < CHUNKS; s += 500) {
        const source = await createSource(db(), orgId, { agentId, kind: 'text', name: `random ${s}` }, async () => undefined);
        await markProcessing(db(), orgId, source.id);
        const vectors = Array.from({ length: 500 }, randomUnit);
        await indexChunks(db(), orgId, source.id, vectors.map((_, ordinal) => ({ ordinal, content: `Random passage ${s + ordinal}.` })), undefined, {
          textSearchConfig: 'english',
          embeddings: { model, vectors },
        });
        sourceIds.push(source.id);
      }
      const rows = await db()('knowledge_chunk_embeddings').where({ org_id: orgId, model }).select('chunk_id', 'source_id', db().raw('embedding::float8[] AS embedding'));
      for (const r of rows) stored.set(r.chunk_id, { sourceId: r.source_id, v: (r.embedding as (string | number)[]).map(Number) });
    });

    for (const [name, search] of [
      ['retrieval\'s search (in this process above 100 dimensions without pgvector)', nearestChunkVectors],
      ['the Postgres search alone (cube blocks)', nearestChunks],
    ] as const) {
      it(`returns exactly the brute-force cosine top 50 of 2,000 random 256-dimension vectors, in order: ${name}`, async () => {
        const store = await vectorStore(db(), DIMS);
        const cols = new Set((await db().raw(`SELECT column_name FROM information_schema.columns WHERE table_name = 'knowledge_chunk_embeddings' AND table_schema = current_schema()`)).rows.map((r: any) => r.column_name));
        // The embedded default (cube, no pgvector) has the cube blocks of migration 20261127000900.
        if (cols.has('embedding_cube') && !cols.has('embedding_vector')) {
          expect(store).to.equal('cube_blocks');
          // Held in this process before the first search (else that one is answered by Postgres while they are read).
          if (search === nearestChunkVectors) expect(await holdAgentVectors(db(), orgId, agentId, model, DIMS)).to.equal(true);
        }
        expect(stored.size).to.equal(CHUNKS);
        for (let i = 0; i < 5; i++) {
          const q = randomUnit();
          const want = exactTopK(q, 50);
          const got = await search(db(), orgId, agentId, model, q, 50);
          expect(got.map((h) => h.chunkId)).to.deep.equal(want.map((h) => h.chunkId));
          got.forEach((h, j) => expect(h.similarity).to.be.closeTo(want[j].similarity, store === 'pgvector' ? 1e-5 : 1e-9));
        }
      });

      it(`keeps the exact top-k when limited to some sources and to a minimum similarity: ${name}`, async () => {
        const q = randomUnit();
        const only = sourceIds.slice(1, 3);
        const want = exactTopK(q, 20, only).filter((h) => h.similarity >= 0.1);
        expect(want.length).to.be.greaterThan(0);
        const got = await search(db(), orgId, agentId, model, q, 20, { sourceIds: only, minSimilarity: 0.1 });
        expect(got.map((h) => h.chunkId)).to.deep.equal(want.map((h) => h.chunkId));
        expect(got.every((h) => only.includes(stored.get(h.chunkId)!.sourceId))).to.equal(true);
      });
    }

    it('sees vectors added and deleted since its last search, and hybrid retrieval ranks by them', async () => {
      const question = 'zebra quartz';
      const q = conceptEmbedding(question, DIMS);
      // This process holds the agent's vectors.
      if (await holdAgentVectors(db(), orgId, agentId, model, DIMS)) expect((await nearestChunkVectors(db(), orgId, agentId, model, q, 5)).length).to.equal(5);
      expect((await nearestChunkVectors(db(), orgId, agentId, model, q, 5, { minSimilarity: 0.5 })).length).to.equal(0);
      // A new source whose vectors lean towards the question's by decreasing amounts.
      const near = [0.9, 0.7, 0.5].map((w) => {
        const noise = randomUnit();
        const v = q.map((x, j) => w * x + (1 - w) * noise[j]);
        const n = Math.hypot(...v);
        return v.map((x) => x / n);
      });
      const source = await createSource(db(), orgId, { agentId, kind: 'text', name: 'planted' }, async () => undefined);
      await markProcessing(db(), orgId, source.id);
      await indexChunks(db(), orgId, source.id, near.map((_, ordinal) => ({ ordinal, content: `Planted passage ${ordinal}.` })), undefined, {
        textSearchConfig: 'english',
        embeddings: { model, vectors: near },
      });
      const planted = (await db()('knowledge_chunks').where({ org_id: orgId, source_id: source.id }).orderBy('ordinal').select('id')).map((r) => r.id as string);
      const found = await nearestChunkVectors(db(), orgId, agentId, model, q, 5, { minSimilarity: 0.5 });
      expect(found.map((h) => h.chunkId)).to.deep.equal(planted);

      // Hybrid retrieval, with this organization's vectors on the random model, embeds the question over loopback
      // HTTP and ranks the planted chunks by their vectors (no full-text match for these words).
      const previous = (await getEmbeddingState(db(), orgId)).activeModel;
      await db()('knowledge_embedding_state').where({ org_id: orgId }).update({ active_model: model });
      try {
        const provider = createEmbeddings({ EMBEDDINGS_PROVIDER: 'openai', EMBEDDINGS_BASE_URL: stub?.baseUrl ?? process.env.EMBEDDINGS_BASE_URL, EMBEDDINGS_API_KEY: 'test-key', EMBEDDINGS_MODEL: 'random', EMBEDDINGS_DIMENSIONS: String(DIMS) });
        if (stub) {
          let trace: RetrievalTrace | undefined;
          const hits = await retrieveKnowledge({ db: db(), embeddings: provider }, orgId, agentId, { text: question }, 5, undefined, (t) => (trace = t));
          expect(trace?.mode).to.equal('hybrid');
          expect(hits.map((h) => h.chunkId)).to.deep.equal(planted);
        }
      } finally {
        await db()('knowledge_embedding_state').where({ org_id: orgId }).update({ active_model: previous });
      }

      // Deleted with their chunks (ON DELETE CASCADE): gone from the next search.
      await db()('knowledge_chunks').whereIn('id', planted.slice(0, 2)).delete();
      expect((await nearestChunkVectors(db(), orgId, agentId, model, q, 5, { minSimilarity: 0.5 })).map((h) => h.chunkId)).to.deep.equal(planted.slice(2));
    });
  });
});
