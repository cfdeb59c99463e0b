/**
 * Hybrid retrieval's arithmetic (docs/knowledge.md "Retrieval"): reciprocal rank fusion of ranked lists, the weights
 * of a conversation's recent turns, and the weighted query vector. Pure functions.
 *
 * Reciprocal rank fusion (Cormack, Clarke & Büttcher, "Reciprocal Rank Fusion outperforms Condorcet and individual
 * Rank Learning Methods", SIGIR 2009): score(d) = Σ_lists weight / (k + rank(d)), rank from 1, k = 60 as in the
 * paper. It needs no calibration between a `ts_rank` and a cosine similarity, only their orders.
 */

/** The constant k of reciprocal rank fusion (the paper's value). */
export const RRF_K = 60;

/** One ranked list: ids best first, and how much the list counts. */
export interface RankedList {
  ids: readonly string[];
  weight: number;
}

/** A fused result: the id and its score normalised to 0..1 (1: first in every list). */
export interface FusedHit {
  id: string;
  score: number;
}

/**
 * Fuses ranked lists by reciprocal rank fusion; the score is divided by the best possible one (first in every
 * list, Σ weight / (k + 1)), so it reads 0..1 whatever the number of lists. Ties keep the order of first appearance.
 * @returns every id of any list, best first
 */
export function reciprocalRankFusion(lists: readonly RankedList[], k: number = RRF_K): FusedHit[] {
  const scores = new Map<string, number>();
  let best = 0;
  for (const list of lists) {
    if (!(list.weight > 0)) continue;
    best += list.weight / (k + 1);
    list.ids.forEach((id, i) => scores.set(id, (scores.get(id) ?? 0) + list.weight / (k + i + 1)));
  }
  return [...scores]
    .map(([id, s]) => ({ id, score: best > 0 ? s / best : 0 }))
    .sort((a, b) => b.score - a.score);
}

/** User turns the retrieval query reads: the current one and the ones before it (most recent first). */
export const RETRIEVAL_TURNS = 3;

/** Weight of the i-th most recent user turn (0: the current one): 1, ½, ¼ — the question just asked leads. */
export function turnWeight(i: number): number {
  return 1 / 2 ** i;
}

/**
 * The retrieval query of a turn: the current message and up to RETRIEVAL_TURNS - 1 earlier user messages, most
 * recent first; blank ones and repeats of a later one are dropped.
 * @param current what the person just said
 * @param earlierUserTurns the conversation's earlier user messages, oldest first
 */
export function retrievalTurns(current: string, earlierUserTurns: readonly string[]): string[] {
  const out = [current];
  for (let i = earlierUserTurns.length - 1; i >= 0 && out.length < RETRIEVAL_TURNS; i--) {
    const t = earlierUserTurns[i].trim();
    if (t && !out.some((o) => o.trim() === t)) out.push(t);
  }
  return out;
}

/** `v` scaled to unit length (a zero vector stays zero). */
export function normalize(v: readonly number[]): number[] {
  let n = 0;
  for (const x of v) n += x * x;
  n = Math.sqrt(n);
  return n > 0 ? v.map((x) => x / n) : v.map(() => 0);
}

/**
 * The query vector of several turns: Σ turnWeight(i) · unit(vᵢ), to unit length — the embedding of the current turn,
 * pulled toward what the conversation was about.
 * @param vectors one per turn, most recent first, all of one dimension
 */
export function weightedQueryVector(vectors: readonly (readonly number[])[]): number[] {
  if (!vectors.length) return [];
  const sum = new Array<number>(vectors[0].length).fill(0);
  vectors.forEach((v, i) => {
    const u = normalize(v);
    const w = turnWeight(i);
    for (let j = 0; j < sum.length; j++) sum[j] += w * (u[j] ?? 0);
  });
  return normalize(sum);
}

/** Cosine similarity of two vectors of one dimension (0 when either is zero). */
export function cosineSimilarity(a: readonly number[], b: readonly number[]): number {
  let dot = 0;
  let na = 0;
  let nb = 0;
  for (let i = 0; i < a.length; i++) {
    dot += a[i] * (b[i] ?? 0);
    na += a[i] * a[i];
    nb += (b[i] ?? 0) * (b[i] ?? 0);
  }
  return na > 0 && nb > 0 ? dot / Math.sqrt(na * nb) : 0;
}
