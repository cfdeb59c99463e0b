/**
 * Exact nearest-vector search for vectors of more than 100 dimensions without pgvector (the embedded default;
 * docs/knowledge.md "Vector storage", docs/benchmarks.md "Knowledge retrieval").
 *
 * Postgres without pgvector has no kernel for long vectors: the best stock one, the `cube` blocks of migration
 * 20261127000900 (one C `cube_distance` per 100 coordinates), still reads 8 bytes per coordinate out of line and
 * takes p50 ≈ 80 ms at 768 dimensions and ≈ 160 ms at 1,536 over 10,000 vectors (docs/benchmarks.md). Here the
 * agent's vectors of the model are held in this process as one Float32Array (4 bytes a coordinate, read once) and
 * the cosine of every vector is computed — exact, the same top-k as a brute-force scan — in slices that yield to the
 * event loop.
 *
 * Freshness: before every search the set's fingerprint (count and hash sum of its chunk ids,
 * db/repositories/knowledgeEmbeddings.ts `vectorSetFingerprint`) is read; a vector row never changes once stored, so
 * an equal fingerprint means equal vectors. When it differs, the chunk ids are re-read and only the vectors not held
 * yet are fetched (a source added costs its own vectors, not the agent's); a set not held at all is read in the
 * background while Postgres answers (`nearestChunks`). Every process (API, workers) keeps its own copy, within
 * VECTOR_CACHE_BYTES (least recently used sets are dropped first); a set larger than that is searched in Postgres
 * by `nearestChunks` (`cube_blocks`, or `array` without `cube`).
 * pgvector servers and vectors of at most 100 dimensions (`cube`) are searched by `nearestChunks` as before.
 */
import type { Db } from '../../db';
import {
  CUBE_MAX_DIMS,
  nearestChunks,
  vectorSetFingerprint,
  vectorSetMembers,
  vectorsOfChunks,
  vectorStore,
  type VectorHit,
  type VectorSearch,
} from '../../db/repositories/knowledgeEmbeddings';

/** Bytes of vectors one process holds at most (float32: 10,000 vectors of 1,536 dimensions are 61 MB). */
export const VECTOR_CACHE_BYTES = 256 * 1024 * 1024;
/** Multiply-adds computed between two yields to the event loop (about 2 ms of a 2020s core). */
const SLICE_MACS = 1 << 21;

/** One agent's vectors of one model and dimension, as held in memory. */
interface VectorSet {
  fingerprint: string;
  dims: number;
  chunkIds: string[];
  sourceIds: string[];
  /** Row i is chunkIds[i]'s vector: coordinates i·dims … i·dims + dims − 1. */
  matrix: Float32Array;
  /** 1/|v| per row (0 for a zero vector). */
  invNorms: Float64Array;
}

interface Cache {
  /** Insertion order is recency: a set used is deleted and set again. */
  sets: Map<string, VectorSet>;
  bytes: number;
  loading: Map<string, Promise<VectorSet | null>>;
}

const caches = new WeakMap<object, Cache>();

function cacheOf(db: Db): Cache {
  const key = ((db as any).client ?? db) as object;
  let c = caches.get(key);
  if (!c) caches.set(key, (c = { sets: new Map(), bytes: 0, loading: new Map() }));
  return c;
}

function drop(cache: Cache, key: string): void {
  const old = cache.sets.get(key);
  if (!old) return;
  cache.sets.delete(key);
  cache.bytes -= old.matrix.byteLength;
}

