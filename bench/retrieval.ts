/**
 * Knowledge retrieval quality and latency (docs/benchmarks.md "Knowledge retrieval"; `BENCH_ONLY=retrieval`):
 *
 * 1. Quality on the labelled set (test/fixtures/retrieval: 64 questions over 3 knowledge bases in English and
 *    Spanish): recall@1, recall@3 and MRR@10 of full-text search on the last message (retrieval before hybrid),
 *    full-text search over the recent turns, and hybrid retrieval. Vectors come from the deterministic double of
 *    test/helpers/embeddings.ts over loopback HTTP, or from any OpenAI-compatible endpoint when EMBEDDINGS_BASE_URL
 *    is set (EMBEDDINGS_API_KEY, EMBEDDINGS_MODEL, EMBEDDINGS_DIMENSIONS as in docs/configuration.md).
 * 2. Latency of hybrid retrieval (services/knowledge/retrieval.ts `retrieveKnowledge`: three full-text lists, the
 *    query embedding over HTTP, exact vector search, fusion) over one agent's RETRIEVAL_CHUNKS chunks (default
 *    10,000) on the embedded default — no pgvector, so the exact path — at 96 dimensions (the `cube` path) and at
 *    256, 768 and 1,536 (`RETRIEVAL_DIMS`; the `cube_blocks` path, or `array` where `cube` is missing), with the CPU
 *    one query costs this process (retrieval and the loopback embeddings double) and Postgres, and the latency of
 *    the vector search alone (db/repositories/knowledgeEmbeddings.ts `nearestChunks`).
 * 3. The pgvector HNSW figure over 100,000 chunks, only where pgvector is installed (DATABASE_URL of such a
 *    server); otherwise it prints "skipped". With BENCH_PGVECTOR=pglite, instead on PGlite's pgvector (Postgres
 *    compiled to WebAssembly, behind a loopback socket; test/db/pglite.ts) over RETRIEVAL_PGVECTOR_CHUNKS chunks of
 *    RETRIEVAL_PGVECTOR_DIMS (default 256) dimensions: the HNSW build time, the latency of the vector search alone
 *    (`nearestChunks`) and its recall@10 against brute force — PGlite's figures, not native pgvector's (WebAssembly,
 *    one connection).
 */
import os from 'node:os';
import type { Knex } from 'knex';
import type { Db } from '../db';
import { createAgent } from '../db/repositories/agents';
import { createSource, indexChunks, markProcessing } from '../db/repositories/knowledge';
import { CUBE_MAX_DIMS, ensureVectorIndex, nearestChunks, vectorStore, type VectorSearch } from '../db/repositories/knowledgeEmbeddings';
import { createOrganization } from '../db/repositories/organizations';
import { createEmbeddings, type EmbeddingsProvider } from '../providers/embeddings';
import { holdAgentVectors, nearestChunkVectors } from '../services/knowledge/exactVectors';
import { retrieveKnowledge } from '../services/knowledge/retrieval';
import { startPgliteVector } from '../test/db/pglite';
import { conceptEmbedding, startEmbeddingsStub } from '../test/helpers/embeddings';
import { formatScores, loadRetrievalSet, scoreRetrieval, seedRetrievalSet } from '../test/helpers/retrievalEval';
import { runBench } from './entry';
import { cpuSnapshot, openBenchDatabase } from './harness';
import { seededRandom } from '../test/helpers/random';

const CHUNKS = Number(process.env.RETRIEVAL_CHUNKS ?? 10_000);
const PGVECTOR_CHUNKS = Number(process.env.RETRIEVAL_PGVECTOR_CHUNKS ?? 100_000);
const PGVECTOR_DIMS = Number(process.env.RETRIEVAL_PGVECTOR_DIMS ?? 256);
const QUERIES = Number(process.env.RETRIEVAL_QUERIES ?? 300);
/** The p99 the exact path must stay under over an agent's 10,000 chunks, ms. */
const P99_TARGET_MS = 80;

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
}