/** Reads the set anew, reusing the vectors of `held` that are still members. @returns null when it exceeds the budget */
async function load(db: Db, orgId: string, agentId: string, model: string, dims: number, held: VectorSet | undefined): Promise<VectorSet | null> {
  const { fingerprint, members } = await vectorSetMembers(db, orgId, agentId, model, dims);
  if (members.length * dims * 4 > VECTOR_CACHE_BYTES) return null;
  const heldRow = new Map<string, number>();
  held?.chunkIds.forEach((id, i) => heldRow.set(id, i));
  const fetched = await vectorsOfChunks(db, orgId, model, members.filter((m) => !heldRow.has(m.chunkId)).map((m) => m.chunkId));
  const matrix = new Float32Array(members.length * dims);
  const invNorms = new Float64Array(members.length);
  const chunkIds: string[] = [];
  const sourceIds: string[] = [];
  let complete = true;
  for (const m of members) {
    const row = chunkIds.length;
    const h = heldRow.get(m.chunkId);
    const v = h !== undefined ? held!.matrix.subarray(h * dims, h * dims + dims) : fetched.get(m.chunkId);
    if (!v || v.length !== dims) {
      complete = false; // deleted between the two reads: searched without it, and re-read next time
      continue;
    }
    matrix.set(v, row * dims);
    let ss = 0;
    for (let j = 0; j < dims; j++) ss += v[j] * v[j];
    invNorms[row] = ss > 0 ? 1 / Math.sqrt(ss) : 0;
    chunkIds.push(m.chunkId);
    sourceIds.push(m.sourceId);
  }
  return {
    fingerprint: complete ? fingerprint : '',
    dims,
    chunkIds,
    sourceIds,
    matrix: chunkIds.length === members.length ? matrix : matrix.slice(0, chunkIds.length * dims),
    invNorms: invNorms.subarray(0, chunkIds.length),
  };
}

/** Starts reading the set (reusing `held`), and keeps it when read. */
function startLoad(cache: Cache, key: string, db: Db, orgId: string, agentId: string, model: string, dims: number, held: VectorSet | undefined): Promise<VectorSet | null> {
  const p: Promise<VectorSet | null> = load(db, orgId, agentId, model, dims, held).then(
    (set) => {
      if (cache.loading.get(key) === p) cache.loading.delete(key);
      drop(cache, key);
      if (!set) return null;
      cache.sets.set(key, set);
      cache.bytes += set.matrix.byteLength;
      for (const k of cache.sets.keys()) {
        if (cache.bytes <= VECTOR_CACHE_BYTES || k === key) break;
        drop(cache, k);
      }
      return set;
    },
    (err) => {
      if (cache.loading.get(key) === p) cache.loading.delete(key);
      throw err;
    },
  );
  cache.loading.set(key, p);
  return p;
}

/**
 * The current vectors of the set: from memory when its fingerprint is unchanged, else re-read (only the vectors not
 * held). Null when the set exceeds the budget, or when none of it is held yet: reading a whole set takes 1–3 s for
 * 10,000 long vectors, so that search is answered by Postgres while the set is read in the background
 * (`wait` waits for it instead).
 */
async function currentSet(db: Db, orgId: string, agentId: string, model: string, dims: number, wait = false): Promise<VectorSet | null> {
  const cache = cacheOf(db);
  const key = JSON.stringify([orgId, agentId, model, dims]);
  const fingerprint = await vectorSetFingerprint(db, orgId, agentId, model, dims);
  if (Number(fingerprint.split(':')[0]) * dims * 4 > VECTOR_CACHE_BYTES) {
    drop(cache, key);
    return null;
  }
  const held = cache.sets.get(key);
  if (held && held.fingerprint === fingerprint) {
    cache.sets.delete(key);
    cache.sets.set(key, held);
    return held;
  }
  // A load started before this search may miss a vector committed since: it serves only if its fingerprint is ours.
  const inFlight = cache.loading.get(key);
  if (!held && !wait) {
    // A failed background read is retried by the next search; this one is answered by Postgres either way.
    if (!inFlight) startLoad(cache, key, db, orgId, agentId, model, dims, undefined).catch(() => undefined);
    return null;
  }
  if (inFlight) {
    const set = await inFlight;
    if (set && set.fingerprint === fingerprint) return set;
  }
  return startLoad(cache, key, db, orgId, agentId, model, dims, cache.sets.get(key));
}

/** Whether vectors of `dims` dimensions are searched in this process (module docstring): no pgvector, over CUBE_MAX_DIMS. */
async function searchedHere(db: Db, dims: number): Promise<boolean> {
  return (await vectorStore(db, dims)) !== 'pgvector' && dims > CUBE_MAX_DIMS;
}