/** Sentences of the labelled set, reshuffled into `n` passages of 3-5 sentences (realistic words and concepts). */
function syntheticPassages(n: number): string[] {
  const rand = seededRandom(7);
  const sentences = loadRetrievalSet()
    .filter((kb) => kb.language === 'english')
    .flatMap((kb) => Object.values(kb.chunks).flatMap((c) => c.split(/(?<=\.)\s+/)));
  return Array.from({ length: n }, (_, i) => {
    const k = 3 + Math.floor(rand() * 3);
    return `Passage ${i}. ${Array.from({ length: k }, () => sentences[Math.floor(rand() * sentences.length)]).join(' ')}`;
  });
}

/** One agent with `n` chunks and their `dims`-dimension vectors of `model`, in sources of 1,000 chunks. */
async function seedAgent(db: Db, orgId: string, n: number, model: string, dims: number): Promise<string> {
  const agentId = (await createAgent(db, orgId, { name: `Retrieval bench ${model} ${n}` })).id;
  const passages = syntheticPassages(n);
  for (let s = 0; s < n; s += 1000) {
    const slice = passages.slice(s, s + 1000);
    const source = await createSource(db, orgId, { agentId, kind: 'text', name: `bench ${s}` }, async () => undefined);
    await markProcessing(db, orgId, source.id);
    await indexChunks(db, orgId, source.id, slice.map((content, ordinal) => ({ ordinal, content })), undefined, {
      textSearchConfig: 'english',
      embeddings: { model, vectors: slice.map((p) => conceptEmbedding(p, dims)) },
    });
  }
  await db.raw('ANALYZE knowledge_chunks');
  await db.raw('ANALYZE knowledge_chunk_embeddings');
  return agentId;
}

/** Times hybrid retrieval of the labelled questions (repeated) against one agent, with a two-turn history. */
async function timeRetrieval(db: Db, orgId: string, agentId: string, embeddings: EmbeddingsProvider, postmasterPid?: number): Promise<{ sorted: number[]; cpu: string }> {
  const questions = loadRetrievalSet()
    .filter((kb) => kb.language === 'english')
    .flatMap((kb) => kb.questions.map((q) => q.q));
  const ask = (i: number) => retrieveKnowledge({ db, embeddings }, orgId, agentId, { text: questions[i % questions.length], earlierUserTurns: [questions[(i + 7) % questions.length]] }, 5);
  for (let i = 0; i < 20; i++) await ask(i); // warm-up
  const times: number[] = [];
  const cpu0 = cpuSnapshot({ process: process.pid }, { postmasterPid });
  for (let i = 0; i < QUERIES; i++) {
    const t0 = performance.now();
    await ask(i);
    times.push(performance.now() - t0);
  }
  const cpu1 = cpuSnapshot({ process: process.pid }, { postmasterPid });
  return { sorted: times.sort((a, b) => a - b), cpu: cpuPerQuery(cpu0, cpu1, QUERIES) };
}

/** "CPU per query: x ms this process, y ms Postgres" from two {@link cpuSnapshot}s (empty without /proc). */
function cpuPerQuery(before: Record<string, number>, after: Record<string, number>, n: number): string {
  if (after.process === undefined) return 'CPU per query: not measured (no /proc)';
  const per = (k: string) => ((after[k] - before[k]) / n).toFixed(1);
  return `CPU per query: ${per('process')} ms this process, ${per('postgres')} ms Postgres`;
}

/**
 * Times the vector search alone (no embedding request, no full-text lists) for random unit query vectors: by
 * `search` — retrieval's (services/knowledge/exactVectors.ts) or Postgres's alone (`nearestChunks`).
 */
async function timeVectorSearch(
  db: Db,
  orgId: string,
  agentId: string,
  model: string,
  dims: number,
  postmasterPid: number | undefined,
  search: VectorSearch = nearestChunkVectors,
): Promise<{ sorted: number[]; cpu: string }> {
  const rand = seededRandom(dims);
  const query = () => {
    const v = Array.from({ length: dims }, () => rand() - 0.5);
    const n = Math.hypot(...v);
    return v.map((x) => x / n);
  };
  for (let i = 0; i < 10; i++) await search(db, orgId, agentId, model, query(), 50);
  const n = Math.min(QUERIES, 100);
  const times: number[] = [];
  const cpu0 = cpuSnapshot({ process: process.pid }, { postmasterPid });
  for (let i = 0; i < n; i++) {
    const q = query();
    const t0 = performance.now();
    await search(db, orgId, agentId, model, q, 50);
    times.push(performance.now() - t0);
  }
  const cpu1 = cpuSnapshot({ process: process.pid }, { postmasterPid });
  return { sorted: times.sort((a, b) => a - b), cpu: cpuPerQuery(cpu0, cpu1, n) };
}

function latencyLine(label: string, sorted: number[], target = true): string {
  const p99 = percentile(sorted, 99);
  const verdict = target ? ` (target < ${P99_TARGET_MS} ms: ${p99 < P99_TARGET_MS ? 'met' : 'NOT met'})` : '';
  return `${label}: ${sorted.length} queries: p50 ${percentile(sorted, 50).toFixed(1)} ms, p95 ${percentile(sorted, 95).toFixed(1)} ms, p99 ${p99.toFixed(1)} ms${verdict}, max ${sorted[sorted.length - 1].toFixed(1)} ms`;
}

/**
 * Part 3 on PGlite's pgvector (module docstring): seeds one agent with PGVECTOR_CHUNKS chunks and their
 * PGVECTOR_DIMS-dimension concept-double vectors, creates the HNSW index (`ensureVectorIndex`), then times
 * `nearestChunks` (top 50, retrieval's candidate count) for random unit queries and measures recall@10 of the
 * labelled questions' vectors against a brute-force scan of the same vectors in this process.
 */