/**
 * Reads an agent's vectors of `model` and dimension `dims` into this process now, rather than in the background
 * after the first search (benchmarks, and tests that must exercise the in-process search from the first query).
 * @returns whether they are held (false: pgvector serves, 100 dimensions or fewer, or over VECTOR_CACHE_BYTES)
 */
export async function holdAgentVectors(db: Db, orgId: string, agentId: string, model: string, dims: number): Promise<boolean> {
  if (!(await searchedHere(db, dims))) return false;
  return (await currentSet(db, orgId, agentId, model, Math.trunc(dims), true)) !== null;
}

/**
 * The `limit` best of `set` by cosine similarity to `query` (at least `minSimilarity`, of `sourceIds` when given),
 * best first. Exact: every row's dot product is summed in float64.
 */
async function topK(set: VectorSet, query: readonly number[], limit: number, minSimilarity: number, sourceIds?: readonly string[]): Promise<VectorHit[]> {
  const { dims, matrix, invNorms } = set;
  const q = Float64Array.from(query);
  const qNorm = Math.sqrt(q.reduce((s, x) => s + x * x, 0));
  const qInv = qNorm > 0 ? 1 / qNorm : 0;
  const only = sourceIds ? new Set(sourceIds) : null;
  const k = Math.max(0, Math.trunc(limit));
  // The best k so far, ascending by similarity (ties: the earlier row first), so best[0] is the one to beat.
  const bestSim: number[] = [];
  const bestRow: number[] = [];
  const rows = set.chunkIds.length;
  const sliceRows = Math.max(1, Math.floor(SLICE_MACS / dims));
  for (let start = 0; start < rows; start += sliceRows) {
    if (start > 0) await new Promise((resolve) => setImmediate(resolve));
    const end = Math.min(rows, start + sliceRows);
    for (let r = start; r < end; r++) {
      if (only && !only.has(set.sourceIds[r])) continue;
      const o = r * dims;
      let s0 = 0;
      let s1 = 0;
      let s2 = 0;
      let s3 = 0;
      let j = 0;
      for (; j + 3 < dims; j += 4) {
        s0 += matrix[o + j] * q[j];
        s1 += matrix[o + j + 1] * q[j + 1];
        s2 += matrix[o + j + 2] * q[j + 2];
        s3 += matrix[o + j + 3] * q[j + 3];
      }
      for (; j < dims; j++) s0 += matrix[o + j] * q[j];
      const sim = (s0 + s1 + s2 + s3) * invNorms[r] * qInv;
      if (sim < minSimilarity || k === 0) continue;
      if (bestSim.length === k && sim <= bestSim[0]) continue;
      let at = 0;
      while (at < bestSim.length && bestSim[at] < sim) at++;
      bestSim.splice(at, 0, sim);
      bestRow.splice(at, 0, r);
      if (bestSim.length > k) {
        bestSim.shift();
        bestRow.shift();
      }
    }
  }
  return bestRow.map((r, i) => ({ chunkId: set.chunkIds[r], similarity: bestSim[i] })).reverse();
}

/**
 * The agent's chunks nearest `vector` among the vectors of `model`, most similar first — what
 * db/repositories/knowledgeEmbeddings.ts `nearestChunks` answers ({@link VectorSearch}), searched in this process
 * when the database has no pgvector and the vectors have more than 100 dimensions (module docstring); by
 * `nearestChunks` otherwise, and while the set is not held or exceeds VECTOR_CACHE_BYTES.
 */
export const nearestChunkVectors: VectorSearch = async (db, orgId, agentId, model, vector, limit, opts = {}) => {
  const dims = Math.trunc(vector.length);
  const set = opts.sourceIds?.length !== 0 && (await searchedHere(db, dims)) ? await currentSet(db, orgId, agentId, model, dims) : null;
  return set ? topK(set, vector, limit, opts.minSimilarity ?? -1, opts.sourceIds) : nearestChunks(db, orgId, agentId, model, vector, limit, opts);
};