async function benchPglitePgvector(): Promise<void> {
  const t0 = performance.now();
  const server = await startPgliteVector();
  try {
    const { db } = server;
    // PGlite's one session (test/db/pglite.ts): room for the HNSW graph in memory while it is built (pgvector README
    // "Index Build Time"); the build is slower once it no longer fits.
    await db.raw(`SET maintenance_work_mem = '512MB'`);
    const orgId = (await createOrganization(db, 'Retrieval bench pglite')).id;
    const dims = PGVECTOR_DIMS;
    const model = `bench-hnsw@${dims}`;
    const agentId = await seedAgent(db, orgId, PGVECTOR_CHUNKS, model, dims);
    const seeded = performance.now();
    console.log(`PGlite ${server.serverVersion.split(' on ')[0]}, pgvector ${server.pgvectorVersion}: seeded ${PGVECTOR_CHUNKS} chunks with ${dims}-dimension vectors in ${((seeded - t0) / 1000).toFixed(1)} s`);
    if (!(await ensureVectorIndex(db, dims))) throw new Error('the HNSW index could not be created');
    await db.raw('ANALYZE knowledge_chunk_embeddings');
    console.log(`  HNSW index built in ${((performance.now() - seeded) / 1000).toFixed(1)} s`);
    const search = await timeVectorSearch(db, orgId, agentId, model, dims, undefined, nearestChunks);
    console.log(`  vector search alone (top 50): ${latencyLine(`PGlite pgvector HNSW, ${dims} dims, ${PGVECTOR_CHUNKS} chunks`, search.sorted, false)}`);
    // The plan of one more such search, under the settings it ran with: the figure is the index's only if it used it.
    const statements: { sql: string; bindings: Knex.RawBinding[] }[] = [];
    const onQuery = (q: { sql: string; bindings?: Knex.RawBinding[] }) => void statements.push({ sql: q.sql, bindings: q.bindings ?? [] });
    db.on('query', onQuery);
    await nearestChunks(db, orgId, agentId, model, conceptEmbedding('How do I get there from the airport?', dims), 50);
    db.removeListener('query', onQuery);
    const last = statements.find((x) => /ORDER BY embedding_vector/.test(x.sql))!;
    const plan = await db.transaction(async (trx) => {
      for (const x of statements.filter((y) => /^SET LOCAL /.test(y.sql))) await trx.raw(x.sql);
      const res = await trx.raw(`EXPLAIN ${last.sql.replace(/\$\d+/g, '?')}`, last.bindings);
      return (res.rows as { 'QUERY PLAN': string }[]).map((r) => r['QUERY PLAN']).join('\n');
    });
    const node = /Index Scan using \S+|Bitmap Heap Scan|Seq Scan/.exec(plan)?.[0] ?? plan;
    console.log(`  plan: ${node}${/_hnsw_/.test(node) ? '' : ' — NOT the HNSW index'}`);

    // Recall@10 of the labelled questions' vectors: the HNSW top 10 against the exact top 10 of the same vectors.
    const rows = (await db('knowledge_chunks').where({ org_id: orgId, agent_id: agentId }).select('id', 'content')) as { id: string; content: string }[];
    const unit = (v: number[]) => {
      const n = Math.hypot(...v) || 1;
      return Float32Array.from(v, (x) => x / n);
    };
    const stored = rows.map((r) => ({ id: r.id, v: unit(conceptEmbedding(r.content, dims)) }));
    const cosines = (qv: Float32Array) =>
      stored.map((c) => {
        let dot = 0;
        for (let i = 0; i < dims; i++) dot += c.v[i] * qv[i];
        return { id: c.id, dot };
      });
    const questions = loadRetrievalSet()
      .filter((kb) => kb.language === 'english')
      .flatMap((kb) => kb.questions.map((q) => q.q));
    let found = 0;
    for (const q of questions) {
      const qv = unit(conceptEmbedding(q, dims));
      const all = cosines(qv);
      const byId = new Map(all.map((c) => [c.id, c.dot]));
      // A hit counts when it is as similar as the exact 10th (passages may share a vector: ties are equally right).
      const tenth = all.map((c) => c.dot).sort((a, b) => b - a)[9];
      const hits = await nearestChunks(db, orgId, agentId, model, [...qv], 10);
      found += hits.filter((h) => byId.get(h.chunkId)! >= tenth - 1e-6).length;
    }
    console.log(`  recall@10 against brute force, ${questions.length} labelled questions: ${(found / (questions.length * 10)).toFixed(3)}`);
  } finally {
    await server.close();
  }
}

/** Runs the three parts and prints their figures. */
export async function runRetrievalBench(): Promise<void> {
  const started = performance.now();
  const stub = process.env.EMBEDDINGS_BASE_URL ? undefined : await startEmbeddingsStub();
  const endpoint = (model: string, dims?: number) =>
    createEmbeddings({
      EMBEDDINGS_PROVIDER: 'openai',
      EMBEDDINGS_BASE_URL: process.env.EMBEDDINGS_BASE_URL ?? stub!.baseUrl,
      EMBEDDINGS_API_KEY: process.env.EMBEDDINGS_API_KEY ?? 'bench',
      EMBEDDINGS_MODEL: process.env.EMBEDDINGS_MODEL ?? model,
      EMBEDDINGS_DIMENSIONS: process.env.EMBEDDINGS_BASE_URL ? process.env.EMBEDDINGS_DIMENSIONS : dims ? String(dims) : undefined,
    });
  const { db, close, postmasterPid } = await openBenchDatabase('retrieval', { serverUrl: process.env.DATABASE_URL });
  try {
    const orgId = (await createOrganization(db, 'Retrieval bench')).id;

    // 1. Quality on the labelled set.
    const embeddings = endpoint('concept-double');
    const seeded = await seedRetrievalSet(db, orgId, loadRetrievalSet(), embeddings);
    const rows = {
      'full-text, last message': await scoreRetrieval(db, orgId, seeded, 'full_text_last'),
      'full-text, recent turns': await scoreRetrieval(db, orgId, seeded, 'full_text'),
      [`hybrid (${embeddings.model})`]: await scoreRetrieval(db, orgId, seeded, 'hybrid', embeddings),
    };
    console.log(`labelled set (${process.env.EMBEDDINGS_BASE_URL ? `endpoint ${process.env.EMBEDDINGS_BASE_URL}` : 'deterministic concept double over loopback HTTP'}):`);
    console.log(formatScores(rows));

    // 2. Latency over one agent's CHUNKS chunks, exact path.
    for (const dims of (process.env.RETRIEVAL_DIMS ?? '96,256,768,1536').split(',').map(Number)) {
      const model = `bench-exact@${dims}`;
      const t0 = performance.now();
      const agentId = await seedAgent(db, orgId, CHUNKS, model, dims);
      const sqlStore = await vectorStore(db, dims);
      const store = sqlStore !== 'pgvector' && dims > CUBE_MAX_DIMS ? 'in-process' : sqlStore;
      console.log(`seeded ${CHUNKS} chunks with ${dims}-dimension vectors in ${((performance.now() - t0) / 1000).toFixed(1)} s (vector store: ${store})`);
      // The organization's active model is the labelled set's; point it at this agent's vectors for the run.
      await db('knowledge_embedding_state').where({ org_id: orgId }).update({ active_model: model });
      if (store === 'in-process') {
        const t1 = performance.now();
        const held = await holdAgentVectors(db, orgId, agentId, model, dims);
        console.log(`reading the ${CHUNKS} vectors into this process (done in the background on a first search, answered by Postgres meanwhile): ${(performance.now() - t1).toFixed(0)} ms${held ? '' : ' — NOT held'}`);
      }
      const { sorted, cpu } = await timeRetrieval(db, orgId, agentId, endpoint('bench-exact', dims), postmasterPid);
      console.log(`${latencyLine(`hybrid retrieval, ${store} exact path, ${dims} dims, ${CHUNKS} chunks`, sorted)}; ${cpu}`);
      const search = await timeVectorSearch(db, orgId, agentId, model, dims, postmasterPid);
      console.log(`  vector search alone (top 50): ${latencyLine(`${store}, ${dims} dims`, search.sorted, false)}; ${search.cpu}`);
      if (store === 'in-process') {
        const inSql = await timeVectorSearch(db, orgId, agentId, model, dims, postmasterPid, nearestChunks);
        console.log(`  vector search alone (top 50), in Postgres for comparison: ${latencyLine(`${sqlStore}, ${dims} dims`, inSql.sorted, false)}; ${inSql.cpu}`);
      }
    }

    // 3. pgvector HNSW over PGVECTOR_CHUNKS chunks: only with the extension (or on PGlite's, BENCH_PGVECTOR=pglite).
    if (process.env.BENCH_PGVECTOR === 'pglite') {
      await benchPglitePgvector();
    } else if ((await vectorStore(db, 1536)) !== 'pgvector') {
      console.log(`pgvector HNSW, ${PGVECTOR_CHUNKS} chunks: skipped (pgvector is not installed on this server; run with DATABASE_URL of a pgvector/pgvector server)`);
    } else {
      const dims = 256;
      const model = `bench-hnsw@${dims}`;
      const agentId = await seedAgent(db, orgId, PGVECTOR_CHUNKS, model, dims);
      await ensureVectorIndex(db, dims);
      await db('knowledge_embedding_state').where({ org_id: orgId }).update({ active_model: model });
      const { sorted } = await timeRetrieval(db, orgId, agentId, endpoint('bench-hnsw', dims));
      console.log(latencyLine(`hybrid retrieval, pgvector HNSW, ${dims} dims, ${PGVECTOR_CHUNKS} chunks`, sorted));
    }
  } finally {
    await close();
    await stub?.close();
  }
  console.log(`(retrieval bench took ${((performance.now() - started) / 1000).toFixed(1)} s; ${os.cpus().length} CPUs)`);
}

if (require.main === module) runBench('bench retrieval', runRetrievalBench);
